/*
 * preload/leaks/leakreport.c: leaks mode's report at exit. It sits above the
 * live blocks (live.c), the scan (reach.c) and the writer, and is called
 * by lifecycle.c only: it collects the blocks still alive, classifies
 * them (reach.c), sorts them into the order of their allocations and
 * writes them, numbered 1, 2, ..., grouped by site and kind (the
 * compressed form; see write_groups), with the leak summary of
 * TEXT_FORMAT.md section 8. At exit, from HELPER_FROM blocks on, the
 * sort runs on a helper thread while the scan does, and so does part of
 * the text while the rest is written (see "A helper thread at exit"):
 * the second core is free by then.
 *
 * From a fatal signal's handler (`emergency`) it stays async-signal-safe:
 * no allocation, no scan (it reads /proc/self/maps and calls backtrace()),
 * no grouping (that needs memory); every block is written as a record of
 * its own, straight to the file.
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer.h"

/*
 * The blocks into the order of their keys (clock.c's order keys, in
 * allocation order). Each key is unpacked once, into (key, position)
 * pairs, merged when they come as a few ascending runs (see merge_runs)
 * or else ordered by an LSD radix sort by bytes - only the bytes where
 * keys differ: 3 or 4 passes for a run of seconds - and the blocks are
 * then moved into that order in place (see sort_by_key). It was qsort with a comparison that
 * unpacked both keys, about 100 ns a block on cc1plus's 25,000. Both
 * sorts are stable, so keys that tie (two threads within the key's
 * grain) keep the collection's order as before. Memory is mmap'd, which
 * a signal handler may call; without it, an in-place heap sort.
 */
struct keyed {
    uint64_t key;
    size_t at;
};

/* Sorts a (n pairs) by key, through t; returns whichever holds the result.
 * count: 256 counters (not on the stack: a signal's may be small). */
static struct keyed *radix_sort(struct keyed *a, struct keyed *t, size_t n, size_t *count)
{
    uint64_t differ = 0;
    for (size_t i = 1; i < n; i++)
        differ |= a[i].key ^ a[0].key;
    for (int shift = 0; shift < 64; shift += 8) {
        if (!(differ >> shift & 0xff))
            continue;
        memset(count, 0, 256 * sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[a[i].key >> shift & 0xff]++;
        for (size_t d = 0, sum = 0; d < 256; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            t[count[a[i].key >> shift & 0xff]++] = a[i];
        struct keyed *x = a;
        a = t;
        t = x;
    }
    return a;
}

static void swap_blocks(struct at_live_block *a, uint8_t *kind, size_t i, size_t j)
{
    struct at_live_block t = a[i];
    a[i] = a[j];
    a[j] = t;
    if (kind) {
        uint8_t k = kind[i];
        kind[i] = kind[j];
        kind[j] = k;
    }
}

static void sift_down(struct at_live_block *a, uint8_t *kind, size_t i, size_t n)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && at_live_key(&a[c + 1]) > at_live_key(&a[c]))
            c++;
        if (at_live_key(&a[i]) >= at_live_key(&a[c]))
            return;
        swap_blocks(a, kind, i, c);
        i = c;
    }
}

static void heap_sort(struct at_live_block *a, size_t n, uint8_t *kind)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, kind, i, n);
    for (size_t end = n; end > 1; end--) {
        swap_blocks(a, kind, 0, end - 1);
        sift_down(a, kind, 0, end - 1);
    }
}

/* Tables of 4 MiB and more ask for transparent huge pages: written
 * whole, they would otherwise cost a page fault every 4 KiB (a million
 * blocks' links, 8 MB: ~2,000). */
static void *map_anon(size_t len)
{
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (len >= (4ul << 20))
        madvise(m, len, MADV_HUGEPAGE);
    return m;
}

/*
 * The blocks come in address order (at_shadow_collect), and a heap that
 * grows upwards hands out addresses in allocation order: their keys are
 * a few ascending runs (73 on perl's 605,772 live blocks). Up to MAX_RUNS
 * of them are merged in one pass, a small heap of the runs' heads
 * choosing the next (ties to the earlier run: stable, as the radix sort
 * is), instead of the radix sort's 4 or 5 passes; one run is already in
 * order. The merge reads the keys from the blocks themselves (a run is
 * read front to back, so each key once, in cached lines) and writes only
 * where each block comes from, 4 bytes a block: (key, position) pairs
 * were 32 bytes a block, ~8,000 page faults on a million. Static: a
 * signal handler's stack may be small.
 */
#define MAX_RUNS 256
static size_t run_at[MAX_RUNS], run_end[MAX_RUNS];
static uint64_t run_key[MAX_RUNS];   /* the key at run_at */
static unsigned run_heap[MAX_RUNS];

static int head_first(unsigned x, unsigned y)
{
    return run_key[x] < run_key[y] || (run_key[x] == run_key[y] && x < y);
}

