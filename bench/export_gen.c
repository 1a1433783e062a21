/*
 * bench/export_gen.c: a resolved trace for bench/export: CALLS allocations
 * (never freed, so -l keeps them all as samples) over STACKS backtraces of
 * 4 to 20 frames, drawn from 2000 functions in 200 files, the first
 * stacks used most (as in real programs); one stack in ten recurses.
 * Deterministic.
 *
 *   export_gen CALLS STACKS > trace
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_shape.h"

int main(int argc, char **argv)
{
    unsigned long calls, nstacks;
    int status = shape_args(argc, argv, "usage: export_gen CALLS STACKS > trace", &calls, &nstacks);
    if (status >= 0)
        return status;
    char **stacks = shape_stack_texts(nstacks);
    shape_trace_header();
    for (unsigned long c = 0; c < calls; c++) {
        struct shape_call k = shape_call(nstacks);
        printf("%lu. %s(%llu) = 0x%lx\n%s\n", c + 1, k.fn, (unsigned long long)k.size,
               0x10000000ul + c * 16, stacks[k.stack]);
    }
    return 0;
}
