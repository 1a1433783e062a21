/*
 * preload/live.c: leaks mode. The live blocks are kept in memory and only
 * those still alive at exit are written, numbered 1, 2, ... in the order
 * of their allocations, grouped by site and kind (the compressed form; see
 * at_live_write), with the leak summary of TEXT_FORMAT.md section 8. (The order comes from clock.c's keys, which
 * are TSC readings where the TSC is invariant: no index shared between
 * threads is drawn per event, so the numbers are ranks, not event counts.)
 *
 * A block is its address, its interned call site (sites.c), and its order
 * key, size and time packed into 16 bytes. Blocks are kept by shadow.c, at a
 * place computed from the address; what it cannot keep (see there) comes
 * here, to 64 open-addressing hash tables chosen by the address's hash,
 * each behind its own lock, so two threads rarely meet. The tables are
 * slices of one region that grows as a whole (see grow_all).
 * Everything uses the real allocator or mmap, never the hooks.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tracer.h"

#define STRIPES 64

struct stripe {
    pthread_mutex_t lock;
    struct at_live_block *slots;
    size_t cap, count;
} __attribute__((aligned(64)));

static struct stripe stripes[STRIPES];
/* Set once anything went to the hash table: until then a release that
 * shadow.c does not know is not looked up here at all. */
static int overflow_used;

int at_live_init(void)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripes[i].lock, NULL);
    at_sites_init();
    return 0;
}

/* ---- live blocks --------------------------------------------------------- */

_Static_assert(sizeof(struct at_live_block) == 32, "two to a cache line");
#define INDEX_BITS 45
#define SIZE_LO_BITS (64 - INDEX_BITS)
#define DAY_US 86400000000ull   /* only the time of day is written */

/* The order key (clock.c): an event index, or a TSC reading whose high
 * bits take the time's place (its time is computed from it at exit). */
static inline uint64_t block_key(const struct at_live_block *b)
{
    uint64_t low = b->packed[0] & ((1ull << INDEX_BITS) - 1);
    return at_clock_tsc() ? low | (b->packed[1] >> 27) << INDEX_BITS : low;
}

static inline uint64_t block_size(const struct at_live_block *b)
{
    return (b->packed[0] >> INDEX_BITS) | (b->packed[1] & ((1ull << 27) - 1)) << SIZE_LO_BITS;
}

static inline uint64_t block_time(const struct at_live_block *b)
{
    return at_clock_tsc() ? at_order_key_us(block_key(b)) : b->packed[1] >> 27;
}

/* A size needs at most 46 bits (user space is 47 bits wide); an index
 * past 2^45 (35 trillion events) is not tracked. A TSC key has 82 bits. */
static inline int block_pack(struct at_live_block *b, uint64_t key, uint64_t size,
                             uint64_t time_us)
{
    uint64_t high = at_clock_tsc() ? key >> INDEX_BITS : time_us % DAY_US;
    if ((!at_clock_tsc() && key >> INDEX_BITS) || size >> 46)
        return -1;
    b->packed[0] = (key & ((1ull << INDEX_BITS) - 1)) | size << INDEX_BITS;
    b->packed[1] = (size >> SIZE_LO_BITS) | high << 27;
    return 0;
}

static inline struct stripe *stripe_of(uintptr_t id, uint64_t *h)
{
    *h = at_mix64(id);
    return &stripes[*h >> 58];
}

static void insert_slot(struct stripe *s, const struct at_live_block *b, uint64_t h)
{
    size_t mask = s->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask)
        if (s->slots[i].id == 0 || s->slots[i].id == b->id) {
            if (s->slots[i].id == 0)
                s->count++;
            s->slots[i] = *b;
            return;
        }
}

/*
 * All stripes' tables are slices of one region, grown together (under all
 * stripe locks, once per doubling), so that the region is large enough for
 * transparent huge pages: with hundreds of thousands of live blocks every
 * lookup is a random access, and 4 KiB pages make it a TLB miss and, when
 * the table grows, a page fault per page.
 */
#define HUGE (2u << 20)
static char *region;
static size_t region_len;