static void run_down(size_t n, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && head_first(run_heap[c + 1], run_heap[c]))
            c++;
        if (!head_first(run_heap[c], run_heap[i]))
            return;
        unsigned x = run_heap[i];
        run_heap[i] = run_heap[c];
        run_heap[c] = x;
        i = c;
    }
}

/* The nruns runs of `all` (run_at, run_end) merged: from[k] is the
 * position of the block that goes k-th. */
static void merge_runs(const struct at_live_block *all, uint32_t *from, size_t n, size_t nruns)
{
    for (unsigned r = 0; r < nruns; r++) {
        run_heap[r] = r;
        run_key[r] = at_live_key(&all[run_at[r]]);
    }
    for (size_t i = nruns / 2; i-- > 0;)
        run_down(nruns, i);
    for (size_t k = 0; k < n; k++) {
        unsigned r = run_heap[0];
        from[k] = (uint32_t)run_at[r]++;
        if (run_at[r] == run_end[r])
            run_heap[0] = run_heap[--nruns];
        else
            run_key[r] = at_live_key(&all[run_at[r]]);
        run_down(nruns, 0);
    }
}

/* How many ascending runs the keys of `all` make; the first MAX_RUNS
 * into run_at and run_end. */
static size_t find_runs(const struct at_live_block *all, size_t n)
{
    size_t nruns = 0;
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = at_live_key(&all[i]);
        if (i == 0 || key < prev) {
            if (nruns && nruns <= MAX_RUNS)
                run_end[nruns - 1] = i;
            if (++nruns <= MAX_RUNS)
                run_at[nruns - 1] = i;
        }
        prev = key;
    }
    if (nruns <= MAX_RUNS)
        run_end[nruns - 1] = n;
    return nruns;
}

/* Where each block goes, by the radix sort of `pairs` (2n + room for
 * the counters): from[k] as merge_runs gives it. */
static void radix_order(const struct at_live_block *all, uint32_t *from, size_t n,
                        struct keyed *pairs)
{
    for (size_t i = 0; i < n; i++)
        pairs[i] = (struct keyed){ at_live_key(&all[i]), i };
    struct keyed *sorted = radix_sort(pairs, pairs + n, n, (size_t *)(pairs + 2 * n));
    for (size_t k = 0; k < n; k++)
        from[k] = (uint32_t)sorted[k].at;
}

/* The blocks (when given) and their kinds (when given) moved into the
 * order from[] gives, in place, cycle by cycle (an element held aside
 * per cycle); `moved`, a bit per block, must be clear and is left set.
 * A second copy of the blocks, as the sort made before, was 32 bytes a
 * block more at the exit's peak. */
static void permute(struct at_live_block *all, uint8_t *kind, const uint32_t *from,
                    uint64_t *moved, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (moved[i / 64] >> (i % 64) & 1 || from[i] == i)
            continue;
        struct at_live_block held = all ? all[i] : (struct at_live_block){ 0 };
        uint8_t held_kind = kind ? kind[i] : 0;
        size_t j = i;
        while (from[j] != i) {
            size_t k = from[j];
            if (all)
                all[j] = all[k];
            if (kind)
                kind[j] = kind[k];
            moved[j / 64] |= 1ull << (j % 64);
            j = k;
        }
        if (all)
            all[j] = held;
        if (kind)
            kind[j] = held_kind;
        moved[j / 64] |= 1ull << (j % 64);
    }
}

/*
 * The sort's work in three steps, so that at exit a helper thread can do
 * the last two while the scan runs (see report): sort_prepare (the runs,
 * the memory: on the report's thread, before the scan reads the process's
 * mappings, which then leaves them out), sort_order (where each block
 * goes; reads the blocks), sort_move (moves them; only once the scan no
 * longer reads them). Their kinds follow afterwards, with the same
 * positions (sort_kinds).
 */
struct sort_job {
    struct at_live_block *all;
    size_t n, nruns;
    uint32_t *from;          /* n positions, then the bitmap of moved blocks */
    size_t from_len;
    struct keyed *pairs;     /* the radix sort's; NULL when the runs are merged */
    size_t pairs_len;
};

/* 1: there is work, 0: none (in order already), -1: no memory. */
static int sort_prepare(struct sort_job *j, struct at_live_block *all, size_t n)
{
    *j = (struct sort_job){ .all = all, .n = n };
    if (n < 2 || (j->nruns = find_runs(all, n)) == 1)
        return 0;
    if (n >= UINT32_MAX)
        return -1;
    j->from_len = n * sizeof(uint32_t) + (n + 63) / 64 * sizeof(uint64_t);
    j->from = map_anon(j->from_len);
    if (j->from && j->nruns > MAX_RUNS) {
        j->pairs_len = 2 * n * sizeof(struct keyed) + 256 * sizeof(size_t);
        j->pairs = map_anon(j->pairs_len);
        if (!j->pairs) {
            munmap(j->from, j->from_len);
            j->from = NULL;
        }
    }
    return j->from ? 1 : -1;
}

