/*
 * tests/programs/tracer_early.c: allocations before the tracer's
 * constructor could run. A preinit function (the first code of the
 * program, before any library's constructor, with libc's environ not yet
 * set) allocates 40 bytes; libtracer_ctorlib.so's constructor allocates 32
 * (leaked) and 48 bytes; the program's constructor 24. main frees the 40,
 * 48 and 24 and prints "early done".
 */
#include <stdio.h>
#include <stdlib.h>

extern void *ctorlib_kept;
static void *from_preinit, *from_ctor;

static void early_preinit(int argc, char **argv, char **envp)
{
    (void)argc, (void)argv, (void)envp;
    from_preinit = malloc(40);
}
__attribute__((section(".preinit_array"), used)) static void (*preinit_fn)(int, char **, char **) =
    early_preinit;

__attribute__((constructor)) static void early_ctor(void)
{
    from_ctor = malloc(24);
}

int main(void)
{
    free(from_preinit);
    free(ctorlib_kept);
    free(from_ctor);
    printf("early done\n");
    return 0;
}
