/*
 * postproc/read/reader.c: the trace text format in (reader.h).
 *
 * Speed matters (a trace can be gigabytes): the input is read in blocks of
 * 4 MiB, lines are found with memchr and parsed in place with hand-written
 * number parsing; nothing is allocated per line. A call "block" (call
 * lines, their argument lines, frames, the closing blank line) is gathered
 * in reusable scratch arrays that refer to a scratch text buffer by offset,
 * because the input buffer moves between reads; when the blank line comes,
 * the frames are interned (one stack per distinct list) and each call is
 * handed on. Since a trace repeats a few thousand frame lists millions of
 * times, a frame list already seen is recognised by its bytes (hash, then
 * memcmp) without parsing its lines again.
 *
 * With a zstd input read through the decompression thread, that thread
 * also lexes call lines and finds and hashes frame lists ahead (scan.c);
 * at each line start the reader takes what was found there instead of
 * searching and lexing itself. The functions are the same (lex.h), and a
 * line without a hint is read here as before, so the records, warnings
 * and line numbers do not depend on the hints.
 *
 * Decisions the spec leaves to the reader:
 * - Several call lines before one frame list are a compressed group, with
 *   or without the "# allocation summary" line.
 * - A comment inside a block is handed on after the block, so it stays
 *   before the next call, where the spec places it.
 * - A line that starts like a call but cannot be read is one warning, and
 *   the block it starts is skipped to its blank line (its frames would
 *   otherwise each be a warning). Any other non-'#' line that is no record
 *   is a warning and is kept as a comment (the seed: "all lines not
 *   recognized as other record types will be interpreted as comments").
 * - A "## leak kind: K" line is no comment of its own: it gives the
 *   calls after it, up to the end of their block, their leak kind.
 * - The tracer's cut line ("## trace cut: REASON") is kept as a comment
 *   and is one warning: every result drawn from the trace is incomplete.
 * - A truncated last record (a partial last line, or a block without its
 *   blank line at the end) is dropped with one warning: its frame list may
 *   be cut short, and a wrong stack is worse than none. It is no error
 *   under --strict: a process killed while its trace was written leaves
 *   exactly this.
 * - The bytes come through input.c (plain or zstd). Before any is read as
 *   a trace, the first line is judged: binary bytes, CR-only line ends or
 *   a line that is neither header nor record make the input no trace (one
 *   message, nothing read), since reading it would print a warning a
 *   "line" and, for a file of NUL bytes, gather it all as one line. For
 *   the same reason a line that outgrows the buffer while holding NUL
 *   bytes ends the read.
 */
#include "leakkind.h"
#include "reader.h"
#include "input.h"
#include "lex.h"
#include "scan.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <alloctrace/format.h>

#define READ_BLOCK (4u << 20)

typedef struct pend_call {
    at_call call;       /* name interned; args/stack set at emit */
    uint32_t arg_first; /* index into args */
    uint64_t line;
} pend_call;

typedef struct pend_arg {
    size_t name_off, value_off;
} pend_arg;

typedef struct pend_frame {
    uint64_t addr;
    size_t text_off; /* (size_t)-1: no text */
} pend_frame;

typedef struct pend_comment {
    size_t off, len;
    uint64_t line;
} pend_comment;

typedef enum { ST_TOP, ST_CALLS, ST_FRAMES, ST_SKIP } state;

typedef struct raw_slot {
    uint64_t hash;
    size_t len;
    char *text;            /* a copy of the frame lines, "\n" after each */
    const at_stack *stack; /* NULL: empty */
} raw_slot;


typedef struct cache_slot {
    uint64_t hash;
    const at_stack *stack; /* NULL: empty */
} cache_slot;

#define NAME_CACHE 4

typedef struct reader {
    at_trace *t;
    at_stage *sink;
    /* the call names met last (a trace has a handful: malloc, free, ...),
     * tried before the trace's table of names */
    const char *names[NAME_CACHE];
    size_t name_len[NAME_CACHE];
    unsigned name_next;
    at_diag *d;
    uint64_t lineno;
    state st;
    bool stop;
    bool gave_up; /* stopped on input that is no trace, without --strict */
    bool have_index;
    uint64_t last_index;
    uint64_t block_line;
    uint8_t kind; /* from a leak kind line, for the calls of this block */
    const at_lexed_call *pre; /* the line being read, lexed ahead (scan.c), or NULL */
    at_scan *scan;            /* lines lexed ahead, or NULL */
    uint64_t base;            /* the stream offset of the read buffer's first byte */
    uint64_t hints_used;      /* line starts read from hints */
    const at_stack **list_stack; /* by the scanner's list number; NULL: not known */
    size_t nlist;

    pend_call *calls;
    size_t ncalls, ccalls;
    pend_arg *args;
    size_t nargs, cargs;
    pend_frame *frames;
    size_t nframes, cframes;
    size_t frame_texts; /* of the frames, those with a text */
    pend_comment *comments;
    size_t ncomments, ccomments;
    char *text; /* scratch text, NUL-separated */
    size_t tlen, tcap;
    char *ctext; /* scratch for comments inside a block */
    size_t ctlen, ctcap;

    at_frame *fbuf; /* emit-time arrays */
    size_t cfbuf;
    at_arg *abuf;
    size_t cabuf;

    cache_slot *cache; /* frame list -> interned stack, see find_stack */
    size_t ncache, cache_used;
    raw_slot *raw;     /* frame lines as bytes -> interned stack, see feed */
    size_t nraw, raw_used;
    /* the copies raw's texts point into, kept to the reader's end: a
     * malloc each was 13 MB in 34,000 blocks on a cc1plus trace, 3,000
     * page faults as the heap grew and 3,000 more as the copies first
     * touched it, on the reading thread */
    at_arena lists;
    /* the next block's frame list, found and hashed at its first call
     * line (see look_ahead); list NULL: none */
    const char *list, *list_stop, *list_next;
    uint64_t list_hash;
} reader;

/* Grows *p (elements of size sz) so that n+1 fit. */
static void reserve(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return;
    size_t c = *cap ? *cap * 2 : 64;
    while (c <= n)
        c *= 2;
    void *q = realloc(*p, c * sz);
    if (!q)
        at_oom();
    *p = q;
    *cap = c;
}

static size_t save_text(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap * 2 : 4096;
        while (c < *len + n + 1)
            c *= 2;
        char *q = realloc(*buf, c);
        if (!q)
            at_oom();
        *buf = q;
        *cap = c;
    }
    size_t off = *len;
    memcpy(*buf + off, s, n);
    (*buf)[off + n] = '\0';
    *len += n + 1;
    return off;
}

