/*
 * bench/visual_time.c: the drawing alone, in process, for bench/visual:
 * the calls of visual_shape.h (the same run visual_gen writes) go through
 * the analyses, then the HTML report is written to /dev/null; the same
 * allocations are made samples of a cost graph, then the folded stacks and
 * the SVG flame graph are written. Prints one line per step, "NAME
 * SECONDS": analysis, html, profile, folded, flamegraph.
 *
 *   visual_time EVENTS STACKS
 *
 * With VISUAL_TIME_HTML=PATH the HTML report is also written to PATH (for
 * bench/html_open, which times the page in a browser).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze.h"
#include "export.h"
#include "html.h"
#include "shape_intern.h"
#include "visual_shape.h"

int main(int argc, char **argv)
{
    unsigned long n, nstacks;
    int status = shape_args(argc, argv, "usage: visual_time EVENTS STACKS", &n, &nstacks);
    if (status >= 0)
        return status;
    at_trace *t = at_trace_new();
    t->header.process = strdup("bench");
    const at_stack **stacks = calloc(nstacks, sizeof *stacks);
    for (unsigned long s = 0; s < nstacks; s++)
        stacks[s] = shape_intern(t->stacks, s);
    at_stack_table *names = at_stacks_new();
    const at_stack *empty = at_stacks_intern(t->stacks, NULL, 0);
    at_sample *samples = calloc(n, sizeof *samples);
    size_t nsamples = 0;
    static struct visual_state v;
    at_analyzer *a = at_analyzer_new(false);
    double t0 = shape_now();
    for (unsigned long c = 1; c <= n; c++) {
        struct visual_event e = visual_next(&v, c, nstacks);
        at_call call = { .index = c, .has_time = true, .time_us = 36000000000ull + c,
                         .is_alloc = !e.release, .id = e.id, .stack = empty, .name = "free" };
        if (!e.release) {
            call.name = e.call.fn;
            call.size = e.call.size;
            call.stack = stacks[e.call.stack];
            samples[nsamples++] = (at_sample){ call.stack, call.name, call.size, 1 };
        }
        at_analyzer_call(a, &call);
    }
    const at_analysis *an = at_analyzer_finish(a, t);
    double t1 = shape_now();
    FILE *null = fopen("/dev/null", "w");
    at_export_html(null, an, t, false, AT_HTML_TOP);
    double t2 = shape_now();
    at_profile *p = at_profile_build(samples, nsamples, NULL, names);
    double t3 = shape_now();
    at_export_folded(null, p, AT_COST_BYTES, false);
    double t4 = shape_now();
    at_export_flamegraph(null, p, NULL, AT_COST_BYTES, false);
    double t5 = shape_now();
    const char *keep = getenv("VISUAL_TIME_HTML");
    FILE *page = keep ? fopen(keep, "w") : NULL;
    if (page) {
        at_export_html(page, an, t, false, AT_HTML_TOP);
        fclose(page);
    }
    printf("analysis %.4f\nhtml %.4f\nprofile %.4f\nfolded %.4f\nflamegraph %.4f\n", t1 - t0,
           t2 - t1, t3 - t2, t4 - t3, t5 - t4);
    fclose(null);
    at_profile_free(p);
    at_analyzer_free(a);
    at_stacks_free(names);
    free(samples);
    free(stacks);
    at_trace_free(t);
    return 0;
}
