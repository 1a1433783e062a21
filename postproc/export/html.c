/*
 * postproc/export/html.c: the HTML report (html.h).
 *
 * Decisions:
 *   - One file, nothing fetched: the style and the script (assets/) are
 *     inlined, the numbers are one JSON object in a <script
 *     type="application/json"> element that the script reads, and every
 *     picture is drawn by the script in the page. It opens from disk in
 *     any current browser, offline.
 *   - The page carries numbers, not drawings, so switching the flame
 *     graph's cost (bytes, calls, peak, temporary, leaked) needs no second
 *     copy: each frame holds all five costs. Frame names are interned
 *     (one array of names, frames refer to them by index) and the frames
 *     are one flat array of integers, so a trace with thousands of stacks
 *     stays a few hundred KB; the size depends on distinct stacks, never
 *     on the number of calls.
 *   - The flame graph's frames are flame.h's, built from the analysis'
 *     sites through the cost graph (profile.h), so the folded stacks, the
 *     SVG and this page show the same frames and names.
 *   - The tables list the top sites per cost (AT_HTML_TOP, or --top) with
 *     their whole backtrace; backtrace lines are interned like frame names.
 */
#include "html.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "outputs.h"
#include "assets.h"
#include "export.h"
#include "flame.h"
#include "frame.h"
#include "gate.h"
#include "json.h"
#include "markup.h"
#include "xalloc.h"

static const at_an_key keys[] = { AT_AN_CALLS, AT_AN_BYTES, AT_AN_PEAK, AT_AN_TEMPORARY,
                                  AT_AN_LEAKED };
#define NKEYS (sizeof keys / sizeof *keys)

static void put_field(FILE *out, const char *name, uint64_t v, bool comma)
{
    fprintf(out, "%s\"%s\":%llu", comma ? "," : "", name, (unsigned long long)v);
}

static void put_bool(FILE *out, const char *name, bool v)
{
    fprintf(out, ",\"%s\":%s", name, v ? "true" : "false");
}

static void put_costs(FILE *out, const at_an_cost *c)
{
    for (size_t k = 0; k < NKEYS; k++) {
        fputc(',', out);
        at_put_u64(out, at_an_cost_get(c, keys[k]));
    }
}

static void summary(FILE *out, const at_analysis *an)
{
    const at_an_summary *s = &an->summary;
    fputs("\"summary\":{", out);
    put_field(out, "allocations", s->allocations, false);
    put_field(out, "releases", s->releases, true);
    put_field(out, "allocated_bytes", s->allocated_bytes, true);
    put_field(out, "temporary", s->temporary, true);
    put_field(out, "leaked_bytes", s->leaked_bytes, true);
    put_field(out, "leaked_blocks", s->leaked_blocks, true);
    put_field(out, "cached_bytes", s->cached_bytes, true);
    put_field(out, "cached_blocks", s->cached_blocks, true);
    put_field(out, "unknown_releases", s->unknown_releases, true);
    put_field(out, "first_index", s->first_index, true);
    put_field(out, "last_index", s->last_index, true);
    put_field(out, "duration_us", s->duration_us, true);
    put_bool(out, "has_time", s->has_time);
    put_bool(out, "leaks_only", s->leaks_only);
    put_field(out, "sample_interval", s->sample_interval, true);
    fputs("},\"peak\":{", out);
    put_field(out, "bytes", an->peak.bytes, false);
    put_field(out, "blocks", an->peak.blocks, true);
    put_field(out, "index", an->peak.index, true);
    put_field(out, "allocation", an->peak.allocation, true);
    if (an->peak.has_time)
        put_field(out, "time_us", an->peak.time_us, true);
    fputs("}", out);
}

static void series(FILE *out, const at_an_series *s)
{
    fprintf(out, ",\"series\":{\"by_time\":%s", s->by_time ? "true" : "false");
    put_field(out, "width", s->width, true);
    fputs(",\"points\":[", out);
    for (size_t i = 0; i < s->n; i++) {
        const at_an_point *p = &s->points[i];
        fprintf(out, "%s%llu,%llu,%llu,%llu,%llu,%llu,%llu", i ? "," : "",
                (unsigned long long)p->start, (unsigned long long)p->live_bytes,
                (unsigned long long)p->max_live_bytes, (unsigned long long)p->allocations,
                (unsigned long long)p->allocated_bytes, (unsigned long long)p->releases,
                (unsigned long long)p->temporary);
    }
    fputs("]}", out);
}