static void put(reader *r, at_record *rec)
{
    at_stage_put(r->sink, rec);
}

/* Reports malformed input; returns true when the read must stop. */
#define BAD(r, line, ...) ((r)->stop = at_diag_input((r)->d, (line), __VA_ARGS__))

/* ---- numbers ----------------------------------------------------------- */

static const char *find_first(const char *s, size_t len, const char *needle, size_t n)
{
    return memmem(s, len, needle, n);
}

/* ---- header ------------------------------------------------------------ */

/* "yyyy.m.d H:M:S" (sp-rtrace wrote unpadded fields) -> the padded form. */
static bool normalize_timestamp(const char *v, size_t len, char out[32])
{
    uint64_t f[6];
    const char seps[] = ".. ::";
    const char *p = v, *end = v + len;
    for (int i = 0; i < 6; i++) {
        size_t n = at_lex_dec(p, end, &f[i]);
        if (!n || n > 4)
            return false;
        p += n;
        if (i < 5) {
            if (p == end || *p != seps[i])
                return false;
            p++;
            if (i == 2)
                while (p < end && *p == ' ')
                    p++;
        }
    }
    if (p != end || f[1] > 12 || f[2] > 31 || f[3] > 24 || f[4] > 59 || f[5] > 60)
        return false;
    snprintf(out, 32, "%04u.%02u.%02u %02u:%02u:%02u", (unsigned)f[0], (unsigned)f[1],
             (unsigned)f[2], (unsigned)f[3], (unsigned)f[4], (unsigned)f[5]);
    return true;
}

static void header_filter(at_header *h, const char *v, size_t len)
{
    const char *p = v, *end = v + len;
    char *other = NULL;
    size_t olen = 0;
    while (p < end) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        const char *we = bar ? bar : end;
        size_t n = (size_t)(we - p);
        if (n == 5 && memcmp(p, AT_FILTER_LEAKS, 5) == 0)
            h->filter |= AT_F_LEAKS;
        else if (n == 8 && memcmp(p, AT_FILTER_COMPRESS, 8) == 0)
            h->filter |= AT_F_COMPRESS;
        else if (n == 7 && memcmp(p, AT_FILTER_RESOLVE, 7) == 0)
            h->filter |= AT_F_RESOLVE;
        else if (n) {
            char *o = realloc(other, olen + n + 2);
            if (!o)
                at_oom();
            other = o;
            if (olen)
                other[olen++] = '|';
            memcpy(other + olen, p, n);
            olen += n;
            other[olen] = '\0';
        }
        p = we + 1;
    }
    free(h->filter_other);
    h->filter_other = other;
}

static void read_header(reader *r, const char *line, size_t len)
{
    at_header *h = &r->t->header;
    at_header_clear(h);
    h->present = true;
    const char *p = line, *end = line + len;
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            break;
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *fe = comma ? comma : end;
        const char *eq = memchr(p, '=', (size_t)(fe - p));
        if (!eq || eq == p) {
            if (BAD(r, r->lineno, "header field without key=value: \"%.*s\"", (int)(fe - p), p))
                return;
        } else {
            const char *k = p, *v = eq + 1;
            size_t kl = (size_t)(eq - p), vl = (size_t)(fe - v);
            char ts[32];
#define KEY(name) (kl == strlen(name) && memcmp(k, name, kl) == 0)
            if (KEY(AT_HDR_VERSION))
                at_header_set(&h->version, v, vl);
            else if (KEY(AT_HDR_ARCH))
                at_header_set(&h->arch, v, vl);
            else if (KEY(AT_HDR_TIMESTAMP)) {
                if (normalize_timestamp(v, vl, ts))
                    at_header_set(&h->timestamp, ts, strlen(ts));
                else
                    at_header_set(&h->timestamp, v, vl);
            } else if (KEY(AT_HDR_PROCESS))
                at_header_set(&h->process, v, vl);
            else if (KEY(AT_HDR_PID))
                at_header_set(&h->pid, v, vl);
            else if (KEY(AT_HDR_FILTER))
                header_filter(h, v, vl);
            else if (KEY(AT_HDR_DEPTH))
                at_header_set(&h->depth, v, vl);
            else if (KEY(AT_HDR_ORIGIN))
                at_header_set(&h->origin, v, vl);
            else if (KEY(AT_HDR_SAMPLE)) {
                uint64_t n = 0;
                size_t i = 0;
                for (; i < vl && v[i] >= '0' && v[i] <= '9' && n < (1ull << 50); i++)
                    n = n * 10 + (uint64_t)(v[i] - '0');
                if (i == 0 || i < vl || n == 0) {
                    if (BAD(r, r->lineno, "header field " AT_HDR_SAMPLE "=%.*s: expected a number of bytes",
                            (int)vl, v))
                        return;
                } else {
                    at_header_set(&h->sample, v, vl);
                    h->sample_interval = n;
                }
            } else if (KEY(AT_HDR_TIME)) {
                if (vl == strlen(AT_TIME_ON_CHANGE) && memcmp(v, AT_TIME_ON_CHANGE, vl) == 0)
                    h->time_on_change = true;
                else if (BAD(r, r->lineno, "header field " AT_HDR_TIME "=%.*s: expected \"" AT_TIME_ON_CHANGE "\"",
                             (int)vl, v))
                    return;
            } else
                at_header_add_unknown(h, k, kl, v, vl);
#undef KEY
        }
        p = fe + (comma ? 1 : 0);
    }
    /* The compressed form is a way of writing calls; what goes down the
     * stages are plain calls, so only a compressing run sets it again. */
    r->t->input_compressed = (h->filter & AT_F_COMPRESS) != 0;
    h->filter &= ~(unsigned)AT_F_COMPRESS;
}

static void emit_header(reader *r, uint64_t line)
{
    at_record rec = { .kind = AT_REC_HEADER, .line = line, .u.header = &r->t->header };
    put(r, &rec);
}

/* Does the first line look like a header (key=value fields)? */
static bool looks_like_header(const char *line, size_t len)
{
    if (!len || (line[0] >= '0' && line[0] <= '9') || strchr(":@<&#\t", line[0]))
        return false;
    const char *eq = memchr(line, '=', len);
    return eq && eq != line;
}

/* ---- registries, maps, attachments -------------------------------------- */

