/*
 * postproc/filter/filter_impl.h: the parsed form of a filter, shared by the
 * parser (filter_parse.c), the matcher (filter_match.c) and the printer
 * (filter_print.c). Nothing outside those files reads it.
 */
#ifndef AT_FILTER_IMPL_H
#define AT_FILTER_IMPL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "filter.h"

typedef enum at_fkind { AT_FK_CALLSTACK, AT_FK_STRING, AT_FK_FUNCTIONS, AT_FK_MODULES } at_fkind;

typedef enum at_elem_type { AT_EL_WILD, AT_EL_LITERAL, AT_EL_REGEX } at_elem_type;

/* A line spec: lines lo..hi inclusive; UINT32_MAX for hi means no upper end. */
#define AT_LINE_ANY_HI UINT32_MAX

typedef struct at_felem {
    at_elem_type type;
    char *text;            /* literal, or the regex's source */
    size_t len;            /* of text */
    pcre2_code *re;        /* AT_EL_REGEX */
    bool jit;              /* re was JIT-compiled: match on the fast path */
    bool dir;              /* literal ending in '/': a run of whole directories */
    uint32_t limit_hits;   /* regex: tests that hit a PCRE2 limit (filter_match.c) */
    uint8_t *memo;         /* 2 bits per distinct frame id: 0 unknown, 1 no, 2 yes */
    size_t memo_cap;       /* frame ids the memo holds */
    uint32_t line_lo;      /* callstack: line spec, 0..AT_LINE_ANY_HI when none */
    uint32_t line_hi;
} at_felem;

typedef enum at_size_op { AT_SZ_EQ, AT_SZ_LT, AT_SZ_LE, AT_SZ_GT, AT_SZ_GE, AT_SZ_IN } at_size_op;

/* Bounds of "size in [LO, HI]": lo 0 and hi UINT64_MAX stand for '_'. */
typedef struct at_fsub {
    bool is_size;
    /* list sub-filter */
    at_fkind kind;
    bool negate;           /* excludes */
    at_felem *elems;
    size_t nelems;
    /* size sub-filter */
    at_size_op op;
    uint64_t n;            /* OP N */
    uint64_t lo, hi;       /* in [LO, HI]; open ends as above */
    bool lo_open, hi_open;
} at_fsub;

typedef struct at_filter {
    char *label;
    char *name;            /* NULL when unnamed */
    at_fsub *subs;
    size_t nsubs;
    bool has_list;         /* any list sub-filter */
    bool has_size;
    /* list-part cache by stack id: 0 unknown, 1 no, 2 yes */
    uint8_t *cache;
    size_t cache_cap;
} at_filter;

struct at_filter_set {
    at_filter *filters;
    size_t count, cap;
    pcre2_match_data *md;  /* shared by every regex of the set (one match at a time) */
    /* PCRE2's limits: the normal ones, and the tight ones of a regex that
     * hit them too often (filter_match.c). */
    pcre2_match_context *mctx, *mctx_tight;
    const at_filter *matching; /* the filter being tested, for reports */
    at_filter_undecided undecided;
    /* Per stack id: the filters whose list part matches, as a run of
     * `pool` (start, length); start UINT32_MAX when not computed yet. */
    uint32_t *st_start, *st_len;
    size_t st_cap;
    uint32_t *pool;
    size_t pool_len, pool_cap;
    at_frame_info *scratch; /* frames read by at_filter_set_first_match_stack */
    uint32_t *scratch_ids;  /* and their distinct frame ids */
    size_t scratch_cap;
    /* Distinct frames (address, text, covering map) seen by
     * at_filter_set_first_match_stack, read once each (filter_frames.c);
     * elements remember their answer per frame id. */
    struct at_fframe *fr;
    size_t nfr, frcap;
    uint32_t *fr_slots;     /* open addressing over fr, UINT32_MAX: empty */
    size_t fr_nslots;
};

typedef struct at_fframe {
    uint64_t addr;
    uint64_t hash;
    const char *text;       /* the stack table's copy; NULL when unresolved */
    uint32_t map_seq;       /* seq + 1 of the map covering addr, 0 when none */
    at_frame_info info;
} at_fframe;

/* The id of a frame in the set's table of distinct frames, reading it
 * (into `arena`) the first time. */
uint32_t at_filter_frame_id(at_filter_set *s, const at_frame *frame, const at_maps *maps,
                            at_stack_table *arena);
void at_filter_frames_free(at_filter_set *s);

/* Frees what one filter owns (its subs, regexes, cache). */
void at_filter_destroy(at_filter *f);

/* Whether the list sub-filter (ignoring `negate`) matches frames[0..n)
 * (innermost first). ids: their distinct frame ids, to answer each
 * (element, frame) once per run; NULL to test every time. */
bool at_fsub_list_matches(at_filter_set *s, const at_fsub *sub, const at_frame_info *frames,
                          const uint32_t *ids, size_t n);

/* Whether the size sub-filter holds. */
bool at_fsub_size_holds(const at_fsub *sub, uint64_t size);


#endif
