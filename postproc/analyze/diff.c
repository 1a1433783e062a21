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
#include "alloctrace/format.h"
#include "gate.h"
#include "leakkind.h"
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

const char *at_an_diff_mixed(const at_an_diff *d)
{
    bool s0 = d->run[0].summary.sample_interval != 0, s1 = d->run[1].summary.sample_interval != 0;
    if (s0 == s1)
        return NULL;
    return s0 ? "OLD is a sampled trace (--sample) and NEW is not: estimates and exact counts "
                "are not compared; trace both with --sample, or both without"
              : "NEW is a sampled trace (--sample) and OLD is not: estimates and exact counts "
                "are not compared; trace both with --sample, or both without";
}

static void totals(FILE *out, const at_an_diff *d)
{
    const at_an_summary *o = &d->run[0].summary, *n = &d->run[1].summary;
    bool timed = !o->leaks_only && !n->leaks_only;
    if (o->sample_interval)
        fprintf(out, "estimates: both traces are sampled (one in %" PRIu64 " and one in %" PRIu64
                     " bytes on average); every number below is estimated\n",
                o->sample_interval, n->sample_interval);
    fprintf(out, "  %-18s %14s %14s %14s\n", "", "old", "new", "change");
    total_row(out, "allocations", o->allocations, n->allocations, true);
    total_row(out, "allocated bytes", o->allocated_bytes, n->allocated_bytes, true);
    total_row(out, "peak bytes", d->run[0].peak.bytes, d->run[1].peak.bytes, timed);
    total_row(out, "temporary", o->temporary, n->temporary, timed && !o->sample_interval);
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

/* ---- snapshots: what is new and still live, which leaks are new ------------
 *
 * `--diff SNAP1 SNAP2` on two snapshots of one process (files with a
 * "## snapshot: N" line: alloctrace --snapshot) compares blocks, not
 * totals: a block of SNAP2 is the same as one of SNAP1 when its address,
 * size, allocation time and site are (one process, so the same site has
 * the same key); the rest of SNAP2's blocks are new since SNAP1 and still
 * live (times within a millisecond: see snap_hash). Leaks as memcheck's
 * `leak_check full increased` counts them: per
 * site and lost kind (definite, indirect, possible), the blocks of that
 * kind now that were not of that kind before, "new" in the report. Sites
 * are keyed as above (at_baseline_key), so -r names them.
 */
typedef struct snap_block {
    uint64_t id, size, time_us;
    size_t site;      /* index into at_snap_diff.sites */
    uint8_t kind;     /* at_leak_kind */
    bool has_time;
} snap_block;

typedef struct snap_run {
    snap_block *b;
    size_t n, cap;
    bool leaks;        /* the header says filter=leaks: blocks are kept */
    char *mark;        /* the text after "## snapshot: ", or NULL */
    const at_stack *last_stack;   /* a one-entry cache of stack -> site */
    size_t last_site;
} snap_run;

typedef struct snap_site {
    char *key;
    uint64_t live_blocks, live_bytes, new_blocks, new_bytes, gone_blocks, gone_bytes;
    uint64_t lost[AT_LEAK_NKINDS], lost_new[AT_LEAK_NKINDS], lost_bytes[AT_LEAK_NKINDS],
        lost_new_bytes[AT_LEAK_NKINDS];
} snap_site;

struct at_snap_diff {
    snap_run run[2];
    snap_site *sites;
    size_t nsites, capsites;
    size_t *slots;   /* key -> site + 1 */
    size_t nslots;
};

at_snap_diff *at_snap_diff_new(void)
{
    return at_xcalloc(1, sizeof(at_snap_diff));
}

void at_snap_diff_free(at_snap_diff *d)
{
    if (!d)
        return;
    for (int w = 0; w < 2; w++) {
        free(d->run[w].b);
        free(d->run[w].mark);
    }
    for (size_t i = 0; i < d->nsites; i++)
        free(d->sites[i].key);
    free(d->sites);
    free(d->slots);
    free(d);
}

static void snap_rehash(at_snap_diff *d)
{
    free(d->slots);
    d->nslots = d->nslots ? d->nslots * 2 : 1024;
    d->slots = at_xcalloc(d->nslots, sizeof *d->slots);
    for (size_t i = 0; i < d->nsites; i++) {
        size_t j = hash_str(d->sites[i].key) & (d->nslots - 1);
        while (d->slots[j])
            j = (j + 1) & (d->nslots - 1);
        d->slots[j] = i + 1;
    }
}

/* The site of a key; takes the malloc'ed key or frees it. */
static size_t snap_site_of(at_snap_diff *d, char *key)
{
    if ((d->nsites + 1) * 2 > d->nslots)
        snap_rehash(d);
    size_t j = hash_str(key) & (d->nslots - 1);
    for (; d->slots[j]; j = (j + 1) & (d->nslots - 1))
        if (strcmp(d->sites[d->slots[j] - 1].key, key) == 0) {
            free(key);
            return d->slots[j] - 1;
        }
    if (d->nsites == d->capsites) {
        d->capsites = d->capsites ? d->capsites * 2 : 256;
        d->sites = at_xreallocarray(d->sites, d->capsites, sizeof *d->sites);
    }
    d->sites[d->nsites] = (snap_site){ .key = key };
    d->slots[j] = ++d->nsites;
    return d->nsites - 1;
}

static void snap_add_call(at_snap_diff *d, snap_run *r, const at_call *c, at_trace *t)
{
    if (!c->is_alloc)
        return;
    if (!r->last_stack || r->last_stack != c->stack) {
        at_frame_info *infos = at_xcalloc(c->stack->nframes + 1, sizeof *infos);
        at_frame_read_stack(c->stack, t->maps, t->stacks, infos);
        r->last_site = snap_site_of(d, at_baseline_key(infos, c->stack->nframes));
        r->last_stack = c->stack;
        free(infos);
    }
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 1024;
        r->b = at_xreallocarray(r->b, r->cap, sizeof *r->b);
    }
    r->b[r->n++] = (snap_block){ .id = c->id, .size = c->size, .time_us = c->time_us,
                                 .has_time = c->has_time, .site = r->last_site,
                                 .kind = c->kind };
}

