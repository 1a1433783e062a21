/*
 * tests/programs/tracer_dlopen.c: dlopen a library that allocates, free
 * the block, dlclose it; then the same with each further library given.
 * Usage: tracer_dlopen [--keep] LIBRARY... Prints the blocks' addresses as
 * "dlibN ADDRESS" (N from 1). With --keep the blocks are not freed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int keep = argc > 1 && strcmp(argv[1], "--keep") == 0;
    if (argc < 2 + keep)
        return 2;
    for (int i = 1 + keep; i < argc; i++) {
        void *h = dlopen(argv[i], RTLD_NOW);
        if (!h) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        void *(*fn)(void) = (void *(*)(void))dlsym(h, "dlib_alloc");
        void *p = fn();
        printf("dlib%d %p\n", i - keep, p);
        if (!keep)
            free(p);
        dlclose(h);
    }
    return 0;
}
