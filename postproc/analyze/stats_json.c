/*
 * postproc/analyze/stats_json.c: --format stats, the analyses as one JSON
 * object for scripts and CI (outputs.h; names in docs/exports.md).
 *
 * Numbers are JSON integers, exact up to 2^64 (jq and Python read them
 * whole). What a trace cannot say is null, never 0: a leaks-only trace has
 * no peak, no temporaries and no series; a trace without times has no
 * peak time. Strings go through at_json_str, so the document always
 * parses whatever bytes the names hold.
 */
#include "outputs.h"
#include "json.h"
#include "xalloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *known(const char *s)
{
    return strcmp(s, AT_UNKNOWN) == 0 ? NULL : s;
}

static void u64(FILE *f, const char *key, uint64_t v, bool comma)
{
    fprintf(f, "\"%s\": %" PRIu64 "%s", key, v, comma ? ", " : "");
}

/* `sampled`: temporaries are not estimated from a sample (analyze.c). */
static void cost(FILE *f, const at_an_cost *c, bool leaks_only, bool sampled)
{
    u64(f, "calls", c->calls, true);
    u64(f, "bytes", c->bytes, true);
    if (leaks_only) {
        fputs("\"peak\": null, \"peak_blocks\": null, \"temporary\": null, ", f);
    } else {
        u64(f, "peak", c->peak, true);
        u64(f, "peak_blocks", c->peak_blocks, true);
        if (sampled)
            fputs("\"temporary\": null, ", f);
        else
            u64(f, "temporary", c->temporary, true);
    }
    u64(f, "leaked", c->leaked, true);
    u64(f, "leaked_blocks", c->leaked_blocks, true);
    u64(f, "cached", c->cached, true);
    u64(f, "cached_blocks", c->cached_blocks, false);
}

static void site(FILE *f, const at_an_site *s, at_trace *t, bool leaks_only, bool sampled,
                 const char *name)
{
    fputs("{", f);
    cost(f, &s->cost, leaks_only, sampled);
    fputs(", \"alloc_fn\": ", f);
    at_json_str(f, s->alloc_fn);
    fputs(", \"name\": ", f);
    at_json_str(f, name);
    fputs(", \"frames\": [", f);
    at_frame_info *infos = at_xcalloc(s->stack->nframes + 1, sizeof *infos);
    uint32_t n = at_an_site_frames(s, t, infos);
    for (uint32_t i = 0; i < n; i++) {
        fprintf(f, "%s{\"address\": \"0x%" PRIx64 "\", \"function\": ", i ? ", " : "",
                infos[i].addr);
        at_json_str(f, known(infos[i].function));
        fputs(", \"file\": ", f);
        at_json_str(f, known(infos[i].file));
        fputs(", \"line\": ", f);
        if (infos[i].line)
            fprintf(f, "%u", infos[i].line);
        else
            fputs("null", f);
        fputs(", \"module\": ", f);
        at_json_str(f, known(infos[i].module));
        char place[512];
        fputs(", \"place\": ", f);
        at_json_str(f, at_frame_place(&infos[i], place, sizeof place));
        fputs("}", f);
    }
    free(infos);
    fputs("]}", f);
}

static void summary(FILE *f, const at_analysis *an)
{
    const at_an_summary *s = &an->summary;
    bool lo = s->leaks_only;
    u64(f, "allocations", s->allocations, true);
    if (lo)
        fputs("\"releases\": null, ", f);
    else
        u64(f, "releases", s->releases, true);
    u64(f, "allocated_bytes", s->allocated_bytes, true);
    if (lo || s->sample_interval)
        fputs("\"temporary_allocations\": null, ", f);
    else
        u64(f, "temporary_allocations", s->temporary, true);
    u64(f, "leaked_bytes", s->leaked_bytes, true);
    u64(f, "leaked_blocks", s->leaked_blocks, true);
    u64(f, "cached_bytes", s->cached_bytes, true);
    u64(f, "cached_blocks", s->cached_blocks, true);
    u64(f, "unknown_releases", s->unknown_releases, true);
    u64(f, "lost_releases", s->reused_ids, true);
    u64(f, "other_resource_calls", s->other_calls, true);
    u64(f, "first_index", s->first_index, true);
    u64(f, "last_index", s->last_index, true);
    fprintf(f, "\"leaks_only\": %s, ", lo ? "true" : "false");
    /* A sampled trace: every count and size is an estimate (sampling.h). */
    fprintf(f, "\"estimated\": %s, ", s->sample_interval ? "true" : "false");
    if (s->sample_interval)
        u64(f, "sample_interval", s->sample_interval, true);
    else
        fputs("\"sample_interval\": null, ", f);
    if (s->has_time)
        u64(f, "duration_us", s->duration_us, true);
    else
        fputs("\"duration_us\": null, ", f);
    if (lo || an->peak.index == 0) {
        fputs("\"peak\": null, ", f);
    } else {
        fputs("\"peak\": {", f);
        u64(f, "bytes", an->peak.bytes, true);
        u64(f, "blocks", an->peak.blocks, true);
        u64(f, "index", an->peak.index, true);
        u64(f, "allocation", an->peak.allocation, true);
        if (an->peak.has_time)
            u64(f, "time_us", an->peak.time_us, false);
        else
            fputs("\"time_us\": null", f);
        fputs("}, ", f);
    }
}

