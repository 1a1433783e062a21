/*
 * preload/leaks/reach.c: leaks mode, at exit: which live blocks the program can
 * still reach, in memcheck's four kinds (valgrind manual, "Looking for
 * Memory Leaks"):
 *   still reachable   a pointer to its start (or one a heuristic below
 *                     accepts) is found from the roots, or from a block
 *                     itself reached so;
 *   possibly lost     reached, but only through interior pointers (or
 *                     through a block that is itself only possibly lost);
 *   indirectly lost   not reached from the roots, but pointed to from a
 *                     lost block;
 *   definitely lost   not reached at all: the head of a lost structure;
 * and a fifth, glibc's caches, that valgrind frees before it counts (see
 * libc_roots).
 *
 * The algorithm is memcheck's, so that bytes and blocks per kind agree:
 * 1. Roots are scanned word by word (8-byte aligned): every readable and
 *    writable mapping of /proc/self/maps - the writable segments of every
 *    loaded object, thread stacks and the TLS blocks inside them, the
 *    program's own mmaps - except the allocator's heap ([heap], glibc's
 *    per-thread arenas), the live blocks themselves, devices, and the
 *    tracer's own memory (live-block tables, shadow store, this scan's
 *    scratch, the tracer's writable segments). Of the exiting thread's
 *    stack, the callee-saved registers at_finish's prologue saved and the
 *    program's frames (see program_stack); of
 *    another thread blocked in a system call, its stack from its stack
 *    pointer up (see note_thread_sp), of a running one the whole mapping;
 *    of a thread that ended, only its TLS (see dead_thread_stacks).
 * 2. A word equal to a block's start, or inside the block and accepted by
 *    a heuristic, makes the block reachable when found from a root or a
 *    reachable block; any other interior word makes it possibly lost. A
 *    block whose state rises is pushed on an explicit mark stack and its
 *    words scanned in turn (a block is pushed at most twice: linear).
 *    A second pass starts from glibc's own roots (see libc_roots).
 *    A word is looked up by address (see struct chunk): its 64 KiB region
 *    says whether it holds a block at all (most words of a large root stop
 *    there) and, where blocks start, which one starts last before the
 *    word's grain (32-256 bytes): a constant number of reads per word,
 *    however many blocks are live.
 * 3. Then each block still unreached, in address order, heads a "clique":
 *    every unreached block found from it (any pointer into it) becomes
 *    indirectly lost; the heads left are definitely lost.
 * Step 2's marking from the roots runs on two threads when the caller
 * allows a helper (the report at exit, a core free: see mark_shared); a
 * block's state then rises only by a compare-and-swap, and the kinds are
 * one thread's.
 *
 * memcheck's default interior-pointer heuristics (--leak-check-heuristics
 * =all): stdstring (old COW std::string: length, capacity, refcount, then
 * the characters the pointer points at), length64 and newarray (a count
 * word before the pointer: new[] of a type with a destructor), and
 * multipleinheritance (the pointer and the block's start both hold vtable
 * pointers).
 *
 * Never faulting: every address read is first found in the snapshot of
 * /proc/self/maps (read with raw syscalls), readable; large root mappings
 * are read only where mincore says a page is resident (a page never
 * touched holds zeros; a swapped-out page is not read, a documented
 * limit). Threads still running while we scan may change or unmap memory
 * under us: that is the best effort docs/gate.md describes.
 *
 * Where we must differ from memcheck (it runs the program on its own
 * allocator, we on glibc's): glibc's arena struct, in libc's data, points
 * at chunk headers, and a chunk's header lies in the last 8 usable bytes of
 * the chunk before it. A word equal to start + malloc_usable_size - 8 is
 * therefore taken for the allocator's, not the program's. memcheck also
 * ignores words it knows are uninitialised; we cannot tell, so a stale
 * pointer left in a live frame or block may reach a block memcheck calls
 * lost.
 *
 * Scratch memory comes from mmap (never the heap, whose mappings would
 * otherwise be roots) and is excluded from the roots.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"

uintptr_t at_exit_sp, at_exit_frame;

#define WORD sizeof(uintptr_t)
#define PAGE_SZ 4096ul
#define ARENA_HEAP (64ul << 20)   /* glibc's HEAP_MAX_SIZE on 64-bit */
#define MINCORE_FROM (1ul << 20)  /* mappings this large are read page by page */

enum state { UNREACHED, POSSIBLE, REACHABLE, INDIRECT, LIBC };

/* How a word was found: from a root or a block reached so, from a block
 * only possibly lost, or from glibc's own memory (see libc_roots). */
enum from { FROM_DEFINITE, FROM_POSSIBLE, FROM_LIBC };

/* A word of memory known mapped and readable (see above). */
static inline uintptr_t word_at(uintptr_t a)
{
    return *(const volatile uintptr_t *)a;
}


/* 24 bytes: with a million live blocks every byte here is a megabyte. */
struct blk {
    uintptr_t start;
    uint64_t size;
    uint32_t order;         /* index in the caller's array */
    uint8_t state, readable;
    uint8_t first_vtable;   /* its first word a vtable: 0 not known yet, 1 no, 2 yes */
};

/* A block's state, read while another thread may raise it (see
 * mark_shared). */
static inline uint8_t state_of(const struct blk *b)
{
    return __atomic_load_n(&b->state, __ATOMIC_RELAXED);
}

/* start + size, or start + 1 for size 0 */
static inline uintptr_t blk_end(const struct blk *b)
{
    return b->start + (b->size ? b->size : 1);
}

struct map {
    uintptr_t lo, hi;
    uintptr_t from;    /* nonzero: another thread's stack, live from here up */
    uint8_t r, w, x, file, root;
    uint8_t runtime;   /* the C library or the dynamic loader */
};

struct range {
    uintptr_t lo, hi;
};

/* Room for excluded ranges besides a range per mapping (arena heaps)
 * and the live-block tables' (a shadow leaf per 4 MiB of heap): the
 * scan's scratch, glibc's ranges, the tracer's segments. A fixed 64 used
 * to drop what came last - the tables' ranges, which hold block
 * addresses - once a program had that many arena heaps or leaves. */
#define EXCL_SLACK 64

/*
 * Blocks by address, instead of a hash of block starts (16-32 bytes a
 * block, a cache miss a probe) and a binary search for interior pointers
 * (log2 of the live blocks, 20 steps at a million, the upper ones cache
 * misses): a table of 1 GiB chunks (open addressing on the chunk number)
 * gives each chunk holding blocks an entry per 64 KiB region:
 *   0                  no byte of any block: the word is no block's;
 *   block + 1          no block starts here: only that one, which started
 *                      before, covers (part of) the region;
 *   IN_GRAINS | t      blocks start here: grain table t, an entry per
 *                      grain (32 to 256 bytes), holds the last block (+ 1)
 *                      starting before that grain's end.
 * A word's block is then the grain's entry, stepped back past the blocks
 * that start after the word in the same grain (glibc's chunks are 32
 * bytes or more: at most grain / 32), and checked against its end. Each
 * step back reads another block, a cache miss on a large heap: so the
 * grains are as small as 16 bytes a block pays for (see grain_shift), 32
 * bytes on a heap of small blocks (perl's: one block read, no step back;
 * 256-byte grains made the marking a third slower). Memory: 64 KiB a
 * chunk and 1 to 8 KiB a region where blocks start: the larger of 16
 * bytes a block and 1 KiB a region. With blocks in more than MAX_CHUNKS
 * chunks, or no memory, there is no table: every word between the
 * lowest and the highest block takes the binary search.
 */
#define REGION_SHIFT 16
#define CHUNK_SHIFT 30
#define GRAIN_MIN 5    /* 32 bytes, glibc's smallest chunk */
#define GRAIN_MAX 8
#define CHUNK_REGIONS (1ul << (CHUNK_SHIFT - REGION_SHIFT))
#define IN_GRAINS (1u << 31)
#define MAX_CHUNKS 512   /* 32 MiB of region entries; more: no table */

struct chunk {
    uintptr_t key;        /* chunk number + 1; 0: empty */
    uint32_t *regions;    /* CHUNK_REGIONS entries */
};

struct pool;

/* A lookup in flight (see defer): r the region entry until the grain
 * entry g is read, then 0. */
#define AHEAD 64
struct pending {
    uintptr_t p;
    size_t g;
    uint32_t r;
    uint8_t from;
};

