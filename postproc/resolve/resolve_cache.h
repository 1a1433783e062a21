/*
 * postproc/resolve/resolve_cache.h: the resolver's memo tables, a map from a pair
 * of 64-bit keys (map and address; stack pointer) to a pointer.
 */
#ifndef AT_RESOLVE_CACHE_H
#define AT_RESOLVE_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct at_rcache at_rcache;

at_rcache *at_rcache_new(void);
/* Frees the table, calling free_value (if not NULL) on every value. */
void at_rcache_free(at_rcache *c, void (*free_value)(void *));
/* Empties the table, calling free_value (if not NULL) on every value. */
void at_rcache_clear(at_rcache *c, void (*free_value)(void *));

/* The value stored for (a, b), or NULL. */
void *at_rcache_get(const at_rcache *c, uint64_t a, uint64_t b);
/* Stores v (not NULL) for (a, b), replacing any earlier value (not freed). */
void at_rcache_put(at_rcache *c, uint64_t a, uint64_t b, void *v);

size_t at_rcache_count(const at_rcache *c);

#endif
