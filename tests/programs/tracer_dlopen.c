/*
 * tests/programs/tracer_dlopen.c: dlopen a library that allocates, free
 * the block, dlclose it; then the same with each further library given.
 * Usage: tracer_dlopen LIBRARY... Prints the blocks' addresses as
 * "dlibN ADDRESS" (N from 1).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    for (int i = 1; i < argc; i++) {
        void *h = dlopen(argv[i], RTLD_NOW);
        if (!h) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        void *(*fn)(void) = (void *(*)(void))dlsym(h, "dlib_alloc");
        void *p = fn();
        printf("dlib%d %p\n", i, p);
        free(p);
        dlclose(h);
    }
    return 0;
}
