/* tests/programs/gate_usedtor.c: uses libgate_dtorlib.so, whose
 * destructors free its blocks at exit; prints 2. */
#include <stdio.h>

int dtorlib_value(void);

int main(void)
{
    printf("%d\n", dtorlib_value());
    return 0;
}