static uint64_t *moved_bits(const struct sort_job *j)
{
    return (uint64_t *)(j->from + j->n);
}

static void sort_order(struct sort_job *j)
{
    if (j->pairs) /* unmapped by sort_kinds: never while the scan runs */
        radix_order(j->all, j->from, j->n, j->pairs);
    else
        merge_runs(j->all, j->from, j->n, j->nruns);
}

static void sort_move(struct sort_job *j)
{
    permute(j->all, NULL, j->from, moved_bits(j), j->n);
}

/* The kinds, by address, into the blocks' new order; the job's memory
 * given back. */
static void sort_kinds(struct sort_job *j, uint8_t *kind)
{
    if (kind) {
        memset(moved_bits(j), 0, (j->n + 63) / 64 * sizeof(uint64_t));
        permute(NULL, kind, j->from, moved_bits(j), j->n);
    }
    munmap(j->from, j->from_len);
    if (j->pairs)
        munmap(j->pairs, j->pairs_len);
}

static const char *const kind_lines[] = {
    [AT_KIND_DEFINITE] = AT_LEAK_KIND_PREFIX AT_KIND_NAME_DEFINITE "\n",
    [AT_KIND_INDIRECT] = AT_LEAK_KIND_PREFIX AT_KIND_NAME_INDIRECT "\n",
    [AT_KIND_POSSIBLE] = AT_LEAK_KIND_PREFIX AT_KIND_NAME_POSSIBLE "\n",
    [AT_KIND_REACHABLE] = AT_LEAK_KIND_PREFIX AT_KIND_NAME_REACHABLE "\n",
    [AT_KIND_LIBC] = AT_LEAK_KIND_PREFIX AT_KIND_NAME_LIBC "\n",
};

/* Each block's leak kind (reach.c), into memory of its own; NULL when
 * there is none or ALLOCTRACE_LEAK_KINDS=0 (every block is then written
 * without a kind). Why a scan could not run goes into the trace, as a
 * comment, not to the program's stderr: the blocks then count as not
 * classified, which the gate fails on. */
static uint8_t *classify(const struct at_live_block *all, size_t n, const struct at_span *more,
                         size_t nmore, long helper, void (*read)(void *), void *ctx,
                         int helped)
{
    /* mmap, not malloc: a snapshot's clone child (snapshot.c) runs this
     * while a thread of the program may have held an arena's lock. */
    uint8_t *kind = n && at_cfg.leak_kinds ? map_anon(n) : NULL;
    const char *why = kind ? at_reach_classify_more(all, n, kind, more, nmore, helper, read, ctx, helped)
                           : NULL;
    if (why) {
        char line[160] = "## leak kinds not written: ";
        size_t len = strlen(line), w = strlen(why);
        if (w > sizeof line - len - 2)
            w = sizeof line - len - 2;
        memcpy(line + len, why, w);
        line[len + w] = '\n';
        at_append_raw(line, len + w + 1);
        munmap(kind, n);
        kind = NULL;
    }
    return kind;
}

/* Leak records go out in batches: through the shared buffer at exit,
 * written at once from a signal handler. */
static char batch[64 * 1024];
static size_t batch_len;

static void emit(uint64_t index, const char *body, size_t len, int emergency)
{
    if (!emergency) {
        at_commit_indexed(index, body, len);
        return;
    }
    if (batch_len + len + 24 > sizeof batch) {
        at_writer_direct(batch, batch_len, 1);
        batch_len = 0;
    }
    char *p = batch + batch_len;
    p += at_fmt_dec(p, index);
    *p++ = '.';
    *p++ = ' ';
    memcpy(p, body, len);
    batch_len = (size_t)(p + len - batch);
}

static void write_summary(size_t written, uint64_t bytes, int emergency)
{
    char s[256], *p = s;
    const char l1[] = "# Resource - " AT_RES_MEMORY_NAME " (" AT_RES_MEMORY_DESC "):\n# ";
    memcpy(p, l1, sizeof l1 - 1);
    p += sizeof l1 - 1;
    p += at_fmt_dec(p, written);
    const char l2[] = " block(s) leaked with total size of ";
    memcpy(p, l2, sizeof l2 - 1);
    p += sizeof l2 - 1;
    p += at_fmt_dec(p, bytes);
    memcpy(p, " bytes\n", 7);
    p += 7;
    if (!emergency) {
        at_append_raw(s, (size_t)(p - s));
        return;
    }
    if (batch_len)
        at_writer_direct(batch, batch_len, 1);
    batch_len = 0;
    at_writer_direct(s, (size_t)(p - s), 0);
}

/* A block as its record's event; with its site's frames or without.
 * no_time: its call line has no time (see mark_no_times), which is then
 * not worked out from its key: at exit nearly every block's. */
