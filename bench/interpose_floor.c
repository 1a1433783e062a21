/*
 * bench/interpose_floor.c: the floor of any LD_PRELOAD allocation tracer,
 * for bench/realworld's `interpose` mode: the malloc family interposed
 * and forwarded, nothing else. Sampling (issue 24) is measured against
 * it: a call sampling does not pick should cost little more than this.
 *
 * Decisions:
 * - Forwarded to glibc's __libc_* entry points, not through dlsym (which
 *   allocates): one direct call through the PLT, the least an interposer
 *   can do.
 * - No tracer thread, no start-up: only the calls' own cost.
 * Not part of the product: built for `make bench` only.
 */
#include <stddef.h>

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);

#define EXPORT __attribute__((visibility("default")))

EXPORT void *malloc(size_t n) { return __libc_malloc(n); }
EXPORT void *calloc(size_t n, size_t m) { return __libc_calloc(n, m); }
EXPORT void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
EXPORT void free(void *p) { __libc_free(p); }
EXPORT void *memalign(size_t align, size_t n) { return __libc_memalign(align, n); }
