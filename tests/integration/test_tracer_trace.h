/*
 * tests/integration/test_tracer_trace.h: a strict reader of the traces the
 * tracer writes, for the tracer's integration tests only (the
 * post-processor has its own reader; this one checks the tracer against
 * TEXT_FORMAT.md independently of it). Every line must be a header,
 * registry, map, comment, call, argument, frame or the blank line ending a
 * frame list; anything else fails the parse with the line number.
 * A trace in the compressed form (filter=...compress: leaks mode at exit)
 * is read as groups (call lines, each with its arguments, an optional
 * "# allocation summary" line, the shared frames), every call given the
 * group's frames, and the records are then put back in index order, so a
 * test sees the same records in either form.
 * Header-only: each test file includes it once.
 */
#ifndef AT_TEST_TRACER_TRACE_H
#define AT_TEST_TRACER_TRACE_H

#include <inttypes.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct t_rec {
    uint64_t index;
    char name[24];
    int release;
    uint64_t size;
    uint64_t id;
    uint32_t ctx;
    int has_time;
    uint64_t time_us;       /* time of day, microseconds, when has_time */
    int carried;            /* written without a time ("time=on change"): has_time and
                             * time_us are the last written before it, in index order */
    uint64_t alignment;     /* 0: no $alignment line */
    size_t first_frame;     /* into t_trace.frames */
    int nframes;
};

struct t_map {
    char path[512];
    uint64_t start, end;
    size_t before_rec;      /* number of records written before this line */
};

struct t_trace {
    char header[1024];
    int has_registry;
    char ctx_names[32][64];
    struct t_rec *recs;
    size_t n, cap;
    uint64_t *frames;
    size_t nframes, frames_cap;
    struct t_map *maps;
    size_t nmaps;
    int compressed;         /* the header's filter has "compress" */
    size_t groups;          /* frame lists read (one per record unless compressed) */
    int leak_summary;       /* "# N block(s) leaked ..." seen */
    uint64_t leak_blocks, leak_bytes;
    int complete;           /* ended with a whole record (blank line) */
    uint64_t chunk_end;     /* the last "# chunk end: INDEX" mark (0: none) */
    size_t chunk_dropped;   /* calls after it of a chunk cut short, dropped */
    char cut[128];          /* the reason on a last "## trace cut: " line */
    char error[256];
};

/* Whether the tracer compresses a trace of `mode` (full|leaks) under the
 * environment the test runs in: ALLOCTRACE_COMPRESS, else full mode
 * compresses and leaks mode does not. */
static inline int t_zstd(const char *mode)
{
    const char *c = getenv("ALLOCTRACE_COMPRESS");
    if (c && *c)
        return strcmp(c, "zstd") == 0;
    return strcmp(mode, "full") == 0;
}

static inline void t_free(struct t_trace *t)
{
    free(t->recs);
    free(t->frames);
    free(t->maps);
    memset(t, 0, sizeof *t);
}

