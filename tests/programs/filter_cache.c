/* tests/programs/filter_cache.c: one leak site of filter_app (200 bytes a call). */
#include <stdlib.h>

__attribute__((noinline)) void *cache_add(int i)
{
    char *p = malloc(200);
    if (p)
        p[0] = (char)i;
    return p;
}