struct scan {
    struct blk *b;
    size_t n, blen;        /* blen: the mapping of b */
    uintptr_t min, max;
    struct chunk *chunks;  /* NULL: no table, binary search */
    uint32_t *grains;      /* the grain tables, region_grains(s) entries each */
    int gshift;            /* log2 of the grain's bytes */
    int cshift;            /* 64 - log2 of the chunk table's size */
    void *index;           /* the chunks, regions and grains, one mapping */
    size_t index_len;
    uint32_t *stack;
    size_t top;
    struct pool *pool;     /* the marking shared with a helper (see mark_shared); NULL: alone */
    struct pending ring[AHEAD];
    unsigned ring_head, ring_n;
    struct map *maps;
    size_t nmaps;
    struct range *excl;    /* excl_cap of them, in scratch memory */
    size_t nexcl, excl_cap;
    int running;           /* other threads running (stack pointer unknown) */
    struct range libc[8];  /* glibc's writable memory: the second pass's roots */
    size_t nlibc;
    enum from root_from;   /* how the roots being scanned count */
    uintptr_t tls_below;   /* static TLS below the thread pointer */
    size_t (*usable)(void *);
};

/* ---- scratch --------------------------------------------------------------- */

/* Large tables ask for transparent huge pages: the blocks are read at
 * random, and with 4 KiB pages each read is a TLB miss too. */
static void *scratch(size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (bytes >= (4ul << 20))
        madvise(m, bytes, MADV_HUGEPAGE);
    return m;
}

static void scratch_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes ? bytes : 1);
}

static void exclude(struct scan *s, const void *p, size_t len)
{
    if (p && len && s->nexcl < s->excl_cap)
        s->excl[s->nexcl++] = (struct range){ (uintptr_t)p, (uintptr_t)p + len };
}

/* The same for the tables of live.c and shadow.c. */
static void exclude_cb(void *ctx, const void *p, size_t len)
{
    exclude(ctx, p, len);
}

static void count_cb(void *ctx, const void *p, size_t len)
{
    (void)p;
    (void)len;
    ++*(size_t *)ctx;
}

/* ---- /proc/self/maps --------------------------------------------------------- */

/* The whole file into an mmap'ed buffer, read with raw syscalls (no stdio,
 * no allocation). Returns its length, 0 on failure; *cap is the mapping. */
static size_t read_maps(char **buf, size_t *cap)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t len = 0;
    *cap = 1ul << 20;
    *buf = scratch(*cap);
    while (*buf) {
        if (len == *cap) {
            void *m = mremap(*buf, *cap, *cap * 2, MREMAP_MAYMOVE);
            if (m == MAP_FAILED) {
                scratch_free(*buf, *cap);
                *buf = NULL;
                break;
            }
            *buf = m;
            *cap *= 2;
        }
        long r = syscall(SYS_read, fd, *buf + len, *cap - len);
        if (r < 0) {
            scratch_free(*buf, *cap);
            *buf = NULL;
        } else if (r == 0) {
            break;
        } else {
            len += (size_t)r;
        }
    }
    syscall(SYS_close, fd);
    return *buf ? len : 0;
}

static const char *hex(const char *p, const char *end, uintptr_t *v)
{
    *v = 0;
    for (; p < end; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            break;
        *v = *v << 4 | (uintptr_t)d;
    }
    return p;
}

