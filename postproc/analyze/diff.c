/*
 * postproc/analyze/diff.c: --diff OLD NEW, what grew and what shrank
 * between two runs (outputs.h).
 *
 * Sites are matched by the leak gate's baseline key (baseline.c): the
 * frames' function names and file base names from main inwards, no lines
 * and no addresses, so two builds of one program, or two checkouts in
 * other directories, still compare; sites of one run with the same key are
 * summed. A frame without a name is keyed by its module and offset
 * (site_key), so a stripped program's sites stay apart, and the output says
 * how many sites have such frames: they match only the same binary.
 *
 * Ranking: by the largest absolute change in bytes, peak or leaked bytes,
 * then in calls, then by key, so the output is stable.
 */
#include "outputs.h"
#include "gate.h"
#include "runtime.h"
#include "xalloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char *key;
    at_an_cost cost[2];
    bool seen[2];
} entry;

typedef struct run_totals {
    at_an_summary summary;
    at_an_peak peak;
    uint64_t unresolved; /* sites with a frame without a function name */
    bool added;
} run_totals;

struct at_an_diff {
    entry *v;
    size_t n, cap;
    size_t *slots; /* open addressing on the key: index + 1 */
    size_t nslots;
    run_totals run[2];
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void rehash(at_an_diff *d)
{
    free(d->slots);
    d->nslots = d->nslots ? d->nslots * 2 : 1024;
    d->slots = at_xcalloc(d->nslots, sizeof *d->slots);
    for (size_t i = 0; i < d->n; i++) {
        size_t j = hash_str(d->v[i].key) & (d->nslots - 1);
        while (d->slots[j])
            j = (j + 1) & (d->nslots - 1);
        d->slots[j] = i + 1;
    }
}

/* The entry of key; takes the malloc'ed key or frees it. */
static entry *entry_for(at_an_diff *d, char *key)
{
    if ((d->n + 1) * 2 > d->nslots)
        rehash(d);
    size_t j = hash_str(key) & (d->nslots - 1);
    for (; d->slots[j]; j = (j + 1) & (d->nslots - 1))
        if (strcmp(d->v[d->slots[j] - 1].key, key) == 0) {
            free(key);
            return &d->v[d->slots[j] - 1];
        }
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 256;
        d->v = at_xreallocarray(d->v, d->cap, sizeof *d->v);
    }
    d->v[d->n] = (entry){ .key = key };
    d->slots[j] = ++d->n;
    return &d->v[d->n - 1];
}

at_an_diff *at_an_diff_new(void)
{
    return at_xcalloc(1, sizeof(at_an_diff));
}

void at_an_diff_free(at_an_diff *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        free(d->v[i].key);
    free(d->v);
    free(d->slots);
    free(d);
}

static void add_cost(at_an_cost *to, const at_an_cost *c)
{
    to->calls += c->calls;
    to->bytes += c->bytes;
    to->peak += c->peak;
    to->peak_blocks += c->peak_blocks;
    to->temporary += c->temporary;
    to->leaked += c->leaked;
    to->leaked_blocks += c->leaked_blocks;
    to->cached += c->cached;
    to->cached_blocks += c->cached_blocks;
}

/* A site's key: at_baseline_key's function@file per frame from main
 * inwards, but a frame without a name is its module and offset
 * ("gawk+0x2f3a1"), which the same binary gives in every run, rather than
 * "??@gawk", which every unnamed frame of gawk gives: sites of a stripped
 * program stay apart. *unnamed is set when a frame had no name. */
static char *site_key(const at_frame_info *frames, uint32_t n, bool *unnamed)
{
    n = at_gate_frames_to_main(frames, n);
    size_t len = 1;
    for (uint32_t i = 0; i < n; i++)
        len += strlen(frames[i].function) + strlen(frames[i].file) + strlen(frames[i].module) +
               64;
    char *key = at_xrealloc(NULL, len), *w = key;
    *w = '\0';
    for (uint32_t i = n; i-- > 0;) {
        const at_frame_info *f = &frames[i];
        const char *sep = i + 1 < n ? " -> " : "";
        char place[512];
        if (strcmp(f->function, AT_UNKNOWN) == 0) {
            *unnamed = true;
            w += sprintf(w, "%s%s", sep, at_frame_place(f, place, sizeof place));
        } else {
            const char *where = strcmp(f->file, AT_UNKNOWN) != 0 ? f->file : f->module;
            w += sprintf(w, "%s%s@%s", sep, f->function, at_path_base(where));
        }
    }
    return key;
}