static struct at_event block_event(const struct at_live_block *b, int frames, int no_time)
{
    const struct at_stack *st = b->stack;
    return (struct at_event){
        .fn = (enum at_fn)st->fn, .size = at_live_size(b), .id = b->id,
        .alignment = st->alignment, .ctx = st->ctx,
        .time_us = no_time ? 0 : at_live_time_us(b), .no_time = no_time,
        .frames = (void **)st->frames, .nframes = frames ? st->n : 0,
    };
}

static void put_kind(const uint8_t *kind, size_t i)
{
    if (kind)
        at_append_raw(kind_lines[kind[i]], strlen(kind_lines[kind[i]]));
}

/* static: a signal handler may run on a small alternate stack */
static char buf[AT_HEAD_MAX + AT_FRAME_TEXT * AT_MAX_DEPTH + 2];

/* Every block a record of its own (a signal handler's way; at exit when
 * there is no memory to group them). */
static uint64_t write_plain(const struct at_live_block *all, size_t n, const uint8_t *kind,
                            int emergency)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        struct at_event e = block_event(&all[i], 1, 0);
        put_kind(kind, i);
        emit(i + 1, buf, at_format_body(buf, &e), emergency);
        bytes += e.size;
    }
    return bytes;
}

/*
 * At exit the blocks go out in the compressed form (TEXT_FORMAT.md): the
 * blocks of one site and kind together, each its own call line, then the
 * site's frames once. A site holding thousands of blocks (a cache, a
 * tree) otherwise repeats its whole backtrace for each: 150 bytes a block
 * on bench/gate's "keep", 53 so. Sites are interned, so a group is a
 * (site pointer, kind) pair: one pass finds each block's group in a hash
 * table of groups and links the block to the group's last one, so memory
 * is a link per block and an entry per group, and the groups go out in
 * the order of their first blocks.
 */
struct group {
    const struct at_stack *stack;
    size_t first, last, count;
    uint64_t bytes;
    uint8_t kind;
};

struct grouping {
    struct group *groups;
    size_t ngroups, cap;   /* cap: of both the groups and the table */
    size_t *table;         /* group number + 1; 0: empty */
    size_t *next;          /* per block: the next one in its group; n: none */
    size_t nblocks;        /* next[]'s length */
    uint64_t *no_time;     /* per block, a bit: its call line has no time (NULL: all have) */
};

/* The grouping's memory is mmap'd, not malloc'd: a snapshot's clone
 * child (snapshot.c) writes this report while a thread of the program
 * may have held one of the allocator's locks at the clone. */
static void unmap(void *p, size_t len)
{
    if (p)
        munmap(p, len);
}

static size_t group_hash(const struct at_stack *st, uint8_t kind, size_t mask)
{
    return at_mix64((uintptr_t)st ^ (uint64_t)kind << 60) & mask;
}

/* The table holds at most half its slots. Returns -1 without memory. */
static int groups_grow(struct grouping *g)
{
    size_t cap = g->cap ? g->cap * 2 : 1024;
    struct group *groups = map_anon(cap / 2 * sizeof *groups);
    if (!groups)
        return -1;
    if (g->groups)
        memcpy(groups, g->groups, g->ngroups * sizeof *groups);
    unmap(g->groups, g->cap / 2 * sizeof *groups);
    g->groups = groups;
    size_t *table = map_anon(cap * sizeof *table);
    if (!table) {
        g->cap = cap;   /* the groups' room; grouping_free unmaps it */
        unmap(g->table, cap / 2 * sizeof *table);
        g->table = NULL;
        return -1;
    }
    unmap(g->table, g->cap * sizeof *table);
    g->table = table;
    g->cap = cap;
    for (size_t k = 0; k < g->ngroups; k++) {
        size_t i = group_hash(groups[k].stack, groups[k].kind, cap - 1);
        while (table[i])
            i = (i + 1) & (cap - 1);
        table[i] = k + 1;
    }
    return 0;
}

static int group_blocks(struct grouping *g, const struct at_live_block *all, size_t n,
                        const uint8_t *kind)
{
    g->next = map_anon(n * sizeof *g->next);
    if (!g->next)
        return -1;
    g->nblocks = n;
    for (size_t b = 0; b < n; b++) {
        if ((g->ngroups + 1) * 2 > g->cap && groups_grow(g) != 0)
            return -1;
        uint8_t k = kind ? kind[b] : 0;
        size_t mask = g->cap - 1, i = group_hash(all[b].stack, k, mask);
        for (; g->table[i]; i = (i + 1) & mask) {
            struct group *gr = &g->groups[g->table[i] - 1];
            if (gr->stack == all[b].stack && gr->kind == k)
                break;
        }
        if (!g->table[i]) {
            g->table[i] = ++g->ngroups;
            g->groups[g->ngroups - 1] = (struct group){ .stack = all[b].stack, .first = b, .kind = k };
        } else {
            g->next[g->groups[g->table[i] - 1].last] = b;
        }
        struct group *gr = &g->groups[g->table[i] - 1];
        gr->last = b;
        gr->count++;
        gr->bytes += at_live_size(&all[b]);
        g->next[b] = n;
    }
    return 0;
}

