/*
 * preload/write/zframe.c: the trace's bytes as independent zstd frames.
 *
 * Decisions:
 * - One frame per write (a chunk of whole records, at most 1 MiB of
 *   text). Frames are independent, so a file cut by a crash or a full
 *   disk decodes up to its last whole frame, and the post-processor,
 *   which reads concatenated frames as one stream (postproc/read/input.c),
 *   needs nothing new.
 * - zstd level -2 (ZSTD_fast with acceleration 2: after a miss the match
 *   finder steps on faster, and literals are stored without Huffman).
 *   Compressing is most of the writer thread's CPU, ~1 ns a byte of call
 *   lines, and on a machine without a spare core that CPU is the
 *   program's. Against level 1 it costs 17-37% less per event (45-65 ns
 *   instead of 56-83 on bench/tracer's `one`, perl and cc1plus), for
 *   8-11 bytes an event instead of 6-8: still 13-16x smaller than the
 *   plain text of before the compressed form (issue 13 asks 10x).
 *   Measured and left: a smaller hash table or window (a few %), level
 *   -3 (no faster on `one`, 10% more bytes), higher levels (several
 *   times the CPU for a few %). docs/benchmarks.md has the numbers.
 * - libzstd never allocates through the program's malloc (which is our
 *   hook): the context is created with a custom allocator on mmap, so it
 *   can neither recurse into the tracer nor take the real allocator's
 *   locks from a signal handler. After its first use the context keeps
 *   its workspace, and compressing is then async-signal-safe.
 * - The caller (outfd.c) serialises calls with its lock, which is
 *   recursive: a signal handler on a thread that is compressing would
 *   enter again. `busy` catches that, and such a call, or any call when
 *   the context could not be made, writes a raw frame instead: the
 *   bytes stored as they are, framed by hand (a few lines, after RFC
 *   8878), which every zstd decoder reads.
 * - A sampled trace makes its context at its second write, not at start:
 *   its first write is the start's header and maps (1-10 KiB), and most
 *   short processes never pick a block at 512k, so that is all they
 *   write. The context's first use costs libzstd's CPU check (three
 *   CPUID instructions, each a VM exit of ~26 us on a virtual machine)
 *   and its workspace's page faults: ~0.1 ms, paid by every process of a
 *   `make` or `cmake` run. So the start is written raw.
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#define ZSTD_STATIC_LINKING_ONLY   /* ZSTD_createCCtx_advanced, ZSTD_customMem */
#include <zstd.h>

#include "tracer.h"

#define LEVEL (-2)
#define RAW_BLOCK (128u << 10)     /* zstd's largest block */

static ZSTD_CCtx *cctx;
static atomic_int busy;
static int deferred;   /* the context waits for the second write (sampling) */
static unsigned writes;

/* mmap'd memory with its length in front (16 bytes, keeping alignment). */
static void *map_alloc(void *opaque, size_t n)
{
    (void)opaque;
    size_t total = n + 16;
    void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    *(size_t *)m = total;
    return (char *)m + 16;
}

static void map_free(void *opaque, void *p)
{
    (void)opaque;
    if (!p)
        return;
    char *m = (char *)p - 16;
    munmap(m, *(size_t *)m);
}

int at_zframe_init(void)
{
    if (cctx)
        return 0;
    ZSTD_customMem mem = { map_alloc, map_free, NULL };
    cctx = ZSTD_createCCtx_advanced(mem);
    if (!cctx)
        return -1;
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, LEVEL);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);
    return 0;
}

void at_zframe_defer(void)
{
    deferred = 1;
}

size_t at_zframe_bound(size_t n)
{
    size_t z = ZSTD_compressBound(n), raw = n + (n / RAW_BLOCK + 1) * 3 + 16;
    return z > raw ? z : raw;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* A frame of raw blocks: magic, a single-segment header with a 4-byte
 * content size, then blocks of at most 128 KiB, the last one flagged. */
size_t at_zframe_raw(void *dst, const void *src, size_t n)
{
    unsigned char *o = dst;
    const unsigned char *s = src;
    put_le(o, 0xFD2FB528u, 4);
    o[4] = 0xA0;   /* content size in 4 bytes, single segment, no checksum */
    put_le(o + 5, n, 4);
    o += 9;
    size_t done = 0;
    do {
        size_t b = n - done < RAW_BLOCK ? n - done : RAW_BLOCK;
        int last = done + b == n;
        put_le(o, (uint64_t)b << 3 | (unsigned)last, 3);   /* type 0: raw */
        memcpy(o + 3, s + done, b);
        o += 3 + b;
        done += b;
    } while (done < n);
    return (size_t)(o - (unsigned char *)dst);
}

size_t at_zframe_encode(void *dst, size_t cap, const void *src, size_t n)
{
    if (!atomic_exchange(&busy, 1)) {
        if (deferred && writes++ > 0) {
            deferred = 0;
            at_zframe_init();
        }
        size_t z = cctx ? ZSTD_compress2(cctx, dst, cap, src, n) : 0;
        atomic_store(&busy, 0);
        if (cctx && !ZSTD_isError(z))
            return z;
    }
    return at_zframe_raw(dst, src, n);
}

/* A forked child: the parent may have been compressing in another
 * thread (outfd.c's lock was held across fork, so not in this one); a
 * context still deferred waits for the second write of the child's own
 * file. */
void at_zframe_fork_child(void)
{
    atomic_store(&busy, 0);
    writes = 0;   /* the child's file starts with its own header */
}
