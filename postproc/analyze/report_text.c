/*
 * postproc/analyze/report_text.c: --format report, the analyses as a
 * person reads them in a terminal (outputs.h). heaptrack_print's order:
 * totals and the peak first, then what changes over time, then the ranked
 * sites. Every number is printed exactly (bytes in parentheses next to the
 * human size) so that scripts and tests can check it; a section that does
 * not apply says why instead of printing zeros.
 *
 * A site's stack is cut after main: frames of the C library's start-up
 * above main say nothing about the site and make the report long.
 */
#include "outputs.h"
#include "gate.h"
#include "runtime.h"
#include "sampling.h"
#include "xalloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SERIES_ROWS 16

const char *at_an_human(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024 && u < 6) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " B", bytes);
    else
        snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

uint32_t at_an_site_frames(const at_an_site *s, at_trace *t, at_frame_info *infos)
{
    at_frame_read_stack(s->stack, t->maps, t->stacks, infos);
    return at_gate_frames_to_main(infos, s->stack->nframes);
}

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void put_seconds(FILE *out, uint64_t us)
{
    fprintf(out, "%" PRIu64 ".%06" PRIu64 " s", us / 1000000, us % 1000000);
}

static void put_frame(FILE *out, const at_frame_info *fi)
{
    fputs("        ", out);
    bool named = strcmp(fi->function, AT_UNKNOWN) != 0;
    char place[512];
    fputs(named ? fi->function : at_frame_place(fi, place, sizeof place), out);
    if (strcmp(fi->file, AT_UNKNOWN) != 0 && fi->line)
        fprintf(out, " at %s:%u", fi->file, fi->line);
    else if (strcmp(fi->file, AT_UNKNOWN) != 0)
        fprintf(out, " at %s", fi->file);
    else if (named && strcmp(fi->module, AT_UNKNOWN) != 0)
        fprintf(out, " from %s", fi->module);
    fputs(fi->inlined ? " [inlined]\n" : "\n", out);
}

static bool same_frame(const at_frame_info *a, const at_frame_info *b)
{
    return a->addr == b->addr && a->inlined == b->inlined && strcmp(a->function, b->function) == 0;
}

/* The frames to main; a run of one frame repeated (recursion through one
 * call site) is one line and a count, so a 60-deep recursion reads as one. */
static void put_stack(FILE *out, const at_an_site *s, at_trace *t)
{
    at_frame_info *infos = at_xcalloc(s->stack->nframes + 1, sizeof *infos);
    uint32_t n = at_an_site_frames(s, t, infos);
    for (uint32_t i = 0; i < n;) {
        uint32_t run = 1;
        while (i + run < n && same_frame(&infos[i], &infos[i + run]))
            run++;
        put_frame(out, &infos[i]);
        if (run > 2) {
            fprintf(out, "        ... the line above %u times in all (recursion)\n", run);
            i += run;
        } else {
            i++;
        }
    }
    if (n == 0)
        fputs("        (no backtrace)\n", out);
    free(infos);
}

/* A snapshot's blocks were live at that moment: not leaks, and the
 * leaks form it is written in has no releases or peak. `snapshot` is
 * "N LABEL" (at_header), or NULL. */