/* Copies at most cap-1 bytes of src (n bytes) and terminates. */
static inline void t_copy(char *dst, size_t cap, const char *src, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static inline int t_fail(struct t_trace *t, size_t line, const char *why)
{
    snprintf(t->error, sizeof t->error, "line %zu: %s", line, why);
    return -1;
}

static inline int t_hex(const char **p, uint64_t *v)
{
    if ((*p)[0] != '0' || (*p)[1] != 'x')
        return -1;
    char *end;
    *v = strtoull(*p + 2, &end, 16);
    if (end == *p + 2)
        return -1;
    *p = end;
    return 0;
}

/* "INDEX. [@CTX ][[TIME] ]NAME(SIZE) = 0xID" or "NAME(0xID)". */
static inline int t_call(const char *s, struct t_rec *r)
{
    memset(r, 0, sizeof *r);
    char *end;
    r->index = strtoull(s, &end, 10);
    if (end == s || end[0] != '.' || end[1] != ' ')
        return -1;
    s = end + 2;
    if (*s == '@') {
        r->ctx = (uint32_t)strtoul(s + 1, &end, 16);
        if (*end != ' ')
            return -1;
        s = end + 1;
    }
    if (*s == '[') {
        int hh, mm, ss, us, n = 0;
        if (sscanf(s, "[%2d:%2d:%2d.%6d] %n", &hh, &mm, &ss, &us, &n) != 4 || n != 18)
            return -1;
        r->has_time = 1;
        r->time_us = (uint64_t)((hh * 60 + mm) * 60 + ss) * 1000000 + (uint64_t)us;
        s += n;
    }
    const char *paren = strchr(s, '(');
    if (!paren || (size_t)(paren - s) >= sizeof r->name)
        return -1;
    memcpy(r->name, s, (size_t)(paren - s));
    s = paren + 1;
    if (s[0] == '0' && s[1] == 'x') {
        r->release = 1;
        if (t_hex(&s, &r->id) || strcmp(s, ")") != 0)
            return -1;
        return 0;
    }
    r->size = strtoull(s, &end, 10);
    if (end == s || strncmp(end, ") = ", 4) != 0)
        return -1;
    s = end + 4;
    if (t_hex(&s, &r->id) || *s)
        return -1;
    return 0;
}

/* Whether trace text ends after a whole unit: a record's blank line, or
 * the "# chunk end: INDEX" mark the writer puts after each chunk. */
static inline int t_ends_whole(const char *text, size_t len)
{
    if (len < 2 || text[len - 1] != '\n')
        return 0;
    if (text[len - 2] == '\n')
        return 1;
    size_t s = len - 1;
    while (s > 0 && text[s - 1] != '\n')
        s--;
    return strncmp(text + s, "# chunk end: ", 13) == 0;
}

/* Parses text; returns 0 or -1 with t->error set. A trace cut after its
 * last whole record parses (complete stays 0 if the cut is mid-record and
 * the partial record is dropped). */
static inline int t_by_index(const void *a, const void *b)
{
    const struct t_rec *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* A compressed trace's records back in index order; each index once.
 * Past the last chunk mark, the calls from the first missing index on
 * belong to a chunk cut short and are dropped, as the post-processor
 * does (docs/TEXT_FORMAT.md, "Cut traces"). */
static inline int t_restore_order(struct t_trace *t)
{
    if (t->n)
        qsort(t->recs, t->n, sizeof *t->recs, t_by_index);
    for (size_t i = 1; i < t->n; i++)
        if (t->recs[i].index == t->recs[i - 1].index)
            return t_fail(t, 0, "an index given twice");
    for (size_t i = 0; t->chunk_end && i < t->n; i++) {
        uint64_t prev = i ? t->recs[i - 1].index : 0;
        if (t->recs[i].index > t->chunk_end && t->recs[i].index != prev + 1) {
            t->chunk_dropped = t->n - i;
            t->n = i;
            break;
        }
    }
    return 0;
}

/* With "time=on change" in the header, a call without a time gets the
 * last one written before it in index order (docs/TEXT_FORMAT.md section
 * 4), and is marked carried. */
static inline void t_carry_times(struct t_trace *t)
{
    if (!strstr(t->header, ", time=on change, "))
        return;
    const struct t_rec *last = NULL;
    for (size_t i = 0; i < t->n; i++) {
        struct t_rec *r = &t->recs[i];
        if (r->has_time) {
            last = r;
        } else if (last) {
            r->has_time = 1;
            r->time_us = last->time_us;
            r->carried = 1;
        }
    }
}

/* The records in index order, with their times. */
static inline int t_in_order(struct t_trace *t)
{
    if (t->compressed && t_restore_order(t) < 0)
        return -1;
    t_carry_times(t);
    return 0;
}

/* The group's calls (from `first`) get its frames (from `frame0`). */
static inline void t_close_group(struct t_trace *t, size_t first, size_t frame0)
{
    for (size_t i = first; i < t->n; i++) {
        t->recs[i].first_frame = frame0;
        t->recs[i].nframes = (int)(t->nframes - frame0);
    }
    t->groups++;
}

static inline int t_parse(const char *text, struct t_trace *t)
{
    memset(t, 0, sizeof *t);
    size_t lineno = 0, group = 0, group_frame0 = 0;
    int in_frames = 0, group_has_frames = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        if (!nl) {            /* a cut last line: the record it starts is dropped */
            if (in_frames)
                t->n = group;
            t->complete = 0;
            return t_in_order(t);
        }
        size_t len = (size_t)(nl - p);
        char line[8192];
        if (len >= sizeof line)
            return t_fail(t, lineno + 1, "line too long");
        memcpy(line, p, len);
        line[len] = '\0';
        p = nl + 1;
        lineno++;
        if (t->cut[0])
            return t_fail(t, lineno, "a line after the cut line");
        if (lineno == 1) {
            if (strncmp(line, "version=2.0, ", 13) != 0)
                return t_fail(t, 1, "header does not start with version=2.0");
            t_copy(t->header, sizeof t->header, line, len);
            const char *f = strstr(t->header, ", filter=");
            const char *fe = f ? strchr(f + 9, ',') : NULL;
            const char *c = f ? strstr(f, "compress") : NULL;
            t->compressed = c && fe && c < fe;
            continue;
        }
        if (in_frames) {
            if (line[0] == '\t' && line[1] == '$' && !group_has_frames) {
                if (strncmp(line, "\t$alignment = ", 14) == 0)
                    t->recs[t->n - 1].alignment = strtoull(line + 14, NULL, 10);
                continue;
            }
            if (line[0] == '\t') {
                const char *s = line + 1;
                uint64_t a;
                if (t_hex(&s, &a) || *s)
                    return t_fail(t, lineno, "bad frame line");
                if (t->nframes == t->frames_cap) {
                    t->frames_cap = t->frames_cap ? t->frames_cap * 2 : 4096;
                    t->frames = realloc(t->frames, t->frames_cap * sizeof *t->frames);
                }
                t->frames[t->nframes++] = a;
                group_has_frames = 1;
                continue;
            }
            int more = t->compressed && !group_has_frames;
            if (more && strncmp(line, "# allocation summary: ", 22) == 0)
                continue;
            if (more && line[0] >= '0' && line[0] <= '9')
                goto call;   /* the next call of the group */
            if (line[0] != '\0')
                return t_fail(t, lineno, "frame list not ended by a blank line");
            t_close_group(t, group, group_frame0);
            in_frames = 0;
            t->complete = 1;
            continue;
        }
        if (strcmp(line, "<1> : memory (memory allocation in bytes)") == 0) {
            if (t->n)
                return t_fail(t, lineno, "registry after a call");
            t->has_registry = 1;
        } else if (line[0] == '@' && line[1] == ' ') {
            unsigned long bit = strtoul(line + 2, NULL, 16);
            int i = bit ? __builtin_ctzl(bit) : -1;
            const char *name = strstr(line, " : ");
            if (i < 0 || i >= 32 || !name)
                return t_fail(t, lineno, "bad context registry line");
            t_copy(t->ctx_names[i], sizeof t->ctx_names[i], name + 3, strlen(name + 3));
        } else if (line[0] == ':' && line[1] == ' ') {
            const char *arrow = strstr(line, " => ");
            for (const char *q = arrow; q; q = strstr(q + 1, " => "))
                arrow = q;
            if (!arrow)
                return t_fail(t, lineno, "bad map line");
            struct t_map m = { .before_rec = t->n };
            t_copy(m.path, sizeof m.path, line + 2, (size_t)(arrow - line - 2));
            const char *s = arrow + 4;
            if (t_hex(&s, &m.start) || *s++ != '-' || t_hex(&s, &m.end) || *s || m.end <= m.start)
                return t_fail(t, lineno, "bad map range");
            t->maps = realloc(t->maps, (t->nmaps + 1) * sizeof *t->maps);
            t->maps[t->nmaps++] = m;
        } else if (strncmp(line, "## trace cut: ", 14) == 0) {
            t_copy(t->cut, sizeof t->cut, line + 14, len - 14);
        } else if (strncmp(line, "# chunk end: ", 13) == 0) {
            uint64_t end = strtoull(line + 13, NULL, 10);
            if (end > t->chunk_end)
                t->chunk_end = end;
        } else if (line[0] == '#') {
            unsigned long long blocks, bytes;
            if (sscanf(line, "# %llu block(s) leaked with total size of %llu bytes", &blocks, &bytes) == 2) {
                t->leak_summary = 1;
                t->leak_blocks = blocks;
                t->leak_bytes = bytes;
            }
        } else if (line[0] >= '0' && line[0] <= '9') {
        call:
            if (!in_frames) {
                group = t->n;
                group_frame0 = t->nframes;
                group_has_frames = 0;
            }
            if (t->n == t->cap) {
                t->cap = t->cap ? t->cap * 2 : 1024;
                t->recs = realloc(t->recs, t->cap * sizeof *t->recs);
            }
            struct t_rec *r = &t->recs[t->n];
            if (t_call(line, r) < 0)
                return t_fail(t, lineno, "bad call line");
            if (!t->compressed && t->n && r->index <= t->recs[t->n - 1].index)
                return t_fail(t, lineno, "index not increasing");
            r->first_frame = t->nframes;
            t->n++;
            in_frames = 1;
            t->complete = 0;
        } else {
            return t_fail(t, lineno, "unknown line");
        }
    }
    if (in_frames)   /* cut right after a frame line: drop the record (group) */
        t->n = group;
    return t_in_order(t);
}

/* Reads and parses a trace file, failing the test on error. */
static inline struct t_trace t_load(const char *path)
{
    struct t_trace t;
    char *text = h_read_file(path, NULL);
    if (!text)
        fail_msg("cannot read trace %s", path);
    if (t_parse(text, &t) != 0)
        fail_msg("%s: %s", path, t.error);
    free(text);
    return t;
}

static inline const uint64_t *t_frames(const struct t_trace *t, const struct t_rec *r)
{
    return t->frames + r->first_frame;
}

/* The record allocating `id` (the first), or NULL. */
static inline const struct t_rec *t_find_alloc(const struct t_trace *t, uint64_t id)
{
    for (size_t i = 0; i < t->n; i++)
        if (!t->recs[i].release && t->recs[i].id == id)
            return &t->recs[i];
    return NULL;
}

static inline const struct t_rec *t_find_release(const struct t_trace *t, uint64_t id)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].release && t->recs[i].id == id)
            return &t->recs[i];
    return NULL;
}

