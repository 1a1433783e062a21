/* tests/programs/gate_segv.c: leaks, then dies of SIGSEGV before exit. */
#include <signal.h>
#include <stdlib.h>

int main(void)
{
    volatile char *p = malloc(64);
    p[0] = 1;
    raise(SIGSEGV);
    return 0;
}
