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
/* `bytes` of zeroed memory in a mapping of its own, its pages made
 * present at once (MADV_POPULATE_WRITE: one call, where touching each
 * fresh page was a page fault of its own), for the big arenas and tables
 * that only grow: their first touches were 23,000 page faults, an eighth
 * of the reading thread's time, on a compiler's trace. Huge pages were
 * tried instead and left: the kernel's clearing of each 2 MiB page cost
 * from nothing to 160 ms a run on this VM. Kernels before 5.14 refuse the
 * advice: the pages then come on first touch, as with malloc. Freed with
 * at_xmap_free and the same size. */
void *at_xmap(size_t bytes);
/* The same mapping with no page made present: at_xmap_populate makes
 * [from, to) present when the caller is about to fill it. */
void *at_xmap_lazy(size_t bytes);
void at_xmap_populate(void *p, size_t from, size_t to);
void at_xmap_free(void *p, size_t bytes);
/* The size at_xmap rounds `bytes` up to (whole pages). */
size_t at_xmap_size(size_t bytes);
/* How much an arena grown in steps takes next after a step of `last`
 * bytes (0: none yet): 64 KiB, doubled up to 2 MiB, so that a small trace
 * (a test, a fuzz input) does not pay for megabytes made present. */
size_t at_xmap_step(size_t last);
/* A bump arena for copies kept to the end and freed all at once (the
 * interned stacks and their texts, the reader's frame lists): chunks from
 * at_xmap, 64 KiB doubled up to 2 MiB (at_xmap_step), or a bigger request
 * whole. All zero is an empty arena. */
typedef struct at_arena {
    struct at_arena_chunk *chunks; /* newest first */
} at_arena;
/* n bytes at an offset from their chunk's data that is a multiple of
 * `align` (a power of two; the data is aligned as max_align_t). */
void *at_arena_alloc(at_arena *a, size_t n, size_t align);
void at_arena_free(at_arena *a);
char *at_xstrdup(const char *s);
/* Exactly n bytes, NULs included, then a NUL: unlike strndup it does not
 * stop at a NUL (records keep fields with their length, and a field of a
 * malformed trace may hold one), so s must have n readable bytes. */
char *at_xstrndup(const char *s, size_t n);
/* at_xstrdup, or NULL for NULL. */
char *at_xstrdup_or_null(const char *s);
char *at_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
