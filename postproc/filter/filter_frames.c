/*
 * postproc/filter/filter_frames.c: the distinct frames a filter set has seen.
 * Thousands of stacks share far fewer frames (the same callers appear in
 * many stacks), so each frame is read once and given a dense id, and
 * every filter element remembers its answer per id (filter_match.c): the
 * first sight of a stack then costs table lookups for the frames already
 * met, not string and regex tests.
 *
 * A frame is its address and its resolved text (compared by content: the
 * stack table copies texts per stack) and the map covering the address,
 * named by its order of appearance (a later map over the same range is
 * another object, and map entries move when their table grows).
 */
#include "filter_impl.h"
#include "xalloc.h"

#include <string.h>

static uint64_t frame_hash(uint64_t addr, const char *text, uint32_t map_seq)
{
    uint64_t h = 0xcbf29ce484222325ull ^ addr ^ ((uint64_t)map_seq << 48);
    h *= 0x100000001b3ull;
    for (const char *p = text; p && *p; p++) {
        h ^= (unsigned char)*p;
        h *= 0x100000001b3ull;
    }
    return h ^ (text ? 0 : 0x9e3779b97f4a7c15ull);
}

static bool same(const at_fframe *f, uint64_t addr, const char *text, uint32_t map_seq)
{
    if (f->addr != addr || f->map_seq != map_seq || !f->text != !text)
        return false;
    return !text || strcmp(f->text, text) == 0;
}

static void grow_slots(at_filter_set *s)
{
    size_t n = s->fr_nslots ? s->fr_nslots * 2 : 1024;
    uint32_t *slots = at_xrealloc(NULL, n * sizeof *slots);
    memset(slots, 0xff, n * sizeof *slots);
    for (size_t i = 0; i < s->nfr; i++) {
        size_t k = (size_t)s->fr[i].hash & (n - 1);
        while (slots[k] != UINT32_MAX)
            k = (k + 1) & (n - 1);
        slots[k] = (uint32_t)i;
    }
    free(s->fr_slots);
    s->fr_slots = slots;
    s->fr_nslots = n;
}

uint32_t at_filter_frame_id(at_filter_set *s, const at_frame *frame, const at_maps *maps,
                            at_stack_table *arena)
{
    const at_map *m = maps ? at_maps_find(maps, frame->addr) : NULL;
    uint32_t map_seq = m ? m->seq + 1 : 0;
    uint64_t h = frame_hash(frame->addr, frame->text, map_seq);
    if ((s->nfr + 1) * 2 > s->fr_nslots)
        grow_slots(s);
    size_t k = (size_t)h & (s->fr_nslots - 1);
    for (; s->fr_slots[k] != UINT32_MAX; k = (k + 1) & (s->fr_nslots - 1)) {
        const at_fframe *f = &s->fr[s->fr_slots[k]];
        if (f->hash == h && same(f, frame->addr, frame->text, map_seq))
            return s->fr_slots[k];
    }
    if (s->nfr == s->frcap) {
        s->frcap = s->frcap ? s->frcap * 2 : 1024;
        s->fr = at_xrealloc(s->fr, s->frcap * sizeof *s->fr);
    }
    at_fframe *f = &s->fr[s->nfr];
    *f = (at_fframe){ .addr = frame->addr, .hash = h, .text = frame->text, .map_seq = map_seq };
    at_frame_read(frame, maps, arena, &f->info);
    s->fr_slots[k] = (uint32_t)s->nfr;
    return (uint32_t)s->nfr++;
}

void at_filter_frames_free(at_filter_set *s)
{
    free(s->fr);
    free(s->fr_slots);
    s->fr = NULL;
    s->fr_slots = NULL;
    s->nfr = s->frcap = s->fr_nslots = 0;
}