static void histogram(FILE *f, const at_an_histogram *h)
{
    fputs("\"histogram\": {\"classes\": [", f);
    bool first = true;
    for (unsigned c = 0; c < AT_AN_CLASSES; c++) {
        if (!h->count[c])
            continue;
        fprintf(f, "%s{", first ? "" : ", ");
        first = false;
        u64(f, "min", at_an_class_min(c), true);
        if (c == 0)
            u64(f, "max", 0, true);
        else
            u64(f, "max", c < 64 ? at_an_class_min(c + 1) - 1 : UINT64_MAX, true);
        u64(f, "count", h->count[c], true);
        u64(f, "bytes", h->bytes[c], false);
        fputs("}", f);
    }
    fputs("], \"top_sizes\": [", f);
    for (size_t i = 0; i < h->ntop; i++)
        fprintf(f, "%s{\"size\": %" PRIu64 ", \"count\": %" PRIu64 "}", i ? ", " : "",
                h->top[i].size, h->top[i].count);
    fprintf(f, "], \"distinct_sizes\": %zu}, ", h->distinct);
}

static void series(FILE *f, const at_an_series *se)
{
    if (se->n == 0) {
        fputs("\"series\": null, ", f);
        return;
    }
    fprintf(f, "\"series\": {\"axis\": \"%s\", ", se->by_time ? "time_us" : "index");
    u64(f, "width", se->width, false);
    fputs(", \"points\": [", f);
    for (size_t i = 0; i < se->n; i++) {
        const at_an_point *p = &se->points[i];
        fprintf(f, "%s{", i ? ", " : "");
        u64(f, "start", p->start, true);
        u64(f, "live_bytes", p->live_bytes, true);
        u64(f, "max_live_bytes", p->max_live_bytes, true);
        u64(f, "allocations", p->allocations, true);
        u64(f, "allocated_bytes", p->allocated_bytes, true);
        u64(f, "releases", p->releases, true);
        u64(f, "temporary", p->temporary, false);
        fputs("}", f);
    }
    fputs("]}, ", f);
}

static void contexts(FILE *f, const at_analysis *an)
{
    fputs("\"contexts\": [", f);
    for (size_t i = 0; i < an->ncontexts; i++) {
        const at_an_context *c = &an->contexts[i];
        fprintf(f, "%s{\"bit\": %u, \"name\": ", i ? ", " : "", c->bit);
        at_json_str(f, c->name);
        fputs(", ", f);
        u64(f, "releases", c->releases, true);
        cost(f, &c->cost, an->summary.leaks_only, an->summary.sample_interval != 0);
        fputs("}", f);
    }
    fputs("], ", f);
}

static void tops(FILE *f, const at_analysis *an, at_trace *t, unsigned top)
{
    static const at_an_key keys[] = { AT_AN_CALLS, AT_AN_BYTES, AT_AN_PEAK, AT_AN_TEMPORARY,
                                      AT_AN_LEAKED, AT_AN_CACHED };
    const at_an_site **v = at_xcalloc(top ? top : 1, sizeof *v);
    fprintf(f, "\"sites\": %zu, \"top\": {", an->nsites);
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        fprintf(f, "%s\"%s\": ", k ? ", " : "", at_an_key_name(keys[k]));
        bool none = (an->summary.leaks_only && keys[k] != AT_AN_LEAKED &&
                     keys[k] != AT_AN_CALLS && keys[k] != AT_AN_BYTES && keys[k] != AT_AN_CACHED) ||
                    (an->summary.sample_interval && keys[k] == AT_AN_TEMPORARY);
        if (none) {
            fputs("null", f);
            continue;
        }
        size_t n = at_an_rank(an, keys[k], v, top);
        char **names = at_an_site_names(v, n, t);
        fputs("[", f);
        for (size_t i = 0; i < n; i++) {
            fputs(i ? ", " : "", f);
            site(f, v[i], t, an->summary.leaks_only, an->summary.sample_interval != 0, names[i]);
        }
        fputs("]", f);
        at_an_site_names_free(names, n);
    }
    fputs("}", f);
    free(v);
}

int at_an_write_stats(FILE *f, const at_analysis *an, at_trace *t, unsigned top)
{
    fputs("{\"process\": ", f);
    at_json_str(f, t->header.process);
    fputs(", \"pid\": ", f);
    at_json_str(f, t->header.pid);
    /* A snapshot's "N LABEL": its leaked_* are the blocks live then. */
    fputs(", \"snapshot\": ", f);
    at_json_str(f, t->header.snapshot);
    fputs(", ", f);
    summary(f, an);
    histogram(f, &an->histogram);
    series(f, &an->series);
    contexts(f, an);
    tops(f, an, t, top);
    fputs("}\n", f);
    return ferror(f) ? -1 : 0;
}
