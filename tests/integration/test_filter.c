/*
 * tests/integration/test_filter.c: callstack filters end to end. The real
 * tracer traces tests/programs/filter_app (leak sites in three files and a
 * stripped library, each site with its own block size: 100 config_load,
 * 200 cache_add x3, 300 filter_lib_make x2, 400 main); the real
 * post-processor filters the trace.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *trace_path;

static int setup(void **state)
{
    (void)state;
    trace_path = h_fmt("%s/app.trace", h_tmpdir());
    char *exe = h_path("build/tests/programs/filter_app");
    const char *argv[] = { exe, NULL };
    h_result r = h_trace(trace_path, argv, NULL);
    free(exe);
    if (r.status != 0) {
        fprintf(stderr, "filter_app under the tracer: status %d\n%s", r.status, r.err);
        h_result_free(&r);
        return -1;
    }
    h_result_free(&r);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(trace_path);
    h_cleanup();
    return 0;
}

/* alloctrace-postproc with up to four options, on the trace. */
static h_result pp(const char *a, const char *b, const char *c, const char *d)
{
    char *prog = h_path("postproc/alloctrace-postproc");
    const char *argv[7] = { prog };
    int n = 1;
    const char *opts[] = { a, b, c, d };
    for (int i = 0; i < 4; i++)
        if (opts[i])
            argv[n++] = opts[i];
    argv[n++] = trace_path;
    argv[n] = NULL;
    h_result r = h_run(argv, NULL, NULL);
    free(prog);
    return r;
}

/* Allocation records of `size` bytes in the output. */
static size_t allocs(const char *out, unsigned size)
{
    char *re = h_fmt("^[0-9]+\\. (\\[[0-9:.]+\\] )?malloc\\(%u\\) = 0x", size);
    size_t n = h_count_lines(out, re);
    free(re);
    return n;
}

static size_t calls(const char *out)
{
    return h_count_lines(out, "^[0-9]+\\. ");
}