/*
 * A group goes out as one record text (at_commit_indexed under its first
 * index: the others' numbers are in the text), so the writer never splits
 * it between buffers and a cut trace (full disk, file size limit) ends
 * between groups (format.c's at_unit_boundary knows them). For the same
 * reason a group's text stays under GROUP_TEXT: outfd.c looks for that
 * boundary in the last 4 KiB of the file. Longer groups are written as
 * several, each with the frames: at ~60 blocks a piece they cost a few
 * bytes a block.
 */
#define GROUP_TEXT 3072
static char group_buf[GROUP_TEXT + 2 * AT_HEAD_MAX + AT_FRAME_TEXT * AT_MAX_DEPTH + 128];

static char *put_lit(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}
#define PUT_LIT(p, lit) put_lit((p), (lit), sizeof(lit) - 1)

/* The group's blocks from `b` on, up to `stop` at most (n: the group's
 * end), as many as fit in one piece, as text into `out` (PIECE_MAX bytes
 * at most) of *len bytes; returns the first block left. */
#define PIECE_MAX sizeof group_buf
static size_t format_piece(const struct grouping *g, const struct group *gr, size_t b,
                           size_t stop, const struct at_live_block *all, char *out, size_t *len)
{
    const struct at_stack *st = gr->stack;
    size_t tail_room = 64 + (size_t)st->n * AT_FRAME_TEXT, count = 0;
    uint64_t bytes = 0;
    char *p = out;
    for (; b != stop && (count == 0 || (size_t)(p - out) + AT_HEAD_MAX + 24 + tail_room <=
                                        GROUP_TEXT); b = g->next[b], count++) {
        struct at_event e =
            block_event(&all[b], 0, g->no_time && (g->no_time[b / 64] >> (b % 64) & 1));
        if (count) {
            p += at_fmt_dec(p, b + 1);
            p = PUT_LIT(p, ". ");
        }
        /* the body without frames ends in the blank line: left out */
        p += at_format_body(p, &e) - 1;
        bytes += e.size;
    }
    p = at_format_group_tail(p, st->frames, st->n, count, bytes);
    *len = (size_t)(p - out);
    return b;
}

static size_t write_piece(const struct grouping *g, const struct group *gr, size_t b,
                          size_t stop, const struct at_live_block *all, const uint8_t *kind)
{
    size_t len, first = b;
    put_kind(kind, b);
    b = format_piece(g, gr, b, stop, all, group_buf, &len);
    at_commit_indexed(first + 1, group_buf, len);
    return b;
}

/* Where the text is: group k from its block b on (b n: past its end). */
struct text_at {
    size_t k, b;
};

/* The groups' text from `from` up to `to` (not included; {ngroups - 1,
 * n}: to the end). */
static void write_span(const struct grouping *g, const struct at_live_block *all, size_t n,
                       const uint8_t *kind, struct text_at from, struct text_at to)
{
    for (size_t k = from.k, b = from.b;; b = g->groups[++k].first) {
        size_t stop = k == to.k ? to.b : n;
        while (b != stop)
            b = write_piece(g, &g->groups[k], b, stop, all, kind);
        if (k == to.k)
            return;
    }
}

/*
 * A helper thread at exit. With many live blocks the report's thread
 * has the second core to itself by then (the program has exited but for
 * its other threads), and the report's steps that do not depend on each
 * other go there (full mode's writer thread does the same during the
 * run): the sort while the scan runs, slices of the text while the
 * others are made and written. Each is a joinable thread on a stack mapped
 * here (the scan leaves it out of the roots), started with the guard
 * held and its own guard set (whatever it or glibc allocates is not
 * traced), signals blocked, and joined before the report goes on: it
 * never outlives its step. When one cannot be started the step runs
 * here, as before. Below HELPER_FROM blocks one thread does everything:
 * starting one costs ~0.1 ms, and the tests' small programs keep the
 * single-threaded path's output. And only when a core looks free (see
 * core_free), unless ALLOCTRACE_EXIT_THREADS says: on a machine busy
 * with other work the helper shares a core with it, its memory-bound
 * work costs more CPU than on one thread, and the report waited for it
 * (perlhash on the shared 2-core machine: docs/benchmarks.md). Never
 * under a seccomp filter (see filtered). Only the report at exit uses helpers:
 * a snapshot's report runs in a clone child of the process (snapshot.c),
 * where no thread is started.
 */
#define HELPER_FROM 4096
#define HELPER_STACK (256ul << 10)

struct helper {
    pthread_t t;
    void *stack;
};

/* Whether a core looks free for a helper: more than one CPU allowed, and
 * the load average of the last minute under that many less a half (the
 * program itself counts one while it runs). */
