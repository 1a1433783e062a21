/*
 * tests/programs/filter_app.c: leak sites in different files, functions
 * and modules, for the callstack filter tests:
 *   config_load()      filter_config.c   1 block of 100 bytes
 *   cache_add()        filter_cache.c    3 blocks of 200 bytes
 *   filter_lib_make()  libfilter_lib.so  2 blocks of 300 bytes (no debug info)
 *   main()             filter_app.c      1 block of 400 bytes
 * and one block of 50 bytes that is freed. Each size names its site, so a
 * test can tell sites apart in an unresolved trace. No stdio: its buffer
 * would be one more leak.
 */
#include <stdlib.h>

void *config_load(void);
void *cache_add(int i);
void *filter_lib_make(size_t n);

void *volatile sink[8];

int main(void)
{
    sink[0] = config_load();
    for (int i = 0; i < 3; i++)
        sink[1 + i] = cache_add(i);
    for (int i = 0; i < 2; i++)
        sink[4 + i] = filter_lib_make(300);
    sink[6] = malloc(400);
    free(malloc(50));
    return 0;
}