/* The collecting stage: keeps the blocks of a leaks-filtered input (a
 * snapshot is one) and its snapshot line, and passes everything on. */
typedef struct snap_stage {
    at_stage stage;
    at_snap_diff *d;
    int which;
    at_trace *t;
} snap_stage;

static void snap_put(at_stage *self, const at_record *rec)
{
    snap_stage *s = (snap_stage *)self;
    snap_run *r = &s->d->run[s->which];
    switch (rec->kind) {
    case AT_REC_HEADER:
        r->leaks = (rec->u.header->filter & AT_F_LEAKS) != 0;
        break;
    case AT_REC_COMMENT:
        /* The reader keeps a snapshot file's name in the header (the
         * trace is freed before the comparison is written: a copy). */
        if (s->t->header.snapshot) {
            free(r->mark);
            r->mark = at_xstrdup(s->t->header.snapshot);
        }
        break;
    case AT_REC_CALL:
        if (r->leaks)
            snap_add_call(s->d, r, rec->u.call, s->t);
        break;
    case AT_REC_GROUP:
        for (size_t i = 0; r->leaks && i < rec->u.group->ncalls; i++)
            snap_add_call(s->d, r, rec->u.group->calls[i], s->t);
        break;
    default:
        break;
    }
    at_stage_put(self->next, rec);
}

at_stage *at_snap_diff_stage_new(at_snap_diff *d, int which, at_trace *t, at_stage *next)
{
    snap_stage *s = at_xcalloc(1, sizeof *s);
    *s = (snap_stage){ .stage = { .put = snap_put, .finish = at_stage_pass_finish, .next = next },
                       .d = d, .which = which, .t = t };
    d->run[which].last_stack = NULL;
    return &s->stage;
}

void at_snap_diff_stage_free(at_stage *s)
{
    free(s);
}

bool at_snap_diff_ready(const at_snap_diff *d)
{
    return d->run[0].mark && d->run[1].mark && d->run[0].leaks && d->run[1].leaks;
}

/* The same block: address, size, site, and the time of its allocation
 * within a millisecond: leaks mode's times are TSC readings turned into
 * times with the rate measured when the file is written, so one block's
 * time may move by a microsecond or two from one snapshot to the next. */
static uint64_t snap_hash(const snap_block *b)
{
    uint64_t h = b->id * 0x9e3779b97f4a7c15ull ^ b->size * 0xc2b2ae3d27d4eb4full ^ b->site;
    h ^= h >> 31;
    return h * 0xbf58476d1ce4e5b9ull;
}

