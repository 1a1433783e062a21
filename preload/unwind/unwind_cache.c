/*
 * preload/unwind/unwind_cache.c: libunwind's per-thread trace caches, recycled.
 *
 * unw_backtrace's fast path keeps a cache per thread: on a thread's first
 * call libunwind maps 256 KiB, writes all of it (64 page faults, each
 * charged to the memory cgroup) and unmaps it at thread exit. Measured
 * under the tracer that start-up costs ~120 us per thread, ~70 backtraces'
 * worth of glibc's backtrace(); kernel page-fault and unmap work is ~85%
 * of it. unwind_probe.c points libunwind's mmap and munmap here: an
 * anonymous 256 KiB region it unmaps is kept (up to POOL of them) and given
 * back on its next request of that size, already faulted in. libunwind
 * initialises every entry of a new cache itself, so stale contents do not
 * matter; the only other 256 KiB regions it may ask for (decompressed
 * debug sections) are written whole too. Its read-only file mappings are
 * never kept: those of this size are noted when made, and if more are
 * alive at once than can be noted, keeping stops for good. A libunwind the
 * program loaded before the tracer may hold mappings made before they
 * could be noted, so then nothing is kept. No lock: each
 * pool slot is taken and filled with one atomic exchange, so fork and
 * signals find it whole.
 */
#include <sys/mman.h>

#include "tracer.h"

#define CACHE_BYTES (16384 * 16)   /* 2^HASH_MIN_BITS entries of 16 bytes */
#define POOL 8
#define FOREIGN 8

static void *pool[POOL];
static void *foreign[FOREIGN];   /* file mappings of CACHE_BYTES alive */
static int keep_off;

static int plain_anon(int prot, int flags, int fd)
{
    return prot == (PROT_READ | PROT_WRITE) && flags == (MAP_PRIVATE | MAP_ANONYMOUS) && fd == -1;
}

static void note_foreign(void *p)
{
    for (int i = 0; i < FOREIGN; i++) {
        void *expected = NULL;
        if (__atomic_compare_exchange_n(&foreign[i], &expected, p, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return;
    }
    __atomic_store_n(&keep_off, 1, __ATOMIC_RELEASE);
}

/* 1 when p was a noted file mapping (now forgotten). */
static int forget_foreign(void *p)
{
    for (int i = 0; i < FOREIGN; i++) {
        void *expected = p;
        if (__atomic_compare_exchange_n(&foreign[i], &expected, NULL, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return 1;
    }
    return 0;
}

void *at_unwind_mmap_probe(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (len == CACHE_BYTES && !addr && plain_anon(prot, flags, fd))
        for (int i = 0; i < POOL; i++) {
            void *p = __atomic_exchange_n(&pool[i], NULL, __ATOMIC_ACQ_REL);
            if (p)
                return p;
        }
    void *p = mmap(addr, len, prot, flags, fd, off);
    if (len == CACHE_BYTES && p != MAP_FAILED && !plain_anon(prot, flags, fd))
        note_foreign(p);
    return p;
}

int at_unwind_munmap_probe(void *addr, size_t len)
{
    if (len == CACHE_BYTES && !forget_foreign(addr) && !__atomic_load_n(&keep_off, __ATOMIC_ACQUIRE))
        for (int i = 0; i < POOL; i++) {
            void *expected = NULL;
            if (__atomic_compare_exchange_n(&pool[i], &expected, addr, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                return 0;
        }
    return munmap(addr, len);
}

void at_unwind_cache_init(int libunwind_was_loaded)
{
    keep_off = libunwind_was_loaded;
}
