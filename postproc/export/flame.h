/*
 * postproc/export/flame.h: the frames of flame graphs, shared by the folded
 * stacks, the SVG flame graph and the HTML report (profile.h's paths in,
 * a tree of frames out).
 *
 * A flame graph shows a stack outermost first, one frame per function
 * call. Two rules make it read like heaptrack's and flamegraph.pl's:
 *   - an inlined function that the resolver named after its caller at the
 *     same address (libc's _IO_doallocbuf inlined into itself) is one
 *     frame, not two: the repetition says nothing about the program;
 *   - with short names, C++ template arguments are cut to "<>"
 *     (std::vector<>::push_back(int const&)), as heaptrack's
 *     --shorten-templates does; operator<, operator<< and the like keep
 *     their characters.
 */
#ifndef AT_FLAME_H
#define AT_FLAME_H

#include "profile.h"

/* The most costs a frame carries (the HTML report switches among them). */
#define AT_FLAME_MAX_COSTS 5

/* Function ids of path q's frames, outermost first, then its allocation
 * function; an inlined frame repeating its caller at one address is
 * dropped. out must hold q->stack->nframes + 1 ids; returns how many. */
uint32_t at_flame_frames(const at_profile *p, const at_ppath *q, uint32_t *out);

/* name with C++ template arguments cut to "<>"; the name itself when it
 * has none or its brackets do not balance. Returns a malloc'ed string. */
char *at_short_name(const char *name);

/* One frame of the tree: a function called along one path from the root. */
typedef struct at_fnode {
    uint32_t name;   /* index into at_flame.names */
    uint32_t parent; /* AT_PROFILE_NONE for the root */
    uint32_t depth;  /* 0 for the root */
    uint32_t first_child, next_sibling; /* AT_PROFILE_NONE when none */
    uint64_t cost[AT_FLAME_MAX_COSTS];
} at_fnode;

typedef struct at_flame {
    at_fnode *nodes;    /* nodes[0] is the root ("all"), parents before children */
    uint32_t nnodes;
    char **names;       /* distinct display names, interned */
    bool *allocator;    /* per name: an allocation function (a leaf) */
    uint32_t nnames;
    unsigned ncosts;
    uint32_t max_depth;
    uint32_t *path_leaf; /* per profile path: the node its frames end at (its leaf) */
} at_flame;

/* Gives path `path`'s ncosts costs in cost[0 .. ncosts). */
typedef void (*at_flame_costs_fn)(void *ctx, size_t path, uint64_t *cost);

/* The tree of p's paths, children of a frame in name order (flamegraph.pl
 * sorts its input, so equal stacks merge and siblings read alphabetically).
 * Never NULL (aborts on out-of-memory). */
at_flame *at_flame_build(const at_profile *p, bool short_names, unsigned ncosts,
                         at_flame_costs_fn costs, void *ctx);
/* The tree with one cost: the paths' bytes or blocks. */
at_flame *at_flame_of_cost(const at_profile *p, bool short_names, at_cost cost);
void at_flame_free(at_flame *f);

#endif