static void *region_map(size_t bytes, size_t *len)
{
    size_t n = (bytes + HUGE - 1) & ~(size_t)(HUGE - 1);
    char *m = mmap(NULL, n + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    char *a = (char *)(((uintptr_t)m + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    if (a > m)
        munmap(m, (size_t)(a - m));
    if (a + n < m + n + HUGE)
        munmap(a + n, (size_t)(m + n + HUGE - (a + n)));
    madvise(a, n, MADV_HUGEPAGE);
    *len = n;
    return a;
}

/* Doubles every stripe's table, unless another thread did since the
 * caller saw `seen_cap`. No stripe lock held on entry. */
static void grow_all(size_t seen_cap)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_lock(&stripes[i].lock);
    size_t old_cap = stripes[0].cap;
    if (old_cap == seen_cap) {
        size_t cap = old_cap ? old_cap * 2 : 256, len;
        struct at_live_block *base = region_map(STRIPES * cap * sizeof *base, &len);
        if (base) {
            for (int i = 0; i < STRIPES; i++) {
                struct stripe *s = &stripes[i];
                struct at_live_block *old = s->slots;
                s->slots = base + (size_t)i * cap;
                s->cap = cap;
                s->count = 0;
                for (size_t k = 0; k < old_cap; k++)
                    if (old[k].id)
                        insert_slot(s, &old[k], at_mix64(old[k].id));
            }
            if (region)
                munmap(region, region_len);
            region = (char *)base;
            region_len = len;
        }
    }
    for (int i = STRIPES - 1; i >= 0; i--)
        pthread_mutex_unlock(&stripes[i].lock);
}

static void put_block(const struct at_live_block *b)
{
    if (at_shadow_put(b) == 0)
        return;
    __atomic_store_n(&overflow_used, 1, __ATOMIC_RELAXED);
    uint64_t h;
    struct stripe *s = stripe_of(b->id, &h);
    pthread_mutex_lock(&s->lock);
    while ((s->count + 1) * 4 > s->cap * 3) {
        size_t seen = s->cap;
        pthread_mutex_unlock(&s->lock);
        grow_all(seen);
        pthread_mutex_lock(&s->lock);
        if (s->cap == seen)
            break;   /* no memory: the block goes untracked */
    }
    if ((s->count + 1) * 4 <= s->cap * 3)
        insert_slot(s, b, h);
    pthread_mutex_unlock(&s->lock);
}

/* A block whose site could not be interned (no memory) is not kept: it
 * could not be written. */
void at_live_add(const struct at_event *e, uint64_t key)
{
    struct at_live_block b = { .id = e->id, .stack = at_site_intern(e) };
    if (b.stack && block_pack(&b, key, e->size, e->time_us) == 0)
        put_block(&b);
}

void at_live_restore(const struct at_live_block *b)
{
    put_block(b);
}

/* Linear probing with backward-shift deletion: no tombstones. */
static int overflow_remove(uintptr_t id, struct at_live_block *out)
{
    uint64_t h;
    struct stripe *s = stripe_of(id, &h);
    int found = 0;
    pthread_mutex_lock(&s->lock);
    if (s->cap) {
        size_t mask = s->cap - 1, i = h & mask;
        for (; s->slots[i].id; i = (i + 1) & mask)
            if (s->slots[i].id == id) {
                found = 1;
                break;
            }
        if (found) {
            if (out)
                *out = s->slots[i];
            size_t hole = i;
            for (size_t j = (i + 1) & mask; s->slots[j].id; j = (j + 1) & mask) {
                size_t home = at_mix64(s->slots[j].id) & mask;
                /* Move j into the hole unless its home lies in (hole, j]. */
                int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
                if (!stays) {
                    s->slots[hole] = s->slots[j];
                    hole = j;
                }
            }
            s->slots[hole].id = 0;
            s->count--;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

int at_live_remove(uintptr_t id, struct at_live_block *out)
{
    if (at_shadow_take(id, out))
        return 1;
    return __atomic_load_n(&overflow_used, __ATOMIC_RELAXED) && overflow_remove(id, out);
}

uint64_t at_live_size(const struct at_live_block *b)
{
    return block_size(b);
}

void at_live_exclusions(at_range_fn *add, void *ctx)
{
    add(ctx, region, region_len);
    at_shadow_exclusions(add, ctx);
}

static int by_key(const void *a, const void *b)
{
    uint64_t x = block_key(a), y = block_key(b);
    return x < y ? -1 : x > y;
}

/* In-place heap sort by key, for a signal handler: qsort may call
 * malloc. (At exit qsort it is: its merge sort is faster on the runs of
 * ascending keys that the shadow's address order yields.) */
static void sift_down(struct at_live_block *a, size_t i, size_t n)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && block_key(&a[c + 1]) > block_key(&a[c]))
            c++;
        if (block_key(&a[i]) >= block_key(&a[c]))
            return;
        struct at_live_block t = a[i];
        a[i] = a[c];
        a[c] = t;
        i = c;
    }
}

static void sort_by_key(struct at_live_block *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n; end > 1; end--) {
        struct at_live_block t = a[0];
        a[0] = a[end - 1];
        a[end - 1] = t;
        sift_down(a, 0, end - 1);
    }
}

/* A stripe's lock; from a signal handler only tried for a while (the
 * interrupted code may hold it): a stripe not got is left out. */
static int lock_stripe(struct stripe *s, int emergency)
{
    if (!emergency)
        return pthread_mutex_lock(&s->lock) == 0;
    for (int i = 0; i < 100000; i++) {
        if (pthread_mutex_trylock(&s->lock) == 0)
            return 1;
        __builtin_ia32_pause();
    }
    return 0;
}

/* Every live block, from shadow.c and from the hash tables, in a mapping
 * of its own (*map_len bytes; NULL when there is none or no memory). The
 * tables stay locked while copied; the shadow is read as it is (see
 * shadow.c on threads still running), so it may hold more blocks when it
 * is copied than when it was counted: the copy is then made again, into
 * more room. Cutting it to the count instead would drop the blocks read
 * last, whichever they are (leaves are read in directory order), not the
 * ones just allocated: a block allocated long before exit went missing. */
static struct at_live_block *collect_all(size_t *n, size_t *map_len, int emergency)
{
    size_t in_shadow = at_shadow_collect(NULL, 0), in_tables = 0;
    int locked[STRIPES];
    for (int i = 0; i < STRIPES; i++) {
        locked[i] = lock_stripe(&stripes[i], emergency);
        in_tables += locked[i] ? stripes[i].count : 0;
    }
    struct at_live_block *all = NULL;
    *n = 0;
    *map_len = 0;
    for (size_t room = in_shadow; in_shadow + in_tables > 0;) {
        room += room / 8 + 64;   /* for blocks allocated meanwhile */
        *map_len = (room + in_tables) * sizeof(struct at_live_block);
        void *m = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            break;
        all = m;
        size_t seen = at_shadow_collect(all, room);
        if (seen <= room) {
            *n = seen;
            break;
        }
        munmap(all, *map_len);
        all = NULL;
        room = seen;
    }
    for (int i = 0; i < STRIPES; i++) {
        if (!locked[i])
            continue;
        for (size_t k = 0; all && k < stripes[i].cap; k++)
            if (stripes[i].slots[k].id)
                all[(*n)++] = stripes[i].slots[k];
        pthread_mutex_unlock(&stripes[i].lock);
    }
    return all;
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
static uint8_t *classify(const struct at_live_block *all, size_t n)
{
    uint8_t *kind = n && at_cfg.leak_kinds ? at_real.malloc(n) : NULL;
    const char *why = kind ? at_reach_classify(all, n, kind) : NULL;
    if (why) {
        char line[160] = "## leak kinds not written: ";
        size_t len = strlen(line), w = strlen(why);
        if (w > sizeof line - len - 2)
            w = sizeof line - len - 2;
        memcpy(line + len, why, w);
        line[len + w] = '\n';
        at_append_raw(line, len + w + 1);
        at_real.free(kind);
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

/* A block as its record's event; with its site's frames or without. */
static struct at_event block_event(const struct at_live_block *b, int frames)
{
    const struct at_stack *st = b->stack;
    return (struct at_event){
        .fn = (enum at_fn)st->fn, .size = block_size(b), .id = b->id,
        .alignment = st->alignment, .ctx = st->ctx, .time_us = block_time(b),
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
        struct at_event e = block_event(&all[i], 1);
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
    size_t first, last;
    uint64_t bytes;
    uint8_t kind;
};

struct grouping {
    struct group *groups;
    size_t ngroups, cap;   /* cap: of both the groups and the table */
    size_t *table;         /* group number + 1; 0: empty */
    size_t *next;          /* per block: the next one in its group; n: none */
};

static size_t group_hash(const struct at_stack *st, uint8_t kind, size_t mask)
{
    return at_mix64((uintptr_t)st ^ (uint64_t)kind << 60) & mask;
}

/* The table holds at most half its slots. Returns -1 without memory. */
static int groups_grow(struct grouping *g)
{
    size_t cap = g->cap ? g->cap * 2 : 1024;
    struct group *groups = at_real.realloc(g->groups, cap / 2 * sizeof *groups);
    if (!groups)
        return -1;
    g->groups = groups;
    size_t *table = at_real.calloc(cap, sizeof *table);
    if (!table)
        return -1;
    at_real.free(g->table);
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
    g->next = at_real.malloc(n * sizeof *g->next);
    if (!g->next)
        return -1;
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
        gr->bytes += block_size(&all[b]);
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

/* "# allocation summary: ...", the frames, the blank line. */
static char *put_group_tail(char *p, const struct at_stack *st, size_t count, uint64_t bytes)
{
    p = PUT_LIT(p, AT_ALLOC_SUMMARY);
    p += at_fmt_dec(p, count);
    p = PUT_LIT(p, " block(s) with total size ");
    p += at_fmt_dec(p, bytes);
    *p++ = '\n';
    for (int f = 0; f < st->n; f++) {
        p = PUT_LIT(p, "\t0x");
        p += at_fmt_hex(p, (uintptr_t)st->frames[f]);
        *p++ = '\n';
    }
    *p++ = '\n';
    return p;
}

/* The group's blocks from `b` on, as many as fit in one piece; returns
 * the first block left (n: none). */
static size_t write_piece(const struct grouping *g, const struct group *gr, size_t b,
                          const struct at_live_block *all, size_t n, const uint8_t *kind)
{
    const struct at_stack *st = gr->stack;
    size_t tail_room = 64 + (size_t)st->n * AT_FRAME_TEXT, count = 0;
    uint64_t first = b + 1, bytes = 0;
    char *p = group_buf;
    put_kind(kind, b);
    for (; b != n && (count == 0 || (size_t)(p - group_buf) + AT_HEAD_MAX + 24 + tail_room <=
                                        GROUP_TEXT); b = g->next[b], count++) {
        struct at_event e = block_event(&all[b], 0);
        if (count) {
            p += at_fmt_dec(p, b + 1);
            p = PUT_LIT(p, ". ");
        }
        /* the body without frames ends in the blank line: left out */
        p += at_format_body(p, &e) - 1;
        bytes += e.size;
    }
    p = put_group_tail(p, st, count, bytes);
    at_commit_indexed(first, group_buf, (size_t)(p - group_buf));
    return b;
}

static void write_groups(const struct grouping *g, const struct at_live_block *all, size_t n,
                         const uint8_t *kind)
{
    for (size_t k = 0; k < g->ngroups; k++)
        for (size_t b = g->groups[k].first; b != n;)
            b = write_piece(g, &g->groups[k], b, all, n, kind);
}

static void grouping_free(struct grouping *g)
{
    at_real.free(g->groups);
    at_real.free(g->table);
    at_real.free(g->next);
}

void at_live_write(int emergency)
{
    size_t n, map_len;
    uint64_t bytes = 0;
    struct at_live_block *all = collect_all(&n, &map_len, emergency);
    if (emergency)
        sort_by_key(all, n);
    else if (n)
        qsort(all, n, sizeof *all, by_key);
    /* The scan reads /proc/self/maps and calls backtrace(), which a
     * signal handler must not: blocks written from one carry no kind.
     * Nor does it group them: that needs memory. */
    uint8_t *kind = emergency ? NULL : classify(all, n);
    struct grouping g = { 0 };
    if (!emergency && n && group_blocks(&g, all, n, kind) == 0) {
        write_groups(&g, all, n, kind);
        for (size_t k = 0; k < g.ngroups; k++)
            bytes += g.groups[k].bytes;
    } else {
        bytes = write_plain(all, n, kind, emergency);
    }
    grouping_free(&g);
    if (all)
        munmap(all, map_len);
    at_real.free(kind);
    write_summary(n, bytes, emergency);
}

void at_live_fork_prepare(void)
{
    at_sites_fork_prepare();
    at_shadow_fork_prepare();
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_lock(&stripes[i].lock);
}

void at_live_fork_parent(void)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_unlock(&stripes[i].lock);
    at_shadow_fork_parent();
    at_sites_fork_parent();
}

/* A child's file starts empty: the parent's blocks are the parent's. */
void at_live_fork_child(void)
{
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_init(&stripes[i].lock, NULL);
        if (stripes[i].slots)
            memset(stripes[i].slots, 0, stripes[i].cap * sizeof *stripes[i].slots);
        stripes[i].count = 0;
    }
    at_shadow_fork_child();
    at_sites_fork_child();
}
