/*
 * preload/write/chunk.c: a chunk of the shared buffer - binary records and
 * tagged text - turned into the protocol's text, off the program's
 * threads (writer.c calls it on its writer thread, at flushes, and from
 * a signal handler).
 *
 * Decisions:
 * - The program's threads put a fixed 48-byte record per event into the
 *   buffer (struct at_rec: index, function, contexts, size, address,
 *   time, and the interned backtrace of sites.c), not ~300 bytes of text:
 *   formatting the frames and compressing them is the work that is moved
 *   here. Text that is no per-event record (header, registry, map lines,
 *   leaks mode's records at exit) is a tagged entry copied as it is.
 * - The text is the compressed form (TEXT_FORMAT.md section 6): the calls
 *   of the chunk that share an interned backtrace are listed together,
 *   then "# allocation summary: ...", the frames once, the blank line.
 *   Groups go out in the order of their first calls; the reader puts the
 *   calls back in index order holding back at most a chunk
 *   (postproc/read/reorder.c). A backtrace's frames are most of a full
 *   trace's bytes, and a chunk holds ~5,460 events from a few hundred
 *   sites on the programs measured (docs/benchmarks.md).
 * - Every group still open goes out before a text entry: a map line must
 *   precede the calls that use it, and one that replaces a range must not
 *   be read before the calls made under the old one (the reader resolves
 *   a held call against the maps it has when it hands the call on).
 * - A group's text stays under GROUP_TEXT, split in several groups each
 *   with the frames when longer, as live.c does at exit: a trace cut on a
 *   full disk is truncated back to a unit boundary found in its last
 *   4 KiB (outfd.c).
 * - The text goes out in pieces of at most AT_TEXT_PIECE bytes, each a
 *   write (one zstd frame when compressed), ending between units.
 * - The call lines are where the writer thread's CPU goes (~55 bytes an
 *   event; three quarters of the thread's time is zstd on them, ~1 ns a
 *   byte whatever the level). The time to the microsecond was a third of
 *   their bytes and of zstd's time, and the part it cannot compress: a
 *   call's time is written only when its millisecond differs from that of
 *   the last time written before it in index order (the header says
 *   "time=on change"; ALLOCTRACE_TIMESTAMPS=all writes every one). The
 *   decision is made as the records come, in index order, before they are
 *   grouped; the first call of every chunk carries a time, so a trace (a
 *   child's, one after exec or a restart) and a signal handler's flush
 *   start with one without state shared between formatters. The reader
 *   gives a call without one the last time before it
 *   (postproc/read/reorder.c). Index, size and the address in hex without
 *   leading zeros are what the protocol has. Measured and left
 *   (docs/benchmarks.md): pieces of 128 KiB
 *   instead of 1 MiB (no change), and handing zstd the matches this file
 *   knows (ZSTD_compressSequences: its entropy stage alone costs 28-36 ns
 *   an event against 45-53 for level -2 whole, before finding the ~3
 *   matches a line: a large change for well under 15-20% of the thread).
 * - A chunk ends with "# chunk end: INDEX" (its highest index), in the
 *   write of its last group. Its groups are not in index order, so a
 *   SIGKILL inside a chunk's writes would leave some of its calls and not
 *   others (a malloc without the free before the next malloc of that
 *   address); the readers drop the calls after the last mark, so a cut
 *   trace loses the chunk as a whole. A "# " comment: other readers skip
 *   it.
 * - No malloc, no lock: the state is mmap'd once (at_chunk_new), and a
 *   signal handler uses a state of its own, so the emergency flush can
 *   format while the writer thread was interrupted formatting.
 */
#include <string.h>
#include <sys/mman.h>

#include "tracer.h"

#define MAX_RECS (AT_CHUNK_BYTES / sizeof(struct at_rec) + 1)
#define TABLE (1u << 16)            /* twice MAX_RECS and more */
_Static_assert(TABLE >= 2 * MAX_RECS, "table at most half full");
#define NONE UINT32_MAX
#define NO_TIME UINT64_MAX
#define GROUP_TEXT 3072
#define SLACK 64                    /* format.c's 16-byte stores past the end */

struct group {
    const struct at_stack *stack;
    uint32_t first, last;           /* record numbers, linked through next[] */
};

struct slot {
    uint32_t gen;                   /* valid when equal to the state's gen */
    uint32_t group;
};

