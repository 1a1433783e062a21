/*
 * preload/write/maps.c: loaded ELF objects -> map lines and build-id comments.
 *
 * START is the object's load base (dlpi_addr for a PIE or shared object;
 * the lowest PT_LOAD address for a non-PIE executable, which is loaded at
 * its link addresses), END the page-rounded end of its last segment.
 *
 * Before a record, its frames are looked up in the ranges of the objects
 * already written: a lock-free read (seqlock) of a small sorted array, no
 * shared write, so threads do not contend. Only a frame outside every
 * known object (a new object, or JIT code) leads to reading
 * dl_iterate_phdr's dlpi_adds/dlpi_subs counters, with a callback that
 * stops at the first object (one loader lock). dlclose is interposed to
 * forget the ranges, so that an object loaded later into a freed range is
 * noticed through the counters too. When the counters moved,
 * the whole list is scanned and objects not written yet (by path, base and
 * end) get their lines, appended before the record that triggered the look;
 * any record that can use a new object is captured after the loader counted
 * it, so the line always comes first. Objects that went away are forgotten,
 * so a later object in the same range gets its own line again.
 *
 * The lines go to the writer through the function at_maps_init was
 * handed (the writer is the layer above). Lock order: maps_lock, then
 * the loader's lock (inside dl_iterate_phdr), then the writer's. Nothing is allocated or locked inside the callbacks
 * except the line buffer, which uses the real allocator directly.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer.h"

#define MAX_KNOWN 4096

struct known {
    uintptr_t base, end;
    uint64_t hash;
};

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned long long seen_adds = ~0ull, seen_subs = ~0ull;
static struct known known[2][MAX_KNOWN];
static int nknown[2];
static int kcur;
static char exe_path[PATH_MAX];

/* Known code ranges, sorted by start, published with a seqlock. */
struct range {
    uintptr_t lo, hi;
};
static struct range ranges[MAX_KNOWN];
static int nranges;
static _Atomic unsigned range_seq;
static long page_size = 4096;

/* The lines of one scan, grown with the real allocator. */
struct text {
    char *p;
    size_t len, cap;
};

static void text_add(struct text *t, const char *s, size_t n)
{
    if (t->len + n > t->cap) {
        size_t cap = (t->cap + n) * 2 + 4096;
        char *p = at_real.realloc(t->p, cap);
        if (!p)
            return;
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
}

static void text_hex(struct text *t, uint64_t v)
{
    char b[20] = "0x";
    text_add(t, b, 2 + at_fmt_hex(b + 2, v));
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static at_text_out *lines_out;

void at_maps_init(at_text_out *out)
{
    lines_out = out;
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = '\0';
    long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0)
        page_size = ps;
}

/* Appends "## build-id: PATH => HEX" from the object's GNU build-id note. */
static void add_build_id(struct text *t, const struct dl_phdr_info *info, const char *path)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        const char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *nh;
            const unsigned char *desc =
                (const unsigned char *)name + ((nh->n_namesz + 3) & ~3u);
            if ((const char *)desc + nh->n_descsz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                static const char hex[] = "0123456789abcdef";
                text_add(t, AT_BUILD_ID_PREFIX, sizeof AT_BUILD_ID_PREFIX - 1);
                text_add(t, path, strlen(path));
                text_add(t, AT_MAP_ARROW, sizeof AT_MAP_ARROW - 1);
                for (unsigned k = 0; k < nh->n_descsz; k++) {
                    char h2[2] = { hex[desc[k] >> 4], hex[desc[k] & 15] };
                    text_add(t, h2, 2);
                }
                text_add(t, "\n", 1);
                return;
            }
            p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
}

struct scan {
    struct text text;
    int index;
    unsigned long long adds, subs;
};

static int known_before(uintptr_t base, uintptr_t end, uint64_t hash)
{
    const struct known *k = known[kcur];
    for (int i = 0; i < nknown[kcur]; i++)
        if (k[i].base == base && k[i].end == end && k[i].hash == hash)
            return 1;
    return 0;
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct scan *s = data;
    int first = s->index++ == 0;
    if (first) {
        s->adds = info->dlpi_adds;
        s->subs = info->dlpi_subs;
    }
    const char *name = info->dlpi_name;
    if (!name || !*name)
        name = first ? exe_path : "";
    if (!strchr(name, '/'))
        return 0;   /* the vDSO: no file to resolve against */
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (ph->p_vaddr < lo)
            lo = ph->p_vaddr;
        if (ph->p_vaddr + ph->p_memsz > hi)
            hi = ph->p_vaddr + ph->p_memsz;
    }
    if (hi == 0)
        return 0;
    uintptr_t base = info->dlpi_addr ? info->dlpi_addr : (lo & ~(uintptr_t)(page_size - 1));
    uintptr_t end = (info->dlpi_addr + hi + (uintptr_t)page_size - 1) & ~(uintptr_t)(page_size - 1);
    uint64_t hash = fnv(name);
    int next = kcur ^ 1;
    if (nknown[next] < MAX_KNOWN)
        known[next][nknown[next]++] = (struct known){ base, end, hash };
    if (known_before(base, end, hash))
        return 0;
    char cwd[PATH_MAX];
    char full[PATH_MAX * 2];
    if (name[0] != '/' && getcwd(cwd, sizeof cwd)) {
        size_t a = strlen(cwd), b = strlen(name);
        if (a + b + 2 < sizeof full) {
            memcpy(full, cwd, a);
            full[a] = '/';
            memcpy(full + a + 1, name, b + 1);
            name = full;
        }
    }
    struct text *t = &s->text;
    text_add(t, AT_MAP_PREFIX, sizeof AT_MAP_PREFIX - 1);
    text_add(t, name, strlen(name));
    text_add(t, AT_MAP_ARROW, sizeof AT_MAP_ARROW - 1);
    text_hex(t, base);
    text_add(t, "-", 1);
    text_hex(t, end);
    text_add(t, "\n", 1);
    add_build_id(t, info, name);
    return 0;
}

