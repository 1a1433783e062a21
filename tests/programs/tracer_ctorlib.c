/*
 * tests/programs/tracer_ctorlib.c: a library whose constructor leaks 32
 * bytes. It is linked into tracer_early, so its constructor runs before
 * the tracer's own (the loader initialises the program's libraries
 * first): the tracer must have started at this first allocation.
 */
#include <stdlib.h>

void *ctorlib_kept;

__attribute__((constructor)) static void ctorlib_init(void)
{
    void *volatile leak = malloc(32);   /* never freed */
    (void)leak;
    ctorlib_kept = malloc(48);          /* freed by the program */
}
