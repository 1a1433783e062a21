/*
 * postproc/select.h: sp-rtrace-postproc's selection options: by context
 * (-C), resource type (-R), lists of record indices (--include,
 * --exclude) and a code address range (--call-address). Only calls are
 * selected; every other record passes. --leak-kinds keeps the leaked
 * blocks of some of memcheck's kinds (a block of no kind always stays). It runs after leak pairing.
 */
#ifndef AT_SELECT_H
#define AT_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"
#include "trace.h"

typedef struct at_select_opts {
    bool use_context;
    uint32_t context_mask;  /* keep calls with a context bit in the mask; 0: calls without context */
    bool use_resource;
    uint32_t resource_mask; /* keep calls whose resource bit is in the mask */
    const char *include_file;
    const char *exclude_file;
    bool use_address;
    char *address_module;   /* "" : absolute addresses */
    uint64_t address_start, address_size;
    bool use_kinds;
    unsigned kinds;         /* --leak-kinds: keep allocations of these leak kinds (leakkind.h) */
} at_select_opts;

void at_select_init(at_select_opts *o);
bool at_select_active(const at_select_opts *o);

/* MODULE:START+SIZE (numbers in C notation: 0x... or decimal). 0 or -1. */
int at_select_parse_address(at_select_opts *o, const char *spec);

/* Reads the index files; NULL after reporting an error through d. */
at_stage *at_select_new(at_stage *next, at_trace *t, const at_select_opts *o, at_diag *d);
void at_select_free(at_stage *s);

/* An index file: decimal indices and ranges A-B, separated by white space
 * or commas, '#' to the end of a line is a comment. Fills a sorted,
 * merged list of ranges; 0, or -1 after reporting FILE:LINE: reason. */
typedef struct at_index_set {
    uint64_t (*ranges)[2];
    size_t n;
} at_index_set;
int at_index_set_load(at_index_set *s, const char *path, at_diag *d);
int at_index_set_parse(at_index_set *s, const char *text, size_t len, const char *name,
                       at_diag *d);
bool at_index_set_has(const at_index_set *s, uint64_t index);
void at_index_set_free(at_index_set *s);

#endif
