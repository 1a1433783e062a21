/* tests/programs/gate_empty.c: an "empty" C program: prints a line and exits.
 * Whatever it still holds at exit belongs to glibc and the loader. */
#include <stdio.h>

int main(void)
{
    printf("hello from C\n");
    return 0;
}
