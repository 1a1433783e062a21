/*
 * postproc/analyze/live_table.h: the analysis' live blocks by id, a hash
 * table that doubles in place (live_table.c says how and why).
 */
#ifndef AT_LIVE_TABLE_H
#define AT_LIVE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A live block in 16 bytes: its id (the key) and a word the caller packs
 * its size and site into; a word of 0 marks an empty slot, so the caller's
 * word for a block is never 0. */
typedef struct at_live_slot {
    uint64_t id;
    uint64_t packed;
} at_live_slot;

typedef struct at_live_table {
    at_live_slot *slots; /* cap slots, cap a power of two (0: none yet) */
    size_t cap, n;
    bool mapped;         /* slots is an mmap of its own (grown by mremap) */
} at_live_table;

/* An empty table (all zero is one too). */
void at_live_init(at_live_table *t);
void at_live_free(at_live_table *t);

/* The slot of `id`, or NULL when it is not live. */
at_live_slot *at_live_find(const at_live_table *t, uint64_t id);

/* Adds a block whose id is not in the table; packed != 0. The table grows
 * first when it would be more than 3/4 full: slots found before move. */
at_live_slot *at_live_insert(at_live_table *t, uint64_t id, uint64_t packed);

/* Removes the block of a slot at_live_find returned. */
void at_live_remove(at_live_table *t, at_live_slot *s);

/* Starts loading the lines a lookup of `id` will read. */
void at_live_prefetch(const at_live_table *t, uint64_t id);

#endif
