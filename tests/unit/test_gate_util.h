/*
 * tests/unit/test_gate_util.h: what the gate's unit tests share: stacks
 * built from resolved frame texts, a matcher that suppresses by function
 * name and size (standing in for the filter language, which has its own
 * tests), and capturing a report into a string.
 */
#ifndef AT_TEST_GATE_UTIL_H
#define AT_TEST_GATE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"

/* A stack from resolved texts, innermost first, NULL-terminated; frame i
 * gets address base + i. */
static inline const at_stack *stack_of(at_stack_table *t, uint64_t base, const char *const texts[])
{
    at_frame frames[32];
    uint32_t n = 0;
    while (texts[n]) {
        frames[n] = (at_frame){ base + n, texts[n] };
        n++;
    }
    return at_stacks_intern(t, frames, n);
}

/* Suppression i matches when some frame's function is names[i] and, when
 * sizes[i] is not 0, the block's size is sizes[i]. */
typedef struct fake_supps {
    const char *names[8];
    const char *labels[8];
    uint64_t sizes[8];
    size_t count;
} fake_supps;

static inline const char *fake_label(void *ctx, size_t i) { return ((fake_supps *)ctx)->labels[i]; }

static inline long fake_first_match(void *ctx, const at_stack *stack, const at_frame_info *frames,
                                    uint64_t size)
{
    fake_supps *s = ctx;
    for (size_t i = 0; i < s->count; i++)
        for (uint32_t f = 0; f < stack->nframes; f++)
            if (strcmp(frames[f].function, s->names[i]) == 0 && (!s->sizes[i] || s->sizes[i] == size))
                return (long)i;
    return -1;
}

static inline at_gate_matcher fake_matcher(fake_supps *s, size_t ndefault)
{
    return (at_gate_matcher){ .ctx = s, .count = s->count, .ndefault = ndefault,
                              .label = fake_label, .first_match = fake_first_match };
}

static inline char *report_of(const at_gate *g, void (*print)(FILE *, const at_gate *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    print(f, g);
    fclose(f);
    return buf;
}

#endif
