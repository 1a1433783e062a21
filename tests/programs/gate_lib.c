/* tests/programs/gate_lib.c: libgate_lib.so, leaking from a shared library.
 * Tests check the line of the allocation: keep it where it is. */
#include <stdlib.h>

void *gate_lib_keep;

static void *lib_alloc(size_t n)
{
    return malloc(n); /* line 9 */
}

void gate_lib_leak(void)
{
    gate_lib_keep = lib_alloc(40);
    gate_lib_keep = NULL;
}