static int starts(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

/* Which mappings may be roots: readable and writable, not the heap, not a
 * device (reading one may hang or change it; /dev/zero is memory). */
static int root_kind(const struct map *m, const char *path, const char *end)
{
    if (!m->r || !m->w)
        return 0;
    if (starts(path, end, "[heap]") || starts(path, end, "[v"))
        return 0;
    if (starts(path, end, "/dev/") && !starts(path, end, "/dev/zero") &&
        !starts(path, end, "/dev/shm/"))
        return 0;
    return 1;
}

/* libc.so.6, ld-linux-x86-64.so.2 and their kin, by the file's name. */
static int is_runtime(const char *path, const char *end)
{
    const char *base = path;
    for (const char *p = path; p < end; p++)
        if (*p == '/')
            base = p + 1;
    return starts(base, end, "libc.so") || starts(base, end, "libc-") ||
           starts(base, end, "ld-linux") || starts(base, end, "ld-");
}

/* "lo-hi perms offset dev inode   path" per line. */
static size_t parse_maps(const char *t, size_t len, struct map *out, size_t max)
{
    size_t n = 0;
    for (const char *p = t, *end = t + len; p < end && n < max;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        struct map m = { 0 };
        const char *q = hex(p, eol, &m.lo);
        if (q < eol && *q == '-')
            q = hex(q + 1, eol, &m.hi);
        if (q + 5 <= eol && m.hi > m.lo) {
            m.r = q[1] == 'r';
            m.w = q[2] == 'w';
            m.x = q[3] == 'x';
            const char *path = q + 5;
            for (int field = 0; field < 3 && path < eol; field++) {   /* offset dev inode */
                while (path < eol && *path == ' ')
                    path++;
                while (path < eol && *path != ' ')
                    path++;
            }
            while (path < eol && *path == ' ')
                path++;
            m.file = path < eol && *path == '/';
            m.runtime = m.file && is_runtime(path, eol);
            m.root = (uint8_t)root_kind(&m, path, eol);
            out[n++] = m;
        }
        p = eol + 1;
    }
    return n;
}

static const struct map *map_of(const struct scan *s, uintptr_t a)
{
    size_t lo = 0, hi = s->nmaps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->maps[mid].hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nmaps && s->maps[lo].lo <= a ? &s->maps[lo] : NULL;
}

/* Whether [a, a + len) lies in readable mappings. */
static int readable(const struct scan *s, uintptr_t a, size_t len)
{
    uintptr_t end = a + len;
    while (a < end) {
        const struct map *m = map_of(s, a);
        if (!m || !m->r)
            return 0;
        a = m->hi;
    }
    return 1;
}

/* glibc's per-thread arena heaps: a HEAP_MAX_SIZE-aligned mapping whose
 * heap_info header (ar_ptr, prev, size, mprotect_size) says it is one. */
static void exclude_arena_heaps(struct scan *s)
{
    for (size_t i = 0; i < s->nmaps; i++) {
        const struct map *m = &s->maps[i];
        if (!m->root || m->file)
            continue;
        uintptr_t a = (m->lo + ARENA_HEAP - 1) & ~(ARENA_HEAP - 1);
        if (a >= m->hi || m->hi - a < 4 * WORD)
            continue;
        uintptr_t rw = (m->hi - a < ARENA_HEAP ? m->hi : a + ARENA_HEAP) - a;
        const uintptr_t *h = (const uintptr_t *)a;
        if (h[3] == rw && h[2] <= h[3] && h[2] >= PAGE_SZ && h[0] > a && h[0] < a + rw)
            exclude(s, (void *)a, rw);
    }
}

/* ---- other threads' stacks ------------------------------------------------------ */

/* A thread sitting in a system call - most threads still there at exit,
 * blocked on a lock, a read, a join - has its user stack pointer in
 * /proc/self/task/TID/syscall ("NR ARG1 .. ARG6 SP PC", or "-1 SP PC"):
 * its stack is live from there up (and the 128-byte red zone below), the
 * rest holds dead frames whose stale pointers memcheck would know for
 * undefined. A running thread's whole stack mapping stays a root.
 *
 * A thread seen running is asked again after a millisecond, up to
 * RUNNING_WAIT_MS for the whole scan: at exit most threads of a pool are
 * on their way back to waiting (woken by a broadcast, finishing a task),
 * and whether the scan caught one a moment before it blocked decided
 * whether its dead frames were roots - the same run gave different kinds
 * (glibc's NSS blocks of a pool's threads, possibly lost now and then). */
#define RUNNING_WAIT_MS 50

static void thread_from(struct scan *s, uintptr_t sp);

long at_read_small_file(int dfd, const char *path, char *buf, size_t cap)
{
    int fd = (int)syscall(SYS_openat, dfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    long len = syscall(SYS_read, fd, buf, cap - 1);
    syscall(SYS_close, fd);
    return len;
}

/* The stack pointer in /proc/self/task/TID/syscall of a thread in a
 * system call (0 when running: then *running is counted, or unknown).
 * *wait_ms: what is left of the scan's budget for asking again (the exit
 * scan's is RUNNING_WAIT_MS; a snapshot's 0: the program is running). */
static uintptr_t read_thread_sp(int dfd, const char *tid, size_t *running, int *wait_ms)
{
    char path[64];
    size_t n = strlen(tid);
    if (n > 40)
        return 0;
    memcpy(path, tid, n);
    memcpy(path + n, "/syscall", 9);
    char buf[256];
    long len = at_read_small_file(dfd, path, buf, sizeof buf);
    while (len > 0 && buf[0] == 'r' && *wait_ms > 0) {
        struct timespec ms = { 0, 1000 * 1000 };
        syscall(SYS_nanosleep, &ms, NULL);
        --*wait_ms;
        len = at_read_small_file(dfd, path, buf, sizeof buf);
    }
    if (len > 0 && buf[0] == 'r')
        ++*running;
    if (len <= 0 || !((buf[0] >= '0' && buf[0] <= '9') || buf[0] == '-'))
        return 0;   /* "running", or nothing */
    buf[len] = '\0';
    const char *field[9];
    int nf = 0;
    for (char *p = buf; *p && nf < 9;) {
        while (*p == ' ' || *p == '\n')
            p++;
        if (*p)
            field[nf++] = p;
        while (*p && *p != ' ' && *p != '\n')
            p++;
    }
    uintptr_t sp;
    if (nf < 3 || field[nf - 2][0] != '0' || field[nf - 2][1] != 'x')
        return 0;
    hex(field[nf - 2] + 2, buf + len, &sp);
    return sp;
}

static void note_thread_sp(struct scan *s, int dfd, const char *tid)
{
    static int wait_ms = RUNNING_WAIT_MS;   /* one exit scan a process */
    size_t running = 0;
    uintptr_t sp = read_thread_sp(dfd, tid, &running, &wait_ms);
    s->running += (int)running;
    if (sp)
        thread_from(s, sp);
}

/* A thread's stack is live from its stack pointer up (and the red zone). */
static void thread_from_exactly(struct scan *s, uintptr_t from)
{
    const struct map *m = map_of(s, from);
    if (!m || !m->root)
        return;
    struct map *w = &s->maps[m - s->maps];
    if (!w->from || from < w->from)
        w->from = from;
}

static void thread_from(struct scan *s, uintptr_t sp)
{
    const struct map *m = map_of(s, sp);
    if (!m || !m->root)
        return;
    thread_from_exactly(s, sp - 128 > m->lo ? (sp - 128) & ~(WORD - 1) : m->lo);
}

struct dirent64_raw {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

/* A snapshot's threads (see at_reach_use_threads); NULL: at exit. */
static const uintptr_t *snap_sp;
static size_t snap_n, snap_running;
static int snap_own_is_tracer;

/*
 * A snapshot's thread, stopped in a system call: between its stack
 * pointer and the program's frames lie the C library's (read, fgets, a
 * futex wait) and maybe the tracer's (a hook waiting for the snapshot's
 * locks), whose slots hold stale copies of the program's pointers, as
 * exit's frames do (see program_stack): a block just leaked passed for
 * reachable through fgets's frame. So the scan starts at the first word
 * above the stack pointer that is a return address into code that is
 * neither the C library's, the loader's nor the tracer's: the slot where
 * the program's frame begins. Without one within 64 KiB (a thread of the
 * tracer's own), from the stack pointer as before.
 */
static void snap_thread_from(struct scan *s, uintptr_t sp)
{
    const struct map *st = map_of(s, sp);
    if (!st || !st->root) {
        thread_from(s, sp);
        return;
    }
    uintptr_t end = st->hi - sp > 65536 ? sp + 65536 : st->hi;
    for (uintptr_t a = sp & ~(WORD - 1); a + WORD <= end; a += WORD) {
        uintptr_t v = word_at(a);
        if (v >= at_self_lo && v < at_self_hi)
            continue;
        const struct map *m = map_of(s, v);
        if (m && m->x && m->file && !m->runtime) {
            thread_from_exactly(s, a);
            return;
        }
    }
    thread_from(s, sp);
}

/* The report's helper thread (leakreport.c), if any: the tracer's, never
 * waited for as a running thread of the program's (a running one would
 * also keep the TLS of ended threads from counting as glibc's); its stack
 * is among the caller's excluded ranges. */
static long helper_tid;

static void thread_stacks(struct scan *s)
{
    if (snap_sp) {
        for (size_t i = 0; i < snap_n; i++)
            snap_thread_from(s, snap_sp[i]);
        s->running += (int)snap_running;
        if (snap_own_is_tracer) {
            volatile uintptr_t here = 0;
            const struct map *m = map_of(s, (uintptr_t)&here);
            if (m)
                s->maps[m - s->maps].from = m->hi;   /* nothing of it is a root */
        }
        return;
    }
    int dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task",
                           O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    long self = syscall(SYS_gettid);
    char buf[4096], me[24], helper[24];
    me[at_fmt_dec(me, (uint64_t)self)] = '\0';
    helper[helper_tid > 0 ? at_fmt_dec(helper, (uint64_t)helper_tid) : 0] = '\0';
    long len;
    while ((len = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0)
        for (long off = 0; off < len;) {
            const struct dirent64_raw *d = (const void *)(buf + off);
            if (d->name[0] >= '0' && d->name[0] <= '9' && strcmp(d->name, me) != 0 &&
                strcmp(d->name, helper) != 0)
                note_thread_sp(s, dfd, d->name);
            off += d->reclen;
        }
    syscall(SYS_close, dfd);
}

/*
 * The stacks glibc keeps of threads that ended, for reuse: their frames
 * are dead (memcheck sees them undefined), only their thread control block
 * and static TLS at the top still count. A glibc thread stack is an
 * anonymous mapping right above its guard page whose top holds the TCB,
 * recognised by its two self-pointers (tcbhead_t: tcb, dtv, self). Without
 * a stack pointer for it, while no thread runs unseen, it belongs to no
 * live thread: only [TCB - static TLS, end) is scanned.
 */
static int tls_extent(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct scan *s = arg;
    uintptr_t tp = (uintptr_t)__builtin_thread_pointer(), d = (uintptr_t)info->dlpi_tls_data;
    /* Static TLS only: in the mapping of the thread pointer (a module's
     * dynamic TLS block is a heap block). */
    if (d && d < tp && tp - d > s->tls_below && map_of(s, d) == map_of(s, tp))
        s->tls_below = tp - d;
    return 0;
}

static void add_libc(struct scan *s, uintptr_t lo, uintptr_t hi)
{
    if (hi > lo && s->nlibc < sizeof s->libc / sizeof *s->libc) {
        s->libc[s->nlibc++] = (struct range){ lo, hi };
        exclude(s, (void *)lo, hi - lo);
    }
}

static void dead_thread_stacks(struct scan *s, const struct map *own)
{
    if (s->running)
        return;
    dl_iterate_phdr(tls_extent, s);
    for (size_t i = 1; i < s->nmaps; i++) {
        struct map *m = &s->maps[i];
        const struct map *g = &s->maps[i - 1];
        if (!m->root || m->file || m->from || m == own || g->hi != m->lo || g->r || g->w)
            continue;
        uintptr_t stop = m->hi - m->lo > 16384 ? m->hi - 16384 : m->lo;
        for (uintptr_t a = (m->hi - 3 * WORD) & ~(WORD - 1); a >= stop; a -= WORD)
            if (word_at(a) == a && word_at(a + 2 * WORD) == a) {
                /* glibc's freeres frees its cache of stacks: what the
                 * TLS of a dead thread holds is glibc's. */
                if (a - m->lo > s->tls_below)
                    add_libc(s, a - s->tls_below, m->hi);
                m->from = m->hi;
                break;
            }
    }
}

/*
 * What valgrind's default --run-libc-freeres and --run-cxx-freeres free
 * before it looks: glibc keeps caches for the life of the process (stdio
 * buffers, locales, NSS, dlerror strings, the time zone, the stacks of
 * ended threads) and frees them in __libc_freeres, libstdc++ its emergency
 * exception pool in __gnu_cxx::__freeres; valgrind calls both at exit. The tracer does not
 * free anything of the program's; it finds those blocks instead and gives
 * them a kind of their own, "libc" (never failing by default), so that the
 * four kinds count what valgrind counts:
 * - a second pass from the runtime's own roots (the writable segments of
 *   libc and libstdc++, libc's TLS, the TLS of ended threads) after the
 *   program's: what only glibc
 *   reaches is glibc's, except a stdio stream the program left open (a
 *   FILE: freeres leaves it, valgrind calls it still reachable);
 * - the buffer of every stdio stream that _IO_unbuffer_all frees (used,
 *   buffered, not the user's), wherever pointers to it come from.
 */
/* glibc's list of open streams (exported, in its ABI since 2.2.5; linked,
 * not looked up with dlsym, which at exit would reset the dlerror state). */
extern FILE *_IO_list_all;
static FILE **const io_list_all = &_IO_list_all;

/* The scan knows glibc's allocator (its heap, its arenas, its chunk
 * headers): another one (jemalloc, tcmalloc preloaded) keeps pointers to
 * live blocks in metadata the scan would take for roots, so it does not
 * classify rather than classify wrongly. dladdr, unlike dlsym, leaves the
 * dlerror state alone. */
static int glibc_malloc(void)
{
    Dl_info info;
    if (!dladdr((void *)at_real.malloc, &info) || !info.dli_fname)
        return 0;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0;
}

static int libc_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct scan *s = arg;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (!base || (strncmp(base, "libc.so", 7) != 0 && strncmp(base, "libc-", 5) != 0 &&
                  strncmp(base, "libstdc++.so", 12) != 0))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W))
            add_libc(s, lo & ~(WORD - 1), lo + ph->p_memsz);
        if (ph->p_type == PT_TLS && info->dlpi_tls_data)
            add_libc(s, (uintptr_t)info->dlpi_tls_data,
                     (uintptr_t)info->dlpi_tls_data + ph->p_memsz);
    }
    return 0;
}