static void totals(FILE *out, const at_analysis *an, const char *snapshot)
{
    const at_an_summary *s = &an->summary;
    char h[32];
    fprintf(out, "allocations:  %" PRIu64 " calls, %s (%" PRIu64 " bytes)\n", s->allocations,
            at_an_human(s->allocated_bytes, h, sizeof h), s->allocated_bytes);
    if (snapshot) {
        fputs("releases:     not in a snapshot (it holds the blocks live at that moment)\n", out);
        fputs("peak heap:    not in a snapshot\n", out);
    } else if (s->leaks_only) {
        fputs("releases:     not in this trace (it holds leaks only)\n", out);
        fputs("peak heap:    not in this trace (it holds leaks only)\n", out);
    } else {
        fprintf(out, "releases:     %" PRIu64 " calls", s->releases);
        if (s->unknown_releases)
            fprintf(out, " (%" PRIu64 " of blocks not allocated in the trace)",
                    s->unknown_releases);
        fputc('\n', out);
        if (an->peak.index == 0) {
            fputs("peak heap:    none (nothing was allocated)\n", out);
        } else {
            fprintf(out, "peak heap:    %s (%" PRIu64 " bytes) in %" PRIu64 " blocks, at allocation %"
                         PRIu64 " of %" PRIu64 " (call %" PRIu64 " of the trace, releases counted)",
                    at_an_human(an->peak.bytes, h, sizeof h), an->peak.bytes, an->peak.blocks,
                    an->peak.allocation, s->allocations, an->peak.index);
            if (an->peak.has_time) {
                fputs(", ", out);
                put_seconds(out, an->peak.time_us);
                fputs(" into the run", out);
            }
            fputc('\n', out);
        }
    }
    if (snapshot) {
        size_t num = strspn(snapshot, "0123456789");
        fprintf(out, "live:         %s (%" PRIu64 " bytes) in %" PRIu64 " blocks at snapshot %.*s",
                at_an_human(s->leaked_bytes, h, sizeof h), s->leaked_bytes, s->leaked_blocks,
                (int)num, snapshot);
        if (snapshot[num] == ' ' && snapshot[num + 1])
            fprintf(out, " (%s)", snapshot + num + 1);   /* its label */
        fputc('\n', out);
    } else {
        fprintf(out, "leaked:       %s (%" PRIu64 " bytes) in %" PRIu64 " blocks\n",
                at_an_human(s->leaked_bytes, h, sizeof h), s->leaked_bytes, s->leaked_blocks);
    }
    if (s->cached_blocks)
        fprintf(out, "%-13s %s (%" PRIu64 " bytes) in %" PRIu64
                     " blocks, the runtime's own, not leaked\n",
                AT_RUNTIME_WORDS ":", at_an_human(s->cached_bytes, h, sizeof h), s->cached_bytes,
                s->cached_blocks);
    if (s->sample_interval)
        fputs("temporary:    not estimated from a sampled trace\n", out);
    else if (!s->leaks_only)
        fprintf(out, "temporary:    %" PRIu64 " allocations (%.1f%% of all)\n", s->temporary,
                percent(s->temporary, s->allocations));
    if (s->reused_ids)
        fprintf(out, "lost releases: %" PRIu64 " blocks allocated again while live\n",
                s->reused_ids);
    if (s->other_calls)
        fprintf(out, "other resources: %" PRIu64 " calls, not analysed\n", s->other_calls);
    if (s->has_time) {
        fputs("duration:     ", out);
        put_seconds(out, s->duration_us);
        fputc('\n', out);
    }
}