static bool read_resource(reader *r, const char *line, size_t len)
{
    const char *end = line + len, *p = line + 1;
    uint64_t bit;
    size_t n = at_lex_hex(p, end, &bit);
    if (!n || bit == 0 || bit > 0xffffffffu || (bit & (bit - 1)))
        return false;
    p += n;
    if (!at_lex_prefix(p, (size_t)(end - p), "> : "))
        return false;
    p += 4;
    bool refcount = false;
    const char *te = end;
    if (te > p && te[-1] == ']') {
        const char *lb = at_lex_last(p, (size_t)(te - p), " [", 2);
        if (!lb)
            return false;
        const char *f = lb + 2, *fe = te - 1;
        while (f < fe) {
            const char *bar = memchr(f, '|', (size_t)(fe - f));
            const char *we = bar ? bar : fe;
            if (we - f == 8 && memcmp(f, "refcount", 8) == 0)
                refcount = true;
            f = we + 1;
        }
        te = lb;
    }
    if (te <= p || te[-1] != ')')
        return false;
    const char *lp = find_first(p, (size_t)(te - p), " (", 2);
    if (!lp || lp == p)
        return false;
    char *name = strndup(p, (size_t)(lp - p));
    char *desc = strndup(lp + 2, (size_t)(te - 1 - (lp + 2)));
    if (!name || !desc)
        at_oom();
    const at_resource *res = at_trace_add_resource(r->t, (uint32_t)bit, name, desc, refcount);
    free(name);
    free(desc);
    if (!res)
        return false;
    at_record rec = { .kind = AT_REC_RESOURCE, .line = r->lineno, .u.resource = res };
    put(r, &rec);
    return true;
}

static bool read_context(reader *r, const char *line, size_t len)
{
    const char *end = line + len, *p = line + 2;
    uint64_t bit;
    size_t n = at_lex_hex(p, end, &bit);
    if (!n || bit == 0 || bit > 0xffffffffu)
        return false;
    p += n;
    if (!at_lex_prefix(p, (size_t)(end - p), " : "))
        return false;
    p += 3;
    char *name = strndup(p, (size_t)(end - p));
    if (!name)
        at_oom();
    const at_context *c = at_trace_add_context(r->t, (uint32_t)bit, name);
    free(name);
    if (!c)
        return false;
    at_record rec = { .kind = AT_REC_CONTEXT, .line = r->lineno, .u.context = c };
    put(r, &rec);
    return true;
}

static bool read_map(reader *r, const char *line, size_t len)
{
    const char *path;
    size_t plen;
    uint64_t start, end;
    if (at_maps_parse_line(line + 2, len - 2, &path, &plen, &start, &end) != 0)
        return false;
    char *p = strndup(path, plen);
    if (!p)
        at_oom();
    const at_map *m = at_maps_add(r->t->maps, p, start, end);
    free(p);
    at_record rec = { .kind = AT_REC_MAP, .line = r->lineno, .u.map = m };
    put(r, &rec);
    return true;
}

static bool read_attachment(reader *r, const char *line, size_t len)
{
    const char *p = line + 2, *end = line + len;
    const char *sep = find_first(p, (size_t)(end - p), " : ", 3);
    if (!sep || sep == p)
        return false;
    char *name = strndup(p, (size_t)(sep - p));
    char *path = strndup(sep + 3, (size_t)(end - sep - 3));
    if (!name || !path)
        at_oom();
    at_record rec = { .kind = AT_REC_ATTACHMENT, .line = r->lineno };
    rec.u.attachment.name = name;
    rec.u.attachment.path = path;
    put(r, &rec);
    free(name);
    free(path);
    return true;
}

static void emit_comment(reader *r, const char *text, size_t len, uint64_t line)
{
    if (at_lex_prefix(text, len, AT_CUT_PREFIX)) {
        size_t n = strlen(AT_CUT_PREFIX);
        at_diag_warn(r->d, "%s:%llu: the trace was cut (%.*s): what is read from it is incomplete",
                     r->d->file, (unsigned long long)line, (int)(len - n), text + n);
    }
    if (at_lex_prefix(text, len, AT_BUILD_ID_PREFIX)) {
        const char *p = text + strlen(AT_BUILD_ID_PREFIX);
        size_t n = len - strlen(AT_BUILD_ID_PREFIX);
        const char *arrow = at_lex_last(p, n, AT_MAP_ARROW, 4);
        if (arrow && arrow != p) {
            char *path = strndup(p, (size_t)(arrow - p));
            char *hex = strndup(arrow + 4, (size_t)(p + n - arrow - 4));
            if (!path || !hex)
                at_oom();
            at_maps_set_build_id(r->t->maps, path, hex);
            free(path);
            free(hex);
        }
    }
    at_record rec = { .kind = AT_REC_COMMENT, .line = line };
    rec.u.comment.text = text;
    rec.u.comment.len = len;
    put(r, &rec);
}

/* ---- calls ------------------------------------------------------------- */

/* The interned name, from the reader's few last ones or the trace's
 * table (a hash and a strnlen a call, ~7% of reading a real trace). */