static long find_block(struct scan *s, uintptr_t p);

/* glibc's list of open streams runs through every FILE, the program's
 * and the runtime's. A FILE that is no block of the program's (stdin,
 * stdout and stderr in libc's data; the tracer's own stream of
 * process/exitlast.c, in the heap but untraced) is a link of glibc's:
 * its words are a root of glibc's, so a stream the program opened before
 * it is still reached through the list (still reachable, as valgrind). */
static void untracked_streams(struct scan *s)
{
    const FILE *fp = io_list_all && readable(s, (uintptr_t)io_list_all, WORD) ? *io_list_all : NULL;
    for (int n = 0; fp && n < 100000; n++, fp = fp->_chain) {
        if (!readable(s, (uintptr_t)fp, sizeof *fp) || ((unsigned)fp->_flags & 0xffff0000u) != 0xfbad0000u)
            break;
        if (find_block(s, (uintptr_t)fp) < 0)
            add_libc(s, (uintptr_t)fp & ~(WORD - 1), (uintptr_t)fp + sizeof *fp);
    }
}

static void libc_roots(struct scan *s)
{
    dead_thread_stacks(s, at_exit_sp ? map_of(s, at_exit_sp) : NULL);
    dl_iterate_phdr(libc_segments, s);
    untracked_streams(s);
}

/* ---- the tracer's own writable segments --------------------------------------- */

static int own_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct scan *s = arg;
    uintptr_t me = (uintptr_t)&at_exit_sp;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz)
            mine = 1;
    }
    if (!mine)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
            uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(WORD - 1);
            exclude(s, (void *)lo, info->dlpi_addr + ph->p_vaddr + ph->p_memsz - lo);
        }
    }
    return 1;
}

/* ---- blocks ------------------------------------------------------------------- */

/* The first block (by address) that ends after p. */
static size_t first_ending_after(const struct scan *s, uintptr_t p)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (blk_end(&s->b[mid]) <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static inline size_t chunk_slot(const struct scan *s, uintptr_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> s->cshift);
}

/* p's region entry (see struct chunk): 0 when no block has a byte there;
 * without the table, 1 (every word goes to the binary search). */
static inline uint32_t region_of(const struct scan *s, uintptr_t p)
{
    if (!s->chunks)
        return 1;
    uintptr_t key = (p >> CHUNK_SHIFT) + 1;
    size_t mask = ((size_t)1 << (64 - s->cshift)) - 1;
    for (size_t i = chunk_slot(s, key); s->chunks[i].key; i = (i + 1) & mask)
        if (s->chunks[i].key == key)
            return s->chunks[i].regions[(p >> REGION_SHIFT) & (CHUNK_REGIONS - 1)];
    return 0;
}

/* Whether a word may point into a block, and its region entry: the quick
 * tests, inlined into the scanning loops, which most words (no heap
 * pointers) go no further than. */
static inline uint32_t may_be_block(const struct scan *s, uintptr_t p)
{
    return p >= s->min && p < s->max ? region_of(s, p) : 0;
}

static inline size_t region_grains(const struct scan *s)
{
    return (size_t)1 << (REGION_SHIFT - s->gshift);
}

/* p's grain in the grain tables, from its region entry r (IN_GRAINS). */
static inline size_t grain_index(const struct scan *s, uintptr_t p, uint32_t r)
{
    return ((size_t)(r & ~IN_GRAINS) << (REGION_SHIFT - s->gshift)) +
           ((p & ((1ul << REGION_SHIFT) - 1)) >> s->gshift);
}

/* The last block (+ 1) that starts before the end of p's grain, from p's
 * region entry r (nonzero; the table built): one read of the table, none
 * of the blocks. */
static inline size_t grain_entry(const struct scan *s, uintptr_t p, uint32_t r)
{
    if (!(r & IN_GRAINS))
        return r;
    return s->grains[grain_index(s, p, r)];
}

/* The block p points into, from its grain entry g, or -1: the blocks
 * that start after p in its grain are stepped back over. */
static long block_from(const struct scan *s, uintptr_t p, size_t g)
{
    while (g && s->b[g - 1].start > p)
        g--;
    if (!g)
        return -1;
    const struct blk *b = &s->b[g - 1];
    uintptr_t end = blk_end(b);
    if (p >= end)
        return -1;
    /* A chunk header of glibc's (see above), not the program's pointer.
     * The usable size is at least the size, so only a word in the
     * block's last 8 bytes can be one: the others skip the call. */
    if (p != b->start && p + WORD >= end && s->usable &&
        p + WORD == b->start + s->usable((void *)b->start))
        return -1;
    return (long)g - 1;
}

/* The block a word with region entry r (nonzero) points into, or -1. */
static long block_at(const struct scan *s, uintptr_t p, uint32_t r)
{
    if (s->chunks)
        return block_from(s, p, grain_entry(s, p, r));
    size_t i = first_ending_after(s, p);
    return block_from(s, p, i < s->n && s->b[i].start <= p ? i + 1 : 0);
}

/* The block a word points into, or -1. */
static inline long find_block(struct scan *s, uintptr_t p)
{
    uint32_t r = may_be_block(s, p);
    return r ? block_at(s, p, r) : -1;
}

/* A vtable as memcheck recognises one: in a readable file mapping, and of
 * its first 20 words, null ones aside, the first two point into
 * executable file mappings. */
static int is_vtable(const struct scan *s, uintptr_t v)
{
    if (v < PAGE_SZ || (v & (WORD - 1)))
        return 0;
    const struct map *m = map_of(s, v);
    if (!m || !m->file || !m->r)
        return 0;
    uintptr_t last = v + 20 * WORD;
    if (last > m->hi - WORD)
        last = m->hi - WORD;
    int fns = 0;
    for (uintptr_t a = v; a <= last; a += WORD) {
        uintptr_t f = word_at(a);
        if (f == 0)
            continue;
        const struct map *fm = map_of(s, f);
        if (!fm || !fm->file || !fm->x)
            return 0;
        if (++fns == 2)
            return 1;
    }
    return 0;
}

/* Whether block b's first word is a vtable pointer, found once per
 * block: a block that holds interior pointers by the thousand (perl's
 * arenas of values) otherwise looked its first word up for each. */
static int first_is_vtable(const struct scan *s, struct blk *b)
{
    /* Two marking threads may both find it: the same value either way. */
    uint8_t v = __atomic_load_n(&b->first_vtable, __ATOMIC_RELAXED);
    if (!v) {
        uintptr_t first = word_at(b->start);
        v = !(first & (WORD - 1)) && first >= PAGE_SZ && is_vtable(s, first) ? 2 : 1;
        __atomic_store_n(&b->first_vtable, v, __ATOMIC_RELAXED);
    }
    return v == 2;
}