/* The series in at most SERIES_ROWS rows, each merging whole intervals. */
static void series(FILE *out, const at_analysis *an, bool snapshot)
{
    const at_an_series *se = &an->series;
    fputs("\nmemory over time", out);
    if (se->n == 0) {
        fputs(snapshot               ? ": none, a snapshot keeps no order in time\n"
              : an->summary.leaks_only ? ": none, a leaks-only trace keeps no order in time\n"
                                       : ": none, the trace has no calls\n",
              out);
        return;
    }
    size_t per = (se->n + SERIES_ROWS - 1) / SERIES_ROWS;
    uint64_t width = se->width * per;
    fprintf(out, " (by %s, rows of %" PRIu64 " %s):\n", se->by_time ? "time" : "call index",
            width, se->by_time ? "us" : "calls");
    fprintf(out, "  %16s %12s %12s %10s %12s%s\n", se->by_time ? "from (s)" : "from (call)",
            "live", "max live", "allocs", "alloc bytes", se->by_time ? "   alloc rate" : "");
    char h1[32], h2[32], h3[32], h4[32];
    for (size_t i = 0; i < se->n; i += per) {
        at_an_point p = se->points[i];
        for (size_t j = i + 1; j < i + per && j < se->n; j++) {
            const at_an_point *q = &se->points[j];
            p.live_bytes = q->live_bytes;
            if (q->max_live_bytes > p.max_live_bytes)
                p.max_live_bytes = q->max_live_bytes;
            p.allocations += q->allocations;
            p.allocated_bytes += q->allocated_bytes;
        }
        if (se->by_time)
            fprintf(out, "  %9" PRIu64 ".%06" PRIu64, p.start / 1000000, p.start % 1000000);
        else
            fprintf(out, "  %16" PRIu64, p.start + an->summary.first_index);
        fprintf(out, " %12s %12s %10" PRIu64 " %12s", at_an_human(p.live_bytes, h1, sizeof h1),
                at_an_human(p.max_live_bytes, h2, sizeof h2), p.allocations,
                at_an_human(p.allocated_bytes, h3, sizeof h3));
        if (se->by_time) /* bytes per second over the row's width */
            fprintf(out, " %10s/s",
                    at_an_human((uint64_t)((double)p.allocated_bytes * 1e6 / (double)width), h4,
                                sizeof h4));
        fputc('\n', out);
    }
}

static void histogram(FILE *out, const at_analysis *an)
{
    const at_an_histogram *h = &an->histogram;
    if (!an->summary.allocations)
        return;
    fputs("\nallocation sizes (calls per size class):\n", out);
    char a[32], b[32];
    for (unsigned c = 0; c < AT_AN_CLASSES; c++) {
        if (!h->count[c])
            continue;
        if (c == 0)
            fprintf(out, "  %21s", "0 B");
        else
            fprintf(out, "  %9s .. < %-7s", at_an_human(at_an_class_min(c), a, sizeof a),
                    c < 64 ? at_an_human(at_an_class_min(c + 1), b, sizeof b) : "16 EiB");
        fprintf(out, " %10" PRIu64 " calls (%5.1f%%), %s\n", h->count[c],
                percent(h->count[c], an->summary.allocations),
                at_an_human(h->bytes[c], a, sizeof a));
    }
    fprintf(out, "most frequent sizes (of %zu distinct):", h->distinct);
    for (size_t i = 0; i < h->ntop; i++)
        fprintf(out, "%s %" PRIu64 " B x %" PRIu64, i ? "," : "", h->top[i].size,
                h->top[i].count);
    fputc('\n', out);
}

static void contexts(FILE *out, const at_analysis *an)
{
    if (an->ncontexts == 0 || (an->ncontexts == 1 && an->contexts[0].bit == AT_AN_NO_CONTEXT))
        return;
    fputs("\nper context:\n", out);
    fprintf(out, "  %-20s %10s %14s %14s %10s %14s\n", "context", "calls", "bytes",
            an->summary.leaks_only ? "" : "at peak", an->summary.leaks_only ? "" : "temporary",
            "leaked");
    for (size_t i = 0; i < an->ncontexts; i++) {
        const at_an_context *c = &an->contexts[i];
        char name[64];
        if (c->bit == AT_AN_NO_CONTEXT)
            snprintf(name, sizeof name, "(none)");
        else
            snprintf(name, sizeof name, "%#x %s", c->bit, c->name ? c->name : "");
        fprintf(out, "  %-20s %10" PRIu64 " %14" PRIu64, name, c->cost.calls, c->cost.bytes);
        if (an->summary.leaks_only)
            fprintf(out, " %14s %10s", "", "");
        else
            fprintf(out, " %14" PRIu64 " %10" PRIu64, c->cost.peak, c->cost.temporary);
        fprintf(out, " %14" PRIu64 "\n", c->cost.leaked);
    }
}

