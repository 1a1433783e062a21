/*
 * tests/integration/test_tracer_sites.c: leaks mode's interned call sites
 * (preload/sites.c) and the per-thread cache before them. The program
 * tests/programs/tracer_sites allocates from 512 sites whose stacks differ
 * only in the middle (left() or right() at each of 9 levels), three times
 * each, the sites interleaved: more sites than the cache has entries, so
 * they meet in its slots. Every leaked block must carry its own site's
 * frames.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#define LEVELS 9
#define PATHS (1 << LEVELS)
#define ROUNDS 3

static void test_leaks_mode_gives_each_block_its_own_sites_frames(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_sites");
    const char *argv[] = { prog, NULL };
    const char *env[] = { "ALLOCTRACE_MODE=leaks", NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    uint64_t left = t_out_addr(r.out, "left"), right = t_out_addr(r.out, "right"),
             end = t_out_addr(r.out, "end");
    assert_true(left < right && right < end);
    struct t_trace t = t_load(trace);
    int seen[PATHS] = { 0 };
    for (size_t k = 0; k < t.n; k++) {
        const struct t_rec *rec = &t.recs[k];
        if (rec->size < 1000 || rec->size >= 1000 + PATHS || strcmp(rec->name, "malloc") != 0)
            continue;
        int bits = (int)(rec->size - 1000);
        seen[bits]++;
        assert_true(rec->nframes >= 2 * LEVELS + 1);
        const uint64_t *f = t_frames(&t, rec);
        /* frames[2j + 1] is the call made at level LEVELS - 1 - j */
        for (int j = 0; j < LEVELS; j++) {
            int level = LEVELS - 1 - j, bit = (bits >> level) & 1;
            uint64_t a = f[2 * j + 1];
            int in_right = a >= right && a < end, in_left = a >= left && a < right;
            if (!(bit ? in_right : in_left))
                fail_msg("block of path %d: frame %d (level %d) at %#llx is not in %s()", bits,
                         2 * j + 1, level, (unsigned long long)a, bit ? "right" : "left");
        }
    }
    for (int bits = 0; bits < PATHS; bits++)
        assert_int_equal(seen[bits], ROUNDS);
    t_free(&t);
    h_result_free(&r);
    free(prog);
    free(trace);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leaks_mode_gives_each_block_its_own_sites_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