/* memcheck's heuristics for an interior pointer p into block b. */
static int heuristic(const struct scan *s, struct blk *b, uintptr_t p)
{
    if (!b->readable)
        return 0;
    uintptr_t d = b->start;
    if (p == d + 3 * WORD && b->size >= 3 * WORD) {   /* stdstring */
        uintptr_t capacity = word_at(d + WORD);
        if (3 * WORD + capacity + 1 == b->size && word_at(d) <= capacity)
            return 1;
    }
    if (p == d + WORD && b->size >= WORD) {   /* length64, newarray */
        uintptr_t count = word_at(d);
        if (count > 0 && (b->size - WORD == count || (b->size - WORD) % count == 0))
            return 1;
    }
    if (!(p & (WORD - 1)) && p + WORD <= d + b->size && b->size >= WORD &&
        first_is_vtable(s, b)) {   /* multiple inheritance */
        uintptr_t inner = word_at(p);
        if (!(inner & (WORD - 1)) && inner >= PAGE_SZ && is_vtable(s, inner))
            return 1;
    }
    return 0;
}

/* The block's first line is prefetched: it is read when popped. */
static inline void push(struct scan *s, size_t i)
{
    s->stack[s->top++] = (uint32_t)i;
    __builtin_prefetch((const void *)s->b[i].start);
}

/* A FILE of stdio (its _flags carry _IO_MAGIC): a stream the program left
 * open, which valgrind's freeres does not free. */
static int is_stream(const struct blk *b)
{
    return b->readable && b->size >= sizeof(FILE) &&
           ((unsigned)((const FILE *)b->start)->_flags & 0xffff0000u) == 0xfbad0000u;
}

/* The state block b rises to from st, pointed to by p from `from`, or st
 * when it does not rise. A state only rises: REACHABLE and LIBC are the
 * highest. Only a word found from a root or a reachable block can make a
 * block reachable: for the others the heuristics need not run. */
static inline uint8_t risen(struct scan *s, struct blk *b, uintptr_t p, enum from from,
                            uint8_t st)
{
    if (st == REACHABLE || st == LIBC)
        return st;
    if (from == FROM_LIBC)
        return st != UNREACHED ? st : is_stream(b) ? REACHABLE : LIBC;
    if (from == FROM_DEFINITE && (p == b->start || heuristic(s, b, p)))
        return REACHABLE;
    return st == UNREACHED ? POSSIBLE : st;
}

/* Block i (or -1), pointed to by p, found from a root or from a block
 * being marked: pushed when its state rises. */
static void reach_block(struct scan *s, uintptr_t p, long i, enum from from)
{
    if (i < 0)
        return;
    struct blk *b = &s->b[i];
    uint8_t to = risen(s, b, p, from, b->state);
    if (to != b->state) {
        b->state = to;
        push(s, (size_t)i);
    }
}

static inline void give(struct scan *s);

/* The same while two threads mark (see mark_shared): a state rises only
 * by a compare-and-swap from the state it was read as, and whichever
 * thread raises it pushes the block; the other, finding it risen, tries
 * again. A thread whose partner waits for work then gives it some. Apart
 * from reach_block, which one thread keeps free of atomics. */