static void site_line(FILE *out, const at_analysis *an, size_t k, const at_an_site *s,
                      at_an_key key, const char *name)
{
    char h[32];
    const at_an_cost *c = &s->cost;
    fprintf(out, "%4zu. ", k + 1);
    switch (key) {
    case AT_AN_PEAK:
        fprintf(out, "%s (%" PRIu64 " bytes, %.1f%% of the peak) in %" PRIu64 " blocks",
                at_an_human(c->peak, h, sizeof h), c->peak, percent(c->peak, an->peak.bytes),
                c->peak_blocks);
        break;
    case AT_AN_BYTES:
        fprintf(out, "%s (%" PRIu64 " bytes, %.1f%%) in %" PRIu64 " calls",
                at_an_human(c->bytes, h, sizeof h), c->bytes,
                percent(c->bytes, an->summary.allocated_bytes), c->calls);
        break;
    case AT_AN_CALLS:
        fprintf(out, "%" PRIu64 " calls (%.1f%%), %" PRIu64 " bytes", c->calls,
                percent(c->calls, an->summary.allocations), c->bytes);
        break;
    case AT_AN_TEMPORARY:
        fprintf(out, "%" PRIu64 " temporary of %" PRIu64 " calls (%.1f%%)", c->temporary,
                c->calls, percent(c->temporary, c->calls));
        break;
    case AT_AN_LEAKED:
        fprintf(out, "%s (%" PRIu64 " bytes) in %" PRIu64 " blocks",
                at_an_human(c->leaked, h, sizeof h), c->leaked, c->leaked_blocks);
        break;
    case AT_AN_CACHED:
        fprintf(out, "%s (%" PRIu64 " bytes) in %" PRIu64 " blocks",
                at_an_human(c->cached, h, sizeof h), c->cached, c->cached_blocks);
        break;
    }
    fprintf(out, " by %s in %s\n", s->alloc_fn ? s->alloc_fn : "?", name);
}

static void ranked(FILE *out, const at_analysis *an, at_trace *t, at_an_key key,
                   const char *title, unsigned top)
{
    const at_an_site **v = at_xcalloc(top ? top : 1, sizeof *v);
    size_t n = at_an_rank(an, key, v, top);
    fprintf(out, "\ntop %zu sites by %s (of %zu sites):\n", n, title, an->nsites);
    if (n == 0)
        fputs("   (none)\n", out);
    char **names = at_an_site_names(v, n, t);
    for (size_t k = 0; k < n; k++) {
        site_line(out, an, k, v[k], key, names[k]);
        put_stack(out, v[k], t);
    }
    at_an_site_names_free(names, n);
    free(v);
}

int at_an_write_report(FILE *out, const at_analysis *an, at_trace *t, unsigned top)
{
    const at_header *hd = &t->header;
    fprintf(out, "alloctrace report: %s", hd->process && *hd->process ? hd->process : "(unknown)");
    if (hd->pid && *hd->pid)
        fprintf(out, ", pid %s", hd->pid);
    fputc('\n', out);
    /* Never an estimate beside an exact count: a sampled trace's report
     * says so before its first number, and every number is an estimate. */
    if (an->summary.sample_interval)
        fprintf(out, "estimates:    every count and size below is %s\n",
                at_sampling_note(an->summary.sample_interval));
    totals(out, an, hd->snapshot);
    series(out, an, hd->snapshot != NULL);
    histogram(out, an);
    contexts(out, an);
    if (!an->summary.leaks_only) {
        ranked(out, an, t, AT_AN_PEAK, "memory at the peak", top);
        ranked(out, an, t, AT_AN_BYTES, "bytes allocated", top);
        ranked(out, an, t, AT_AN_CALLS, "calls", top);
        if (!an->summary.sample_interval)
            ranked(out, an, t, AT_AN_TEMPORARY, "temporary allocations", top);
    }
    ranked(out, an, t, AT_AN_LEAKED, hd->snapshot ? "live bytes" : "leaked bytes", top);
    if (an->summary.cached_blocks)
        ranked(out, an, t, AT_AN_CACHED, AT_RUNTIME_WORDS " (not leaks)", top);
    return ferror(out) ? -1 : 0;
}
