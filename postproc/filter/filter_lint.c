/*
 * postproc/filter/filter_lint.c: the warnings of --check-filters. A filter that
 * can never match hides nothing (a suppression that silently stopped
 * working); one that matches everything hides every leak. Both are
 * decided from the filter alone:
 * - never: an "excludes" list of wildcards only ("[ ... ]" matches every
 *   list), or size sub-filters whose ranges do not intersect;
 * - everything: every sub-filter is a "contains" list of wildcards only or
 *   a size range covering every size.
 * "contains [ ]" matches only allocations without a stack, which is
 * almost surely a mistake, so it is reported too.
 */
#include "filter_impl.h"

static bool only_wildcards(const at_fsub *sub)
{
    if (sub->nelems == 0)
        return false;
    for (size_t i = 0; i < sub->nelems; i++)
        if (sub->elems[i].type != AT_EL_WILD)
            return false;
    return true;
}

/* The sizes a size sub-filter allows, as [lo, hi]; false when none. */
static bool size_range(const at_fsub *sub, uint64_t *lo, uint64_t *hi)
{
    *lo = 0;
    *hi = UINT64_MAX;
    switch (sub->op) {
    case AT_SZ_EQ: *lo = *hi = sub->n; return true;
    case AT_SZ_LT: if (sub->n == 0) return false; *hi = sub->n - 1; return true;
    case AT_SZ_LE: *hi = sub->n; return true;
    case AT_SZ_GT: if (sub->n == UINT64_MAX) return false; *lo = sub->n + 1; return true;
    case AT_SZ_GE: *lo = sub->n; return true;
    default:       *lo = sub->lo; *hi = sub->hi; return sub->lo <= sub->hi;
    }
}

static size_t lint_one(const at_filter *f, FILE *w)
{
    uint64_t lo = 0, hi = UINT64_MAX;
    bool sizes_ok = true, all_trivial = true;
    size_t warned = 0;
    for (size_t i = 0; i < f->nsubs; i++) {
        const at_fsub *sub = &f->subs[i];
        if (sub->is_size) {
            uint64_t a, b;
            if (!size_range(sub, &a, &b)) {
                sizes_ok = false;
                continue;
            }
            lo = a > lo ? a : lo;
            hi = b < hi ? b : hi;
            continue;
        }
        bool wild = only_wildcards(sub);
        if (wild && sub->negate) {
            fprintf(w, "%s: warning: filter can never match: '%s excludes [ ... ]' excludes every stack\n",
                    f->label, (const char *[]){ "callstack", "string", "functions", "modules" }[sub->kind]);
            warned++;
        }
        if (!wild || sub->negate)
            all_trivial = false;
        if (sub->nelems == 0 && !sub->negate) {
            fprintf(w, "%s: warning: '[ ]' matches only allocations without any stack frame\n", f->label);
            warned++;
        }
    }
    if (!sizes_ok || lo > hi) {
        fprintf(w, "%s: warning: filter can never match: no size satisfies its size conditions\n", f->label);
        warned++;
    } else if (all_trivial && lo == 0 && hi == UINT64_MAX) {
        fprintf(w, "%s: warning: filter matches every allocation\n", f->label);
        warned++;
    }
    return warned;
}

size_t at_filter_set_lint(const at_filter_set *s, FILE *warnings)
{
    size_t n = 0;
    for (size_t i = 0; i < s->count; i++)
        n += lint_one(&s->filters[i], warnings);
    return n;
}