static void reach_block_shared(struct scan *s, uintptr_t p, long i, enum from from)
{
    if (i < 0)
        return;
    struct blk *b = &s->b[i];
    uint8_t st = state_of(b);
    for (;;) {
        uint8_t to = risen(s, b, p, from, st);
        if (to == st)
            return;
        if (__atomic_compare_exchange_n(&b->state, &st, to, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            push(s, (size_t)i);
            give(s);
            return;
        }
    }
}

/*
 * Lookups in flight. A word that may point into a block takes two reads
 * the caches rarely hold with a large heap: its grain entry, then the
 * block. So each waits in a ring of AHEAD: the grain entry is prefetched
 * when the word comes in, read (and the block prefetched) AHEAD / 2
 * words later, and the block read AHEAD words later; that many misses
 * overlap instead of following each other. Marking converges to the
 * same states in any order (a block's state only rises, and a block
 * whose state rises is scanned again), so the delay changes no kind;
 * every phase drains the ring before it ends (see mark).
 */
static void defer_one(struct scan *s)
{
    struct pending *e = &s->ring[s->ring_head];
    s->ring_head = (s->ring_head + 1) % AHEAD;
    s->ring_n--;
    size_t g = e->r ? grain_entry(s, e->p, e->r) : e->g;
    if (s->pool)
        reach_block_shared(s, e->p, block_from(s, e->p, g), (enum from)e->from);
    else
        reach_block(s, e->p, block_from(s, e->p, g), (enum from)e->from);
}

static __attribute__((noinline)) void defer(struct scan *s, uintptr_t p, uint32_t r,
                                            enum from from)
{
    if (!s->chunks) {
        if (s->pool)
            reach_block_shared(s, p, block_at(s, p, r), from);
        else
            reach_block(s, p, block_at(s, p, r), from);
        return;
    }
    if (s->ring_n == AHEAD)
        defer_one(s);
    struct pending *e = &s->ring[(s->ring_head + s->ring_n++) % AHEAD];
    *e = (struct pending){ .p = p, .from = (uint8_t)from };
    if (r & IN_GRAINS) {
        e->r = r;
        __builtin_prefetch(&s->grains[grain_index(s, p, r)]);
    } else {
        e->g = r;
        __builtin_prefetch(&s->b[r - 1]);
    }
    if (s->ring_n > AHEAD / 2) {
        struct pending *m = &s->ring[(s->ring_head + s->ring_n - 1 - AHEAD / 2) % AHEAD];
        if (m->r) {
            m->g = grain_entry(s, m->p, m->r);
            m->r = 0;
            if (m->g)
                __builtin_prefetch(&s->b[m->g - 1]);
        }
    }
}

static inline void reach(struct scan *s, uintptr_t p, enum from from)
{
    uint32_t r = may_be_block(s, p);
    if (r)
        defer(s, p, r, from);
}

static void scan_words(struct scan *s, uintptr_t lo, uintptr_t hi)
{
    lo = (lo + WORD - 1) & ~(WORD - 1);
    for (uintptr_t a = lo; a + WORD <= hi; a += WORD)
        reach(s, word_at(a), s->root_from);
}

/* Resident pages only, for large mappings (see above). */
static void scan_resident(struct scan *s, uintptr_t lo, uintptr_t hi)
{
    if (hi - lo < MINCORE_FROM) {
        scan_words(s, lo, hi);
        return;
    }
    unsigned char vec[256];
    for (uintptr_t a = lo & ~(PAGE_SZ - 1); a < hi; a += sizeof vec * PAGE_SZ) {
        uintptr_t end = a + sizeof vec * PAGE_SZ < hi ? a + sizeof vec * PAGE_SZ : hi;
        size_t pages = (end - a + PAGE_SZ - 1) / PAGE_SZ;
        if (mincore((void *)a, end - a, vec) != 0)
            continue;   /* not mapped any more: nothing to read */
        for (size_t k = 0; k < pages; k++) {
            if (!(vec[k] & 1))
                continue;
            uintptr_t pl = a + k * PAGE_SZ, ph = pl + PAGE_SZ;
            scan_words(s, pl < lo ? lo : pl, ph > end ? end : ph);
        }
    }
}

/* A root range without the live blocks inside it (they are scanned only
 * once reached). */
static void scan_root_gaps(struct scan *s, uintptr_t lo, uintptr_t hi)
{
    size_t a = first_ending_after(s, lo);
    for (; a < s->n && s->b[a].start < hi && lo < hi; a++) {
        if (s->b[a].start > lo)
            scan_resident(s, lo, s->b[a].start);
        if (blk_end(&s->b[a]) > lo)
            lo = blk_end(&s->b[a]);
    }
    if (lo < hi)
        scan_resident(s, lo, hi);
}

/* A root range without the excluded ranges (sorted, disjoint). */
static void scan_root(struct scan *s, uintptr_t lo, uintptr_t hi)
{
    for (size_t e = 0; e < s->nexcl && lo < hi; e++) {
        const struct range *x = &s->excl[e];
        if (x->hi <= lo || x->lo >= hi)
            continue;
        if (x->lo > lo)
            scan_root_gaps(s, lo, x->lo);
        if (x->hi > lo)
            lo = x->hi;
    }
    if (lo < hi)
        scan_root_gaps(s, lo, hi);
}

/* Block b's words, found as `from` says. A word pointing into b itself
 * takes no lookup: it cannot change b's state, nor any other block's.
 * b was pushed when its state rose above UNREACHED; a block reachable or
 * glibc's gains nothing from any word, and one possibly lost nothing
 * from its own words (found from a block possibly lost, they make no
 * block more than possibly lost). perl's shared hash keys point into
 * themselves (the HE's pointer to its HEK): half a million of perlhash's
 * 3.5 million lookups. */
static void scan_block(struct scan *s, const struct blk *b, enum from from)
{
    for (uintptr_t a = (b->start + WORD - 1) & ~(WORD - 1); a + WORD <= b->start + b->size;
         a += WORD) {
        uintptr_t w = word_at(a);
        if (w - b->start >= b->size)
            reach(s, w, from);
    }
}

/* Blocks are popped last in, first out: a block pushed long before is
 * prefetched POP_AHEAD blocks before it is popped (if no more are pushed
 * meanwhile), besides when pushed. */
#define POP_AHEAD 4

static __attribute__((noinline, cold)) int take(struct scan *s);

static void mark(struct scan *s)
{
    for (;;) {
        if (!s->top) {
            if (s->ring_n)
                defer_one(s);
            else if (!s->pool || !take(s))
                return;
            continue;
        }
        struct blk *b = &s->b[s->stack[--s->top]];
        if (s->top >= POP_AHEAD)
            __builtin_prefetch((const void *)s->b[s->stack[s->top - POP_AHEAD]].start);
        if (!b->readable)
            continue;
        uint8_t st = s->pool ? state_of(b) : b->state;
        scan_block(s, b,
                   st == LIBC       ? FROM_LIBC
                   : st == POSSIBLE ? FROM_POSSIBLE
                                    : FROM_DEFINITE);
    }
}

/*
 * The marking from the roots on two threads (the exit's helper thread,
 * when the caller allows one: a core looks free). The second thread is
 * started once the roots are scanned, and marks with a struct scan of its
 * own (its own stack, its own ring of lookups in flight) over the same
 * blocks and tables. Marking converges to the same states in any order
 * (see defer), so two threads do too, provided a rise is never lost: a
 * state changes only by a compare-and-swap from the state it was read
 * as, and whichever thread wins pushes the block, so every rise is
 * scanned once, as on one thread; each stack then holds at most the 2n
 * pushes the single stack had room for. Work goes from one to the other
 * through a pool: a thread with nothing left says so (`hungry`), and the
 * other, at its next push, gives it the upper half of its stack (up to
 * POOL_MAX). The marking ends when both wait with the pool empty. A
 * helper that starts late, after the report's thread found nothing
 * left, finds the marking over and returns. Only the first marking is
 * shared (the roots' pass: nearly all of it); glibc's pass and the
 * cliques stay on one thread.
 */
#define POOL_MAX 65536
#define GIVE_FROM 64   /* a stack this deep gives half */

struct pool {
    int lock;
    int workers, hungry, done;
    size_t n;
    uint32_t item[POOL_MAX];
};

static void pool_lock(struct pool *p)
{
    for (unsigned spins = 0; __atomic_exchange_n(&p->lock, 1, __ATOMIC_ACQUIRE); spins++)
        if (spins % 64 == 63)
            sched_yield();
        else
            __builtin_ia32_pause();
}

static void pool_unlock(struct pool *p)
{
    __atomic_store_n(&p->lock, 0, __ATOMIC_RELEASE);
}

static __attribute__((noinline)) void give_now(struct scan *s, struct pool *p)
{
    pool_lock(p);
    if (p->hungry && !p->n) {
        size_t k = s->top / 2 < POOL_MAX ? s->top / 2 : POOL_MAX;
        s->top -= k;
        memcpy(p->item, s->stack + s->top, k * sizeof *p->item);
        __atomic_store_n(&p->n, k, __ATOMIC_RELAXED);
    }
    pool_unlock(p);
}

static inline void give(struct scan *s)
{
    struct pool *p = s->pool;
    if (__atomic_load_n(&p->hungry, __ATOMIC_RELAXED) && s->top >= GIVE_FROM &&
        !__atomic_load_n(&p->n, __ATOMIC_RELAXED))
        give_now(s, p);
}

/* The pool's blocks onto s's empty stack (under the lock). */
static void take_all(struct scan *s, struct pool *p)
{
    memcpy(s->stack, p->item, p->n * sizeof *p->item);
    s->top = p->n;
    __atomic_store_n(&p->n, 0, __ATOMIC_RELAXED);
}

/* Work from the pool, waiting for it; 0 when the marking is over. */
static int take(struct scan *s)
{
    struct pool *p = s->pool;
    pool_lock(p);
    if (p->n) {
        take_all(s, p);
        pool_unlock(p);
        return 1;
    }
    if (++p->hungry == p->workers)
        __atomic_store_n(&p->done, 1, __ATOMIC_RELAXED);
    for (unsigned spins = 0;; spins++) {
        if (p->done) {
            pool_unlock(p);
            return 0;
        }
        if (p->n) {
            p->hungry--;
            take_all(s, p);
            pool_unlock(p);
            return 1;
        }
        pool_unlock(p);
        while (!__atomic_load_n(&p->done, __ATOMIC_RELAXED) &&
               !__atomic_load_n(&p->n, __ATOMIC_RELAXED)) {
            if (++spins % 64 == 0)
                sched_yield();
            else
                __builtin_ia32_pause();
        }
        pool_lock(p);
    }
}

struct marker {
    struct scan s;     /* the helper's: its own stack and ring */
    uint32_t *stack2;  /* its stack of blocks, as long as the first */
    void *stack;       /* the thread's */
    pthread_t t;
};

#define MARKER_STACK (256ul << 10)

static void *marker_thread(void *arg)
{
    at_guard = 1;
    struct scan *s = &((struct marker *)arg)->s;
    struct pool *p = s->pool;
    pool_lock(p);
    int late = p->done;
    if (!late)
        p->workers++;
    pool_unlock(p);
    if (!late)
        mark(s);
    return NULL;
}

/* The first marking, on two threads when the caller mapped what a helper
 * needs (m, p) and one can be started, else on one. */
static void mark_shared(struct scan *s, struct marker *m, struct pool *p)
{
    if (!m || !p) {
        mark(s);
        return;
    }
    m->s = *s;
    m->s.stack = m->stack2;
    m->s.top = 0;
    m->s.ring_head = m->s.ring_n = 0;
    p->workers = 1;
    s->pool = p;
    m->s.pool = p;
    if (at_thread_run(marker_thread, m, "alloctrace-exit", m->stack, MARKER_STACK, &m->t) != 0) {
        s->pool = NULL;
        mark(s);
        return;
    }
    mark(s);
    pthread_join(m->t, NULL);
    s->pool = NULL;
}

/* Step 3: the unreached blocks found from clique head h. */
static void clique(struct scan *s, size_t h)
{
    push(s, h);
    while (s->top) {
        const struct blk *b = &s->b[s->stack[--s->top]];
        if (!b->readable)
            continue;
        for (uintptr_t a = (b->start + WORD - 1) & ~(WORD - 1); a + WORD <= b->start + b->size;
             a += WORD) {
            long i = find_block(s, word_at(a));
            if (i >= 0 && (size_t)i != h && s->b[i].state == UNREACHED) {
                s->b[i].state = INDIRECT;
                push(s, (size_t)i);
            }
        }
    }
}

/* ---- setup -------------------------------------------------------------------- */

/* The chunks a block covers, first and last. */
static void block_chunks(const struct blk *b, uintptr_t *first, uintptr_t *last)
{
    *first = b->start >> CHUNK_SHIFT;
    *last = (blk_end(b) - 1) >> CHUNK_SHIFT;
}

/* How many distinct chunks the blocks (sorted by start) cover, counting
 * no further than `max` + 1. */
static size_t count_chunks(const struct scan *s, size_t max)
{
    size_t count = 0;
    uintptr_t seen = 0;   /* highest chunk counted + 1 */
    for (size_t i = 0; i < s->n && count <= max; i++) {
        uintptr_t first, last;
        block_chunks(&s->b[i], &first, &last);
        for (uintptr_t c = first + 1 > seen ? first : seen; c <= last && count <= max; c++)
            count++;
        if (last + 1 > seen)
            seen = last + 1;
    }
    return count;
}

/* How many distinct regions blocks start in (the grain tables). */
static size_t count_start_regions(const struct scan *s)
{
    size_t count = 0;
    for (size_t i = 0; i < s->n; i++)
        count += i == 0 || s->b[i].start >> REGION_SHIFT != s->b[i - 1].start >> REGION_SHIFT;
    return count;
}

/* Region r's entry, its chunk's regions taken from *next when new. */
static uint32_t *region_entry(struct scan *s, uintptr_t r, uint32_t **next)
{
    uintptr_t key = (r >> (CHUNK_SHIFT - REGION_SHIFT)) + 1;
    size_t mask = ((size_t)1 << (64 - s->cshift)) - 1, i = chunk_slot(s, key);
    for (; s->chunks[i].key; i = (i + 1) & mask)
        if (s->chunks[i].key == key)
            break;
    if (!s->chunks[i].key) {
        s->chunks[i] = (struct chunk){ key, *next };
        *next += CHUNK_REGIONS;
    }
    return &s->chunks[i].regions[r & (CHUNK_REGIONS - 1)];
}

/* Fills the blocks into the table (see struct chunk), in address order:
 * each grain of a region where blocks start gets the last block (+ 1)
 * that starts before the grain's end; each region a block covers without
 * a start, that block (+ 1). */
static void fill_index(struct scan *s, uint32_t *next_regions)
{
    uint32_t *grains = NULL, last = 0, ntables = 0;
    uintptr_t grains_region = 0;
    size_t filled = 0;   /* grains of the current table set so far */
    const size_t grains_n = region_grains(s);
    for (size_t i = 0; i < s->n; i++) {
        const struct blk *b = &s->b[i];
        uintptr_t r = b->start >> REGION_SHIFT, r_end = (blk_end(b) - 1) >> REGION_SHIFT;
        if (!grains || r != grains_region) {
            for (; grains && filled < grains_n; filled++)
                grains[filled] = last;
            *region_entry(s, r, &next_regions) = IN_GRAINS | ntables;
            grains = s->grains + (size_t)ntables++ * grains_n;
            grains_region = r;
            filled = 0;
        }
        size_t g = (b->start >> s->gshift) & (grains_n - 1);
        for (; filled < g; filled++)
            grains[filled] = last;
        grains[g] = last = (uint32_t)i + 1;
        filled = g + 1;
        for (uintptr_t c = r + 1; c <= r_end; c++) {
            uint32_t *e = region_entry(s, c, &next_regions);
            if (!*e)
                *e = (uint32_t)i + 1;
        }
    }
    for (; grains && filled < grains_n; filled++)
        grains[filled] = last;
}

/* The smallest grain whose tables take at most 16 bytes a block, or
 * GRAIN_MAX's 1 KiB a region: a heap of small blocks gets 32-byte grains
 * (perl's million blocks, 10 bytes a block), blocks scattered one or two
 * to a region the largest. */
static int grain_shift(size_t ntables, size_t n)
{
    int g = GRAIN_MIN;
    while (g < GRAIN_MAX && ntables * ((size_t)1 << (REGION_SHIFT - g)) * sizeof(uint32_t) > 16 * n)
        g++;
    return g;
}

/* Builds the table (see struct chunk), in scratch memory the roots leave
 * out; none when the blocks are spread over too many chunks or there is
 * no memory: every word then goes to the binary search. */
static void build_index(struct scan *s)
{
    size_t nchunks = count_chunks(s, MAX_CHUNKS), slots = 16;
    if (nchunks == 0 || nchunks > MAX_CHUNKS)
        return;
    while (slots < 2 * nchunks)
        slots *= 2;
    size_t ntables = count_start_regions(s);
    s->gshift = grain_shift(ntables, s->n);
    size_t len = slots * sizeof(struct chunk) + nchunks * CHUNK_REGIONS * sizeof(uint32_t) +
                 ntables * region_grains(s) * sizeof(uint32_t);
    char *m = scratch(len);
    if (!m)
        return;
    s->index = m;
    s->index_len = len;
    exclude(s, m, len);
    s->chunks = (struct chunk *)m;
    s->cshift = 64 - __builtin_ctzl(slots);
    uint32_t *regions = (uint32_t *)(m + slots * sizeof(struct chunk));
    s->grains = regions + nchunks * CHUNK_REGIONS;
    fill_index(s, regions);
}

/* End of the ascending run of blocks that starts at i. */
static size_t run_end(const struct blk *a, size_t i, size_t n)
{
    while (i + 1 < n && a[i].start <= a[i + 1].start)
        i++;
    return i + 1;
}

/* Merges a[lo, mid) and a[mid, hi) into t[lo, hi). */
static void merge(const struct blk *a, size_t lo, size_t mid, size_t hi, struct blk *t)
{
    size_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi)
        t[k++] = a[j].start < a[i].start ? a[j++] : a[i++];
    while (i < mid)
        t[k++] = a[i++];
    while (j < hi)
        t[k++] = a[j++];
}