static bool same_name(const char *a, const char *b, size_t len)
{
    /* a few bytes: a loop, not a call to memcmp for each name tried */
    for (size_t i = 0; i < len; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

static const char *call_name(reader *r, const char *p, size_t len)
{
    for (unsigned i = 0; i < NAME_CACHE; i++)
        if (r->names[i] && r->name_len[i] == len && same_name(r->names[i], p, len))
            return r->names[i];
    const char *name = at_trace_name(r->t, p, len);
    r->names[r->name_next] = name;
    r->name_len[r->name_next] = len;
    r->name_next = (r->name_next + 1) % NAME_CACHE;
    return name;
}

/* Parses a call line into c (name interned). Returns false if malformed.
 * The scanner (scan.c) may have lexed the line already on the
 * decompression thread (r->pre): the same function on the same bytes. */
static bool parse_call(reader *r, const char *line, size_t len, at_call *c)
{
    at_lexed_call own;
    const at_lexed_call *lx = r->pre;
    if (!lx) {
        if (!at_lex_call(line, len, &own))
            return false;
        lx = &own;
    }
    static const at_call none;
    *c = none; /* a copy, not memset: gcc made that a rep stos */
    c->index = lx->index;
    c->context = lx->context;
    c->has_time = lx->has_time;
    c->time_us = lx->time_us;
    c->is_alloc = lx->is_alloc;
    c->size = lx->size;
    c->id = lx->id;
    const char *p = line + lx->name_off, *name_end = p + lx->name_len;
    /* NAME<TYPE>: split only for a registered type (C++ template names). */
    c->res = r->t->nresources ? r->t->resources[0].bit : 0;
    if (name_end[-1] == '>') {
        const char *lt = at_lex_last(p, (size_t)(name_end - p), "<", 1);
        if (lt && lt > p) {
            const at_resource *res =
                at_trace_resource_named(r->t, lt + 1, (size_t)(name_end - 1 - (lt + 1)));
            if (res) {
                c->res = res->bit;
                name_end = lt;
            }
        }
    }
    c->name = call_name(r, p, (size_t)(name_end - p));
    return true;
}

static void block_reset(reader *r)
{
    r->ncalls = r->nargs = r->nframes = r->frame_texts = 0;
    r->kind = 0;
    r->tlen = 0;
}

static void flush_block_comments(reader *r)
{
    for (size_t i = 0; i < r->ncomments && !r->stop; i++)
        emit_comment(r, r->ctext + r->comments[i].off, r->comments[i].len, r->comments[i].line);
    r->ncomments = 0;
    r->ctlen = 0;
}

/* A cheap hash of the pending frames: addresses mixed a word at a time,
 * texts (rare before resolving) byte by byte. */
static uint64_t frames_hash(const reader *r)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ r->nframes;
    for (size_t i = 0; i < r->nframes; i++) {
        h = (h ^ r->frames[i].addr) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        if (r->frames[i].text_off != (size_t)-1)
            for (const char *t = r->text + r->frames[i].text_off; *t; t++)
                h = (h ^ (unsigned char)*t) * 0x100000001b3ull;
    }
    return h;
}

static bool same_frames(const reader *r, const at_stack *s)
{
    if (s->nframes != r->nframes)
        return false;
    for (size_t i = 0; i < r->nframes; i++) {
        const char *t = r->frames[i].text_off == (size_t)-1 ? NULL : r->text + r->frames[i].text_off;
        if (s->frames[i].addr != r->frames[i].addr)
            return false;
        if (!t != !s->frames[i].text || (t && strcmp(t, s->frames[i].text) != 0))
            return false;
    }
    return true;
}

/* The pending frames interned in the trace's table of stacks. */
static const at_stack *intern_frames(reader *r)
{
    reserve((void **)&r->fbuf, &r->cfbuf, r->nframes, sizeof *r->fbuf);
    for (size_t k = 0; k < r->nframes; k++) {
        r->fbuf[k].addr = r->frames[k].addr;
        r->fbuf[k].text =
            r->frames[k].text_off == (size_t)-1 ? NULL : r->text + r->frames[k].text_off;
    }
    return at_stacks_intern(r->t->stacks, r->fbuf, (uint32_t)r->nframes);
}

/* The interned stack of the pending frames. A trace repeats a few thousand
 * stacks millions of times, so the reader keeps its own table from a cheap
 * hash of the parsed frames to the interned stack, checked frame by frame,
 * and interns (hashing and copying) only a list it has not seen. Frames
 * without texts (the tracer's unresolved lists) go straight to the stack
 * table: its lookup is the same work (addresses hashed and compared), and
 * this table's probe, a cache miss each of the 35,000-70,000 new lists of
 * a compiler's trace, bought nothing. */
static const at_stack *find_stack(reader *r)
{
    if (!r->frame_texts)
        return intern_frames(r);
    uint64_t h = frames_hash(r);
    if ((r->cache_used + 1) * 2 > r->ncache) {
        size_t n = r->ncache ? r->ncache * 2 : 4096;
        cache_slot *c = calloc(n, sizeof *c);
        if (!c)
            at_oom();
        for (size_t i = 0; i < r->ncache; i++) {
            if (!r->cache[i].stack)
                continue;
            size_t j = (size_t)r->cache[i].hash & (n - 1);
            while (c[j].stack)
                j = (j + 1) & (n - 1);
            c[j] = r->cache[i];
        }
        free(r->cache);
        r->cache = c;
        r->ncache = n;
    }
    size_t i = (size_t)h & (r->ncache - 1);
    for (; r->cache[i].stack; i = (i + 1) & (r->ncache - 1))
        if (r->cache[i].hash == h && same_frames(r, r->cache[i].stack))
            return r->cache[i].stack;
    const at_stack *s = intern_frames(r);
    r->cache[i] = (cache_slot){ h, s };
    r->cache_used++;
    return s;
}

/* Hands on the pending calls with their stack, and ends the block. */
static void emit_calls(reader *r, const at_stack *stack)
{
    reserve((void **)&r->abuf, &r->cabuf, r->nargs, sizeof *r->abuf);
    for (size_t i = 0; i < r->nargs; i++) {
        r->abuf[i].name = r->text + r->args[i].name_off;
        r->abuf[i].value = r->text + r->args[i].value_off;
    }
    for (size_t i = 0; i < r->ncalls && !r->stop; i++) {
        pend_call *pc = &r->calls[i];
        uint32_t next = i + 1 < r->ncalls ? r->calls[i + 1].arg_first : (uint32_t)r->nargs;
        pc->call.nargs = next - pc->arg_first;
        pc->call.args = pc->call.nargs ? r->abuf + pc->arg_first : NULL;
        pc->call.stack = stack;
        at_record rec = { .kind = AT_REC_CALL, .line = pc->line, .u.call = &pc->call };
        put(r, &rec);
    }
    block_reset(r);
    r->st = ST_TOP;
    flush_block_comments(r);
}

static const at_stack *emit_block(reader *r)
{
    const at_stack *stack = find_stack(r);
    emit_calls(r, stack);
    return stack;
}

/* Where the next call of the block is parsed: in place, so that a call is
 * not built on the stack and copied (88 bytes) into the block; kept only
 * by add_call. */
static at_call *call_slot(reader *r)
{
    reserve((void **)&r->calls, &r->ccalls, r->ncalls, sizeof *r->calls);
    return &r->calls[r->ncalls].call;
}

/* Keeps the call parsed into call_slot's place. */
static void add_call(reader *r)
{
    const at_call *c = &r->calls[r->ncalls].call;
    if (!r->t->input_compressed) {
        if (r->have_index && c->index <= r->last_index)
            BAD(r, r->lineno, "call index %llu does not follow %llu",
                (unsigned long long)c->index, (unsigned long long)r->last_index);
        r->have_index = true;
        r->last_index = c->index;
    }
    pend_call *pc = &r->calls[r->ncalls++];
    pc->arg_first = (uint32_t)r->nargs;
    pc->line = r->lineno;
    pc->call.kind = r->kind;
}

static bool read_arg(reader *r, const char *line, size_t len)
{
    const char *p = line + 2, *end = line + len;
    const char *eq = find_first(p, (size_t)(end - p), " = ", 3);
    if (!eq || eq == p)
        return false;
    reserve((void **)&r->args, &r->cargs, r->nargs, sizeof *r->args);
    pend_arg *a = &r->args[r->nargs++];
    a->name_off = save_text(&r->text, &r->tlen, &r->tcap, p, (size_t)(eq - p));
    a->value_off = save_text(&r->text, &r->tlen, &r->tcap, eq + 3, (size_t)(end - eq - 3));
    return true;
}

static bool read_frame(reader *r, const char *line, size_t len)
{
    const char *end = line + len;
    if (!at_lex_prefix(line, len, "\t0x"))
        return false;
    uint64_t addr;
    size_t n = at_lex_hex(line + 3, end, &addr);
    if (!n)
        return false;
    const char *p = line + 3 + n;
    size_t off = (size_t)-1;
    if (p < end) {
        if (*p != ' ')
            return false;
        off = save_text(&r->text, &r->tlen, &r->tcap, p + 1, (size_t)(end - p - 1));
        r->frame_texts++;
    }
    reserve((void **)&r->frames, &r->cframes, r->nframes, sizeof *r->frames);
    r->frames[r->nframes++] = (pend_frame){ addr, off };
    return true;
}

static void keep_block_comment(reader *r, const char *line, size_t len)
{
    reserve((void **)&r->comments, &r->ccomments, r->ncomments, sizeof *r->comments);
    size_t off = save_text(&r->ctext, &r->ctlen, &r->ctcap, line, len);
    r->comments[r->ncomments++] = (pend_comment){ off, len, r->lineno };
}

/* ---- lines ------------------------------------------------------------- */

static bool starts_call(const char *line, size_t len)
{
    return len && line[0] >= '0' && line[0] <= '9';
}

static void top_line(reader *r, const char *line, size_t len);

/* A leak kind line: the kind of the calls that follow in this block. */
/* The tracer's mark after each chunk of a full trace: every call up to
 * its index is above it (reorder.c drops the calls of a chunk cut short). */
static bool take_chunk_end(reader *r, const char *line, size_t len)
{
    size_t n = sizeof AT_CHUNK_END - 1;
    if (!at_lex_prefix(line, len, AT_CHUNK_END))
        return false;
    uint64_t v = 0;
    size_t i = n;
    for (; i < len && line[i] >= '0' && line[i] <= '9' && v < UINT64_MAX / 10; i++)
        v = v * 10 + (uint64_t)(line[i] - '0');
    if (i == len && i > n && v > r->t->chunk_end)
        r->t->chunk_end = v;
    return true;
}

static bool take_kind(reader *r, const char *line, size_t len)
{
    at_leak_kind k = at_leak_kind_line(line, len);
    if (k != AT_LEAK_UNKNOWN)
        r->kind = (uint8_t)k;
    return k != AT_LEAK_UNKNOWN;
}

static void block_line(reader *r, const char *line, size_t len)
{
    if (len == 0) {
        emit_block(r);
        return;
    }
    if (line[0] == '\t') {
        if (len > 1 && line[1] == '$') {
            if (r->st != ST_CALLS) {
                BAD(r, r->lineno, "argument line after the frames");
                return;
            }
            if (!read_arg(r, line, len))
                BAD(r, r->lineno, "malformed argument line (TAB $NAME = VALUE)");
            return;
        }
        if (read_frame(r, line, len))
            r->st = ST_FRAMES;
        else
            BAD(r, r->lineno, "malformed frame line (TAB 0xADDR [TEXT])");
        return;
    }
    if (at_lex_prefix(line, len, AT_ALLOC_SUMMARY)) {
        r->st = ST_FRAMES;
        return;
    }
    if (line[0] == '#') {
        if (take_chunk_end(r, line, len))
            return;
        if (!take_kind(r, line, len) && !at_lex_prefix(line, len, AT_TEMP_COMMENT))
            keep_block_comment(r, line, len);
        return;
    }
    if (starts_call(line, len) && r->st == ST_CALLS) {
        if (parse_call(r, line, len, call_slot(r))) {
            add_call(r); /* another call of a compressed group */
            return;
        }
    }
    /* Anything else ends the block that lacked its blank line. */
    if (BAD(r, r->block_line, "call record not ended by a blank line"))
        return;
    emit_block(r);
    if (!r->stop)
        top_line(r, line, len);
}

/* A snapshot file (the leaks form with a "## snapshot: N LABEL" line,
 * docs/TEXT_FORMAT.md) holds the blocks live at that moment, not leaks:
 * the header keeps its name (the last such line's) for the report's
 * words and --diff's, set before the line goes down as a comment. A full
 * trace's marks are not the leaks form and name nothing. */
static void take_snapshot_name(reader *r, const char *line, size_t len)
{
    static const char prefix[] = AT_SNAPSHOT_PREFIX;
    size_t n = sizeof prefix - 1;
    at_header *h = &r->t->header;
    if ((h->filter & AT_F_LEAKS) && at_lex_prefix(line, len, AT_SNAPSHOT_PREFIX))
        at_header_set(&h->snapshot, line + n, len - n);
}

static void top_line(reader *r, const char *line, size_t len)
{
    if (len == 0)
        return;
    bool ok = true;
    switch (line[0]) {
    case '#':
        if (take_kind(r, line, len) || take_chunk_end(r, line, len))
            return;
        take_snapshot_name(r, line, len);
        if (!at_lex_prefix(line, len, AT_TEMP_COMMENT) && !at_lex_prefix(line, len, AT_ALLOC_SUMMARY))
            emit_comment(r, line, len, r->lineno);
        return;
    case '<':
        ok = read_resource(r, line, len);
        break;
    case '@':
        ok = at_lex_prefix(line, len, AT_CTX_PREFIX) && read_context(r, line, len);
        break;
    case ':':
        ok = at_lex_prefix(line, len, AT_MAP_PREFIX) && read_map(r, line, len);
        break;
    case '&':
        ok = at_lex_prefix(line, len, AT_ATTACH_PREFIX) && read_attachment(r, line, len);
        break;
    case '\t':
        BAD(r, r->lineno, "argument or frame line outside a call record");
        return;
    default:
        if (starts_call(line, len)) {
            if (parse_call(r, line, len, call_slot(r))) {
                r->block_line = r->lineno;
                add_call(r);
                r->st = ST_CALLS;
            } else if (!BAD(r, r->lineno, "malformed call line: \"%.*s\"",
                            (int)(len > 80 ? 80 : len), line)) {
                r->st = ST_SKIP;
            }
            return;
        }
        ok = false;
    }
    if (!ok) {
        if (BAD(r, r->lineno, "unreadable line kept as a comment: \"%.*s\"",
                (int)(len > 80 ? 80 : len), line))
            return;
        emit_comment(r, line, len, r->lineno);
    }
}

static void one_line(reader *r, const char *line, size_t len)
{
    r->lineno++;
    if (len && line[len - 1] == '\r')
        len--;
    if (r->lineno == 1) {
        if (looks_like_header(line, len)) {
            read_header(r, line, len);
            if (!r->stop)
                emit_header(r, 1);
            return;
        }
        emit_header(r, 0);
        if (BAD(r, 1, "no header line (version=..., arch=..., ...)"))
            return;
    }
    switch (r->st) {
    case ST_TOP:
        top_line(r, line, len);
        break;
    case ST_CALLS:
    case ST_FRAMES:
        block_line(r, line, len);
        break;
    case ST_SKIP:
        if (len == 0)
            r->st = ST_TOP;
        break;
    }
}

/* End of input; partial: the last line had no line end. */
static void at_eof(reader *r, bool partial)
{
    if (r->lineno == 0 && !partial) {
        emit_header(r, 0); /* empty input: an empty trace */
        return;
    }
    if (partial || r->st == ST_CALLS || r->st == ST_FRAMES) {
        uint64_t line = r->st == ST_CALLS || r->st == ST_FRAMES ? r->block_line : r->lineno;
        bool strict = r->d->strict;
        r->d->strict = false; /* a warning even under --strict: see the top */
        if (r->st == ST_CALLS || r->st == ST_FRAMES)
            at_diag_input(r->d, line, "truncated last record (call %llu) dropped",
                          (unsigned long long)r->calls[r->ncalls - 1].call.index);
        else
            at_diag_input(r->d, line, "truncated last line dropped");
        r->d->strict = strict;
        block_reset(r);
        flush_block_comments(r);
    }
}

static void reader_init(reader *r, at_trace *t, at_stage *sink, at_diag *d)
{
    memset(r, 0, sizeof *r);
    r->t = t;
    r->sink = sink;
    r->d = d;
}

static void reader_done(reader *r)
{
    free(r->calls);
    free(r->args);
    free(r->frames);
    free(r->comments);
    free(r->text);
    free(r->ctext);
    free(r->fbuf);
    free(r->abuf);
    free(r->cache);
    free(r->list_stack);
    at_arena_free(&r->lists);
    free(r->raw);
}

/* A copy of the list p[0..len) that lives as long as the reader. */
static char *keep_list(reader *r, const char *p, size_t len)
{
    return memcpy(at_arena_alloc(&r->lists, len, 1), p, len);
}

/* ---- the fast path for repeated frame lists ------------------------------ */

/* The table of lists seen, zeroed, from 2 MiB up in huge pages: one probe
 * a group lands anywhere in 8 MiB on a compiler's trace, and with 4 KiB
 * pages most probes missed the TLB too (the page walk was half of the
 * probe's time). */
static raw_slot *raw_table(size_t n)
{
    size_t bytes = n * sizeof(raw_slot), huge = 2u << 20;
    if (bytes < huge) {
        raw_slot *t = calloc(n, sizeof *t);
        if (!t)
            at_oom();
        return t;
    }
    void *t = NULL;
    if (posix_memalign(&t, huge, bytes) != 0)
        at_oom();
    madvise(t, bytes, MADV_HUGEPAGE); /* a hint: no harm when refused */
    memset(t, 0, bytes);
    return t;
}

static raw_slot *raw_find(reader *r, uint64_t h, const char *p, size_t len)
{
    if ((r->raw_used + 1) * 2 > r->nraw) {
        size_t n = r->nraw ? r->nraw * 2 : 4096;
        raw_slot *t = raw_table(n);
        for (size_t i = 0; i < r->nraw; i++) {
            if (!r->raw[i].stack)
                continue;
            size_t j = (size_t)r->raw[i].hash & (n - 1);
            while (t[j].stack)
                j = (j + 1) & (n - 1);
            t[j] = r->raw[i];
        }
        free(r->raw);
        r->raw = t;
        r->nraw = n;
    }
    size_t i = (size_t)h & (r->nraw - 1);
    for (; r->raw[i].stack; i = (i + 1) & (r->nraw - 1))
        if (r->raw[i].hash == h && r->raw[i].len == len && memcmp(r->raw[i].text, p, len) == 0)
            break;
    return &r->raw[i];
}

/* At a block's first frame line, with the whole frame list and its blank
 * line in the buffer: a trace repeats a few thousand frame lists millions
 * of times, so the bytes of the list are looked up as they are, and only a
 * list never seen is parsed line by line (and remembered if it was nothing
 * but well-formed frame lines). Returns the end of the blank line, or NULL
 * to go the ordinary way. */
/* A frame list not known yet, p..stop its lines, next the end of its
 * blank line: read line by line. Returns its stack when it was nothing
 * but well-formed frame lines (so its bytes may stand for it from now on),
 * else NULL. */
/* A new list whose every line is "\t0x" HEX and nothing more (the
 * tracer's unresolved frames) read in one loop into the block's frames:
 * what one_line, block_line and read_frame make of such lines, without
 * their tests for every other form (a compiler's trace has 50,000 new
 * lists of 40-120 lines: a tenth of its reading). Returns the number of
 * lines, or 0 with nothing changed at a line of any other form. */
static size_t plain_frames(reader *r, const char *p, const char *stop)
{
    size_t first = r->nframes, lines = 0;
    for (const char *q = p; q <= stop; lines++) {
        uint64_t addr;
        size_t n = at_lex_plain_frame(p, q, stop + 1, &addr);
        if (!n) {
            r->nframes = first;
            return 0;
        }
        reserve((void **)&r->frames, &r->cframes, r->nframes, sizeof *r->frames);
        r->frames[r->nframes++] = (pend_frame){ addr, (size_t)-1 };
        q += 4 + n;
    }
    r->lineno += lines;
    r->st = ST_FRAMES;
    return lines;
}

static const at_stack *new_list(reader *r, const char *p, const char *stop, const char *next)
{
    uint64_t warnings = r->d->warnings;
    size_t lines = plain_frames(r, p, stop);
    for (const char *q = lines ? stop + 1 : p; q <= stop && !r->stop; lines++) {
        const char *nl = memchr(q, '\n', (size_t)(stop + 1 - q));
        one_line(r, q, (size_t)(nl - q));
        q = nl + 1;
    }
    if (r->stop)
        return NULL;
    if (r->st == ST_FRAMES && r->nframes == lines && r->ncomments == 0 &&
        r->d->warnings == warnings) {
        r->lineno++;
        return emit_block(r);
    }
    /* the blank line, the ordinary way ("\r" or nothing) */
    one_line(r, stop + 1, (size_t)(next - 1 - (stop + 1)));
    return NULL;
}

/* A list the scanner found and numbered (scan.c: equal bytes, equal
 * number): its stack by number, an array read instead of a hash probe
 * and a memcmp of the list's 1-2 KB on a compiler's trace. */
static const char *numbered_list(reader *r, const char *p, const at_hint *hint)
{
    const char *next = p + hint->next;
    uint64_t id = hint->size;
    r->hints_used++;
    if (id < r->nlist && r->list_stack[id]) {
        r->lineno += r->list_stack[id]->nframes + 1;
        emit_calls(r, r->list_stack[id]);
        return next;
    }
    const at_stack *s = new_list(r, p, p + hint->len - 1, next);
    if (s) {
        r->list_stack = at_xgrow_to(r->list_stack, &r->nlist, id, sizeof *r->list_stack, 4096);
        r->list_stack[id] = s;
    }
    return next;
}

static const char *fast_frames(reader *r, const char *p, const char *end, const at_hint *hint)
{
    if (hint && hint->kind == AT_HINT_LIST && hint->next <= (size_t)(end - p))
        return numbered_list(r, p, hint);
    /* With the scanner running every list it can number is numbered; one
     * it could not (cut by a buffer's end) is read line by line, so that
     * the lists' bytes are not kept twice, here and there. */
    if (r->scan && at_scan_running(r->scan))
        return NULL;
    const char *stop, *next;
    uint64_t h;
    if (p == r->list) { /* found ahead: see look_ahead */
        stop = r->list_stop;
        next = r->list_next;
        h = r->list_hash;
    } else {
        next = at_lex_blank_line(p, end, &stop);
        if (!next)
            return NULL;
        h = at_lex_list_hash(p, (size_t)(stop + 1 - p));
    }
    r->list = NULL;
    size_t len = (size_t)(stop + 1 - p);
    raw_slot *slot = raw_find(r, h, p, len);
    if (slot->stack) {
        r->lineno += slot->stack->nframes + 1;
        emit_calls(r, slot->stack);
        return next;
    }
    const at_stack *s = new_list(r, p, stop, next);
    if (s) {
        /* the slot is still free: nothing was added to the table since */
        *slot = (raw_slot){ h, len, keep_list(r, p, len), s };
        r->raw_used++;
    }
    return next;
}

/* Lines looked past for a block's frame list: a group of more calls (perl's
 * and python3's traces have 50-75 calls a group) pays its one probe over
 * all of them anyway, and searching its lines twice cost more (their
 * reading thread's `read_input` samples doubled). */
#define LOOK_AHEAD_LINES 8

/* At a block's first call line, whose line end is nl: its frame list
 * (after the call lines and the summary line) found and hashed now, and
 * its slot of the table of lists seen asked for (a prefetch), so that
 * the cache miss of that probe, a third of the time fast_frames took on
 * clang's and cc1plus' traces (a table of 50,000-70,000 lists, one probe a
 * group), overlaps the parsing of the block's call lines. What is found is
 * used by fast_frames only at that very place of this buffer. */
static void look_ahead(reader *r, const char *nl, const char *end)
{
    const char *q = nl + 1;
    for (int lines = 0; q < end && ((*q >= '0' && *q <= '9') || *q == '#'); lines++) {
        const char *e = lines < LOOK_AHEAD_LINES ? memchr(q, '\n', (size_t)(end - q)) : NULL;
        if (!e)
            return;
        q = e + 1;
    }
    if (end - q <= 3 || q[0] != '\t' || q[1] != '0' || q[2] != 'x' || !r->nraw)
        return;
    r->list_next = at_lex_blank_line(q, end, &r->list_stop);
    if (!r->list_next)
        return;
    r->list = q;
    r->list_hash = at_lex_list_hash(q, (size_t)(r->list_stop + 1 - q));
    __builtin_prefetch(&r->raw[r->list_hash & (r->nraw - 1)]);
}

/* Whether the next line may start a block's frame list: right after its
 * call lines, or after the "# allocation summary" line that the tracer
 * writes after every group's calls (a full trace has one before every frame
 * list, so testing ST_CALLS alone sent every list the slow way, line by
 * line: a fifth of the time on a cc1plus trace). */
static bool frames_start(const reader *r)
{
    return r->st == ST_CALLS || (r->st == ST_FRAMES && r->nframes == 0);
}

/* Feeds the complete lines of buf[0..len); returns the bytes consumed.
 * At each line start a hint of the scanner (scan.c) may stand for the
 * search and the lexing the reader would do there. */
static size_t feed(reader *r, const char *buf, size_t len)
{
    const char *p = buf, *end = buf + len;
    r->list = NULL; /* the buffer has moved since */
    while (p < end && !r->stop) {
        const at_hint *hint = r->scan ? at_scan_at(r->scan, r->base + (uint64_t)(p - buf)) : NULL;
        if (frames_start(r) && end - p > 3 && p[0] == '\t' && p[1] == '0' && p[2] == 'x') {
            const char *next = fast_frames(r, p, end, hint);
            if (next) {
                p = next;
                continue;
            }
        }
        if (hint && hint->kind == AT_HINT_CALL && hint->len < (size_t)(end - p) &&
            p[hint->len] == '\n') {
            at_lexed_call c;
            at_scan_call(hint, &c);
            r->pre = &c;
            r->hints_used++;
            one_line(r, p, hint->len);
            r->pre = NULL;
            p += hint->len + 1;
            continue;
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        one_line(r, p, (size_t)(nl - p));
        if (r->st == ST_CALLS && r->ncalls == 1 && !(r->scan && at_scan_running(r->scan)))
            look_ahead(r, nl, end);
        p = nl + 1;
    }
    return (size_t)(p - buf);
}

/* A partial last line: a header line is kept (a trace of one line), any
 * other is a truncated record. */
static void partial_tail(reader *r, const char *p, size_t n)
{
    if (r->lineno == 0) {
        one_line(r, p, n);
        if (!r->stop)
            at_eof(r, false);
        return;
    }
    r->lineno++;
    at_eof(r, true);
}

/* ---- input that is not a trace ------------------------------------------ */

/* How much of the input is judged before any of it is read as a trace:
 * far more than any header line (a few hundred bytes). */
#define SNIFF_BYTES (64u << 10)

/* A control byte that text does not hold (file(1) judges the same way);
 * TAB, FF, VT, BEL, BS and ESC pass. */
static bool is_binary_byte(unsigned char c)
{
    if (c >= 0x20)
        return c == 0x7f;
    return c != '\t' && c != '\f' && c != '\v' && c != '\a' && c != '\b' && c != 0x1b;
}

/* Why the input starting with buf[0..len) is not a trace (into why), or
 * false. at_end: that is all of it. Only the first line is judged: the
 * rest of a trace may hold whatever its program put in names and
 * comments, and a trace without its header is still read (with a
 * warning), so the first line must be a header or a record. */
static bool not_a_trace(const char *buf, size_t len, bool at_end, char *why, size_t n)
{
    const char *nl = memchr(buf, '\n', len);
    size_t line = nl ? (size_t)(nl - buf) : len;
    if (nl && line && buf[line - 1] == '\r')
        line--;
    for (size_t i = 0; i < line; i++) {
        if (buf[i] == '\r') {
            snprintf(why, n, "its lines end in CR alone (classic Mac OS line ends), not LF or CRLF");
            return true;
        }
        if (is_binary_byte((unsigned char)buf[i])) {
            snprintf(why, n, "binary data (byte 0x%02x at offset %zu)", (unsigned char)buf[i], i);
            return true;
        }
    }
    if (!nl && !at_end) {
        snprintf(why, n, "no line end in its first %u KiB", SNIFF_BYTES >> 10);
        return true;
    }
    if (looks_like_header(buf, line) || (line && strchr("0123456789<@:&#", buf[0])))
        return false;
    snprintf(why, n, "its first line is neither a header (version=..., arch=...) nor a record");
    return true;
}

/* Judges the first bytes of the input (see not_a_trace). An input that is
 * no trace at all (a garbage file, /etc/passwd, an ELF, an empty file) is
 * an error with or without --strict, exit 2: the user asked for a trace
 * to be read and there is none; an empty result would pass for an empty
 * trace. (A trace damaged further on is read with warnings, as before.)
 * Returns true when nothing is to be read. */
static bool refuse_input(reader *r, const char *buf, size_t len, bool at_end)
{
    char why[128];
    if (len == 0)
        snprintf(why, sizeof why, "the input is empty (did the traced process write nothing?)");
    else if (!not_a_trace(buf, len, at_end, why, sizeof why))
        return false;
    at_diag_input_error(r->d, 1, "not a trace: %s", why);
    r->stop = true;
    return true;
}

/* A line longer than the read buffer that holds a NUL byte is binary data
 * (a file of NUL bytes after a header has no line end at all): reading it
 * whole would take memory without bound, for nothing. The record it cuts
 * is dropped; what came before is kept. Returns true when it was one. */
static bool binary_long_line(reader *r, const char *buf, size_t len)
{
    if (!memchr(buf, '\0', len))
        return false;
    bool strict = at_diag_input(r->d, r->lineno + 1,
                                "binary data (NUL bytes) in a line of more than %u MiB; the rest of "
                                "the input is not read", (unsigned)(len >> 20));
    block_reset(r);
    r->st = ST_TOP;
    flush_block_comments(r);
    r->stop = true;
    r->gave_up = !strict;
    return true;
}

/* ---- the read loop ------------------------------------------------------- */

/* Reads all of `in` into r. Returns 0, or -1 when the read stopped on an
 * error (reported through r->d). */
static int read_input(reader *r, at_input *in, size_t cap, const at_read_opts *opts)
{
    size_t len = 0;
    uint64_t total = 0; /* the stream's bytes read so far */
    char *buf = at_xmalloc(cap);
    bool judged = false;
    int rc = 0;
    for (;;) {
        if (len == cap) { /* a line longer than the buffer */
            if (judged && binary_long_line(r, buf, len))
                break;
            cap *= 2;
            buf = at_xrealloc(buf, cap);
        }
        ssize_t got = at_input_read(in, buf + len, cap - len);
        if (got < 0) {
            rc = -1;
            break;
        }
        len += (size_t)got;
        total += (uint64_t)got;
        if (!judged) {
            if (got > 0 && len < SNIFF_BYTES)
                continue;
            judged = true;
            if (refuse_input(r, buf, len, got == 0))
                break;
        }
        r->base = total - len;
        size_t used = feed(r, buf, len);
        if (r->stop || r->d->failed) /* a stage's error (--strict) ends the read too */
            break;
        if (got == 0) {
            if (used < len)
                partial_tail(r, buf + used, len - used);
            else
                at_eof(r, false);
            break;
        }
        memmove(buf, buf + used, len - used);
        len -= used;
        /* Each block: the callback decides how often to draw (progress.c). */
        if (opts && opts->progress) /* bytes of the file, as main's total is */
            opts->progress(opts->progress_arg, at_input_file_bytes(in));
    }
    free(buf);
    return (r->stop && !r->gave_up) || rc || r->d->failed ? -1 : 0;
}

/* The read buffer: READ_BLOCK, or less for a small input in memory. */
static size_t buffer_size(size_t hint)
{
    size_t cap = 4096;
    while (cap < READ_BLOCK && cap <= hint)
        cap *= 2;
    return cap;
}

int at_read_mem(const char *data, size_t len, at_trace *t, at_stage *sink, at_diag *d)
{
    reader r;
    reader_init(&r, t, sink, d);
    at_input *in = at_input_mem(data, len, d);
    int rc = read_input(&r, in, buffer_size(len), NULL);
    at_input_free(in);
    reader_done(&r);
    return rc;
}

int at_read_fd(int fd, at_trace *t, at_stage *sink, at_diag *d, const at_read_opts *opts)
{
    reader r;
    reader_init(&r, t, sink, d);
    at_input *in = at_input_fd(fd, d);
    at_input_ahead(in);
    r.scan = at_scan_new();
    at_scan_attach(r.scan, in);
    int rc = read_input(&r, in, READ_BLOCK, opts);
    at_input_free(in);
    at_scan_free(r.scan);
    if (opts && opts->hints_used)
        *opts->hints_used = r.hints_used;
    reader_done(&r);
    return rc;
}
