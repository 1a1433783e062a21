/* tests/unit/test_runtime.c: libc's caches told by stack (postproc/runtime.c)
 * and counted apart from leaks by the analyses; the per-site timeline
 * (postproc/analyze/timeline.c) the HTML report's ranges and moments read.
 * Hand-made traces through the real reader and analysis stage. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "reader.h"
#include "runtime.h"
#include "timeline.h"

#define HDR "version=2.0, arch=x86_64, process=./t, pid=7, \n" \
            ": /usr/bin/t => 0x400000-0x500000\n" \
            ": /lib/x86_64-linux-gnu/libstdc++.so.6 => 0x7f0000000000-0x7f0000100000\n" \
            ": /lib64/ld-linux-x86-64.so.2 => 0x7f1000000000-0x7f1000100000\n"
/* libstdc++'s pool: its constructor, called by the loader; no names */
#define POOL "\t0x7f00000a57ba\n\t0x7f1000001a1e\n\t0x7f100001aba0\n\n"
/* a stdio buffer: glibc's cache maker under the program's printf */
#define STDIO "\t0x7f2000000100 _IO_file_doallocate() at filedoalloc.c:101\n" \
              "\t0x7f2000000200 _IO_doallocbuf() at genops.c:347\n" \
              "\t0x401234 main() at m.c:9\n\n"
/* the program's own leak, through a template with std:: arguments */
#define MINE "\t0x7f0000001000 operator new(unsigned long)\n" \
             "\t0x401100 descend<std::string>(int) at m.c:4\n" \
             "\t0x401234 main() at m.c:9\n\n"

static const char trace[] = HDR
    "1. [10:00:00.000000] malloc(72704) = 0x10\n" POOL
    "2. [10:00:00.000010] malloc(4096) = 0x20\n" STDIO
    "3. [10:00:00.000020] malloc(123) = 0x30\n" MINE
    "4. [10:00:00.000030] malloc(8) = 0x40\n" MINE
    "5. [10:00:00.000040] free(0x40)\n\n";

typedef struct run {
    at_trace *t;
    at_stage *stage;
    const at_analysis *an;
} run;

static int capture(void *arg, const at_analysis *an, at_trace *t)
{
    (void)t;
    ((run *)arg)->an = an;
    return 0;
}

static run *analyse(const char *in)
{
    run *r = calloc(1, sizeof *r);
    at_diag d;
    at_diag_init(&d, "t.trace");
    d.out = stderr;
    r->t = at_trace_new();
    r->stage = at_analyze_stage_new(r->t, &d, capture, r);
    assert_int_equal(at_read_mem(in, strlen(in), r->t, r->stage, &d), 0);
    at_stage_finish(r->stage);
    assert_non_null(r->an);
    return r;
}

static void done(run *r)
{
    at_analyze_stage_free(r->stage);
    at_trace_free(r->t);
    free(r);
}

static const at_an_site *site_at(const run *r, uint64_t first_index)
{
    for (size_t i = 0; i < r->an->nsites; i++)
        if (r->an->sites[i].first_index == first_index)
            return &r->an->sites[i];
    fail_msg("no site of call %llu", (unsigned long long)first_index);
    return NULL;
}

static void runtime_caches_are_counted_apart_from_leaks(void **state)
{
    (void)state;
    run *r = analyse(trace);
    const at_an_summary *s = &r->an->summary;
    assert_int_equal(s->leaked_bytes, 123);
    assert_int_equal(s->leaked_blocks, 1);
    assert_int_equal(s->cached_bytes, 72704 + 4096);
    assert_int_equal(s->cached_blocks, 2);
    assert_true(site_at(r, 1)->cache);
    assert_int_equal(site_at(r, 1)->cost.cached, 72704);
    assert_int_equal(site_at(r, 1)->cost.leaked, 0);
    assert_true(site_at(r, 2)->cache);
    assert_false(site_at(r, 3)->cache);
    assert_int_equal(site_at(r, 3)->cost.leaked, 123);
    /* the context of every call (none) agrees */
    assert_int_equal(r->an->contexts[0].cost.leaked, 123);
    assert_int_equal(r->an->contexts[0].cost.cached, 72704 + 4096);
    done(r);
}

static void a_leak_kind_libc_is_a_cache_whatever_its_stack(void **state)
{
    (void)state;
    run *r = analyse("version=2.0, arch=x86_64, process=./t, pid=7, filter=leaks, \n"
                     "## leak kind: libc\n1. malloc(40) = 0x10\n" MINE
                     "## leak kind: definite\n2. malloc(8) = 0x20\n" MINE);
    assert_int_equal(r->an->summary.cached_bytes, 40);
    assert_int_equal(r->an->summary.leaked_bytes, 8);
    done(r);
}

