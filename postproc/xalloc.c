/* postproc/xalloc.c: the allocation wrappers of xalloc.h. */
#include "xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdint.h>

#define HUGE_PAGE ((size_t)2 << 20)

void at_oom(void)
{
    fputs("alloctrace-postproc: out of memory\n", stderr);
    abort();
}

void *at_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        at_oom();
    return p;
}

void *at_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        at_oom();
    return p;
}

void *at_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        at_oom();
    return p;
}

void *at_xreallocarray(void *p, size_t n, size_t size)
{
    if (size && n > (size_t)-1 / size)
        at_oom();
    return at_xrealloc(p, n * size);
}

void *at_xgrow_to(void *p, size_t *n, size_t index, size_t size, size_t first)
{
    if (index < *n)
        return p;
    size_t want = *n ? *n : first;
    while (want <= index)
        want *= 2;
    p = at_xreallocarray(p, want, size);
    memset((char *)p + *n * size, 0, (want - *n) * size);
    *n = want;
    return p;
}

size_t at_xhuge_size(size_t bytes)
{
    if (bytes > SIZE_MAX - HUGE_PAGE)
        at_oom();
    return (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

/* A mapping one huge page longer than asked, its unaligned head and tail
 * given back: the kernel backs only aligned 2 MiB ranges with huge pages.
 * A fresh anonymous mapping is zeroed by the kernel, page by page, when
 * first touched. */
void *at_xhuge(size_t bytes)
{
    size_t size = at_xhuge_size(bytes ? bytes : 1);
    if (size > SIZE_MAX - HUGE_PAGE)
        at_oom();
    char *p = mmap(NULL, size + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED)
        at_oom();
    size_t head = (HUGE_PAGE - ((uintptr_t)p & (HUGE_PAGE - 1))) & (HUGE_PAGE - 1);
    if (head)
        munmap(p, head);
    if (HUGE_PAGE - head)
        munmap(p + head + size, HUGE_PAGE - head);
    madvise(p + head, size, MADV_HUGEPAGE); /* a hint: no harm when refused */
    return p + head;
}

void at_xhuge_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, at_xhuge_size(bytes ? bytes : 1));
}

char *at_xstrndup(const char *s, size_t n)
{
    char *d = at_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *at_xstrdup(const char *s) { return at_xstrndup(s, strlen(s)); }

char *at_xstrdup_or_null(const char *s) { return s ? at_xstrdup(s) : NULL; }

char *at_xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        at_oom();
    return s;
}
