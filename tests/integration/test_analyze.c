/* tests/integration/test_analyze.c: the analyses on a real traced program,
 * tests/programs/postproc_sites, whose numbers are known from its source:
 *   churn: 50 x malloc(64), each freed at once (50 temporaries), then
 *          malloc(8) grown by 8 reallocs to 16 .. 2048 and freed (9 more
 *          temporaries: each block is released by the very next call);
 *   leaks: 3 x malloc(100), malloc(2000), 2 x calloc(4, 25), never freed.
 * So 65 allocations of 9788 bytes, 59 releases, 59 temporaries, and the
 * peak is the 2500 leaked bytes, reached by the last call. The report must
 * say the same with -c, from a compressed trace, and next to heaptrack. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static h_result postproc(const char *a1, const char *a2, const char *a3, const char *a4,
                         const char *a5)
{
    char *exe = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { exe, a1, a2, a3, a4, a5, NULL };
    h_result r = h_run(argv, NULL, NULL);
    free(exe);
    return r;
}

static char *traced_sites(const char *dir, const char *name)
{
    char *trace = h_fmt("%s/%s", dir, name);
    char *prog = h_path("build/tests/programs/postproc_sites");
    const char *argv[] = { prog, NULL };
    h_result r = h_trace(trace, argv, NULL);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    free(prog);
    return trace;
}

static void the_stats_of_a_real_program_are_the_numbers_of_its_source(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = traced_sites(dir, "sites.trace");
    h_result r = postproc("--format", "stats", trace, NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"allocations\": 65, \"releases\": 59, "
                                  "\"allocated_bytes\": 9788, \"temporary_allocations\": 59, "
                                  "\"leaked_bytes\": 2500, \"leaked_blocks\": 6, "
                                  "\"cached_bytes\": 0, \"cached_blocks\": 0, "
                                  "\"unknown_releases\": 0, "));
    assert_non_null(strstr(r.out, "\"first_index\": 1, \"last_index\": 124, "));
    assert_non_null(strstr(r.out, "\"peak\": {\"bytes\": 2500, \"blocks\": 6, \"index\": 124, "
                                  "\"allocation\": 65, \"time_us\": "));
    /* [64, 127]: 50 + 1 (the realloc chain) x 64 and 5 x 100 bytes */
    assert_non_null(strstr(r.out, "{\"min\": 64, \"max\": 127, \"count\": 56, \"bytes\": 3764}"));
    assert_non_null(strstr(r.out, "\"top_sizes\": [{\"size\": 64, \"count\": 51}, "
                                  "{\"size\": 100, \"count\": 5}, "));
    assert_non_null(strstr(r.out, "\"series\": {\"axis\": \"time_us\", "));
    h_result_free(&r);
    free(trace);
    h_cleanup();
}

static void the_report_is_the_same_with_c_and_from_a_compressed_trace(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = traced_sites(dir, "sites.trace");
    char *ctrace = h_fmt("%s/sites.c.trace", dir);
    h_result plain = postproc("-r", "--format", "report", trace, NULL);
    assert_int_equal(plain.status, 0);
    assert_non_null(strstr(plain.out, "allocations:  65 calls, 9.6 KiB (9788 bytes)\n"
                                      "releases:     59 calls\n"
                                      "peak heap:    2.4 KiB (2500 bytes) in 6 blocks, at allocation 65 of 65 "
                                      "(call 124 of the trace, releases counted), "));
    assert_non_null(strstr(plain.out, "leaked:       2.4 KiB (2500 bytes) in 6 blocks\n"
                                      "temporary:    59 allocations (90.8% of all)\n"));
    /* The largest part of the peak: leak_big's 2000 bytes, with its line. */
    assert_non_null(strstr(plain.out, "top 3 sites by memory at the peak (of 6 sites):\n"
                                      "   1. 2.0 KiB (2000 bytes, 80.0% of the peak) in 1 blocks "
                                      "by malloc in leak_big (postproc_sites.c:26)\n        leak_big at "));
    assert_non_null(strstr(plain.out, "top 3 sites by temporary allocations (of 6 sites):\n"
                                      "   1. 50 temporary of 50 calls (100.0%) by malloc in short_lived (postproc_sites.c:28)\n"
                                      "        short_lived at "));
    h_result c = postproc("-c", "-r", "--format", "report", trace);
    assert_int_equal(c.status, 0);
    assert_string_equal(c.out, plain.out);
    h_result w = postproc("-c", "-o", ctrace, trace, NULL);
    assert_int_equal(w.status, 0);
    h_result fromc = postproc("-r", "--format", "report", ctrace, NULL);
    assert_int_equal(fromc.status, 0);
    assert_string_equal(fromc.out, plain.out);
    h_result_free(&fromc);
    h_result_free(&w);
    h_result_free(&c);
    h_result_free(&plain);
    free(ctrace);
    free(trace);
    h_cleanup();
}