static void the_program_frames_make_a_block_the_programs(void **state)
{
    (void)state;
    at_trace *t = at_trace_new();
    at_maps_add(t->maps, "/usr/bin/t", 0x400000, 0x500000);
    at_maps_add(t->maps, "/lib/x86_64-linux-gnu/libc.so.6", 0x7f2000000000, 0x7f2000100000);
    at_runtime *rt = at_runtime_new(t->maps, t->stacks);
    at_frame all_libc[] = { { 0x7f2000000100, NULL }, { 0x7f2000000200, NULL } };
    at_frame with_program[] = { { 0x7f2000000100, NULL }, { 0x401234, NULL } };
    at_frame strdup_by_program[] = { { 0x7f2000000100, "__strdup() at strdup.c:42" },
                                     { 0x401234, "main() at m.c:9" } };
    assert_true(at_runtime_cache(rt, at_stacks_intern(t->stacks, all_libc, 2)));
    assert_false(at_runtime_cache(rt, at_stacks_intern(t->stacks, with_program, 2)));
    assert_false(at_runtime_cache(rt, at_stacks_intern(t->stacks, strdup_by_program, 2)));
    assert_false(at_runtime_cache(rt, at_stacks_intern(t->stacks, NULL, 0)));
    at_runtime_free(rt);
    at_trace_free(t);
}

/* What a frame says is kept per frame (runtime.c): stacks sharing frames
 * get each their own answer, and a map line added later (the module of a
 * frame without one in its text) is taken into account. */
static void frames_shared_by_stacks_answer_for_each_and_follow_the_maps(void **state)
{
    (void)state;
    at_trace *t = at_trace_new();
    at_maps_add(t->maps, "/usr/bin/t", 0x400000, 0x500000);
    at_maps_add(t->maps, "/lib/x86_64-linux-gnu/libc.so.6", 0x7f2000000000, 0x7f2000100000);
    at_runtime *rt = at_runtime_new(t->maps, t->stacks);
    at_frame libc_only[] = { { 0x7f2000000100, NULL }, { 0x7f2000000200, NULL } };
    at_frame then_program[] = { { 0x7f2000000100, NULL }, { 0x7f2000000200, NULL },
                                { 0x401234, "main() at m.c:9" } };
    at_frame maker_inside[] = { { 0x7f2000000300, "_IO_file_doallocate() at filedoalloc.c:101" },
                                { 0x401234, "main() at m.c:9" } };
    at_frame maker_deeper[] = { { 0x7f2000000400, "malloc() at malloc.c:3" },
                                { 0x7f2000000300, "_IO_file_doallocate() at filedoalloc.c:101" },
                                { 0x401234, "main() at m.c:9" } };
    at_frame unmapped[] = { { 0x7f3000000100, NULL }, { 0x7f2000000100, NULL } };
    assert_true(at_runtime_cache(rt, at_stacks_intern(t->stacks, libc_only, 2)));
    assert_false(at_runtime_cache(rt, at_stacks_intern(t->stacks, then_program, 3)));
    assert_true(at_runtime_cache(rt, at_stacks_intern(t->stacks, maker_inside, 2)));
    assert_true(at_runtime_cache(rt, at_stacks_intern(t->stacks, maker_deeper, 3)));
    /* 0x7f3000000100 is in no map yet: not the runtime's */
    assert_false(at_runtime_cache(rt, at_stacks_intern(t->stacks, unmapped, 2)));
    /* libstdc++ loaded there afterwards: the same frame is the runtime's now */
    at_maps_add(t->maps, "/lib/x86_64-linux-gnu/libstdc++.so.6", 0x7f3000000000, 0x7f3000100000);
    unmapped[1].addr = 0x7f2000000200;
    assert_true(at_runtime_cache(rt, at_stacks_intern(t->stacks, unmapped, 2)));
    at_runtime_free(rt);
    at_trace_free(t);
}

/* The ticks come by site, then interval, however the sites' calls were
 * interleaved in time. */
static void ticks_come_by_site_then_interval(void **state)
{
    (void)state;
    at_an_timeline *tl = at_an_timeline_new();
    for (uint64_t i = 0; i < 50; i++)
        at_an_timeline_note(tl, (uint32_t)((i * 7) % 5), i, 1, 1, false, i, 1);
    size_t n;
    unsigned shift;
    const at_an_tick *k = at_an_timeline_ticks(tl, &n, &shift);
    assert_int_equal(n, 50);
    for (size_t i = 1; i < n; i++)
        assert_true(k[i - 1].site < k[i].site ||
                    (k[i - 1].site == k[i].site && k[i - 1].interval < k[i].interval));
    assert_int_equal(k[0].site, 0);
    assert_int_equal(k[0].interval, 0);
    assert_int_equal(k[n - 1].site, 4);
    assert_int_equal(k[n - 1].interval, 47); /* i = 47: 7i mod 5 = 4 */
    at_an_timeline_free(tl);
}

