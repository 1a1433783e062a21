/*
 * postproc/filter/filter_print.c: a parsed filter back as text, in normal form
 * (--check-filters). The form is canonical so two spellings of one filter
 * print the same, and it parses back to the same filter: predicates become
 * contains/excludes, wildcard runs one "...", a line spec that allows every
 * line is dropped, [N, N] becomes N, an open or zero lower bound '_', and
 * sizes take the largest k/M/G suffix that divides them.
 */
#include "filter_impl.h"

#include <inttypes.h>

static const char *const kind_names[] = { "callstack", "string", "functions", "modules" };

static void print_size(FILE *out, uint64_t v)
{
    static const char suffix[] = { 'G', 'M', 'k' };
    static const unsigned shift[] = { 30, 20, 10 };
    for (int i = 0; i < 3 && v; i++)
        if ((v & ((UINT64_C(1) << shift[i]) - 1)) == 0) {
            fprintf(out, "%" PRIu64 "%c", v >> shift[i], suffix[i]);
            return;
        }
    fprintf(out, "%" PRIu64, v);
}

static void print_line_spec(FILE *out, const at_felem *e)
{
    if (e->line_lo == 0 && e->line_hi == AT_LINE_ANY_HI)
        return;
    if (e->line_lo == e->line_hi) {
        fprintf(out, " : %u", e->line_lo);
        return;
    }
    fputs(" : [", out);
    if (e->line_lo == 0)
        fputc('_', out);
    else
        fprintf(out, "%u", e->line_lo);
    fputs(", ", out);
    if (e->line_hi == AT_LINE_ANY_HI)
        fputc('_', out);
    else
        fprintf(out, "%u", e->line_hi);
    fputc(']', out);
}

static void print_list(FILE *out, const at_fsub *sub)
{
    fprintf(out, "%s %s [", kind_names[sub->kind], sub->negate ? "excludes" : "contains");
    for (size_t i = 0; i < sub->nelems; i++) {
        const at_felem *e = &sub->elems[i];
        if (e->type == AT_EL_WILD) {
            if (i > 0 && sub->elems[i - 1].type == AT_EL_WILD)
                continue;
            fputs(" ...", out);
            continue;
        }
        if (e->type == AT_EL_REGEX)
            fprintf(out, " #\"%s\"#", e->text);
        else
            fprintf(out, " %s", e->text);
        print_line_spec(out, e);
    }
    fputs(" ]", out);
}

static void print_size_sub(FILE *out, const at_fsub *sub)
{
    static const char *const ops[] = { "=", "<", "<=", ">", ">=" };
    if (sub->op != AT_SZ_IN) {
        fprintf(out, "size %s ", ops[sub->op]);
        print_size(out, sub->n);
        return;
    }
    fputs("size in [", out);
    if (sub->lo == 0)
        fputc('_', out);
    else
        print_size(out, sub->lo);
    fputs(", ", out);
    if (sub->hi == UINT64_MAX)
        fputc('_', out);
    else
        print_size(out, sub->hi);
    fputc(']', out);
}

void at_filter_print(FILE *out, const at_filter_set *s, size_t i)
{
    const at_filter *f = &s->filters[i];
    if (f->name)
        fprintf(out, "%s: ", f->name);
    for (size_t k = 0; k < f->nsubs; k++) {
        if (k)
            fputs(" && ", out);
        if (f->subs[k].is_size)
            print_size_sub(out, &f->subs[k]);
        else
            print_list(out, &f->subs[k]);
    }
}