struct at_chunk {
    const struct at_rec **rec;      /* [MAX_RECS]: the records of the window */
    uint32_t *next;                 /* [MAX_RECS]: the next one of its group */
    uint64_t *time_us;              /* [MAX_RECS]: its time to write, or NO_TIME */
    struct group *groups;           /* [MAX_RECS] */
    struct slot *table;             /* [TABLE], keyed by the stack pointer */
    uint32_t nrecs, ngroups, gen;
    char *text;                     /* [AT_TEXT_PIECE + SLACK] */
    size_t len;
    at_text_out *out;
    const struct at_stamp_conv *conv;   /* the records' stamps into times */
    struct at_time_text time;       /* the last call line's second, as text */
    uint64_t last_ms;               /* the millisecond of the last time written */
    uint64_t last_index;            /* the chunk's highest index; 0: no call */
};

static size_t round_page(size_t n)
{
    return (n + 4095) & ~(size_t)4095;
}

struct at_chunk *at_chunk_new(void)
{
    size_t a = round_page(sizeof(struct at_chunk)), b = round_page(MAX_RECS * sizeof(void *)),
           c = round_page(MAX_RECS * sizeof(uint32_t)),
           d = round_page(MAX_RECS * sizeof(struct group)),
           e = round_page(TABLE * sizeof(struct slot)), f = round_page(AT_TEXT_PIECE + SLACK),
           g = round_page(MAX_RECS * sizeof(uint64_t));
    char *m = mmap(NULL, a + b + c + d + e + f + g, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct at_chunk *k = (struct at_chunk *)(void *)m;
    k->rec = (const struct at_rec **)(void *)(m + a);
    k->next = (uint32_t *)(void *)(m + a + b);
    k->groups = (struct group *)(void *)(m + a + b + c);
    k->table = (struct slot *)(void *)(m + a + b + c + d);
    k->text = m + a + b + c + d + e;
    k->time_us = (uint64_t *)(void *)(m + a + b + c + d + e + f);
    k->gen = 1;
    return k;
}

/* ---- the text out ------------------------------------------------------ */

static void text_flush(struct at_chunk *k)
{
    if (k->len)
        k->out(k->text, k->len);
    k->len = 0;
}

/* Room for `need` more bytes in the piece: the piece goes out first when
 * they do not fit. */
static char *text_room(struct at_chunk *k, size_t need)
{
    if (k->len + need > AT_TEXT_PIECE)
        text_flush(k);
    return k->text + k->len;
}

/* ---- groups ------------------------------------------------------------- */

static uint32_t slot_of(const struct at_stack *st)
{
    return (uint32_t)at_mix64((uintptr_t)st) & (TABLE - 1);
}

/* The time a record's call line shows, decided in index order: NO_TIME
 * when it is in the millisecond of the last time written. */
static uint64_t time_to_write(struct at_chunk *k, const struct at_rec *r)
{
    if (at_cfg.timestamps == AT_TIMES_NONE)
        return NO_TIME;
    uint64_t t = at_stamp_us(k->conv, r->stamp);
    if (!at_time_moves_on(&k->last_ms, t) && at_cfg.timestamps == AT_TIMES_ON_CHANGE)
        return NO_TIME;
    return t;
}

static void add_call(struct at_chunk *k, const struct at_rec *r)
{
    uint32_t i = slot_of(r->stack), n = k->nrecs++;
    k->time_us[n] = time_to_write(k, r);
    for (; k->table[i].gen == k->gen; i = (i + 1) & (TABLE - 1)) {
        struct group *g = &k->groups[k->table[i].group];
        if (g->stack == r->stack) {
            k->next[g->last] = n;
            g->last = n;
            goto linked;
        }
    }
    k->table[i] = (struct slot){ k->gen, k->ngroups };
    k->groups[k->ngroups++] = (struct group){ r->stack, n, n };
linked:
    k->rec[n] = r;
    k->next[n] = NONE;
    uint64_t index = r->head >> AT_REC_INDEX_SHIFT;
    if (index > k->last_index)
        k->last_index = index;
}

/* The chunk's mark, after its last group, in the same write: every call up
 * to its highest index is above it. */
static void put_chunk_end(struct at_chunk *k)
{
    if (!k->last_index)
        return;
    char *start = text_room(k, sizeof AT_CHUNK_END + 24), *p = start;
    memcpy(p, AT_CHUNK_END, sizeof AT_CHUNK_END - 1);
    p += sizeof AT_CHUNK_END - 1;
    p += at_fmt_dec(p, k->last_index);
    *p++ = '\n';
    k->len += (size_t)(p - start);
}

/* A record's event, without frames: at_format_body makes its call line. */
static struct at_event event_of(const struct at_rec *r, uint64_t time_us)
{
    const struct at_stack *st = r->stack;
    uint64_t h = r->head;
    int release = (h >> AT_REC_RELEASE_SHIFT) & 1;
    return (struct at_event){
        .fn = (enum at_fn)((h >> AT_REC_FN_SHIFT) & 15), .release = release,
        .size = r->size, .id = r->id, .alignment = st && !release ? st->alignment : 0,
        .ctx = r->ctx, .time_us = time_us, .no_time = time_us == NO_TIME,
    };
}

/* One piece of a group: its calls from `n` on while they fit under
 * GROUP_TEXT, then the tail. Returns the first call left (NONE: none). */
static uint32_t put_piece(struct at_chunk *k, const struct at_stack *st, uint32_t n)
{
    int nf = st ? st->n : 0;
    size_t tail = 96 + (size_t)nf * AT_FRAME_TEXT;
    char *start = text_room(k, GROUP_TEXT + AT_HEAD_MAX + 24 + tail), *p = start;
    uint64_t count = 0, bytes = 0;
    for (; n != NONE && (count == 0 || (size_t)(p - start) + AT_HEAD_MAX + 24 + tail <= GROUP_TEXT);
         n = k->next[n], count++) {
        const struct at_rec *r = k->rec[n];
        struct at_event e = event_of(r, k->time_us[n]);
        p += at_fmt_dec(p, r->head >> AT_REC_INDEX_SHIFT);
        *p++ = '.';
        *p++ = ' ';
        /* the body without frames ends in the blank line: left out */
        p += at_format_call(p, &e, &k->time) - 1;
        if (!e.release)
            bytes += e.size;
    }
    p = at_format_group_tail(p, st ? st->frames : NULL, nf, count, bytes);
    k->len += (size_t)(p - start);
    return n;
}

/* Every open group goes out, in the order of their first calls. */
static void put_groups(struct at_chunk *k)
{
    for (uint32_t g = 0; g < k->ngroups; g++)
        for (uint32_t n = k->groups[g].first; n != NONE;)
            n = put_piece(k, k->groups[g].stack, n);
    k->ngroups = 0;
    k->nrecs = 0;
    if (++k->gen == 0) {   /* wrapped: stale stamps could match again */
        memset(k->table, 0, TABLE * sizeof *k->table);
        k->gen = 1;
    }
}

static void put_text(struct at_chunk *k, const char *s, size_t n)
{
    while (n > 0) {
        size_t room = AT_TEXT_PIECE - k->len, take = n < room ? n : room;
        if (take == 0) {
            text_flush(k);
            continue;
        }
        /* A text entry holds whole lines; one longer than a piece (a map
         * line of a huge path) is split, still in file order. */
        if (take < n && k->len > 0) {
            text_flush(k);
            continue;
        }
        memcpy(k->text + k->len, s, take);
        k->len += take;
        s += take;
        n -= take;
    }
}

void at_chunk_text(struct at_chunk *k, const char *p, size_t n, at_text_out *out,
                   const struct at_stamp_conv *conv)
{
    k->out = out;
    k->conv = conv;
    k->last_index = 0;
    k->last_ms = NO_TIME;   /* the chunk's first call has a time */
    k->len = 0;
    k->nrecs = k->ngroups = 0;
    const char *end = p + n;
    while (p < end) {
        const struct at_rec *r = (const struct at_rec *)(const void *)p;
        if ((r->head & 3) == AT_REC_CALL) {
            if (k->nrecs == MAX_RECS)
                put_groups(k);
            add_call(k, r);
            p += sizeof *r;
        } else {
            size_t len = (size_t)(r->head >> AT_REC_INDEX_SHIFT);
            put_groups(k);
            put_text(k, p + 8, len);
            p += 8 + ((len + 7) & ~(size_t)7);
        }
    }
    put_groups(k);
    put_chunk_end(k);
    text_flush(k);
}
