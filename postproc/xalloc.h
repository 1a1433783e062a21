/*
 * postproc/xalloc.h: allocation that never returns NULL. The
 * post-processor cannot do anything useful without memory, so running out
 * is reported in one line and the run aborts; no caller checks for NULL.
 */
#ifndef AT_XALLOC_H
#define AT_XALLOC_H

#include <stddef.h>

/* Prints "alloctrace-postproc: out of memory" and aborts. */
void at_oom(void) __attribute__((noreturn));

void *at_xmalloc(size_t n);
void *at_xcalloc(size_t n, size_t size);
void *at_xrealloc(void *p, size_t n);
/* realloc for n elements of `size` bytes, failing on overflow. */
void *at_xreallocarray(void *p, size_t n, size_t size);
/* An array of *n elements of `size` bytes, grown when needed so that
 * element `index` is in it: its length doubled (from `first` when empty)
 * until it is, the new elements zeroed, *n updated. For tables indexed by
 * an id that only grows (a stack's, a site's). */
void *at_xgrow_to(void *p, size_t *n, size_t index, size_t size, size_t first);
/* `bytes` of zeroed memory in a mapping of its own, aligned to 2 MiB and
 * asked for in huge pages (a hint the kernel may refuse), for the big
 * tables and arenas that only grow: with 4 KiB pages their first touch of
 * each page was a fault of its own, an eighth of the reading thread's
 * time on a compiler's trace. Freed with at_xhuge_free and the same size. */
void *at_xhuge(size_t bytes);
void at_xhuge_free(void *p, size_t bytes);
/* The size at_xhuge rounds `bytes` up to (whole huge pages). */
size_t at_xhuge_size(size_t bytes);
char *at_xstrdup(const char *s);
/* Exactly n bytes, NULs included, then a NUL: unlike strndup it does not
 * stop at a NUL (records keep fields with their length, and a field of a
 * malformed trace may hold one), so s must have n readable bytes. */
char *at_xstrndup(const char *s, size_t n);
/* at_xstrdup, or NULL for NULL. */
char *at_xstrdup_or_null(const char *s);
char *at_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