static int core_free(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2)
        return 0;
    char text[64];
    long len = at_read_small_file(AT_FDCWD, "/proc/loadavg", text, sizeof text);
    if (len <= 0)
        return 0;
    long tenths = 0;
    const char *p = text;
    for (; p < text + len && *p >= '0' && *p <= '9'; p++)
        tenths = tenths * 10 + (*p - '0');
    tenths *= 10;
    if (p + 1 < text + len && *p == '.' && p[1] >= '0' && p[1] <= '9')
        tenths += p[1] - '0';
    return tenths < CPU_COUNT(&set) * 10 - 5;
}

/* Whether the process runs under a seccomp filter ("Seccomp:" in
 * /proc/self/status not 0, or unreadable): a sandbox may kill a process
 * that starts a thread, and the program's exit status is not ours to
 * change. */
static int filtered(void)
{
    char text[4096];
    long len = at_read_small_file(AT_FDCWD, "/proc/self/status", text, sizeof text);
    if (len <= 0)
        return 1;
    text[len] = '\0';
    const char *p = strstr(text, "\nSeccomp:");
    if (!p)
        return 0;   /* a kernel without seccomp */
    p += strlen("\nSeccomp:");
    while (*p == ' ' || *p == '\t')
        p++;
    return *p != '0';
}

/* Whether the report at exit takes a helper (n blocks). */
static int use_helpers(size_t n)
{
    if (n < HELPER_FROM || !at_cfg.exit_threads || filtered())
        return 0;
    return at_cfg.exit_threads > 0 || core_free();
}

static int helper_start(struct helper *h, void *(*fn)(void *), void *arg)
{
    h->stack = map_anon(HELPER_STACK);
    if (h->stack && at_thread_run(fn, arg, "alloctrace-exit", h->stack, HELPER_STACK, &h->t) == 0)
        return 0;
    unmap(h->stack, HELPER_STACK);
    h->stack = NULL;
    return -1;
}

static void helper_join(struct helper *h)
{
    if (!h->stack)
        return;
    pthread_join(h->t, NULL);
    munmap(h->stack, HELPER_STACK);
    h->stack = NULL;
}

/* The sort on a helper: the order at once, the moves once the scan has
 * read the blocks (may_move, a futex word). */
struct sort_helper {
    struct sort_job job;
    int may_move;
    int tid;   /* the helper's thread id, once it runs (a futex word) */
};

