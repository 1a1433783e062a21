/*
 * bench/visual_gen.c: the full trace of bench/visual (visual_shape.h):
 * EVENTS calls with a time on every call (one microsecond apart) over
 * STACKS backtraces of export_shape.h's shape. What is live at the end
 * leaks. Deterministic.
 *
 *   visual_gen EVENTS STACKS > trace
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "visual_shape.h"
/* "[HH:MM:SS.uuuuuu] " for a time in microseconds since 10:00:00. */
static void put_time(uint64_t us)
{
    uint64_t s = 36000 + us / 1000000;
    printf("[%02llu:%02llu:%02llu.%06llu] ", (unsigned long long)(s / 3600 % 24),
           (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60),
           (unsigned long long)(us % 1000000));
}

int main(int argc, char **argv)
{
    unsigned long events, nstacks;
    int status = shape_args(argc, argv, "usage: visual_gen EVENTS STACKS > trace", &events, &nstacks);
    if (status >= 0)
        return status;
    char **stacks = shape_stack_texts(nstacks);
    shape_trace_header();
    static struct visual_state v;
    for (unsigned long c = 1; c <= events; c++) {
        struct visual_event e = visual_next(&v, c, nstacks);
        printf("%lu. ", c);
        put_time(c);
        if (e.release)
            printf("free(0x%llx)\n\n", (unsigned long long)e.id);
        else
            printf("%s(%llu) = 0x%llx\n%s\n", e.call.fn, (unsigned long long)e.call.size,
                   (unsigned long long)e.id, stacks[e.call.stack]);
    }
    return 0;
}
