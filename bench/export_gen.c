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
    if (argc != 3 || strcmp(argv[1], "--help") == 0) {
        fputs("usage: export_gen CALLS STACKS > trace\n", argc == 3 ? stdout : stderr);
        return argc == 3 ? 0 : 2;
    }
    unsigned long calls = strtoul(argv[1], NULL, 10), nstacks = strtoul(argv[2], NULL, 10);
    if (!calls || !nstacks) {
        fputs("export_gen: CALLS and STACKS must be positive\n", stderr);
        return 2;
    }
    char **stacks = calloc(nstacks, sizeof *stacks);
    for (unsigned long s = 0; s < nstacks; s++)
        stacks[s] = shape_stack_text(s);
    printf("version=2.0, arch=x86_64, timestamp=2026.11.22 10:00:00, process=bench, pid=1, "
           "filter=resolve, origin=alloctrace 0.1.0, \n<1> : memory (memory allocation in bytes)\n"
           ": /usr/bin/bench => 0x400000-0x600000\n");
    for (unsigned long c = 0; c < calls; c++) {
        struct shape_call k = shape_call(nstacks);
        printf("%lu. %s(%llu) = 0x%lx\n%s\n", c + 1, k.fn, (unsigned long long)k.size,
               0x10000000ul + c * 16, stacks[k.stack]);
    }
    return 0;
}
