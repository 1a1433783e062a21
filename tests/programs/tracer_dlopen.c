/*
 * tests/programs/tracer_dlopen.c: dlopen a library that allocates, free
 * the block, dlclose it. Usage: tracer_dlopen LIBRARY. Prints the block's
 * address as "dlib ADDRESS".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void *(*fn)(void) = (void *(*)(void))dlsym(h, "dlib_alloc");
    void *p = fn();
    printf("dlib %p\n", p);
    free(p);
    dlclose(h);
    return 0;
}
