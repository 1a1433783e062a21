/*
 * postproc/report.c: what a person reads first in a terminal: the totals,
 * then the allocation sites and the leaks that weigh most, each with its
 * stack as file:line. A site is a distinct stack and allocation function
 * (the profile's paths), so a site's stack is exact, not merged by name.
 * Ties sort by blocks, then by first appearance, so the report is stable.
 */
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "xalloc.h"
#include "profile.h"

static int by_weight(const void *a, const void *b, void *ctx)
{
    const at_ppath *paths = ctx;
    const at_ppath *x = &paths[*(const size_t *)a], *y = &paths[*(const size_t *)b];
    if (x->cost.bytes != y->cost.bytes)
        return x->cost.bytes < y->cost.bytes ? 1 : -1;
    if (x->cost.blocks != y->cost.blocks)
        return x->cost.blocks < y->cost.blocks ? 1 : -1;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    return (i > j) - (i < j);
}

static void put_frame(FILE *out, const at_frame_info *fi)
{
    bool fn = strcmp(fi->function, AT_UNKNOWN) != 0;
    bool file = strcmp(fi->file, AT_UNKNOWN) != 0;
    bool mod = strcmp(fi->module, AT_UNKNOWN) != 0;
    fputs("        ", out);
    if (fn)
        fputs(fi->function, out);
    else
        fprintf(out, "0x%llx", (unsigned long long)fi->addr);
    if (file && fi->line)
        fprintf(out, " at %s:%u", fi->file, fi->line);
    else if (file)
        fprintf(out, " at %s", fi->file);
    else if (mod)
        fprintf(out, " from %s", fi->module); /* the trace format's word, as the gate says it */
    fputs(fi->inlined ? " [inlined]\n" : "\n", out);
}

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void section(FILE *out, const char *title, const at_profile *p, unsigned top,
                    const at_maps *maps, at_stack_table *arena)
{
    fprintf(out, "\ntop %u %s by bytes (of %zu):\n", top, title, p->npaths);
    if (p->npaths == 0 || top == 0) {
        fputs("   (none)\n", out);
        return;
    }
    size_t *order = at_xcalloc(p->npaths, sizeof *order);
    for (size_t i = 0; i < p->npaths; i++)
        order[i] = i;
    qsort_r(order, p->npaths, sizeof *order, by_weight, p->paths);
    for (size_t k = 0; k < p->npaths && k < top; k++) {
        const at_ppath *q = &p->paths[order[k]];
        fprintf(out, "%4zu. %llu bytes in %llu blocks (%.1f%%) by %s\n", k + 1,
                (unsigned long long)q->cost.bytes, (unsigned long long)q->cost.blocks,
                percent(q->cost.bytes, p->total.bytes), q->alloc_fn);
        at_frame_info *infos = at_xcalloc(q->stack->nframes + 1, sizeof *infos);
        at_frame_read_stack(q->stack, maps, arena, infos);
        for (uint32_t i = 0; i < q->stack->nframes; i++)
            put_frame(out, &infos[i]);
        if (q->stack->nframes == 0)
            fputs("        (no backtrace)\n", out);
        free(infos);
    }
    free(order);
}

int at_export_report(FILE *out, const at_profile *allocs, const at_profile *leaks,
                     const at_export_meta *meta, unsigned top, const at_maps *maps,
                     at_stack_table *arena)
{
    const char *process = meta && meta->process && *meta->process ? meta->process : "(unknown)";
    fprintf(out, "alloctrace report: %s", process);
    if (meta && meta->pid && *meta->pid)
        fprintf(out, ", pid %s", meta->pid);
    fputc('\n', out);
    if (allocs)
        fprintf(out, "allocations: %llu blocks, %llu bytes\n",
                (unsigned long long)allocs->total.blocks, (unsigned long long)allocs->total.bytes);
    else
        fputs("allocations: not in this trace (it holds leaks only)\n", out);
    if (leaks)
        fprintf(out, "leaks: %llu blocks, %llu bytes\n", (unsigned long long)leaks->total.blocks,
                (unsigned long long)leaks->total.bytes);
    else
        fputs("leaks: not computed\n", out);
    if (allocs)
        section(out, "allocation sites", allocs, top, maps, arena);
    if (leaks)
        section(out, "leaks", leaks, top, maps, arena);
    return ferror(out) ? -1 : 0;
}