static void the_timeline_keeps_each_sites_intervals(void **state)
{
    (void)state;
    run *r = analyse(trace);
    /* 41 intervals of 1 us, one tick per site and interval it changed in */
    assert_int_equal(r->an->series.width, 1);
    assert_int_equal(r->an->tick_shift, 0);
    assert_int_equal(r->an->nticks, 5);
    const at_an_tick *k = r->an->ticks;
    /* sites in order of first call; site 2 (calls 3 and 4: one stack) last */
    assert_int_equal(k[0].site, 0);
    assert_int_equal(k[0].live, 72704);
    assert_int_equal(k[2].site, 2);
    assert_int_equal(k[2].interval, 20);
    assert_int_equal(k[2].bytes, 123);
    assert_int_equal(k[2].live, 123);
    assert_int_equal(k[3].interval, 30);
    assert_int_equal(k[3].allocations, 1);
    assert_int_equal(k[3].live, 131);
    /* the free of call 5 comes right after its allocation: a temporary */
    assert_int_equal(k[4].interval, 40);
    assert_int_equal(k[4].allocations, 0);
    assert_int_equal(k[4].temporary, 1);
    assert_int_equal(k[4].live, 123);
    done(r);
}

static void halving_folds_a_sites_ticks_keeping_the_later_live(void **state)
{
    (void)state;
    at_an_timeline *tl = at_an_timeline_new();
    at_an_timeline_note(tl, 0, 2, 1, 10, false, 10, 1);
    at_an_timeline_note(tl, 1, 2, 1, 5, false, 5, 1);
    at_an_timeline_note(tl, 0, 3, 1, 20, false, 30, 2);
    at_an_timeline_note(tl, 0, 3, 0, 0, true, 20, 1);
    at_an_timeline_halve(tl);
    size_t n;
    unsigned shift;
    const at_an_tick *k = at_an_timeline_ticks(tl, &n, &shift);
    assert_int_equal(n, 2);
    assert_int_equal(shift, 0);
    assert_int_equal(k[0].site, 0);
    assert_int_equal(k[0].interval, 1);
    assert_int_equal(k[0].allocations, 2);
    assert_int_equal(k[0].bytes, 30);
    assert_int_equal(k[0].temporary, 1);
    assert_int_equal(k[0].live, 20);
    assert_int_equal(k[1].site, 1);
    assert_int_equal(k[1].live, 5);
    at_an_timeline_free(tl);
}

static void too_many_ticks_make_the_timeline_coarser(void **state)
{
    (void)state;
    at_an_timeline *tl = at_an_timeline_new();
    /* two sites alternating over more intervals than ticks allow */
    for (uint64_t i = 0; i < AT_AN_MAX_TICKS; i++) {
        at_an_timeline_note(tl, 0, i, 1, 1, false, i + 1, i + 1);
        at_an_timeline_note(tl, 1, i, 1, 2, false, 2 * (i + 1), i + 1);
    }
    size_t n;
    unsigned shift;
    const at_an_tick *k = at_an_timeline_ticks(tl, &n, &shift);
    assert_true(n <= AT_AN_MAX_TICKS);
    assert_true(shift >= 1);
    uint64_t calls = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        calls += k[i].allocations;
        bytes += k[i].bytes;
    }
    assert_int_equal(calls, 2 * (uint64_t)AT_AN_MAX_TICKS); /* nothing lost */
    assert_int_equal(bytes, 3 * (uint64_t)AT_AN_MAX_TICKS);
    assert_int_equal(k[n - 1].live, 2 * (uint64_t)AT_AN_MAX_TICKS); /* site 1's last */
    at_an_timeline_free(tl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runtime_caches_are_counted_apart_from_leaks),
        cmocka_unit_test(a_leak_kind_libc_is_a_cache_whatever_its_stack),
        cmocka_unit_test(the_program_frames_make_a_block_the_programs),
        cmocka_unit_test(frames_shared_by_stacks_answer_for_each_and_follow_the_maps),
        cmocka_unit_test(the_timeline_keeps_each_sites_intervals),
        cmocka_unit_test(ticks_come_by_site_then_interval),
        cmocka_unit_test(halving_folds_a_sites_ticks_keeping_the_later_live),
        cmocka_unit_test(too_many_ticks_make_the_timeline_coarser),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