void at_an_diff_add(at_an_diff *d, int which, const at_analysis *an, at_trace *t)
{
    run_totals *r = &d->run[which];
    r->summary = an->summary;
    r->peak = an->peak;
    r->added = true;
    for (size_t i = 0; i < an->nsites; i++) {
        const at_an_site *s = &an->sites[i];
        at_frame_info *infos = at_xcalloc(s->stack->nframes + 1, sizeof *infos);
        at_frame_read_stack(s->stack, t->maps, t->stacks, infos);
        bool unnamed = false;
        entry *e = entry_for(d, site_key(infos, s->stack->nframes, &unnamed));
        r->unresolved += unnamed;
        free(infos);
        add_cost(&e->cost[which], &s->cost);
        e->seen[which] = true;
    }
}

static int64_t delta(uint64_t old, uint64_t new)
{
    return (int64_t)(new - old);
}

static uint64_t magnitude(const entry *e)
{
    int64_t v[] = { delta(e->cost[0].bytes, e->cost[1].bytes),
                    delta(e->cost[0].peak, e->cost[1].peak),
                    delta(e->cost[0].leaked, e->cost[1].leaked) };
    uint64_t m = 0;
    for (int i = 0; i < 3; i++) {
        uint64_t a = v[i] < 0 ? (uint64_t)-v[i] : (uint64_t)v[i];
        if (a > m)
            m = a;
    }
    return m;
}

static uint64_t calls_change(const entry *e)
{
    int64_t c = delta(e->cost[0].calls, e->cost[1].calls);
    return c < 0 ? (uint64_t)-c : (uint64_t)c;
}

static int by_change(const void *x, const void *y)
{
    const entry *a = *(const entry *const *)x, *b = *(const entry *const *)y;
    uint64_t ma = magnitude(a), mb = magnitude(b);
    if (ma != mb)
        return ma < mb ? 1 : -1;
    uint64_t ca = calls_change(a), cb = calls_change(b);
    if (ca != cb)
        return ca < cb ? 1 : -1;
    return strcmp(a->key, b->key);
}

static bool changed(const entry *e)
{
    return e->cost[0].calls != e->cost[1].calls || e->cost[0].bytes != e->cost[1].bytes ||
           e->cost[0].peak != e->cost[1].peak || e->cost[0].leaked != e->cost[1].leaked;
}

static bool changed_entry(const entry *e)
{
    return changed(e);
}

static void total_row(FILE *out, const char *name, uint64_t old, uint64_t new, bool known)
{
    if (!known) {
        fprintf(out, "  %-18s %14s %14s %14s\n", name, "-", "-", "(not in a trace)");
        return;
    }
    fprintf(out, "  %-18s %14" PRIu64 " %14" PRIu64 " %+14" PRId64, name, old, new,
            delta(old, new));
    if (old)
        fprintf(out, " (%+.1f%%)", 100.0 * (double)delta(old, new) / (double)old);
    fputc('\n', out);
}

static void totals(FILE *out, const at_an_diff *d)
{
    const at_an_summary *o = &d->run[0].summary, *n = &d->run[1].summary;
    bool timed = !o->leaks_only && !n->leaks_only;
    fprintf(out, "  %-18s %14s %14s %14s\n", "", "old", "new", "change");
    total_row(out, "allocations", o->allocations, n->allocations, true);
    total_row(out, "allocated bytes", o->allocated_bytes, n->allocated_bytes, true);
    total_row(out, "peak bytes", d->run[0].peak.bytes, d->run[1].peak.bytes, timed);
    total_row(out, "temporary", o->temporary, n->temporary, timed);
    total_row(out, "leaked bytes", o->leaked_bytes, n->leaked_bytes, true);
    total_row(out, "leaked blocks", o->leaked_blocks, n->leaked_blocks, true);
    if (o->cached_blocks || n->cached_blocks)
        total_row(out, AT_RUNTIME_WORDS, o->cached_bytes, n->cached_bytes, true);
}

