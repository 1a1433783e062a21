/*
 * bench/visual_shape.h: the calls of bench/visual's full trace, shared by
 * visual_gen (which writes them as a trace) and visual_time (which feeds
 * them to the analyses in process), so both see the same run by
 * construction: about half allocations and half releases, the live set
 * swelling for 100,000 calls and draining for as many (at most
 * VISUAL_MAX_LIVE blocks), one allocation in eight freed at once (a
 * temporary allocation), over export_shape.h's stacks. Deterministic.
 */
#ifndef BENCH_VISUAL_SHAPE_H
#define BENCH_VISUAL_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "export_shape.h"

#define VISUAL_MAX_LIVE 8192

struct visual_event {
    bool release;
    uint64_t id;
    struct shape_call call; /* for an allocation */
};

struct visual_state {
    uint64_t live[VISUAL_MAX_LIVE];
    size_t nlive;
    uint64_t next_id;
    bool pending;           /* the last allocation is freed by the next call */
};

/* The event of call number c (from 1). */
static struct visual_event visual_next(struct visual_state *v, unsigned long c, unsigned long nstacks)
{
    if (v->pending) {
        v->pending = false;
        return (struct visual_event){ .release = true, .id = v->next_id };
    }
    uint64_t r = rnd();
    unsigned long phase = c / 100000 % 2;
    if (v->nlive && (v->nlive == VISUAL_MAX_LIVE || r % 100 < (phase ? 60u : 40u))) {
        size_t i = (r >> 8) % v->nlive;
        struct visual_event e = { .release = true, .id = v->live[i] };
        v->live[i] = v->live[--v->nlive];
        return e;
    }
    struct visual_event e = { .release = false, .id = v->next_id = 0x10000000 + 16 * c,
                              .call = shape_call(nstacks) };
    if ((r >> 40) % 8 == 0)
        v->pending = true;
    else
        v->live[v->nlive++] = e.id;
    return e;
}

#endif