struct counts {
    unsigned long long adds, subs;
};

static int counts_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct counts *c = data;
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
    return 1;
}

static int by_lo(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Under maps_lock: publishes the ranges of known[kcur]. */
static void publish_ranges(void)
{
    atomic_fetch_add_explicit(&range_seq, 1, memory_order_acq_rel);   /* odd: writing */
    atomic_thread_fence(memory_order_release);
    int n = 0;
    for (int i = 0; i < nknown[kcur]; i++)
        ranges[n++] = (struct range){ known[kcur][i].base, known[kcur][i].end };
    qsort(ranges, (size_t)n, sizeof *ranges, by_lo);
    nranges = n;
    atomic_fetch_add_explicit(&range_seq, 1, memory_order_release);
}

/* The index of the known range holding a, or -1. */
static int range_of(uintptr_t a, int n)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (ranges[mid].hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ranges[lo].lo <= a ? lo : -1;
}

static int frames_known(void *const *frames, int n)
{
    unsigned s1 = atomic_load_explicit(&range_seq, memory_order_acquire);
    if (s1 & 1)
        return 0;
    int count = nranges;
    uintptr_t last_lo = 1, last_hi = 0;   /* the object of the previous frame */
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        uintptr_t a = (uintptr_t)frames[i];
        if (a >= last_lo && a < last_hi)
            continue;
        int k = range_of(a, count);
        ok = k >= 0;
        if (ok) {
            last_lo = ranges[k].lo;
            last_hi = ranges[k].hi;
        }
    }
    atomic_thread_fence(memory_order_acquire);
    return ok && atomic_load_explicit(&range_seq, memory_order_relaxed) == s1;
}

unsigned at_maps_epoch(void)
{
    return atomic_load_explicit(&range_seq, memory_order_acquire);
}

void at_maps_invalidate(void)
{
    pthread_mutex_lock(&maps_lock);
    atomic_fetch_add_explicit(&range_seq, 1, memory_order_acq_rel);
    nranges = 0;
    atomic_fetch_add_explicit(&range_seq, 1, memory_order_release);
    pthread_mutex_unlock(&maps_lock);
}

void at_maps_check(void *const *frames, int n)
{
    if (n <= 0 || frames_known(frames, n))
        return;
    at_maps_refresh();
}

void at_maps_refresh(void)
{
    struct counts c = { 0, 0 };
    dl_iterate_phdr(counts_cb, &c);
    if (c.adds == atomic_load_explicit(&seen_adds, memory_order_acquire) &&
        c.subs == atomic_load_explicit(&seen_subs, memory_order_acquire))
        return;
    pthread_mutex_lock(&maps_lock);
    struct scan s = { { NULL, 0, 0 }, 0, 0, 0 };
    nknown[kcur ^ 1] = 0;
    dl_iterate_phdr(scan_cb, &s);
    kcur ^= 1;
    /* The lines first: a thread that finds its frames known once the
     * ranges are out places its record after them. */
    if (s.text.len)
        lines_out(s.text.p, s.text.len);
    publish_ranges();
    at_real.free(s.text.p);
    atomic_store_explicit(&seen_subs, s.subs, memory_order_release);
    atomic_store_explicit(&seen_adds, s.adds, memory_order_release);
    pthread_mutex_unlock(&maps_lock);
}

void at_maps_reset(void)
{
    nknown[0] = nknown[1] = 0;
    nranges = 0;
    /* A new epoch: what threads found known was written to the old file. */
    atomic_fetch_add_explicit(&range_seq, 2, memory_order_acq_rel);
    atomic_store(&seen_adds, ~0ull);
    atomic_store(&seen_subs, ~0ull);
}

void at_maps_fork_prepare(void) { pthread_mutex_lock(&maps_lock); }
void at_maps_fork_parent(void) { pthread_mutex_unlock(&maps_lock); }

void at_maps_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    maps_lock = fresh;
    at_maps_reset();
}

/* What must run before an object may go (handoff.c's: leaks mode's
 * records still to be applied are, while their frames' objects are still
 * there to be named); handed down by the layer above. */
static void (*before_dlclose)(void);

void at_maps_before_dlclose(void (*fn)(void))
{
    before_dlclose = fn;
}

/* dlclose: after the real one, forget the ranges (see the top comment). */
__attribute__((visibility("default"))) int dlclose(void *handle)
{
    static int (*real_dlclose)(void *);
    if (!real_dlclose)
        real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    if (at_state == AT_STATE_ACTIVE && before_dlclose && !at_guard) {
        at_guard = 1;
        before_dlclose();
        at_guard = 0;
    }
    int rc = real_dlclose(handle);
    if (at_state == AT_STATE_ACTIVE) {
        int saved = at_guard;
        at_guard = 1;
        at_maps_invalidate();
        at_guard = saved;
    }
    return rc;
}
