/*
 * tests/programs/sample_layouts.c: every allocation function, its block
 * checked the way a program relies on it, for the tracer's sampling: a
 * picked block carries a header (preload/hook/tag.c) that the program
 * must never see.
 *
 *   all  each function once or more, sizes of 64 bytes and up (picked at
 *        --sample 1), and the failures it must still report; prints
 *        "ok N tagged", N the blocks allocated ("untagged" when the
 *        first block has no header of the tracer's below it)
 *   mix  400,000 random calls over 1,000 slots, each block filled with its
 *        slot's byte and checked before every realloc and free; prints "ok"
 *
 * Each block is filled to its malloc_usable_size: a wrong size there
 * overwrites glibc's next chunk, which glibc's free then reports.
 * Exits 1 with one line on the first check that fails.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned blocks;

/* glibc's old alias of free, as a binary linked long ago calls it. */
__asm__(".symver cfree_old, cfree@GLIBC_2.2.5");
extern void cfree_old(void *p);

static void fail(const char *what, size_t n)
{
    fprintf(stderr, "sample_layouts: %s (%zu)\n", what, n);
    exit(1);
}

/* Fills the whole usable block with c: it must hold n bytes. */
static void *fill(void *p, size_t n, int c)
{
    if (!p)
        fail("allocation failed", n);
    size_t u = malloc_usable_size(p);
    if (u < n)
        fail("usable size below the size asked for", n);
    memset(p, c, u);
    blocks++;
    return p;
}

static void expect(const void *p, size_t n, int c)
{
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != (unsigned char)c)
            fail("contents changed", i);
}

static void aligned(const void *p, size_t align)
{
    if ((uintptr_t)p % align)
        fail("not aligned", align);
}

static void all(void)
{
    long page = sysconf(_SC_PAGESIZE);
    char *m = fill(malloc(100), 100, 'm');
    /* Over glibc a picked block carries the tracer's header: the word
     * below it has the top bit set, where glibc keeps the chunk's size. */
    int tagged = (int64_t)((const uint64_t *)m)[-1] < 0;
    char *c = calloc(10, 30);
    expect(c, 300, 0);
    fill(c, 300, 'c');
    m = realloc(m, 5000);   /* grow: the 100 bytes follow */
    expect(m, 100, 'm');
    fill(m, 5000, 'M');
    m = realloc(m, 80);     /* shrink */
    expect(m, 80, 'M');
    fill(m, 80, 'n');
    char *r = reallocarray(NULL, 8, 16);
    fill(r, 128, 'r');
    r = reallocarray(r, 100, 16);
    expect(r, 128, 'r');
    fill(r, 1600, 'R');
    void *pm = NULL, *pg = NULL;
    if (posix_memalign(&pm, 64, 200))
        fail("posix_memalign 64", 200);
    aligned(fill(pm, 200, 'p'), 64);
    if (posix_memalign(&pg, (size_t)page, 100))
        fail("posix_memalign page", 100);
    aligned(fill(pg, 100, 'P'), (size_t)page);
    char *a = aligned_alloc(256, 512);
    aligned(fill(a, 512, 'a'), 256);
    char *g = memalign(128, 300);
    aligned(fill(g, 300, 'g'), 128);
    char *v = valloc(100);
    aligned(fill(v, 100, 'v'), (size_t)page);
    char *pv = pvalloc(5000);
    aligned(fill(pv, 5000, 'V'), (size_t)page);
    if (malloc_usable_size(pv) < 2 * (size_t)page)
        fail("pvalloc below whole pages", 5000);
    char *z = fill(malloc(200), 200, 'z');
    if (realloc(z, 0) != NULL)   /* glibc: a free, and NULL */
        fail("realloc to 0 returned a block", 0);

    /* The failures a program sees, unchanged. */
    void *bad = NULL;
    if (posix_memalign(&bad, 3, 100) != EINVAL)
        fail("posix_memalign of alignment 3 did not say EINVAL", 3);
    volatile size_t huge = SIZE_MAX / 2;   /* volatile: the compiler would refuse it */
    errno = 0;
    if (calloc(huge, 4) || errno != ENOMEM)
        fail("calloc overflowing did not fail with ENOMEM", 0);
    errno = 0;
    if (realloc(r, huge * 2 - 8) || errno != ENOMEM)
        fail("realloc too large did not fail with ENOMEM", 0);
    expect(r, 1600, 'R');   /* still the program's */

    expect(c, 300, 'c');
    expect(m, 80, 'n');
    free(m);
    free(c);
    free(r);
    free(pm);
    free(pg);
    free(a);
    free(g);
    free(v);
    free(pv);
    free(NULL);
    cfree_old(fill(malloc(64), 64, 'o'));
    printf("ok %u %s\n", blocks, tagged ? "tagged" : "untagged");
}

#define SLOTS 1000

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void mix(void)
{
    static char *slot[SLOTS];
    static size_t size[SLOTS];
    for (int i = 0; i < 400000; i++) {
        unsigned k = (unsigned)(next() % SLOTS);
        size_t n = 1 + next() % 4096;
        int byte = (int)(k & 0xff);
        if (slot[k])
            expect(slot[k], size[k], byte);
        switch (next() % 6) {
        case 0:
            free(slot[k]);
            slot[k] = fill(malloc(n), n, byte);
            break;
        case 1:
            free(slot[k]);
            slot[k] = fill(calloc(1, n), n, byte);
            break;
        case 2: {
            void *p = NULL;
            free(slot[k]);
            if (posix_memalign(&p, (size_t)16 << (next() % 6), n))
                fail("posix_memalign", n);
            slot[k] = fill(p, n, byte);
            break;
        }
        default: {   /* realloc, the commonest: grows and shrinks */
            char *q = realloc(slot[k], n);
            if (!q)
                fail("realloc", n);
            if (slot[k])
                expect(q, n < size[k] ? n : size[k], byte);
            slot[k] = fill(q, n, byte);
            break;
        }
        }
        size[k] = n;
    }
    for (int k = 0; k < SLOTS; k++) {
        if (slot[k])
            expect(slot[k], size[k], k & 0xff);
        free(slot[k]);
    }
    printf("ok\n");
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "all") == 0)
        all();
    else if (argc == 2 && strcmp(argv[1], "mix") == 0)
        mix();
    else
        fail("usage: sample_layouts all|mix", 0);
    return 0;
}
