/*
 * postproc/gate_supp.c: suppression files in the filter language
 * (postproc/filter.h) as the gate's matcher. The default file is loaded
 * first so its filters are the first `ndefault` indices.
 *
 * The filter set caches list matches per stack id, which is only right
 * within one stack table; the gate judges many traces (one table each), so
 * the matcher asks through at_filter_matches_frames, which caches nothing.
 * That costs nothing extra: the gate already asks once per distinct
 * (stack, size) of a process.
 */
#include "gate_supp.h"
#include "xalloc.h"

#include <stdlib.h>
#include <unistd.h>

struct at_gate_supp {
    at_filter_set *set;
    size_t ndefault;
};

static const char *label(void *ctx, size_t i)
{
    return at_filter_label(((at_gate_supp *)ctx)->set, i);
}

static long first_match(void *ctx, const at_stack *stack, const at_frame_info *frames,
                        uint64_t size)
{
    at_gate_supp *s = ctx;
    size_t n = at_filter_set_count(s->set);
    for (size_t i = 0; i < n; i++)
        if (at_filter_matches_frames(s->set, i, frames, stack->nframes, size))
            return (long)i;
    return -1;
}

at_gate_supp *at_gate_supp_new(void)
{
    at_gate_supp *s = at_xcalloc(1, sizeof *s);
    s->set = at_filter_set_new();
    return s;
}

void at_gate_supp_free(at_gate_supp *s)
{
    if (!s)
        return;
    at_filter_set_free(s->set);
    free(s);
}

int at_gate_supp_add_file(at_gate_supp *s, const char *path, bool is_default)
{
    at_filter_error err = { 0 };
    if (at_filter_set_add_file(s->set, path, &err) != 0) {
        at_filter_error_print(stderr, &err, isatty(2));
        at_filter_error_clear(&err);
        return -1;
    }
    if (is_default)
        s->ndefault = at_filter_set_count(s->set);
    return 0;
}

at_gate_matcher at_gate_supp_matcher(at_gate_supp *s)
{
    return (at_gate_matcher){ .ctx = s, .count = at_filter_set_count(s->set),
                              .ndefault = s->ndefault, .label = label,
                              .first_match = first_match };
}
