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
#include <unistd.h>

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
                                    uint64_t size, at_leak_kind kind)
{
    (void)kind;
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

/* A stack table and a file path in a new temporary directory: what the
 * tests of suppression files share (supp_setup/supp_teardown as cmocka
 * setup and teardown). */
typedef struct supp_fixture {
    at_stack_table *t;
    char dir[64];
    char path[128];
} supp_fixture;

static inline int supp_setup(void **state)
{
    supp_fixture *f = calloc(1, sizeof *f);
    f->t = at_stacks_new();
    strcpy(f->dir, "/tmp/test_gate_supp.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/s.supp", f->dir);
    *state = f;
    return 0;
}

static inline int supp_teardown(void **state)
{
    supp_fixture *f = *state;
    unlink(f->path);
    rmdir(f->dir);
    at_stacks_free(f->t);
    free(f);
    return 0;
}

static inline void write_text_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
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
