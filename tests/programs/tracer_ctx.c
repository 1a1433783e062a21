/*
 * tests/programs/tracer_ctx.c: contexts and switching tracing off through
 * include/alloctrace.h. Allocates 11 bytes outside any context, 22 in
 * "parse", 33 in "parse"+"render", 44 while tracing is off, 55 after it is
 * on again. Prints "active N" (whether the tracer answered).
 */
#include <stdio.h>
#include <stdlib.h>

#include "alloctrace.h"

int main(void)
{
    unsigned parse = alloctrace_context_register("parse");
    unsigned render = alloctrace_context_register("render");
    printf("active %d bits %u %u\n", alloctrace_active(), parse, render);
    fflush(stdout);
    void *a = malloc(11);
    alloctrace_context_enter(parse);
    void *b = malloc(22);
    alloctrace_context_enter(render);
    void *c = malloc(33);
    alloctrace_context_exit(parse | render);
    alloctrace_enable(0);
    void *d = malloc(44);
    alloctrace_enable(1);
    void *e = malloc(55);
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    return 0;
}