static void histogram(FILE *out, const at_an_histogram *h)
{
    fputs(",\"histogram\":{\"count\":[", out);
    for (unsigned k = 0; k < AT_AN_CLASSES; k++) {
        if (k)
            fputc(',', out);
        at_put_u64(out, h->count[k]);
    }
    fputs("],\"top\":[", out);
    for (size_t i = 0; i < h->ntop; i++)
        fprintf(out, "%s[%llu,%llu]", i ? "," : "", (unsigned long long)h->top[i].size,
                (unsigned long long)h->top[i].count);
    fputs("]}", out);
}

/* ---- the flame graph ------------------------------------------------------ */

typedef struct site_costs {
    const at_analysis *an;
    const at_profile *p;
    const uint32_t *site_of; /* per stack id: its site */
} site_costs;

static void costs_of_path(void *ctx, size_t path, uint64_t *cost)
{
    const site_costs *sc = ctx;
    const at_an_site *s = &sc->an->sites[sc->site_of[sc->p->paths[path].stack->id]];
    for (size_t k = 0; k < NKEYS; k++)
        cost[k] = at_an_cost_get(&s->cost, keys[k]);
}

/* The frames as JSON: "names" (interned), "allocators" (which names are
 * allocation functions), "nodes" (name, parent or -1, then the costs, per
 * frame, parents first). */
static void put_flame(FILE *out, const at_flame *f)
{
    fputs(",\"names\":[", out);
    for (uint32_t i = 0; i < f->nnames; i++) {
        if (i)
            fputc(',', out);
        at_json_str_html(out, f->names[i]);
    }
    fputs("],\"allocators\":[", out);
    for (uint32_t i = 0, k = 0; i < f->nnames; i++)
        if (f->allocator[i])
            fprintf(out, "%s%u", k++ ? "," : "", i);
    fputs("],\"nodes\":[", out);
    for (uint32_t i = 0; i < f->nnodes; i++) {
        const at_fnode *nd = &f->nodes[i];
        if (i)
            fputc(',', out);
        at_put_u64(out, nd->name);
        if (i) {
            fputc(',', out);
            at_put_u64(out, nd->parent);
        } else {
            fputs(",-1", out);
        }
        for (unsigned k = 0; k < NKEYS; k++) {
            fputc(',', out);
            at_put_u64(out, nd->cost[k]);
        }
    }
    fputs("]", out);
}

/* What the views the page computes itself need (report.js): per site its
 * leaf in the tree ("site_leaf") and its five costs ("site_costs"), which
 * names are allocation wrappers or the standard library ("wrappers": a
 * bottom-up row starts past them), and the per-site timeline ("ticks":
 * site, interval, allocations, bytes, temporaries, live bytes at the
 * interval's end; an interval spans 2^tick_shift of the series'). */
static void put_sites(FILE *out, const at_analysis *an, const at_profile *p, const at_flame *f,
                      const uint32_t *site_of)
{
    uint32_t *leaf = at_xcalloc(an->nsites ? an->nsites : 1, sizeof *leaf);
    for (size_t i = 0; i < p->npaths; i++)
        leaf[site_of[p->paths[i].stack->id]] = f->path_leaf[i];
    fputs(",\"site_leaf\":[", out);
    for (size_t i = 0; i < an->nsites; i++)
        fprintf(out, "%s%u", i ? "," : "", leaf[i]);
    fputs("],\"site_costs\":[", out);
    for (size_t i = 0; i < an->nsites; i++) {
        for (size_t k = 0; k < NKEYS; k++) {
            if (i || k)
                fputc(',', out);
            at_put_u64(out, at_an_cost_get(&an->sites[i].cost, keys[k]));
        }
    }
    fputs("],\"site_cached\":[", out);
    for (size_t i = 0, k = 0; i < an->nsites; i++)
        if (an->sites[i].cost.cached)
            fprintf(out, "%s[%zu,%llu]", k++ ? "," : "", i,
                    (unsigned long long)an->sites[i].cost.cached);
    fputs("],\"wrappers\":[", out);
    for (uint32_t i = 0, k = 0; i < f->nnames; i++)
        if (at_gate_is_wrapper(f->names[i]))
            fprintf(out, "%s%u", k++ ? "," : "", i);
    fprintf(out, "],\"tick_shift\":%u,\"ticks\":[", an->tick_shift);
    for (size_t i = 0; i < an->nticks; i++) {
        const at_an_tick *tk = &an->ticks[i];
        fprintf(out, "%s%u,%u,%llu,%llu,%llu,%llu", i ? "," : "", tk->site, tk->interval,
                (unsigned long long)tk->allocations, (unsigned long long)tk->bytes,
                (unsigned long long)tk->temporary, (unsigned long long)tk->live);
    }
    fputc(']', out);
    free(leaf);
}