/* The map line covering addr, or NULL. */
static inline const struct t_map *t_map_of(const struct t_trace *t, uint64_t addr)
{
    const struct t_map *found = NULL;
    for (size_t i = 0; i < t->nmaps; i++)
        if (addr >= t->maps[i].start && addr < t->maps[i].end)
            found = &t->maps[i];
    return found;
}

/* Allocation records of `size` bytes. */
static inline size_t t_count_allocs(const struct t_trace *t, uint64_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += !t->recs[i].release && t->recs[i].size == size;
    return n;
}

/* The live ids of a trace, in an open-addressing set; 1 marks a removed
 * slot (no block has id 1). Traces of real programs are big. */
#define T_SET_CAP (1u << 21)
#define T_REMOVED 1

static inline size_t t_slot_of(uint64_t id)
{
    return (size_t)((id >> 4) * 0x9e3779b97f4a7c15ull) & (T_SET_CAP - 1);
}

static inline void t_set_add(uint64_t *set, uint64_t id)
{
    size_t h = t_slot_of(id), free_slot = T_SET_CAP;
    for (; set[h]; h = (h + 1) & (T_SET_CAP - 1)) {
        if (set[h] == id)
            return;
        if (set[h] == T_REMOVED && free_slot == T_SET_CAP)
            free_slot = h;
    }
    set[free_slot == T_SET_CAP ? h : free_slot] = id;
}

