/*
 * bench/export_time.c: the exports alone, in process, for bench/export:
 * SAMPLES samples over STACKS interned stacks, the same as export_gen's
 * (export_shape.h), then the profile is built and every format written to
 * /dev/null (the report is built on the analyses: bench/analyze). Prints
 * one line per step: "NAME SECONDS".
 *
 *   export_time SAMPLES STACKS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export.h"
#include "shape_intern.h"

int main(int argc, char **argv)
{
    unsigned long n, nstacks;
    int status = shape_args(argc, argv, "usage: export_time SAMPLES STACKS", &n, &nstacks);
    if (status >= 0)
        return status;
    at_stack_table *t = at_stacks_new();
    const at_stack **stacks = calloc(nstacks, sizeof *stacks);
    for (size_t s = 0; s < nstacks; s++)
        stacks[s] = shape_intern(t, s);
    at_sample *samples = calloc(n, sizeof *samples);
    for (size_t i = 0; i < n; i++) {
        struct shape_call k = shape_call(nstacks);
        samples[i] = (at_sample){ stacks[k.stack], k.fn, k.size, 1 };
    }
    FILE *null = fopen("/dev/null", "w");
    at_export_meta meta = { "bench", "1", NULL, true, 0 };
    double t0 = shape_now();
    at_profile *p = at_profile_build(samples, n, NULL, t);
    double t1 = shape_now();
    at_export_callgrind(null, p, &meta);
    double t2 = shape_now();
    at_export_webgrind(null, p, &meta);
    double t3 = shape_now();
    at_export_folded(null, p, AT_COST_BYTES, false);
    double t4 = shape_now();
    printf("profile %.3f\ncallgrind %.3f\nwebgrind %.3f\nfolded %.3f\n", t1 - t0, t2 - t1,
           t3 - t2, t4 - t3);
    at_profile_free(p);
    fclose(null);
    free(samples);
    free(stacks);
    at_stacks_free(t);
    return 0;
}
