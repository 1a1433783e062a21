/*
 * postproc/export/pprof.c: --format pprof, the analyses as pprof's
 * profile.proto, gzip'd (docs/exports.md, "pprof"). pprof, speedscope,
 * Pyroscope, Grafana and Parca read it.
 *
 * Decisions:
 *   - Go's heap-profile conventions, so every tool shows it as a heap
 *     profile: four sample types, alloc_objects/count, alloc_space/bytes,
 *     inuse_objects/count, inuse_space/bytes; period_type space/bytes and
 *     period the sampling interval (1 for a trace of every call). Like Go's
 *     runtime, the values are already scaled: a sampled trace's are the
 *     estimates of the analyses (sampling.h), never raw sample counts.
 *   - Built on the analyses (analyze.h), which hold per site exactly these
 *     four numbers: calls and bytes allocated, blocks and bytes still live
 *     at the end of the trace (for a leaks-mode trace, the leaks: alloc_*
 *     and inuse_* are then the same). So the totals equal --format stats
 *     (inuse: its leaked plus cached, the runtime's caches being in use too).
 *   - A sample is a site: its locations the frames, the leaf first, under
 *     the allocation function ("malloc", "calloc", ...) as the leaf, as in
 *     the other exports. A location is an address; the lines of a resolved
 *     trace's inlined calls at one address (TEXT_FORMAT.md, section 5)
 *     become its lines, the innermost first, as pprof wants them.
 *   - Mappings are the trace's map lines with their build ids, so pprof can
 *     symbolize an unresolved trace itself from the binaries; a mapping
 *     whose frames have names says so (has_functions), and pprof leaves it.
 *   - The encoding is libprotobuf-c's, from our own pprof.proto (written
 *     from pprof's documented schema); the gzip is zlib's. Both are
 *     well-kept Debian libraries: a hand-written encoder or deflate would
 *     be code of our own to get right for no gain (docs/exports.md).
 *   - The default sample type is inuse_space for a leaks-mode trace (its
 *     blocks are the leaks) and alloc_space otherwise: at the end of a full
 *     trace little is in use, and what was allocated is what one looks at.
 */
#include "pprof.h"
#include "frame.h"
#include "pprof.pb-c.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

/* ---- a string or number -> id table (open addressing) -------------------- */

typedef struct slot {
    uint64_t hash;
    const char *key;   /* NULL: empty; for numbers, unused */
    uint64_t num;
    uint64_t id;
    bool used;
} slot;

typedef struct table {
    slot *v;
    size_t cap, n;
} table;