/* Natural merge sort by start, between a and t (both n long); returns the
 * one that holds the result. The blocks come in index order, which for
 * most heaps is nearly address order: a few runs, a few passes. No
 * allocation, no recursion. */
static struct blk *sort_blocks(struct blk *a, struct blk *t, size_t n)
{
    for (;;) {
        size_t runs = 0;
        for (size_t i = 0; i < n; runs++) {
            size_t mid = run_end(a, i, n), hi = mid < n ? run_end(a, mid, n) : n;
            merge(a, i, mid, hi, t);
            i = hi;
        }
        struct blk *x = a;
        a = t;
        t = x;
        if (runs <= 1)
            return a;
    }
}

static void sort_ranges(struct range *r, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && r[j - 1].lo > r[j].lo; j--) {
            struct range t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
}

/*
 * Where the program's part of the exiting thread's stack begins. Between
 * at_finish and the program lie the frames of exit, its handlers and the
 * loader's _dl_fini: live frames, but with slots they never wrote, where
 * stale copies of the program's pointers linger (memcheck knows them for
 * undefined and ignores them; we cannot). So the scan starts at the
 * return address into the first frame that is neither the tracer's nor
 * the C library's or loader's: the caller of exit (or of _exit), or _start
 * when main returned. Without it (no backtrace), everything above sp.
 */
static uintptr_t program_stack(const struct scan *s, const struct map *stack)
{
    void *ret[64];
    int n = at_unwind_glibc(ret, 64);
    for (int i = 0; i < n; i++) {
        uintptr_t r = (uintptr_t)ret[i];
        const struct map *m = map_of(s, r);
        if ((r >= at_self_lo && r < at_self_hi) || (m && m->runtime))
            continue;
        for (uintptr_t a = at_exit_sp; a + WORD <= stack->hi; a += WORD)
            if (word_at(a) == r)
                return a;
        break;
    }
    return at_exit_sp;
}

static void scan_roots(struct scan *s)
{
    uintptr_t sp = at_exit_sp;
    const struct map *own = sp ? map_of(s, sp) : NULL;
    for (size_t i = 0; i < s->nmaps; i++) {
        const struct map *m = &s->maps[i];
        if (!m->root)
            continue;
        if (m != own) {
            scan_root(s, m->from ? m->from : m->lo, m->hi);
            continue;
        }
        /* The exiting thread's stack: the callee-saved registers, which
         * at_finish's prologue saved (__builtin_unwind_init), and the
         * program's frames above. Not at_finish's other slots: stale. */
#if defined(__x86_64__)
        uintptr_t regs = at_exit_frame - 5 * WORD, regs_end = at_exit_frame + WORD;
#else
        uintptr_t regs = sp, regs_end = at_exit_frame + 2 * WORD;
#endif
        uintptr_t from = program_stack(s, m);
        if (at_exit_frame > sp && regs_end <= from)
            scan_root(s, regs, regs_end);
        scan_root(s, from, m->hi);
    }
}

