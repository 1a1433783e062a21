/* tests/unit/test_analyze_thread.c: the analyzer on its own thread
 * (postproc/analyze/analyze_thread.c) sees every call, in the order given.
 * A generated run of 300,007 calls (73 batches and a partial one: the ring
 * of 4 wraps many times) with temporaries, releases far from their
 * allocation, reused ids and unknown releases goes once through the thread
 * and once straight to an analyzer; every number that depends on the calls
 * and their order (the summary, the peak and the call that reached it,
 * temporaries per site, the series) must be the same. A last test shows
 * the comparison catches one swapped pair of calls, so the first cannot
 * pass with the order broken. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "analyze_thread.h"
#include "stack.h"

#define NCALLS 300007
#define NSTACKS 5

typedef struct fixture {
    at_stack_table *stacks;
    const at_stack *stack[NSTACKS];
    at_call *calls;
} fixture;

/* Deterministic calls: blocks of sizes that vary with the index (so the
 * peak's call depends on the order), some freed at once (temporaries),
 * most freed later, some ids allocated again while live, and releases of
 * ids never allocated. */
static void generate(fixture *f)
{
    f->calls = calloc(NCALLS, sizeof *f->calls);
    uint64_t live[64] = { 0 };
    size_t n = 0;
    for (uint64_t i = 1; n < NCALLS; i++) {
        uint64_t slot = (i * 2654435761u) % 64, size = 1 + (i * 37) % 4099;
        const at_stack *st = f->stack[i % NSTACKS];
        at_call alloc = { .name = "malloc", .is_alloc = true, .size = size, .stack = st };
        at_call rel = { .name = "free", .stack = st };
        if (i % 7 == 0) {                /* a release of an id never allocated */
            rel.id = 0xdead00000 + i;
            f->calls[n++] = rel;
        } else if (i % 5 == 1) {         /* freed at once: a temporary */
            alloc.id = rel.id = 0x10000 + i * 16;
            f->calls[n++] = alloc;
            if (n < NCALLS)
                f->calls[n++] = rel;
        } else if (live[slot] && i % 9 == 0) { /* its id again: a lost release */
            alloc.id = live[slot];
            f->calls[n++] = alloc;
        } else if (live[slot]) {         /* freed later */
            rel.id = live[slot];
            live[slot] = 0;
            f->calls[n++] = rel;
        } else {
            alloc.id = live[slot] = 0x10000 + i * 16;
            f->calls[n++] = alloc;
        }
    }
    for (size_t k = 0; k < NCALLS; k++)
        f->calls[k].index = k + 1;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->stacks = at_stacks_new();
    for (int k = 0; k < NSTACKS; k++) {
        at_frame fr[2] = { { .addr = 0x1000u + (uint64_t)k, .text = NULL },
                           { .addr = 0x2000, .text = NULL } };
        f->stack[k] = at_stacks_intern(f->stacks, fr, 2);
    }
    generate(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    free(f->calls);
    at_stacks_free(f->stacks);
    free(f);
    return 0;
}

static void same_analysis(const at_analysis *x, const at_analysis *y)
{
    assert_memory_equal(&x->summary, &y->summary, sizeof x->summary);
    assert_memory_equal(&x->peak, &y->peak, sizeof x->peak);
    assert_int_equal(x->nsites, y->nsites);
    for (size_t i = 0; i < x->nsites; i++) {
        assert_ptr_equal(x->sites[i].stack, y->sites[i].stack);
        assert_memory_equal(&x->sites[i].cost, &y->sites[i].cost, sizeof x->sites[i].cost);
    }
    assert_int_equal(x->series.n, y->series.n);
    assert_int_equal(x->series.width, y->series.width);
    assert_memory_equal(x->series.points, y->series.points,
                        x->series.n * sizeof *x->series.points);
}

static bool differs(const at_analysis *x, const at_analysis *y)
{
    return memcmp(&x->summary, &y->summary, sizeof x->summary) != 0 ||
           memcmp(&x->peak, &y->peak, sizeof x->peak) != 0;
}

static void the_thread_analyses_every_call_in_order(void **state)
{
    fixture *f = *state;
    at_analyzer *threaded = at_analyzer_new(false), *direct = at_analyzer_new(false);
    at_an_thread *q = at_an_thread_start(threaded);
    for (size_t i = 0; i < NCALLS; i++) {
        at_an_thread_call(q, &f->calls[i]);
        at_analyzer_call(direct, &f->calls[i]);
    }
    at_an_thread_join(q);
    const at_analysis *x = at_analyzer_finish(threaded, NULL);
    const at_analysis *y = at_analyzer_finish(direct, NULL);
    assert_int_equal(x->summary.allocations + x->summary.releases, NCALLS);
    assert_true(x->summary.temporary > 10000);
    assert_true(x->summary.unknown_releases > 10000);
    assert_true(x->summary.reused_ids > 0);
    same_analysis(x, y);
    at_analyzer_free(threaded);
    at_analyzer_free(direct);
}

static void a_run_shorter_than_a_batch_is_analysed_at_the_join(void **state)
{
    fixture *f = *state;
    at_analyzer *threaded = at_analyzer_new(false), *direct = at_analyzer_new(false);
    at_an_thread *q = at_an_thread_start(threaded);
    for (size_t i = 0; i < 100; i++) {
        at_an_thread_call(q, &f->calls[i]);
        at_analyzer_call(direct, &f->calls[i]);
    }
    at_an_thread_join(q);
    same_analysis(at_analyzer_finish(threaded, NULL), at_analyzer_finish(direct, NULL));
    at_analyzer_free(threaded);
    at_analyzer_free(direct);
}

static void a_join_without_calls_leaves_an_empty_analysis(void **state)
{
    (void)state;
    at_analyzer *a = at_analyzer_new(false);
    at_an_thread_join(at_an_thread_start(a));
    const at_analysis *x = at_analyzer_finish(a, NULL);
    assert_int_equal(x->summary.allocations, 0);
    assert_int_equal(x->summary.releases, 0);
    at_analyzer_free(a);
}

/* The comparison above is sharp: one allocation and the release after it
 * swapped (so the allocation is no longer a temporary) changes it. */
static void one_swapped_pair_changes_the_numbers_compared(void **state)
{
    fixture *f = *state;
    size_t k = 0;
    while (!(f->calls[k].is_alloc && !f->calls[k + 1].is_alloc &&
             f->calls[k + 1].id == f->calls[k].id))
        k++;
    at_analyzer *in_order = at_analyzer_new(false), *swapped = at_analyzer_new(false);
    for (size_t i = 0; i < NCALLS; i++) {
        at_analyzer_call(in_order, &f->calls[i]);
        size_t j = i == k ? k + 1 : i == k + 1 ? k : i;
        at_call c = f->calls[j];
        c.index = f->calls[i].index;
        at_analyzer_call(swapped, &c);
    }
    assert_true(differs(at_analyzer_finish(in_order, NULL), at_analyzer_finish(swapped, NULL)));
    at_analyzer_free(in_order);
    at_analyzer_free(swapped);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_thread_analyses_every_call_in_order),
        cmocka_unit_test(a_run_shorter_than_a_batch_is_analysed_at_the_join),
        cmocka_unit_test(a_join_without_calls_leaves_an_empty_analysis),
        cmocka_unit_test(one_swapped_pair_changes_the_numbers_compared),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