static void site_change(FILE *out, size_t k, const entry *e)
{
    const at_an_cost *o = &e->cost[0], *n = &e->cost[1];
    const char *state = !e->seen[0] ? " [new]" : !e->seen[1] ? " [gone]" : "";
    fprintf(out, "%4zu. bytes %+" PRId64 ", calls %+" PRId64 ", peak %+" PRId64
                 ", leaked %+" PRId64 "%s\n",
            k + 1, delta(o->bytes, n->bytes), delta(o->calls, n->calls),
            delta(o->peak, n->peak), delta(o->leaked, n->leaked), state);
    fprintf(out, "        now %" PRIu64 " bytes in %" PRIu64 " calls, %" PRIu64
                 " at the peak, %" PRIu64 " leaked\n",
            n->bytes, n->calls, n->peak, n->leaked);
    fprintf(out, "        %s\n", *e->key ? e->key : "(no backtrace)");
}

at_an_diff_row *at_an_diff_rows(const at_an_diff *d, unsigned top, size_t *nrows, size_t *changed,
                                size_t *sites)
{
    const entry **v = at_xcalloc(d->n ? d->n : 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        if (changed_entry(&d->v[i]))
            v[n++] = &d->v[i];
    qsort(v, n, sizeof *v, by_change);
    size_t k = n < top ? n : top;
    at_an_diff_row *rows = at_xcalloc(k ? k : 1, sizeof *rows);
    for (size_t i = 0; i < k; i++)
        rows[i] = (at_an_diff_row){ .key = v[i]->key,
                                    .cost = { v[i]->cost[0], v[i]->cost[1] },
                                    .seen = { v[i]->seen[0], v[i]->seen[1] } };
    free(v);
    *nrows = k;
    *changed = n;
    *sites = d->n;
    return rows;
}

void at_an_diff_run(const at_an_diff *d, int which, at_an_summary *s, at_an_peak *p,
                    uint64_t *unnamed)
{
    *s = d->run[which].summary;
    *p = d->run[which].peak;
    *unnamed = d->run[which].unresolved;
}

int at_an_diff_write(FILE *out, const at_an_diff *d, const char *old_name, const char *new_name,
                     unsigned top)
{
    fprintf(out, "alloctrace diff: %s -> %s\n", old_name, new_name);
    for (int w = 0; w < 2; w++)
        if (d->run[w].unresolved)
            fprintf(out, "note: %s has %" PRIu64 " sites with frames without function names, "
                         "matched by module and offset (only the same binary matches); resolve "
                         "(-r, with debug info) so that they match by function\n",
                    w ? new_name : old_name, d->run[w].unresolved);
    totals(out, d);
    const entry **v = at_xcalloc(d->n ? d->n : 1, sizeof *v);
    size_t n = 0, grew = 0, shrank = 0, fresh = 0, gone = 0;
    for (size_t i = 0; i < d->n; i++) {
        const entry *e = &d->v[i];
        if (!changed(e))
            continue;
        v[n++] = e;
        fresh += !e->seen[0];
        gone += !e->seen[1];
        if (e->seen[0] && e->seen[1]) {
            int64_t score = delta(e->cost[0].bytes, e->cost[1].bytes) +
                            delta(e->cost[0].peak, e->cost[1].peak) +
                            delta(e->cost[0].leaked, e->cost[1].leaked);
            if (score == 0)
                score = delta(e->cost[0].calls, e->cost[1].calls);
            grew += score > 0;
            shrank += score <= 0;
        }
    }
    qsort(v, n, sizeof *v, by_change);
    fprintf(out, "\nsites that changed: %zu of %zu (%zu grew, %zu shrank, %zu new, %zu gone); "
                 "top %zu by the largest change:\n",
            n, d->n, grew, shrank, fresh, gone, n < top ? n : (size_t)top);
    if (n == 0)
        fputs("   (none)\n", out);
    for (size_t k = 0; k < n && k < top; k++)
        site_change(out, k, v[k]);
    free(v);
    return ferror(out) ? -1 : 0;
}