static void stdio_buffers(struct scan *s)
{
    const FILE *fp = io_list_all && readable(s, (uintptr_t)io_list_all, WORD) ? *io_list_all : NULL;
    for (int n = 0; fp && n < 100000; n++, fp = fp->_chain) {
        if (!readable(s, (uintptr_t)fp, sizeof *fp) || ((unsigned)fp->_flags & 0xffff0000u) != 0xfbad0000u)
            break;
        if ((fp->_flags & 3) || fp->_mode == 0 || !fp->_IO_buf_base)
            continue;   /* _IO_USER_BUF, _IO_UNBUFFERED, or never used */
        uintptr_t buf = (uintptr_t)fp->_IO_buf_base;
        long i = find_block(s, buf);
        if (i >= 0 && s->b[i].start == buf)
            s->b[i].state = LIBC;
    }
}

static const uint8_t kind_of[] = {
    [UNREACHED] = AT_KIND_DEFINITE, [INDIRECT] = AT_KIND_INDIRECT,
    [POSSIBLE] = AT_KIND_POSSIBLE, [REACHABLE] = AT_KIND_REACHABLE, [LIBC] = AT_KIND_LIBC,
};

/* Whether [a, a + len) lies in readable mappings; *m the mapping of the
 * last call, tried first (the blocks come in address order). */
static int readable_near(const struct scan *s, const struct map **m, uintptr_t a, size_t len)
{
    if (*m && a >= (*m)->lo && a + len <= (*m)->hi)
        return (*m)->r;
    *m = map_of(s, a);
    return readable(s, a, len);
}

/* The blocks into s->b by address, with their places in `all`. They come
 * in address order from at_live_collect (shadow.c's leaves in order), so
 * the sort's second half is mapped only when they do not. */
static int blocks_by_address(struct scan *s, const struct at_live_block *all, size_t n)
{
    int sorted = 1;
    for (size_t i = 0; i < n; i++) {
        s->b[i] = (struct blk){ .start = all[i].id, .size = at_live_size(&all[i]),
                                .order = (uint32_t)i };
        sorted &= i == 0 || all[i - 1].id <= all[i].id;
    }
    if (!sorted) {
        struct blk *t = scratch(s->blen);
        if (!t)
            return -1;
        struct blk *out = sort_blocks(s->b, t, n);
        scratch_free(out == t ? s->b : t, s->blen);
        s->b = out;
    }
    exclude(s, s->b, s->blen);
    s->n = n;
    return 0;
}

static int classify(struct scan *s, const struct at_live_block *all, size_t n, uint8_t *kind,
                    void (*read)(void *ctx), void *ctx, struct marker *mk, struct pool *p)
{
    if (blocks_by_address(s, all, n) != 0)
        return -1;
    if (read)
        read(ctx);   /* `all` is not read again */
    s->min = n ? s->b[0].start : 0;
    s->max = 0;
    const struct map *m = NULL;
    for (size_t i = 0; i < n; i++) {
        if (blk_end(&s->b[i]) > s->max)
            s->max = blk_end(&s->b[i]);
        s->b[i].readable = (uint8_t)readable_near(s, &m, s->b[i].start, s->b[i].size);
    }
    build_index(s);
    exclude_arena_heaps(s);
    thread_stacks(s);
    libc_roots(s);
    dl_iterate_phdr(own_segments, s);
    at_live_exclusions(exclude_cb, s);
    sort_ranges(s->excl, s->nexcl);
    stdio_buffers(s);
    s->root_from = FROM_DEFINITE;
    scan_roots(s);
    mark_shared(s, mk, p);
    s->root_from = FROM_LIBC;
    for (size_t i = 0; i < s->nlibc; i++)
        scan_root_gaps(s, s->libc[i].lo, s->libc[i].hi);
    mark(s);
    for (size_t i = 0; i < n; i++)
        if (s->b[i].state == UNREACHED)
            clique(s, i);
    for (size_t i = 0; i < n; i++)
        kind[s->b[i].order] = kind_of[s->b[i].state];
    return 0;
}

const char *at_reach_classify(const struct at_live_block *all, size_t n, uint8_t *kind)
{
    return at_reach_classify_more(all, n, kind, NULL, 0, 0, NULL, NULL, 0);
}

const char *at_reach_classify_more(const struct at_live_block *all, size_t n, uint8_t *kind,
                                   const struct at_span *more, size_t nmore, long helper,
                                   void (*read)(void *ctx), void *ctx, int mark_helper)
{
    helper_tid = helper;
    memset(kind, AT_KIND_UNKNOWN, n);
    if (n == 0)
        return NULL;
    if (!glibc_malloc())
        return "the allocator is not glibc's";
    if (n >> 31)
        return "too many live blocks";
    struct scan s = { 0 };
    size_t cap = 0, slen = (2 * n + 1) * sizeof *s.stack;
    s.blen = n * sizeof *s.b;
    char *text = NULL;
    size_t len = read_maps(&text, &cap);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    size_t mlen = (lines + 1) * sizeof *s.maps, tables = 0;
    at_live_exclusions(count_cb, &tables);
    s.excl_cap = lines + tables + nmore + EXCL_SLACK;
    size_t elen = s.excl_cap * sizeof *s.excl;
    s.excl = scratch(elen);
    s.b = scratch(s.blen);
    s.stack = scratch(slen);
    s.maps = scratch(mlen);
    /* What a marking helper needs (see mark_shared): scratch, left out
     * of the roots as the scan's own below. Without it, one thread. */
    struct marker *m = NULL;
    struct pool *pool = NULL;
    if (mark_helper) {
        m = scratch(sizeof *m);
        pool = scratch(sizeof *pool);
        if (m) {
            m->stack2 = scratch(slen);
            m->stack = scratch(MARKER_STACK);
        }
        if (!m || !pool || !m->stack2 || !m->stack) {
            if (m) {
                scratch_free(m->stack2, slen);
                scratch_free(m->stack, MARKER_STACK);
            }
            scratch_free(m, sizeof *m);
            scratch_free(pool, sizeof *pool);
            m = NULL;
            pool = NULL;
        }
    }
    int rc = -1;
    if (!s.excl)
        s.excl_cap = 0;
    if (len && s.b && s.stack && s.maps && s.excl) {
        exclude(&s, s.excl, elen);
        s.nmaps = parse_maps(text, len, s.maps, lines + 1);
        exclude(&s, all, n * sizeof *all);
        exclude(&s, s.stack, slen);
        exclude(&s, s.maps, mlen);
        exclude(&s, text, cap);
        for (size_t i = 0; i < nmore; i++)
            exclude(&s, more[i].p, more[i].len);
        s.usable = at_real.usable_size;
        if (m) {
            exclude(&s, m, sizeof *m);
            exclude(&s, pool, sizeof *pool);
            exclude(&s, m->stack2, slen);
            exclude(&s, m->stack, MARKER_STACK);
        }
        rc = classify(&s, all, n, kind, read, ctx, m, pool);
    }
    if (m) {
        scratch_free(m->stack2, slen);
        scratch_free(m->stack, MARKER_STACK);
        scratch_free(m, sizeof *m);
        scratch_free(pool, sizeof *pool);
    }
    scratch_free(text, cap);
    scratch_free(s.b, s.blen);
    scratch_free(s.stack, slen);
    scratch_free(s.maps, mlen);
    scratch_free(s.excl, elen);
    scratch_free(s.index, s.index_len);
    return rc < 0 ? (len ? "no memory for the scan" : "/proc/self/maps cannot be read") : NULL;
}

/* ---- a snapshot of the live process (snapshot.c) --------------------------- */

size_t at_reach_thread_sps(uintptr_t *sp, size_t max, size_t *running)
{
    *running = 0;
    int dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task",
                           O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    long self = syscall(SYS_gettid);
    char buf[4096], me[24];
    me[at_fmt_dec(me, (uint64_t)self)] = '\0';
    size_t n = 0;
    long len;
    while ((len = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0)
        for (long off = 0; off < len;) {
            const struct dirent64_raw *d = (const void *)(buf + off);
            if (d->name[0] >= '0' && d->name[0] <= '9' && strcmp(d->name, me) != 0) {
                int no_wait = 0;
                uintptr_t v = read_thread_sp(dfd, d->name, running, &no_wait);
                if (v && n < max)
                    sp[n++] = v;
                else if (v)
                    ++*running;   /* no room: its whole stack counts */
            }
            off += d->reclen;
        }
    syscall(SYS_close, dfd);
    return n;
}

void at_reach_use_threads(const uintptr_t *sp, size_t n, size_t running, int own_is_tracer)
{
    snap_sp = sp;
    snap_n = n;
    snap_running = running;
    snap_own_is_tracer = own_is_tracer;
}
