/* tests/programs/tracer_dlib.c: a library the dlopen test loads; it
 * allocates 4321 bytes from its own code. */
#include <stdlib.h>

__attribute__((noinline)) void *dlib_alloc(void)
{
    return malloc(4321);
}
