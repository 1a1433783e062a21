/*
 * postproc/filter/filter_report.c: what filters tell a user about a run
 * (docs/filters.md, --suppressions): how much each suppression hid, which hid
 * nothing. Suppressions generated from leak groups are the gate's
 * (gate.c, --gen-suppressions).
 */
#include "filter_impl.h"

#include <inttypes.h>

void at_filter_report_tally(FILE *out, const at_filter_set *s, const at_filter_tally *tally)
{
    size_t unused = 0;
    for (size_t i = 0; i < s->count; i++) {
        if (tally[i].blocks == 0) {
            unused++;
            continue;
        }
        fprintf(out, "suppressed %" PRIu64 " block(s), %" PRIu64 " bytes: %s\n", tally[i].blocks,
                tally[i].bytes, s->filters[i].label);
    }
    for (size_t i = 0; i < s->count && unused; i++)
        if (tally[i].blocks == 0)
            fprintf(out, "suppression matched nothing: %s\n", s->filters[i].label);
}