static bool snap_same(const snap_block *a, const snap_block *b)
{
    uint64_t dt = a->time_us > b->time_us ? a->time_us - b->time_us : b->time_us - a->time_us;
    return a->id == b->id && a->size == b->size && a->site == b->site &&
           a->has_time == b->has_time && (!a->has_time || dt <= 1000);
}

static bool lost_kind(uint8_t k)
{
    return k == AT_LEAK_DEFINITE || k == AT_LEAK_INDIRECT || k == AT_LEAK_POSSIBLE;
}

/* Fills each site's numbers: OLD's blocks in a table, NEW's looked up. */
static void snap_compare(at_snap_diff *d)
{
    const snap_run *o = &d->run[0], *n = &d->run[1];
    size_t nslots = 16;
    while (nslots < 2 * o->n)
        nslots *= 2;
    size_t *table = at_xcalloc(nslots, sizeof *table);   /* OLD block + 1 */
    bool *matched = at_xcalloc(o->n ? o->n : 1, sizeof *matched);
    for (size_t i = 0; i < o->n; i++) {
        size_t j = snap_hash(&o->b[i]) & (nslots - 1);
        while (table[j])
            j = (j + 1) & (nslots - 1);
        table[j] = i + 1;
    }
    for (size_t i = 0; i < n->n; i++) {
        const snap_block *b = &n->b[i];
        snap_site *s = &d->sites[b->site];
        const snap_block *old = NULL;
        for (size_t j = snap_hash(b) & (nslots - 1); table[j]; j = (j + 1) & (nslots - 1))
            if (!matched[table[j] - 1] && snap_same(&o->b[table[j] - 1], b)) {
                old = &o->b[table[j] - 1];
                matched[table[j] - 1] = true;
                break;
            }
        s->live_blocks++;
        s->live_bytes += b->size;
        if (!old) {
            s->new_blocks++;
            s->new_bytes += b->size;
        }
        if (lost_kind(b->kind)) {
            s->lost[b->kind]++;
            s->lost_bytes[b->kind] += b->size;
            if (!old || old->kind != b->kind) {
                s->lost_new[b->kind]++;
                s->lost_new_bytes[b->kind] += b->size;
            }
        }
    }
    for (size_t i = 0; i < o->n; i++)
        if (!matched[i]) {
            d->sites[o->b[i].site].gone_blocks++;
            d->sites[o->b[i].site].gone_bytes += o->b[i].size;
        }
    free(table);
    free(matched);
}

static int by_new_bytes(const void *x, const void *y)
{
    const snap_site *a = *(const snap_site *const *)x, *b = *(const snap_site *const *)y;
    if (a->new_bytes != b->new_bytes)
        return a->new_bytes < b->new_bytes ? 1 : -1;
    if (a->new_blocks != b->new_blocks)
        return a->new_blocks < b->new_blocks ? 1 : -1;
    return strcmp(a->key, b->key);
}

static uint64_t lost_new_all(const snap_site *s)
{
    uint64_t v = 0;
    for (int k = 0; k < AT_LEAK_NKINDS; k++)
        v += s->lost_new_bytes[k];
    return v;
}

static int by_new_leaks(const void *x, const void *y)
{
    const snap_site *a = *(const snap_site *const *)x, *b = *(const snap_site *const *)y;
    uint64_t la = lost_new_all(a), lb = lost_new_all(b);
    if (la != lb)
        return la < lb ? 1 : -1;
    return strcmp(a->key, b->key);
}

static void snap_totals(const snap_run *r, uint64_t *blocks, uint64_t *bytes)
{
    *blocks = r->n;
    *bytes = 0;
    for (size_t i = 0; i < r->n; i++)
        *bytes += r->b[i].size;
}