/* The flame graph of the sites, every frame with the five costs. */
static void flame(FILE *out, const at_analysis *an, at_trace *t, bool short_names)
{
    size_t n = an->nsites;
    at_sample *samples = at_xcalloc(n ? n : 1, sizeof *samples);
    uint32_t nstacks = at_stacks_count(t->stacks);
    uint32_t *site_of = at_xcalloc(nstacks ? nstacks : 1, sizeof *site_of);
    for (size_t i = 0; i < n; i++) {
        const at_an_site *s = &an->sites[i];
        samples[i] = (at_sample){ s->stack, s->alloc_fn, s->cost.bytes, s->cost.calls };
        site_of[s->stack->id] = (uint32_t)i;
    }
    at_profile *p = at_profile_build(samples, n, t->maps, t->stacks);
    site_costs sc = { an, p, site_of };
    at_flame *f = at_flame_build(p, short_names, NKEYS, costs_of_path, &sc);
    put_flame(out, f);
    put_sites(out, an, p, f, site_of);
    at_flame_free(f);
    at_profile_free(p);
    free(site_of);
    free(samples);
}

/* ---- the ranked tables ------------------------------------------------------ */

typedef struct strings {
    const char **v;
    size_t n, cap;
} strings;

/* Index of s among the strings kept so far (linear: a few hundred at most). */
static size_t string_id(strings *st, const char *s)
{
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->v[i], s) == 0)
            return i;
    if (st->n == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 64;
        st->v = at_xreallocarray(st->v, st->cap, sizeof *st->v);
    }
    st->v[st->n] = s;
    return st->n++;
}

/* "function at file:line", "function in module", "0xADDR": one line of a
 * backtrace as the tables show it. Kept in the trace's arena. */
static const char *frame_line(const at_frame_info *fi, at_trace *t, bool short_names)
{
    char *s, place[512];
    bool function = strcmp(fi->function, AT_UNKNOWN) != 0;
    bool module = strcmp(fi->module, AT_UNKNOWN) != 0;
    char *name = function && short_names ? at_short_name(fi->function) : NULL;
    const char *fn = name ? name : fi->function;
    if (function && strcmp(fi->file, AT_UNKNOWN) != 0 && fi->line)
        s = at_xasprintf("%s at %s:%u", fn, fi->file, fi->line);
    else if (function)
        s = at_xasprintf("%s in %s", fn, fi->module);
    else if (module)
        s = at_xasprintf("%s in %s", at_frame_place(fi, place, sizeof place), fi->module);
    else
        s = at_xasprintf("%s", at_frame_place(fi, place, sizeof place));
    const char *kept = at_stacks_strdup(t->stacks, s, strlen(s));
    free(s);
    free(name);
    return kept;
}

static void site(FILE *out, const at_an_site *s, at_trace *t, strings *st, bool short_names,
                 const char *name)
{
    at_frame_info *fi = at_xcalloc(s->stack->nframes ? s->stack->nframes : 1, sizeof *fi);
    at_frame_read_stack(s->stack, t->maps, t->stacks, fi);
    fputs("[[", out);
    for (uint32_t i = 0; i < s->stack->nframes; i++)
        fprintf(out, "%s%zu", i ? "," : "", string_id(st, frame_line(&fi[i], t, short_names)));
    fputs("],", out);
    at_json_str_html(out, s->alloc_fn ? s->alloc_fn : "?");
    put_costs(out, &s->cost);
    fputc(',', out);
    at_json_str_html(out, name);
    fputc(']', out);
    free(fi);
}

/* The top sites of each cost: "sites" lists each once, "top" refers to
 * them by position; "lines" holds the backtrace lines they use. */