static void *sort_thread(void *arg)
{
    at_guard = 1;
    struct sort_helper *h = arg;
    __atomic_store_n(&h->tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    syscall(SYS_futex, &h->tid, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    sort_order(&h->job);
    while (!__atomic_load_n(&h->may_move, __ATOMIC_ACQUIRE))
        syscall(SYS_futex, &h->may_move, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    sort_move(&h->job);
    return NULL;
}

static void let_move(void *arg)
{
    struct sort_helper *h = arg;
    if (__atomic_exchange_n(&h->may_move, 1, __ATOMIC_RELEASE) == 0)
        syscall(SYS_futex, &h->may_move, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * The text shared with a helper: cut into SLICES slices of about n /
 * SLICES blocks each (a slice starts inside a group where the count
 * passes its share, and that group's pieces are cut there: a piece
 * boundary more than one thread would make, the same records, the same
 * text whoever makes it). The report's thread takes slices from the
 * front and writes them as it goes; the helper takes them from the back
 * and makes them into segments of its own, which the report's thread
 * writes, in order, once the two meet. So a helper that gets little of
 * the CPU (a busy machine) leaves the report's thread waiting for one
 * slice at most, not for half of the text. Without memory for another
 * segment the helper stops, and says where: the report's thread goes on
 * from there.
 */
#define SLICES 16
#define SEG_BYTES (4ul << 20)

struct seg {
    struct seg *next;
    size_t used;
    char text[];
};

struct piece {
    uint64_t first;   /* index of its first block: position + 1 */
    size_t len;
    char text[];
};

struct text_job {
    const struct grouping *g;
    const struct at_live_block *all;
    size_t n;
    struct text_at at[SLICES + 1];   /* slice i: from at[i] up to at[i + 1] */
    uint64_t claims;                 /* the next slice from the front | the back's << 32 */
    struct seg *segs[SLICES];        /* the helper's slices */
    struct text_at stop;             /* where it stopped, in slice `stopped` */
    int stopped;                     /* -1: it did not */
};

/* The next slice, from the front or from the back; -1: none left. */
static int claim(struct text_job *j, int from_back)
{
    uint64_t old = __atomic_load_n(&j->claims, __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t front = (uint32_t)old, back = (uint32_t)(old >> 32);
        if (front >= back)
            return -1;
        uint64_t claimed = from_back ? (uint64_t)(back - 1) << 32 | front
                                     : (uint64_t)back << 32 | (front + 1);
        if (__atomic_compare_exchange_n(&j->claims, &old, claimed, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return from_back ? (int)back - 1 : (int)front;
    }
}

/* Where each slice starts. */
static void slice_text(struct text_job *j)
{
    const struct grouping *g = j->g;
    size_t k = 0, seen = 0, into = 0, b = g->groups[0].first;
    j->at[0] = (struct text_at){ 0, b };
    for (int i = 1; i < SLICES; i++) {
        size_t share = j->n / SLICES * i;
        while (k + 1 < g->ngroups && seen + g->groups[k].count <= share) {
            seen += g->groups[k++].count;
            b = g->groups[k].first;
            into = 0;
        }
        for (; seen + into < share && b != j->n; into++)
            b = g->next[b];
        j->at[i] = (struct text_at){ k, b };
    }
    j->at[SLICES] = (struct text_at){ g->ngroups - 1, j->n };
}

/* Slice i into segments; 0, or -1 without memory (j->stop set). */
static int make_slice(struct text_job *j, int i)
{
    const struct grouping *g = j->g;
    struct seg *cur = NULL, **link = &j->segs[i];
    struct text_at to = j->at[i + 1];
    for (size_t k = j->at[i].k, b = j->at[i].b;; b = g->groups[++k].first) {
        size_t stop = k == to.k ? to.b : j->n;
        while (b != stop) {
            if (!cur || SEG_BYTES - offsetof(struct seg, text) - cur->used <
                            sizeof(struct piece) + PIECE_MAX) {
                struct seg *sg = map_anon(SEG_BYTES);
                if (!sg) {
                    j->stop = (struct text_at){ k, b };
                    return -1;
                }
                *link = cur = sg;
                link = &sg->next;
            }
            struct piece *pc = (struct piece *)(cur->text + cur->used);
            pc->first = b + 1;
            b = format_piece(g, &g->groups[k], b, stop, j->all, pc->text, &pc->len);
            cur->used += (sizeof *pc + pc->len + 7) & ~(size_t)7;
        }
        if (k == to.k)
            return 0;
    }
}

static void *text_thread(void *arg)
{
    at_guard = 1;
    struct text_job *j = arg;
    for (int i; (i = claim(j, 1)) >= 0;)
        if (make_slice(j, i) != 0) {
            j->stopped = i;
            break;
        }
    return NULL;
}

/* The helper's slice i, and what it left of it. */
static void write_made(struct text_job *j, int i, const uint8_t *kind)
{
    for (struct seg *sg = j->segs[i], *next; sg; sg = next) {
        for (size_t at = 0; at < sg->used;) {
            struct piece *pc = (struct piece *)(sg->text + at);
            put_kind(kind, pc->first - 1);
            at_commit_indexed(pc->first, pc->text, pc->len);
            at += (sizeof *pc + pc->len + 7) & ~(size_t)7;
        }
        next = sg->next;
        munmap(sg, SEG_BYTES);
    }
    if (j->stopped == i)
        write_span(j->g, j->all, j->n, kind, j->stop, j->at[i + 1]);
}

/* helped: part of the text is made on a helper thread meanwhile (see
 * above). */
static void write_groups(const struct grouping *g, const struct at_live_block *all, size_t n,
                         const uint8_t *kind, int helped)
{
    if (!g->ngroups)
        return;
    struct text_at end = { g->ngroups - 1, n };
    if (!helped) {
        write_span(g, all, n, kind, (struct text_at){ 0, g->groups[0].first }, end);
        return;
    }
    struct text_job j = { .g = g, .all = all, .n = n, .claims = (uint64_t)SLICES << 32,
                          .stopped = -1 };
    slice_text(&j);
    struct helper h = { 0 };
    helper_start(&h, text_thread, &j);
    int i, mine = 0;
    while ((i = claim(&j, 0)) >= 0) {
        write_span(g, all, n, kind, j.at[i], j.at[i + 1]);
        mine = i + 1;
    }
    helper_join(&h);
    for (i = mine; i < SLICES; i++)
        write_made(&j, i, kind);
}

/*
 * The report at exit writes a block's time only when its millisecond
 * differs from the last time written before it in index order (the
 * trace's header says "time=on change", as full mode's calls: chunk.c):
 * a third of a call line's bytes, and on a million live blocks (perl's
 * hash: 59 MB of text) about a tenth of leaks mode's whole run. The
 * blocks are in index order here, so one pass marks the others before
 * the text is cut into pieces for two threads. A snapshot's report keeps
 * every time: its header says nothing of the kind, and two snapshots'
 * blocks are matched by their times (postproc's --diff).
 */
static size_t no_time_bytes(size_t n)
{
    return (n + 63) / 64 * sizeof(uint64_t);
}

static uint64_t block_ms(const struct at_live_block *all, size_t i)
{
    return at_live_time_us(&all[i]) / 1000;
}

/* The end of the run of blocks from i on whose millisecond is ms (block
 * i's), found by galloping: with TSC keys a block's time is its key's,
 * which rises with the index (at_stamp_us is monotonic), so the run is
 * a prefix, and a millisecond of perl's allocations (thousands of
 * blocks) costs a few dozen conversions instead of one a block. */
static size_t same_ms_end(const struct at_live_block *all, size_t n, size_t i, uint64_t ms)
{
    size_t lo = i + 1, step = 1;   /* [i, lo) known in ms */
    while (lo + step - 1 < n && block_ms(all, lo + step - 1) == ms) {
        lo += step;
        step *= 2;
    }
    size_t hi = lo + step - 1 < n ? lo + step - 1 : n;   /* hi: not in ms, or n */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (block_ms(all, mid) == ms)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void mark_no_times(struct grouping *g, const struct at_live_block *all, size_t n)
{
    g->no_time = map_anon(no_time_bytes(n));
    if (!g->no_time)
        return;   /* every time written: right, only longer */
    /* Without TSC keys a block's time is a clock reading of its own,
     * which need not rise with the index: each is looked at. */
    int monotonic = at_clock_tsc();
    uint64_t last_ms = UINT64_MAX;
    for (size_t i = 0; i < n;) {
        if (at_time_moves_on(&last_ms, at_live_time_us(&all[i]))) {
            i++;
            continue;
        }
        size_t end = monotonic ? same_ms_end(all, n, i, last_ms) : i + 1;
        for (; i < end; i++)
            g->no_time[i / 64] |= 1ull << (i % 64);
    }
}

static void grouping_free(struct grouping *g)
{
    unmap(g->groups, g->cap / 2 * sizeof *g->groups);
    unmap(g->table, g->cap * sizeof *g->table);
    unmap(g->next, g->nblocks * sizeof *g->next);
    unmap(g->no_time, no_time_bytes(g->nblocks));
}

static size_t page_up(size_t len)
{
    return (len + 4095) & ~(size_t)4095;
}

/* last: the process is exiting and nothing reads the live blocks after
 * this report, so their store's memory is given back once they are
 * collected: the scan's and the sort's room then takes its place instead
 * of adding to it (a million live blocks: ~35 MB of slots). */
static void report(int emergency, int last)
{
    size_t n, map_len;
    uint64_t bytes = 0;
    struct at_live_block *all = at_live_collect(&n, &map_len, emergency);
    if (last && !emergency)
        at_live_drop();
    /* The scan reads /proc/self/maps and calls backtrace(), which a
     * signal handler must not: blocks written from one carry no kind.
     * Nor does it group them: that needs memory. It runs on the blocks
     * as collected (in address order: see at_shadow_collect); the sort
     * into allocation order, on a helper meanwhile at exit, moves them
     * once the scan has read them, and their kinds follow. */
    struct sort_helper sh = { 0 };
    struct helper h = { 0 };
    int sorting = sort_prepare(&sh.job, all, n);
    int helped = last && !emergency && use_helpers(n);
    if (helped && sorting > 0 && helper_start(&h, sort_thread, &sh) == 0)
        while (!__atomic_load_n(&sh.tid, __ATOMIC_ACQUIRE))   /* the scan must know it */
            syscall(SYS_futex, &sh.tid, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    /* Whole pages: the scan reads the rest of a mapping's last page. */
    const struct at_span more[] = {
        { h.stack, h.stack ? HELPER_STACK : 0 },
        { sh.job.from, page_up(sh.job.from_len) },
        { sh.job.pairs, page_up(sh.job.pairs_len) },
    };
    uint8_t *kind = emergency ? NULL
                              : classify(all, n, more, sizeof more / sizeof *more, sh.tid,
                                         h.stack ? let_move : NULL, &sh, helped);
    if (h.stack) {
        let_move(&sh);
        helper_join(&h);
    } else if (sorting > 0) {
        sort_order(&sh.job);
        sort_move(&sh.job);
    }
    if (sorting > 0)
        sort_kinds(&sh.job, kind);
    else if (sorting < 0)
        heap_sort(all, n, kind);
    struct grouping g = { 0 };
    if (!emergency && n && group_blocks(&g, all, n, kind) == 0) {
        if (last && at_cfg.timestamps == AT_TIMES_ON_CHANGE)
            mark_no_times(&g, all, n);
        write_groups(&g, all, n, kind, helped);
        for (size_t k = 0; k < g.ngroups; k++)
            bytes += g.groups[k].bytes;
    } else {
        bytes = write_plain(all, n, kind, emergency);
    }
    grouping_free(&g);
    if (all)
        munmap(all, map_len);
    if (kind)
        munmap(kind, n);
    write_summary(n, bytes, emergency);
}

/* A report of the blocks live now; the process goes on. */
void at_leakreport_write(int emergency)
{
    report(emergency, 0);
}

/* The report at exit (lifecycle.c's at_finish). */
void at_leakreport_write_at_exit(void)
{
    report(0, 1);
}
