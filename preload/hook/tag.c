/*
 * preload/hook/tag.c: picked blocks that say so themselves.
 *
 * With sampling on, every free() must tell a picked block (its release is
 * recorded) from the others (nearly all). A table of the tracer's, even a
 * bitmap (sample.c), costs a load from one of its own cache lines on every
 * free, and a dozen instructions: on perl, which calls the allocator every
 * 56 ns of its own work, that was 1.3% of the run, a third of sampling's
 * whole cost. Here a picked block carries a header instead, and free()
 * reads the word just below the block: the word glibc's free reads next
 * anyway (the chunk's size), so no line the program would not touch.
 *
 * Decisions:
 * - The mark: glibc's word below every block it returns is the chunk's
 *   size with three flag bits, which never has the top bit set. A picked
 *   block is allocated H bytes larger and handed out H bytes in; the word
 *   below it holds H with the top bit set (AT_TAG_BIT), and the word
 *   below that a constant, checked on the slow path. So "top bit clear"
 *   is exact: not picked, with no false match, whatever the program keeps
 *   in its blocks. The bootstrap arena's blocks (hooks.c) set the bit too,
 *   so that free() sends them to the slow path, which knows them.
 * - Only over glibc's own allocator (at_real's malloc and free in libc):
 *   another allocator below us (jemalloc preloaded after the tracer, a
 *   second tracer, valgrind's red zones) need not keep a readable word
 *   below a block. Then, and in the attach build (after a detach glibc's
 *   free would get the blocks back with their headers), sample.c's bitmap
 *   does the job as before.
 * - H is 16, or the alignment asked for when larger (a page for valloc and
 *   pvalloc), so the block the program sees keeps its alignment. The
 *   header costs 16 bytes (an alignment, rarely) a picked block: one in
 *   512 KiB of allocation by default.
 * - malloc_usable_size is interposed (hooks.c): a picked block's usable
 *   size is glibc's less H, as the program must see it.
 * - realloc keeps a picked block in place when it stays picked (H = 16:
 *   glibc's realloc moves the header with the data); a change of layout
 *   (picked to not, not to picked, an aligned block) allocates the new
 *   block and copies, as glibc's realloc does when it cannot grow in place.
 */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer.h"

/* The word below a picked block's own: a constant, checked on the slow
 * path (a top bit set there and no tag is a block of the arena's). */
#define TAG_WORD 0x5a17c0de0a110c8dull
/* Alignments above this are not given a header: the block goes out as
 * glibc returned it (picked, so its release goes unrecorded: a bias of
 * one block, not a crash). */
#define TAG_MAX_ALIGN ((size_t)1 << 20)

static uint64_t *below(const void *p) { return (uint64_t *)p - 1; }

static size_t header_of(const void *p) { return (size_t)(*below(p) & ~AT_TAG_BIT); }

static void *mark(void *base, size_t h)
{
    char *p = (char *)base + h;
    below(p)[0] = AT_TAG_BIT | h;
    below(p)[-1] = TAG_WORD;
    return p;
}

#ifndef AT_ATTACH_BUILD
/* _dl_find_object, not dladdr: dladdr searches the object's symbols for
 * the nearest one, 7 us a call, and this runs at every start. */
static int in_libc(void *fn)
{
    struct dl_find_object fo;
    const char *name;
    if (!fn || _dl_find_object(fn, &fo) != 0 || !fo.dlfo_link_map || !fo.dlfo_link_map->l_name)
        return 0;
    name = strrchr(fo.dlfo_link_map->l_name, '/');
    name = name ? name + 1 : fo.dlfo_link_map->l_name;
    return strncmp(name, "libc.so", 7) == 0;
}
#endif

