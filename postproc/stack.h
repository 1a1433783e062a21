/*
 * postproc/stack.h: interned backtraces. Every distinct frame list is
 * stored once and referred to by pointer, so leaks pairing, compression,
 * resolving and filtering all work per distinct stack (a million calls over
 * a few thousand stacks cost a few thousand of each), and two calls have
 * the same backtrace exactly when their stack pointers are equal.
 */
#ifndef AT_STACK_H
#define AT_STACK_H

#include <stddef.h>
#include <stdint.h>

/* One frame line: "\t0xADDR" and the optional text after it, kept verbatim
 * (NULL when the frame is unresolved). An inlined call is a frame of its
 * own with the same address. */
typedef struct at_frame {
    uint64_t addr;
    const char *text; /* owned by the stack table */
} at_frame;

typedef struct at_stack {
    uint32_t id;      /* dense: 0, 1, 2, ... in order of first interning */
    uint32_t nframes;
    uint64_t hash;
    at_frame frames[]; /* innermost first, as the format writes them */
} at_stack;

typedef struct at_stack_table at_stack_table;

at_stack_table *at_stacks_new(void);
void at_stacks_free(at_stack_table *t);

/* The interned stack equal to frames[0..n): texts are compared too, and
 * copied on first interning. Never NULL (aborts on out-of-memory). */
const at_stack *at_stacks_intern(at_stack_table *t, const at_frame *frames, uint32_t n);

/* A frame text's part of a stack's hash (NULL too), for a caller that
 * interns the same texts many times and keeps it beside them. */
uint64_t at_stacks_text_hash(const char *text);

/* at_stacks_intern for frames whose texts are all the table's own copies
 * (at_stacks_text) or NULL, with text_hashes[i] the at_stacks_text_hash of
 * frames[i].text: the texts are not read at all, only their addresses
 * (the resolver's stacks: 40-120 frames of texts it took from the table
 * once per address). The same stack as at_stacks_intern gives. */
const at_stack *at_stacks_intern_kept(at_stack_table *t, const at_frame *frames,
                                      const uint64_t *text_hashes, uint32_t n);

/* Number of distinct stacks, and the stack with a given id. */
uint32_t at_stacks_count(const at_stack_table *t);
const at_stack *at_stacks_get(const at_stack_table *t, uint32_t id);

/* A string copied into the table's storage, freed with the table. */
const char *at_stacks_strdup(at_stack_table *t, const char *s, size_t len);
/* The table's one copy of a frame text (NULL for NULL), kept as long as
 * the table: stacks interned with the copies' addresses are interned
 * without their texts read again (the resolver hands them). */
const char *at_stacks_text(at_stack_table *t, const char *text);

#endif
