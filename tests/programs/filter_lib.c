/* tests/programs/filter_lib.c: libfilter_lib.so, a leak site in a module
 * built without debug info and stripped (filters on modules need none). */
#include <stdlib.h>

__attribute__((noinline)) void *filter_lib_make(size_t n)
{
    return malloc(n);
}