static void tables(FILE *out, const at_analysis *an, at_trace *t, bool short_names, unsigned ntable)
{
    const at_an_site **top[NKEYS];
    size_t ntop[NKEYS];
    const at_an_site **listed = at_xcalloc(NKEYS * (size_t)ntable + 1, sizeof *listed);
    size_t nlisted = 0;
    strings st = { 0 };
    for (size_t k = 0; k < NKEYS; k++) {
        top[k] = at_xcalloc((size_t)ntable + 1, sizeof *top[k]);
        ntop[k] = at_an_rank(an, keys[k], top[k], ntable);
        for (size_t i = 0; i < ntop[k]; i++) {
            size_t j = 0;
            while (j < nlisted && listed[j] != top[k][i])
                j++;
            if (j == nlisted)
                listed[nlisted++] = top[k][i];
        }
    }
    /* Named together, so that no two rows of the page read alike. */
    char **names = at_an_site_names(listed, nlisted, t);
    fputs(",\"sites\":[", out);
    for (size_t j = 0; j < nlisted; j++) {
        if (j)
            fputc(',', out);
        site(out, listed[j], t, &st, short_names, names[j]);
    }
    at_an_site_names_free(names, nlisted);
    fputs("],\"top\":{", out);
    for (size_t k = 0; k < NKEYS; k++) {
        fprintf(out, "%s\"%s\":[", k ? "," : "", at_an_key_name(keys[k]));
        for (size_t i = 0; i < ntop[k]; i++) {
            size_t j = 0;
            while (listed[j] != top[k][i])
                j++;
            fprintf(out, "%s%zu", i ? "," : "", j);
        }
        fputc(']', out);
    }
    fputs("},\"lines\":[", out);
    for (size_t i = 0; i < st.n; i++) {
        if (i)
            fputc(',', out);
        at_json_str_html(out, st.v[i]);
    }
    fputc(']', out);
    free(st.v);
    free(listed);
    for (size_t k = 0; k < NKEYS; k++)
        free(top[k]);
}

static void contexts(FILE *out, const at_analysis *an)
{
    fputs(",\"contexts\":[", out);
    for (size_t i = 0; i < an->ncontexts; i++) {
        const at_an_context *c = &an->contexts[i];
        fprintf(out, "%s[", i ? "," : "");
        if (c->name)
            at_json_str_html(out, c->name);
        else
            fputs("null", out);
        fprintf(out, ",%u,%llu", c->bit, (unsigned long long)c->releases);
        put_costs(out, &c->cost);
        fputc(']', out);
    }
    fputc(']', out);
}

static void data(FILE *out, const at_analysis *an, at_trace *t, bool short_names, unsigned top)
{
    const at_header *h = &t->header;
    fputs("{\"process\":", out);
    at_json_str_html(out, h->process ? h->process : "");
    fputs(",\"pid\":", out);
    at_json_str_html(out, h->pid ? h->pid : "");
    fputs(",\"snapshot\":", out);   /* "N LABEL", or null */
    at_json_str_html(out, h->snapshot);
    fputs(",\"costs\":[", out);
    for (size_t k = 0; k < NKEYS; k++)
        fprintf(out, "%s\"%s\"", k ? "," : "", at_an_key_name(keys[k]));
    fputs("],", out);
    summary(out, an);
    series(out, &an->series);
    histogram(out, &an->histogram);
    flame(out, an, t, short_names);
    tables(out, an, t, short_names, top);
    contexts(out, an);
    fputs("}", out);
}

int at_export_html(FILE *out, const at_analysis *an, at_trace *t, bool short_names, unsigned top)
{
    const char *process = t->header.process ? t->header.process : "a trace";
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"alloctrace " AT_VERSION "\">\n<title>alloctrace: ",
          out);
    at_xml_put(out, process, strlen(process));
    fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>Allocations of <span id=\"process\">",
            at_asset_report_css);
    at_xml_put(out, process, strlen(process));
    fputs("</span></h1>\n", out);
    /* A sampled trace: said once, above every number (sampling.h). */
    if (an->summary.sample_interval)
        fprintf(out, "<p id=\"estimates\"><strong>Estimates:</strong> every number in this "
                     "report is estimated from a sample, one in %llu bytes on average "
                     "(temporary allocations are not estimated).</p>\n",
                (unsigned long long)an->summary.sample_interval);
    fputs("<noscript><p>This report draws its tables and charts with JavaScript; "
          "please allow it for this file.</p></noscript>\n"
          "<div id=\"report\"></div>\n"
          "<script id=\"data\" type=\"application/json\">",
          out);
    data(out, an, t, short_names, top);
    fprintf(out, "</script>\n<script>\n%s</script>\n</body>\n</html>\n", at_asset_report_js);
    if (ferror(out)) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}

typedef struct page {
    const at_html_opts *o;
    const at_analysis *an;
    at_trace *t;
} page;

static int write_page(FILE *f, void *arg)
{
    const page *p = arg;
    return at_export_html(f, p->an, p->t, p->o->short_names, p->o->top);
}

int at_html_print(void *opts, const at_analysis *an, at_trace *t)
{
    page p = { opts, an, t };
    return at_an_print_to(((const at_html_opts *)opts)->fd, write_page, &p);
}