int at_tag_possible(void)
{
#ifdef AT_ATTACH_BUILD
    return 0;
#else
    /* Under valgrind, libc's malloc is valgrind's, whose blocks sit between
     * red zones: reading the word below one is an error it reports. */
    const char *pre = getenv("LD_PRELOAD");
    if (pre && strstr(pre, "vgpreload"))
        return 0;
    return in_libc((void *)at_real.malloc) && in_libc((void *)at_real.free) &&
           in_libc((void *)at_real.realloc) && in_libc((void *)at_real.memalign) &&
           at_real.usable_size;
#endif
}

int at_tag_is_picked(const void *p)
{
    return at_tagged(p) && below(p)[-1] == TAG_WORD;
}

void *at_tag_malloc(size_t n)
{
    if (n > SIZE_MAX - 16) {
        errno = ENOMEM;
        return NULL;
    }
    void *base = at_real.malloc(n + 16);
    return base ? mark(base, 16) : NULL;
}

void *at_tag_calloc(size_t n, size_t m)
{
    size_t total;
    if (__builtin_mul_overflow(n, m, &total) || total > SIZE_MAX - 16)
        return at_real.calloc(n, m);   /* fails as glibc's does */
    void *base = at_real.calloc(1, total + 16);
    return base ? mark(base, 16) : NULL;
}

/* The header for an alignment: 16, or the alignment rounded up to a power
 * of two (what glibc's memalign gives); 0 when too large to pay for. */
static size_t header_for(size_t align)
{
    size_t h = 16;
    while (h < align && h < TAG_MAX_ALIGN)
        h <<= 1;
    return h < align ? 0 : h;
}

void *at_tag_aligned(void *(*fn)(size_t, size_t), size_t align, size_t n)
{
    size_t h = header_for(align);
    if (!h || n > SIZE_MAX - h)
        return fn(align, n);
    void *base = fn(align, n + h);
    return base ? mark(base, h) : NULL;
}

int at_tag_posix_memalign(void **out, size_t align, size_t n)
{
    size_t h = header_for(align);
    if (!h || n > SIZE_MAX - h)
        return at_real.posix_memalign(out, align, n);
    void *base;
    int rc = at_real.posix_memalign(&base, align, n + h);
    if (rc == 0)
        *out = mark(base, h);
    return rc;
}

void *at_tag_page_aligned(size_t n, int whole_pages)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (whole_pages) {   /* pvalloc: n rounded up to pages, zero to one */
        if (n > SIZE_MAX - page) {
            errno = ENOMEM;
            return NULL;
        }
        n = n ? (n + page - 1) & ~(page - 1) : page;
    }
    return at_tag_aligned(at_real.memalign, page, n);
}

void at_tag_free(void *p)
{
    at_real.free((char *)p - header_of(p));
}

size_t at_tag_usable(void *p)
{
    size_t h = header_of(p);
    return at_real.usable_size((char *)p - h) - h;
}

/* realloc of a block whose layout may change: p is picked (tagged) or
 * not, and the new block is to be picked (tag_new) or not. p != NULL. */
void *at_tag_resize(void *p, size_t total, int tag_new)
{
    int old_tag = at_tag_is_picked(p);
    if (!old_tag && !tag_new)
        return at_real.realloc(p, total);
    if (old_tag && tag_new && header_of(p) == 16) {
        if (total > SIZE_MAX - 16) {
            errno = ENOMEM;
            return NULL;
        }
        char *base = at_real.realloc((char *)p - 16, total + 16);
        return base ? base + 16 : NULL;   /* the header moved with the data */
    }
    if (total == 0 && !tag_new) {   /* glibc's realloc(p, 0): a free */
        at_tag_free(p);
        return NULL;
    }
    void *q = tag_new ? at_tag_malloc(total) : at_real.malloc(total);
    if (!q)
        return NULL;   /* p is still the caller's */
    size_t old = old_tag ? at_tag_usable(p) : at_real.usable_size(p);
    memcpy(q, p, old < total ? old : total);
    if (old_tag)
        at_tag_free(p);
    else
        at_real.free(p);
    return q;
}
