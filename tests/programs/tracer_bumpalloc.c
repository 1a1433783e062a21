/*
 * tests/programs/tracer_bumpalloc.c: libtracer_bumpalloc.so, an allocator
 * linked into a test program the way jemalloc or tcmalloc would be, so the
 * tracer's hooks pass calls on to it instead of glibc. It hands out memory
 * in 8-byte steps from a static heap and never reuses it: blocks 8 bytes
 * apart, not 16-byte aligned, two in the same 32 bytes - what glibc never
 * does. bump_align() lets the program place its next block exactly.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

static _Alignas(64) char heap[32 << 20];
static size_t used;

void bump_align(size_t a)
{
    __atomic_store_n(&used, (__atomic_load_n(&used, __ATOMIC_RELAXED) + a - 1) & ~(a - 1),
                     __ATOMIC_RELAXED);
}

static void *bump(size_t n, size_t align)
{
    size_t need = n ? (n + 7) & ~(size_t)7 : 8;
    for (;;) {
        size_t at = __atomic_load_n(&used, __ATOMIC_RELAXED);
        size_t start = (at + align - 1) & ~(align - 1);
        if (need > sizeof heap || start > sizeof heap - need) {
            errno = ENOMEM;
            return NULL;
        }
        if (__atomic_compare_exchange_n(&used, &at, start + need, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return heap + start;
    }
}

void *malloc(size_t n) { return bump(n, 8); }
void free(void *p) { (void)p; }
void *aligned_alloc(size_t a, size_t n) { return bump(n, a < 8 ? 8 : a); }
void *memalign(size_t a, size_t n) { return bump(n, a < 8 ? 8 : a); }
void *valloc(size_t n) { return bump(n, 4096); }
void *pvalloc(size_t n) { return bump((n + 4095) & ~(size_t)4095, 4096); }

void *calloc(size_t n, size_t m)
{
    if (m && n > SIZE_MAX / m) {
        errno = ENOMEM;
        return NULL;
    }
    return bump(n * m, 8);   /* never reused: already zero */
}

/* The old size is not kept: copy n bytes, as far as the heap goes. */
void *realloc(void *p, size_t n)
{
    char *q = bump(n, 8);
    if (q && p) {
        size_t left = (size_t)(heap + sizeof heap - (char *)p);
        memmove(q, p, n < left ? n : left);
    }
    return q;
}

void *reallocarray(void *p, size_t n, size_t m)
{
    if (m && n > SIZE_MAX / m) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n * m);
}

int posix_memalign(void **out, size_t a, size_t n)
{
    void *p = bump(n, a < 8 ? 8 : a);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}