static void filter_keeps_exactly_one_site(void **state)
{
    (void)state;
    h_result r = pp("-l", "--filter", "functions contains [ ... main cache_add ]", NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(allocs(r.out, 200), 3);
    assert_int_equal(calls(r.out), 3);
    /* A filter on names resolves the trace first, as -r would. */
    assert_non_null(h_find_line(r.out, "^version=.* filter=leaks\\|resolve, "));
    assert_int_equal(h_count_lines(r.out, "^\t0x[0-9a-f]+ cache_add\\(\\) at .*/tests/programs/filter_cache\\.c:6$"), 3);
    h_result_free(&r);
}

static void callstack_filter_with_line_keeps_one_site(void **state)
{
    (void)state;
    h_result r = pp("-l", "--filter", "callstack contains [ ... programs/ : _ filter_config.c : [5, 7] ]", NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(allocs(r.out, 100), 1);
    assert_int_equal(calls(r.out), 1);
    h_result_free(&r);
    r = pp("-l", "--filter", "callstack contains [ ... filter_config.c : [7, _] ]", NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(calls(r.out), 0);
    h_result_free(&r);
}

static void exclude_filter_drops_one_site(void **state)
{
    (void)state;
    h_result all = pp("-l", NULL, NULL, NULL);
    h_result r = pp("-l", "--exclude-filter", "string contains [ ... filter_config.c ]", NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(allocs(all.out, 100), 1);
    assert_int_equal(allocs(r.out, 100), 0);
    assert_int_equal(allocs(r.out, 200), 3);
    assert_int_equal(allocs(r.out, 300), 2);
    assert_int_equal(allocs(r.out, 400), 1);
    assert_int_equal(calls(r.out), calls(all.out) - 1);
    h_result_free(&r);
    h_result_free(&all);
}

static void suppressions_hide_two_sites_and_report_each(void **state)
{
    (void)state;
    char *supp = h_fmt("%s/app.supp", h_tmpdir());
    FILE *f = fopen(supp, "w");
    fputs("# known leaks of filter_app\n"
          "cache: functions contains [ ... main cache_add ]\n"
          "\n"
          "lib: modules contains [ ... libfilter_lib.so ... ]\n"
          "stale: functions contains [ ... no_such_function ]\n",
          f);
    fclose(f);
    h_result r = pp("-l", "--suppressions", supp, NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(allocs(r.out, 200), 0);
    assert_int_equal(allocs(r.out, 300), 0);
    assert_int_equal(allocs(r.out, 100), 1);
    assert_int_equal(allocs(r.out, 400), 1);
    assert_string_equal(r.err, "suppressed 3 block(s), 600 bytes: cache\n"
                               "suppressed 2 block(s), 600 bytes: lib\n"
                               "suppression matched nothing: stale\n");
    h_result_free(&r);
    free(supp);
}

static void modules_filter_works_without_debug_info(void **state)
{
    (void)state;
    h_result r = pp("-l", "--filter", "modules contains [ ... filter_app libfilter_lib.so ]", NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(allocs(r.out, 300), 2);
    assert_int_equal(calls(r.out), 2);
    /* Matched through the map lines: nothing was resolved. */
    assert_null(h_find_line(r.out, "^version=.*resolve"));
    assert_int_equal(h_count_lines(r.out, "^\t0x[0-9a-f]+ "), 0);
    h_result_free(&r);
}

static void release_follows_its_allocation(void **state)
{
    (void)state;
    /* Allocated directly by main: the 400-byte leak and the 50-byte block
     * main frees. Without -l the free of the 50 bytes comes with it. */
    h_result r = pp("--filter", "functions contains [ ... main ]", NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(allocs(r.out, 400), 1);
    assert_int_equal(allocs(r.out, 50), 1);
    char *line = h_find_line(r.out, "malloc\\(50\\) = 0x");
    assert_non_null(line);
    char *free_re = h_fmt("^[0-9]+\\. (\\[[0-9:.]+\\] )?free\\(%s\\)$", strstr(line, "0x"));
    assert_int_equal(h_count_lines(r.out, free_re), 1);
    assert_int_equal(calls(r.out), 3);
    h_result_free(&r);

    r = pp("--exclude-filter", "functions contains [ ... main ]", NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(allocs(r.out, 50), 0);
    assert_int_equal(h_count_lines(r.out, free_re), 0);
    assert_int_equal(allocs(r.out, 200), 3);
    h_result_free(&r);
    free(free_re);
    free(line);
}

static void check_filters_prints_normal_form_and_warns(void **state)
{
    (void)state;
    char *prog = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { prog, "--check-filters", "--filter", "big:callstack listcontains[ ... src/:_ ** ]&&size>=4096",
                           "--exclude-filter", "functions exclude [ ... ]", NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "# kept: --filter, --filter-file\n"
                               "big: callstack contains [ ... src/ ... ] && size >= 4k\n"
                               "# dropped: --exclude-filter\n"
                               "functions excludes [ ... ]\n");
    assert_string_equal(r.err, "--exclude-filter: warning: filter can never match: "
                               "'functions excludes [ ... ]' excludes every stack\n");
    h_result_free(&r);
    free(prog);
}

static void syntax_error_exits_2_with_its_column(void **state)
{
    (void)state;
    h_result r = pp("-l", "--filter", "callstack contains [ a.c : [20, 10] ]", NULL);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.err, "alloctrace-postproc: --filter: column 28: inverted line range [20, 10]\n");
    assert_string_equal(r.out, "");
    h_result_free(&r);
}

static void bad_filter_file_is_rejected_whole(void **state)
{
    (void)state;
    char *path = h_fmt("%s/bad.filters", h_tmpdir());
    FILE *f = fopen(path, "w");
    fputs("functions contains [ ... main ]\n"
          "  functions contains [ ... #\"a(\"# ]\n",
          f);
    fclose(f);
    h_result r = pp("--filter-file", path, NULL, NULL);
    assert_int_equal(r.status, 2);
    char *want = h_fmt("alloctrace-postproc: %s:2:32: invalid regex: missing closing parenthesis (at offset 2)\n", path);
    assert_string_equal(r.err, want);
    assert_string_equal(r.out, "");
    free(want);
    h_result_free(&r);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(filter_keeps_exactly_one_site),
        cmocka_unit_test(callstack_filter_with_line_keeps_one_site),
        cmocka_unit_test(exclude_filter_drops_one_site),
        cmocka_unit_test(suppressions_hide_two_sites_and_report_each),
        cmocka_unit_test(modules_filter_works_without_debug_info),
        cmocka_unit_test(release_follows_its_allocation),
        cmocka_unit_test(check_filters_prints_normal_form_and_warns),
        cmocka_unit_test(syntax_error_exits_2_with_its_column),
        cmocka_unit_test(bad_filter_file_is_rejected_whole),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
