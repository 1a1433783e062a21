/*
 * tests/integration/test_tracer_sites.c: leaks mode's interned call sites
 * (preload/hook/sites.c) and the per-thread caches before them. The program
 * tests/programs/tracer_sites allocates from 2^N sites whose stacks differ
 * only in the middle (left() or right() at each of N levels), three times
 * each, the sites interleaved: as many sites as a cache has entries or
 * more, so they meet in its slots. Every leaked block must carry its own
 * site's frames.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#define ROUNDS 3

/* Runs tracer_sites with `levels` levels (2^levels sites) in leaks mode and
 * checks every one of its blocks: frames[2j + 1] is the call made at level
 * levels - 1 - j, in left() or right() as the path's bit says. */
static void check_each_block_has_its_sites_frames(int levels)
{
    int paths = 1 << levels;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_sites");
    char *arg = h_fmt("%d", levels);
    const char *argv[] = { prog, arg, NULL };
    const char *env[] = { "ALLOCTRACE_MODE=leaks", NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    uint64_t left = t_out_addr(r.out, "left"), right = t_out_addr(r.out, "right"),
             end = t_out_addr(r.out, "end");
    assert_true(left < right && right < end);
    struct t_trace t = t_load(trace);
    int *seen = calloc((size_t)paths, sizeof *seen);
    assert_non_null(seen);
    for (size_t k = 0; k < t.n; k++) {
        const struct t_rec *rec = &t.recs[k];
        if (rec->size < 1000 || rec->size >= 1000 + (uint64_t)paths || strcmp(rec->name, "malloc") != 0)
            continue;
        int bits = (int)(rec->size - 1000);
        seen[bits]++;
        assert_true(rec->nframes >= 2 * levels + 1);
        const uint64_t *f = t_frames(&t, rec);
        for (int j = 0; j < levels; j++) {
            int level = levels - 1 - j, bit = (bits >> level) & 1;
            uint64_t a = f[2 * j + 1];
            int in_right = a >= right && a < end, in_left = a >= left && a < right;
            if (!(bit ? in_right : in_left))
                fail_msg("block of path %d: frame %d (level %d) at %#llx is not in %s()", bits,
                         2 * j + 1, level, (unsigned long long)a, bit ? "right" : "left");
        }
    }
    for (int bits = 0; bits < paths; bits++)
        assert_int_equal(seen[bits], ROUNDS);
    free(seen);
    t_free(&t);
    h_result_free(&r);
    free(arg);
    free(prog);
    free(trace);
    h_cleanup();
}

/* 512 sites, three times each, interleaved: as many as the thread's
 * first cache has entries, so they meet in its slots. */
static void test_leaks_mode_gives_each_block_its_own_sites_frames(void **state)
{
    (void)state;
    check_each_block_has_its_sites_frames(9);
}

/* 2048 sites: the thread misses its first cache often enough to move to
 * the big one (sites.c), in the middle of the run. */
static void test_leaks_mode_sites_stay_apart_in_the_big_cache(void **state)
{
    (void)state;
    check_each_block_has_its_sites_frames(11);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leaks_mode_gives_each_block_its_own_sites_frames),
        cmocka_unit_test(test_leaks_mode_sites_stay_apart_in_the_big_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
