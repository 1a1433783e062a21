/*
 * postproc/export/profile.h: the cost graph behind export.h, shared by the export
 * writers (callgrind.c, webgrind.c, folded.c) and built by profile.c. Not for
 * other stages: they see only export.h.
 *
 * Functions are numbered in order of first appearance (per path: the
 * allocation function, then the frames innermost first), edges in order of
 * first counting; writers rely on that order to be deterministic.
 */
#ifndef AT_PROFILE_H
#define AT_PROFILE_H

#include "export.h"

#define AT_PROFILE_NONE UINT32_MAX

/* Costs carried through the graph. kib sums every sample's bytes rounded
 * up to KiB, so that the KiB unit keeps the graph's sums exact. */
typedef struct at_pcost {
    uint64_t bytes, kib, blocks;
} at_pcost;

typedef struct at_pfunc {
    const char *name; /* unique in the profile, safe for every format */
    const char *file; /* safe for every format */
    uint32_t file_id; /* distinct files numbered 0, 1, ... by first function */
    unsigned line;    /* smallest known line of the function's frames, 0 if none */
    at_pcost self;
    uint32_t out_first, nout; /* its calls: p->out[out_first .. +nout), edge ids */
} at_pfunc;

typedef struct at_pedge {
    uint32_t caller, callee;
    unsigned line;    /* in the caller */
    at_pcost cost;
} at_pedge;

/* A distinct (stack, allocation function) pair and what it allocated. */
typedef struct at_ppath {
    const at_stack *stack;
    const char *alloc_fn;
    uint32_t leaf;        /* function of alloc_fn */
    const uint32_t *fids; /* function of each frame, innermost first */
    at_pcost cost;
    uint64_t samples;
} at_ppath;

struct at_profile {
    at_pfunc *funcs;
    uint32_t nfuncs;
    uint32_t nfiles;
    at_pedge *edges;
    uint32_t nedges;
    uint32_t *out;
    at_ppath *paths;
    size_t npaths;
    at_pcost total;
    uint64_t samples;
    void *pool; /* frame function ids of all distinct stacks */
};

/* callgrind.c, for webgrind.c: whether the bytes event must be in KiB
 * (webgrind's 32 bits), and the Callgrind text itself (malloc'ed). Both
 * return 0, or -1 with errno set. */
int at_callgrind_unit(const at_profile *p, const at_export_meta *m, bool *kib);
int at_callgrind_render(const at_profile *p, const at_export_meta *m, bool kib, char **text,
                        size_t *len);

#endif