static inline int t_set_remove(uint64_t *set, uint64_t id)
{
    for (size_t h = t_slot_of(id); set[h]; h = (h + 1) & (T_SET_CAP - 1))
        if (set[h] == id) {
            set[h] = T_REMOVED;
            return 1;
        }
    return 0;
}

/* Releases of blocks not allocated earlier in the trace (or released
 * already). */
static inline size_t t_unpaired_releases(const struct t_trace *t)
{
    uint64_t *set = calloc(T_SET_CAP, sizeof *set);
    size_t bad = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (!t->recs[i].release)
            t_set_add(set, t->recs[i].id);
        else if (!t_set_remove(set, t->recs[i].id))
            bad++;
    }
    free(set);
    return bad;
}

/* Pins this process, and the programs it runs, to CPU 0 (as taskset -c 0
 * would); *all gets the mask to put back with sched_setaffinity. */
static inline void t_pin_one_cpu(cpu_set_t *all)
{
    cpu_set_t one;
    assert_int_equal(sched_getaffinity(0, sizeof *all, all), 0);
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
}

/* A python3 test on one CPU: skipped without python3, else pinned as
 * t_pin_one_cpu; its script starts with T_PY_CPUS, which prints how many
 * CPUs python3 sees (1). */
#define T_PY_CPUS "import os\nprint(len(os.sched_getaffinity(0)))\n"
static inline void t_python3_on_one_cpu(cpu_set_t *all)
{
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    t_pin_one_cpu(all);
}

/* "KEY ADDRESS" in a program's output -> ADDRESS. */
static inline uint64_t t_out_addr(const char *out, const char *key)
{
    size_t k = strlen(key);
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, key, k) == 0 && p[k] == ' ')
            return strtoull(p + k + 1, NULL, 16);
    fail_msg("no \"%s\" line in the program's output:\n%s", key, out);
    return 0;
}

#endif
