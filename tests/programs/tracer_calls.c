/*
 * tests/programs/tracer_calls.c: one call of each traced function, each
 * from its own non-inlined function, so a test knows the exact records and
 * where frame 0 must fall. Prints "NAME ADDRESS" for every block and
 * "site NAME START" for the calling functions, for the test to compare.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SITE __attribute__((noinline, used))

static void *kept[16];

SITE static void *site_malloc(void) { return malloc(100); }
SITE static void *site_calloc(void) { return calloc(10, 20); }
SITE static void *site_realloc(void *p) { return realloc(p, 300); }
SITE static void *site_realloc_null(void) { return realloc(NULL, 50); }
SITE static void site_free(void *p) { free(p); }
SITE static void *site_posix_memalign(void)
{
    void *p = NULL;
    return posix_memalign(&p, 64, 128) == 0 ? p : NULL;
}
SITE static void *site_aligned_alloc(void) { return aligned_alloc(256, 512); }
SITE static void *site_memalign(void) { return memalign(32, 96); }
SITE static void *site_valloc(void) { return valloc(1000); }
SITE static void *site_pvalloc(void) { return pvalloc(100); }
SITE static void *site_reallocarray(void *p) { return reallocarray(p, 7, 9); }

static void site(const char *name, void *fn) { printf("site %s %p\n", name, fn); }

int main(void)
{
    site("malloc", (void *)site_malloc);
    site("calloc", (void *)site_calloc);
    site("realloc", (void *)site_realloc);
    site("posix_memalign", (void *)site_posix_memalign);
    site("aligned_alloc", (void *)site_aligned_alloc);
    site("memalign", (void *)site_memalign);
    site("valloc", (void *)site_valloc);
    site("pvalloc", (void *)site_pvalloc);
    site("reallocarray", (void *)site_reallocarray);
    fflush(stdout);

    void *m = site_malloc();
    void *c = site_calloc();
    void *r = site_realloc(m);             /* releases m, allocates r */
    void *rn = site_realloc_null();
    void *pm = site_posix_memalign();
    void *aa = site_aligned_alloc();
    void *ma = site_memalign();
    void *va = site_valloc();
    void *pv = site_pvalloc();
    void *ra = site_reallocarray(NULL);
    void *ra2 = site_reallocarray(rn);     /* 63 bytes: releases rn */
    site_free(NULL);                       /* not written */
    printf("malloc %p\ncalloc %p\nrealloc %p\nrealloc_null %p\nposix_memalign %p\n"
           "aligned_alloc %p\nmemalign %p\nvalloc %p\npvalloc %p\nreallocarray %p\n"
           "reallocarray2 %p\n", m, c, r, rn, pm, aa, ma, va, pv, ra, ra2);
    fflush(stdout);
    site_free(c);
    site_free(r);
    site_free(pm);
    site_free(aa);
    site_free(ma);
    site_free(va);
    site_free(pv);
    site_free(ra);
    site_free(ra2);
    (void)kept;
    return 0;
}