static void leak_filtering_first_reports_leaks_and_no_time_series(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = traced_sites(dir, "sites.trace");
    h_result r = postproc("-l", "--format", "report", trace, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "allocations:  6 calls, 2.4 KiB (2500 bytes)\n"
                                  "releases:     not in this trace (it holds leaks only)\n"
                                  "peak heap:    not in this trace (it holds leaks only)\n"
                                  "leaked:       2.4 KiB (2500 bytes) in 6 blocks\n"));
    assert_non_null(strstr(r.out, "memory over time: none, a leaks-only trace keeps no order in "
                                  "time\n"));
    h_result_free(&r);
    free(trace);
    h_cleanup();
}

static void two_runs_of_one_program_diff_to_no_change(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *a = traced_sites(dir, "a.trace"), *b = traced_sites(dir, "b.trace");
    h_result r = postproc("-r", "--diff", a, b, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "  allocations                    65             65             +0 "
                                  "(+0.0%)\n"));
    /* 6 stacks, 5 keys: churn's malloc(8) and its reallocs differ only in
     * their line, which the key leaves out on purpose. */
    assert_non_null(strstr(r.out, "sites that changed: 0 of 5 (0 grew, 0 shrank, 0 new, 0 gone)"));
    assert_null(strstr(r.out, "note:"));
    h_result_free(&r);
    r = postproc("--diff", a, "--format", "report", b);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--diff"));
    h_result_free(&r);
    /* a missing OLD is one line naming it, before -o truncates anything;
     * a file that cannot be read exits 1 (README.md, "Exit status") */
    char *missing = h_fmt("%s/missing.trace", dir), *out = h_fmt("%s/out.txt", dir);
    r = postproc("--diff", missing, "-o", out, b);
    assert_int_equal(r.status, 1);
    assert_int_equal(h_count_lines(r.err, "."), 1);
    assert_non_null(strstr(r.err, "missing.trace"));
    assert_int_not_equal(access(out, F_OK), 0);
    h_result_free(&r);
    /* -o: the stats go to the file */
    r = postproc("--format", "stats", "-o", out, a);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    char *json = h_read_file(out, NULL);
    assert_non_null(json);
    assert_non_null(strstr(json, "\"allocations\": 65, "));
    free(json);
    h_result_free(&r);
    free(missing);
    free(out);
    free(a);
    free(b);
    h_cleanup();
}

/* heaptrack counts temporaries and leaks of the same run the same way. */
static void temporaries_and_leaks_agree_with_heaptrack(void **state)
{
    (void)state;
    if (access("/usr/bin/heaptrack", X_OK) != 0 || access("/usr/bin/heaptrack_print", X_OK) != 0) {
        print_message("heaptrack is not installed: comparison skipped\n");
        skip();
    }
    char *dir = h_tmpdir();
    char *prog = h_path("build/tests/programs/postproc_sites");
    h_result ht = h_sh("cd '%s' && heaptrack -o '%s/ht' '%s' >/dev/null 2>&1 && "
                       "heaptrack_print '%s/ht.zst' 2>/dev/null | "
                       "grep -E '^(temporary memory allocations|total memory leaked):'",
                       dir, dir, prog, dir);
    assert_int_equal(ht.status, 0);
    unsigned long temporary = 0;
    char *line = strstr(ht.out, "temporary memory allocations: ");
    assert_non_null(line);
    assert_int_equal(sscanf(line, "temporary memory allocations: %lu", &temporary), 1);
    assert_non_null(strstr(ht.out, "total memory leaked: 2.50K\n")); /* heaptrack: 1000s */
    char *trace = traced_sites(dir, "sites.trace");
    h_result r = postproc("--format", "stats", trace, NULL, NULL);
    char *want = h_fmt("\"temporary_allocations\": %lu, \"leaked_bytes\": 2500, ", temporary);
    assert_non_null(strstr(r.out, want));
    free(want);
    h_result_free(&r);
    h_result_free(&ht);
    free(trace);
    free(prog);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_stats_of_a_real_program_are_the_numbers_of_its_source),
        cmocka_unit_test(the_report_is_the_same_with_c_and_from_a_compressed_trace),
        cmocka_unit_test(leak_filtering_first_reports_leaks_and_no_time_series),
        cmocka_unit_test(two_runs_of_one_program_diff_to_no_change),
        cmocka_unit_test(temporaries_and_leaks_agree_with_heaptrack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
