/* postproc/xalloc.c: the allocation wrappers of xalloc.h. */
#include "xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

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

size_t at_xmap_size(size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!bytes)
        bytes = 1;
    if (bytes > SIZE_MAX - page)
        at_oom();
    return (bytes + page - 1) & ~(page - 1);
}

size_t at_xmap_step(size_t last)
{
    size_t first = (size_t)64 << 10, most = (size_t)2 << 20;
    return last < first ? first : last >= most / 2 ? most : 2 * last;
}

struct at_arena_chunk {
    struct at_arena_chunk *next;
    size_t used, size;
    max_align_t data[];
};

void *at_arena_alloc(at_arena *a, size_t n, size_t align)
{
    struct at_arena_chunk *c = a->chunks;
    size_t at = c ? (c->used + align - 1) & ~(align - 1) : 0;
    if (!c || at > c->size || c->size - at < n) {
        size_t step = at_xmap_step(c ? sizeof *c + c->size : 0), need = sizeof *c + n;
        size_t bytes = at_xmap_size(need > step ? need : step);
        c = at_xmap(bytes);
        c->size = bytes - sizeof *c;
        c->next = a->chunks;
        a->chunks = c;
        at = 0;
    }
    c->used = at + n;
    return (char *)c->data + at;
}

void at_arena_free(at_arena *a)
{
    for (struct at_arena_chunk *c = a->chunks, *next; c; c = next) {
        next = c->next;
        at_xmap_free(c, sizeof *c + c->size);
    }
    a->chunks = NULL;
}

void *at_xmap_lazy(size_t bytes)
{
    void *p = mmap(NULL, at_xmap_size(bytes), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        at_oom();
    return p;
}

void at_xmap_populate(void *p, size_t from, size_t to)
{
#ifdef MADV_POPULATE_WRITE
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    from &= ~(page - 1);
    if (to > from) /* a hint: when refused, the pages come on first touch */
        madvise((char *)p + from, to - from, MADV_POPULATE_WRITE);
#else
    (void)p, (void)from, (void)to;
#endif
}

void *at_xmap(size_t bytes)
{
    void *p = at_xmap_lazy(bytes);
    at_xmap_populate(p, 0, at_xmap_size(bytes));
    return p;
}

void at_xmap_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, at_xmap_size(bytes));
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