int at_snap_diff_write(FILE *out, at_snap_diff *d, const char *old_name, const char *new_name,
                       unsigned top)
{
    snap_compare(d);
    uint64_t ob, oB, nb, nB;
    snap_totals(&d->run[0], &ob, &oB);
    snap_totals(&d->run[1], &nb, &nB);
    fprintf(out, "alloctrace snapshot diff: %s (snapshot %s) -> %s (snapshot %s)\n", old_name,
            d->run[0].mark, new_name, d->run[1].mark);
    fprintf(out, "  live: %" PRIu64 " blocks, %" PRIu64 " bytes -> %" PRIu64 " blocks, %" PRIu64
                 " bytes (%+" PRId64 " bytes)\n",
            ob, oB, nb, nB, delta(oB, nB));
    const snap_site **v = at_xcalloc(d->nsites ? d->nsites : 1, sizeof *v);
    size_t n = 0;
    uint64_t new_blocks = 0, new_bytes = 0, gone_blocks = 0, gone_bytes = 0;
    for (size_t i = 0; i < d->nsites; i++) {
        const snap_site *s = &d->sites[i];
        new_blocks += s->new_blocks;
        new_bytes += s->new_bytes;
        gone_blocks += s->gone_blocks;
        gone_bytes += s->gone_bytes;
        if (s->new_blocks)
            v[n++] = s;
    }
    fprintf(out, "  new and still live: %" PRIu64 " blocks, %" PRIu64 " bytes; freed since: %"
                 PRIu64 " blocks, %" PRIu64 " bytes\n",
            new_blocks, new_bytes, gone_blocks, gone_bytes);
    qsort(v, n, sizeof *v, by_new_bytes);
    fprintf(out, "\nsites with blocks new and still live: %zu; top %zu by new bytes:\n", n,
            n < top ? n : (size_t)top);
    if (n == 0)
        fputs("   (none)\n", out);
    for (size_t k = 0; k < n && k < top; k++)
        fprintf(out, "%4zu. +%" PRIu64 " bytes in +%" PRIu64 " blocks (now %" PRIu64
                     " bytes in %" PRIu64 " blocks)\n        %s\n",
                k + 1, v[k]->new_bytes, v[k]->new_blocks, v[k]->live_bytes, v[k]->live_blocks,
                *v[k]->key ? v[k]->key : "(no backtrace)");

    /* Leaks, as memcheck's "leak_check full increased" counts them. */
    bool kinds = false;
    for (size_t i = 0; i < d->run[1].n && !kinds; i++)
        kinds = d->run[1].b[i].kind != AT_LEAK_UNKNOWN;
    if (!kinds) {
        fputs("\nleaks: the snapshots have no leak kinds (full mode; leaks mode's snapshots "
              "have them)\n", out);
        free(v);
        return ferror(out) ? -1 : 0;
    }
    fputs("\nleaks since the last check:\n", out);
    for (int k = AT_LEAK_DEFINITE; k <= AT_LEAK_POSSIBLE; k++) {
        uint64_t blocks = 0, bytes = 0, nblocks = 0, nbytes = 0;
        for (size_t i = 0; i < d->nsites; i++) {
            blocks += d->sites[i].lost[k];
            bytes += d->sites[i].lost_bytes[k];
            nblocks += d->sites[i].lost_new[k];
            nbytes += d->sites[i].lost_new_bytes[k];
        }
        fprintf(out, "  %-16s %" PRIu64 " bytes in %" PRIu64 " blocks (+%" PRIu64
                     " bytes in +%" PRIu64 " new)\n",
                at_leak_kind_words((at_leak_kind)k), bytes, blocks, nbytes, nblocks);
    }
    n = 0;
    for (size_t i = 0; i < d->nsites; i++)
        if (lost_new_all(&d->sites[i]))
            v[n++] = &d->sites[i];
    qsort(v, n, sizeof *v, by_new_leaks);
    fprintf(out, "\nsites with new leaks: %zu; top %zu:\n", n, n < top ? n : (size_t)top);
    if (n == 0)
        fputs("   (none)\n", out);
    for (size_t k = 0; k < n && k < top; k++) {
        fprintf(out, "%4zu.", k + 1);
        for (int kd = AT_LEAK_DEFINITE; kd <= AT_LEAK_POSSIBLE; kd++)
            if (v[k]->lost_new[kd])
                fprintf(out, " %s +%" PRIu64 " bytes in +%" PRIu64 " new (now %" PRIu64
                             " blocks);",
                        at_leak_kind_words((at_leak_kind)kd), v[k]->lost_new_bytes[kd],
                        v[k]->lost_new[kd], v[k]->lost[kd]);
        fprintf(out, "\n        %s\n", *v[k]->key ? v[k]->key : "(no backtrace)");
    }
    free(v);
    return ferror(out) ? -1 : 0;
}