static uint64_t hash_str(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static uint64_t hash_num(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    return x ^ (x >> 33);
}

/* The slot of (hash, key or num): a table holds string keys only or
 * number keys only (key NULL). */
static slot *find(table *t, uint64_t hash, const char *key, uint64_t num)
{
    if ((t->n + 1) * 2 > t->cap) {
        table old = *t;
        t->cap = old.cap ? old.cap * 2 : 256;
        t->v = at_xcalloc(t->cap, sizeof *t->v);
        for (size_t i = 0; i < old.cap; i++)
            if (old.v[i].used) {
                size_t j = old.v[i].hash & (t->cap - 1);
                while (t->v[j].used)
                    j = (j + 1) & (t->cap - 1);
                t->v[j] = old.v[i];
            }
        free(old.v);
    }
    for (size_t i = hash & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        slot *s = &t->v[i];
        if (!s->used)
            return s;
        if (s->hash == hash && s->num == num && (!key || strcmp(s->key, key) == 0))
            return s;
    }
}

/* ---- the profile being built --------------------------------------------- */

typedef struct builder {
    Profile p;
    at_trace *t;
    table strings, funcs, locs, allocs;
    size_t cap_str, cap_fn, cap_loc, cap_sample;
    Mapping **maps;   /* by the trace's map seq */
    size_t nmaps;
} builder;

#define GROW(arr, n, cap)                                                  \
    do {                                                                   \
        if ((n) == (cap)) {                                                \
            (cap) = (cap) ? (cap) * 2 : 64;                                \
            (arr) = at_xreallocarray((arr), (cap), sizeof *(arr));         \
        }                                                                  \
    } while (0)

static int64_t str(builder *b, const char *s)
{
    if (!s || !*s)
        return 0;
    slot *sl = find(&b->strings, hash_str(s, 1469598103934665603ull), s, 0);
    if (!sl->used) {
        char *copy = at_xstrdup(s);
        GROW(b->p.string_table, b->p.n_string_table, b->cap_str);
        *sl = (slot){ .hash = hash_str(s, 1469598103934665603ull), .key = copy,
                      .id = b->p.n_string_table, .used = true };
        b->p.string_table[b->p.n_string_table++] = copy;
        b->strings.n++;
    }
    return (int64_t)sl->id;
}

static const char *known(const char *s)
{
    return s && strcmp(s, AT_UNKNOWN) != 0 ? s : NULL;
}

/* The function of (name, file); its id. */
static uint64_t function(builder *b, const char *name, const char *file)
{
    int64_t n = str(b, name), f = str(b, file);
    uint64_t h = hash_num((uint64_t)n * 0x9e3779b97f4a7c15ull + (uint64_t)f);
    slot *sl = find(&b->funcs, h, NULL, ((uint64_t)n << 32) ^ (uint64_t)f);
    if (!sl->used) {
        Function *fn = at_xcalloc(1, sizeof *fn);
        perftools__profiles__function__init(fn);
        fn->id = b->p.n_function + 1;
        fn->name = fn->system_name = n;
        fn->filename = f;
        GROW(b->p.function, b->p.n_function, b->cap_fn);
        b->p.function[b->p.n_function++] = fn;
        *sl = (slot){ .hash = h, .num = ((uint64_t)n << 32) ^ (uint64_t)f, .id = fn->id,
                      .used = true };
        b->funcs.n++;
    }
    return sl->id;
}

static void add_line(Location *loc, uint64_t fid, unsigned line)
{
    Line *l = at_xcalloc(1, sizeof *l);
    perftools__profiles__line__init(l);
    l->function_id = fid;
    l->line = line;
    loc->line = at_xreallocarray(loc->line, loc->n_line + 1, sizeof *loc->line);
    loc->line[loc->n_line++] = l;
}

static Location *new_location(builder *b, uint64_t addr, uint64_t mapping)
{
    Location *loc = at_xcalloc(1, sizeof *loc);
    perftools__profiles__location__init(loc);
    loc->id = b->p.n_location + 1;
    loc->address = addr;
    loc->mapping_id = mapping;
    GROW(b->p.location, b->p.n_location, b->cap_loc);
    b->p.location[b->p.n_location++] = loc;
    return loc;
}

/* The mapping of an address: the trace's map line covering it, or 0. */
static uint64_t mapping(builder *b, uint64_t addr)
{
    const at_map *m = at_maps_find(b->t->maps, addr);
    return m && m->seq < b->nmaps ? b->maps[m->seq]->id : 0;
}

/* The location of infos[i ..] (an address and its inlined calls); sets
 * *used to the frames it took. */
static uint64_t location(builder *b, const at_frame_info *infos, uint32_t i, uint32_t n,
                         uint32_t *used)
{
    uint32_t k = i;
    while (k + 1 < n && infos[k].inlined && infos[k + 1].addr == infos[i].addr)
        k++;
    *used = k - i + 1;
    uint64_t addr = infos[i].addr;
    slot *sl = find(&b->locs, hash_num(addr), NULL, addr);
    if (sl->used)
        return sl->id;
    Location *loc = new_location(b, addr, mapping(b, addr));
    for (uint32_t j = i; j <= k; j++) {
        const char *name = known(infos[j].function);
        if (name)
            add_line(loc, function(b, name, known(infos[j].file)), infos[j].line);
    }
    /* A mapping with names needs no symbolizing by pprof. */
    if (loc->n_line && loc->mapping_id) {
        Mapping *mp = b->maps[loc->mapping_id - 1];
        mp->has_functions = mp->has_filenames = mp->has_line_numbers = true;
        mp->has_inline_frames = true;
    }
    *sl = (slot){ .hash = hash_num(addr), .num = addr, .id = loc->id, .used = true };
    b->locs.n++;
    return loc->id;
}

/* The allocation function as the leaf: a location of its own, no address. */
static uint64_t alloc_location(builder *b, const char *fn)
{
    char key[128];
    snprintf(key, sizeof key, "\x01%s", fn ? fn : "malloc");
    slot *sl = find(&b->allocs, hash_str(key, 7), key, 0);
    if (sl->used)
        return sl->id;
    Location *loc = new_location(b, 0, 0);
    add_line(loc, function(b, key + 1, NULL), 0);
    *sl = (slot){ .hash = hash_str(key, 7), .key = at_xstrdup(key), .id = loc->id,
                  .used = true };
    b->allocs.n++;
    return loc->id;
}

static void add_mappings(builder *b)
{
    size_t n = at_maps_count(b->t->maps);
    b->maps = at_xcalloc(n ? n : 1, sizeof *b->maps);
    b->p.mapping = at_xcalloc(n ? n : 1, sizeof *b->p.mapping);
    for (size_t i = 0; i < n; i++) {
        const at_map *m = at_maps_get(b->t->maps, i);
        Mapping *mp = at_xcalloc(1, sizeof *mp);
        perftools__profiles__mapping__init(mp);
        mp->id = i + 1;
        mp->memory_start = m->start;
        mp->memory_limit = m->end;
        mp->filename = str(b, m->path);
        mp->build_id = str(b, m->build_id);
        b->maps[i] = mp;
        b->p.mapping[b->p.n_mapping++] = mp;
    }
    b->nmaps = n;
}

static void add_sample(builder *b, const at_an_site *s, const at_analysis *an)
{
    const at_an_cost *c = &s->cost;
    /* in use at the end: leaks and libc's caches (analyze.h counts them apart) */
    uint64_t inuse = an->summary.leaks_only ? c->bytes : c->leaked + c->cached;
    uint64_t inuse_n = an->summary.leaks_only ? c->calls : c->leaked_blocks + c->cached_blocks;
    if (!c->calls && !inuse_n)
        return;
    uint32_t n = s->stack->nframes;
    at_frame_info *infos = at_xcalloc(n + 1, sizeof *infos);
    at_frame_read_stack(s->stack, b->t->maps, b->t->stacks, infos);
    Sample *sm = at_xcalloc(1, sizeof *sm);
    perftools__profiles__sample__init(sm);
    sm->location_id = at_xcalloc(n + 1, sizeof *sm->location_id);
    sm->location_id[sm->n_location_id++] = alloc_location(b, s->alloc_fn);
    for (uint32_t i = 0, used; i < n; i += used)
        sm->location_id[sm->n_location_id++] = location(b, infos, i, n, &used);
    free(infos);
    sm->value = at_xcalloc(4, sizeof *sm->value);
    sm->n_value = 4;
    sm->value[0] = (int64_t)c->calls;
    sm->value[1] = (int64_t)c->bytes;
    sm->value[2] = (int64_t)inuse_n;
    sm->value[3] = (int64_t)inuse;
    GROW(b->p.sample, b->p.n_sample, b->cap_sample);
    b->p.sample[b->p.n_sample++] = sm;
}

static ValueType *value_type(builder *b, const char *type, const char *unit)
{
    ValueType *v = at_xcalloc(1, sizeof *v);
    perftools__profiles__value_type__init(v);
    v->type = str(b, type);
    v->unit = str(b, unit);
    return v;
}

static void comment(builder *b, const char *text)
{
    b->p.comment = at_xreallocarray(b->p.comment, b->p.n_comment + 1, sizeof *b->p.comment);
    b->p.comment[b->p.n_comment++] = str(b, text);
}

static void build(builder *b, const at_analysis *an)
{
    perftools__profiles__profile__init(&b->p);
    GROW(b->p.string_table, b->p.n_string_table, b->cap_str);
    b->p.string_table[b->p.n_string_table++] = at_xstrdup("");
    static const char *const types[4][2] = { { "alloc_objects", "count" },
                                             { "alloc_space", "bytes" },
                                             { "inuse_objects", "count" },
                                             { "inuse_space", "bytes" } };
    b->p.sample_type = at_xcalloc(4, sizeof *b->p.sample_type);
    for (int i = 0; i < 4; i++)
        b->p.sample_type[b->p.n_sample_type++] = value_type(b, types[i][0], types[i][1]);
    b->p.period_type = value_type(b, "space", "bytes");
    b->p.period = an->summary.sample_interval ? (int64_t)an->summary.sample_interval : 1;
    b->p.default_sample_type = str(b, an->summary.leaks_only ? "inuse_space" : "alloc_space");
    b->p.duration_nanos = an->summary.has_time ? (int64_t)an->summary.duration_us * 1000 : 0;
    char text[160];
    snprintf(text, sizeof text, "alloctrace %s: %s, pid %s", AT_VERSION,
             b->t->header.process ? b->t->header.process : "(unknown)",
             b->t->header.pid ? b->t->header.pid : "?");
    comment(b, text);
    if (an->summary.sample_interval) {
        snprintf(text, sizeof text, "values are %s", at_sampling_note(an->summary.sample_interval));
        comment(b, text);
    }
    if (an->summary.leaks_only)
        comment(b, "a leaks-mode trace: every block is a leak (alloc_* = inuse_*)");
    add_mappings(b);
    for (size_t i = 0; i < an->nsites; i++)
        add_sample(b, &an->sites[i], an);
}

static void free_builder(builder *b)
{
    Profile *p = &b->p;
    for (size_t i = 0; i < p->n_sample; i++) {
        free(p->sample[i]->location_id);
        free(p->sample[i]->value);
        free(p->sample[i]);
    }
    for (size_t i = 0; i < p->n_location; i++) {
        for (size_t k = 0; k < p->location[i]->n_line; k++)
            free(p->location[i]->line[k]);
        free(p->location[i]->line);
        free(p->location[i]);
    }
    for (size_t i = 0; i < p->n_function; i++)
        free(p->function[i]);
    for (size_t i = 0; i < p->n_mapping; i++)
        free(p->mapping[i]);
    for (size_t i = 0; i < p->n_sample_type; i++)
        free(p->sample_type[i]);
    free(p->period_type);
    for (size_t i = 0; i < p->n_string_table; i++)
        free(p->string_table[i]);
    for (size_t i = 0; i < b->allocs.cap; i++)
        if (b->allocs.v[i].used)
            free((char *)b->allocs.v[i].key);
    free(p->sample);
    free(p->location);
    free(p->function);
    free(p->mapping);
    free(p->sample_type);
    free(p->string_table);
    free(p->comment);
    free(b->maps);
    free(b->strings.v);
    free(b->funcs.v);
    free(b->locs.v);
    free(b->allocs.v);
}

/* ---- out ---------------------------------------------------------------- */

/* data[0..n) gzip'd (zlib, one stream) to f. */
static int write_gzip(FILE *f, const uint8_t *data, size_t n)
{
    z_stream z = { 0 };
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        errno = ENOMEM;
        return -1;
    }
    uLong cap = deflateBound(&z, (uLong)n);
    uint8_t *out = at_xcalloc(cap ? cap : 1, 1);
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    size_t len = cap - z.avail_out;
    deflateEnd(&z);
    int ok = rc == Z_STREAM_END && fwrite(out, 1, len, f) == len;
    free(out);
    if (!ok && !errno)
        errno = EIO;
    return ok ? 0 : -1;
}

int at_export_pprof(FILE *out, const at_analysis *an, at_trace *t)
{
    builder b = { .t = t };
    build(&b, an);
    size_t n = perftools__profiles__profile__get_packed_size(&b.p);
    uint8_t *buf = at_xcalloc(n ? n : 1, 1);
    perftools__profiles__profile__pack(&b.p, buf);
    free_builder(&b);
    int rc = write_gzip(out, buf, n);
    free(buf);
    return rc == 0 && !ferror(out) ? 0 : -1;
}

static int write_one(FILE *f, void *arg)
{
    const struct { const at_analysis *an; at_trace *t; } *p = arg;
    return at_export_pprof(f, p->an, p->t);
}

int at_pprof_print(void *opts, const at_analysis *an, at_trace *t)
{
    struct { const at_analysis *an; at_trace *t; } p = { an, t };
    return at_an_print_to(((const at_pprof_opts *)opts)->fd, write_one, &p);
}
