/*
 * bench/shape_intern.h: export_shape.h's stacks interned in a
 * post-processor stack table, resolved as export_gen writes them, for the
 * benchmarks that time stages in process (export_time, visual_time).
 */
#ifndef BENCH_SHAPE_INTERN_H
#define BENCH_SHAPE_INTERN_H

#include <stdio.h>
#include <time.h>

#include "export_shape.h"
#include "stack.h"

static inline double shape_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline const at_stack *shape_intern(at_stack_table *t, unsigned long s)
{
    struct shape_frame f[SHAPE_MAX_DEPTH];
    at_frame frames[SHAPE_MAX_DEPTH];
    char texts[SHAPE_MAX_DEPTH][96];
    unsigned depth = shape_stack(s, f);
    for (unsigned i = 0; i < depth; i++) {
        snprintf(texts[i], sizeof texts[i], "fn%u() at /src/mod%u/file%u.c:%u", f[i].fn,
                 f[i].module, f[i].file, f[i].line);
        frames[i] = (at_frame){ f[i].addr, texts[i] };
    }
    return at_stacks_intern(t, frames, depth);
}

#endif
