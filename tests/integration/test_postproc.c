/*
 * tests/integration/test_postproc.c: alloctrace-postproc end to end on a
 * real trace. tests/programs/postproc_sites leaks exactly six blocks from
 * three sites and prints their addresses; the trace of it goes through
 * -l, -c, -lc and the checks compare with what the program reported.
 */
#include "harness.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct traced {
    char *dir, *trace, *pp;
    char *addr[6];    /* leaked addresses as printed ("0x55...") */
    unsigned size[6];
} traced;

static traced trace_sites(void)
{
    traced t = { 0 };
    t.dir = h_tmpdir();
    t.trace = h_fmt("%s/sites.trace", t.dir);
    t.pp = h_path("postproc/alloctrace-postproc");
    char *prog = h_path("build/tests/programs/postproc_sites");
    const char *argv[] = { prog, NULL };
    const char *env[] = { "ALLOCTRACE_COMPRESS=none", NULL };   /* text the tests edit */
    h_result r = h_trace(t.trace, argv, env);
    assert_int_equal(r.status, 0);
    int n = 0;
    for (char *line = r.out; line && *line && n < 6; line = strchr(line, '\n') + 1) {
        char addr[64];
        unsigned size;
        assert_int_equal(sscanf(line, "leak %u %63s", &size, addr), 2);
        t.size[n] = size;
        t.addr[n++] = h_fmt("%s", addr);
        if (!strchr(line, '\n'))
            break;
    }
    assert_int_equal(n, 6);
    h_result_free(&r);
    free(prog);
    return t;
}

static void traced_free(traced *t)
{
    for (int i = 0; i < 6; i++)
        free(t->addr[i]);
    free(t->trace);
    free(t->pp);
    h_cleanup(); /* removes and frees t->dir */
}

/* The executable's range from its map line in a trace text. */
static void exe_range(const char *text, uint64_t *lo, uint64_t *hi)
{
    char *line = h_find_line(text, "^: .*/postproc_sites => 0x");
    assert_non_null(line);
    assert_int_equal(sscanf(strstr(line, " => ") + 4, "0x%" SCNx64 "-0x%" SCNx64, lo, hi), 2);
    free(line);
}

/* Calls (and their bytes) of records or groups whose backtrace goes through
 * the traced program's own code: the leaks the program made itself, not
 * those of the C library's start-up. Returns the number of such records
 * or groups. */
static int program_records(const char *text, int *calls, uint64_t *bytes)
{
    uint64_t lo, hi;
    exe_range(text, &lo, &hi);
    int groups = 0, ncalls = 0;
    uint64_t size = 0;
    bool mine = false;
    *calls = 0;
    *bytes = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        uint64_t a, n;
        if (len && *p >= '0' && *p <= '9') {
            const char *lp = strchr(p, '(');
            ncalls++;
            if (lp && lp < p + len && sscanf(lp, "(%" SCNu64 ") = 0x", &n) == 1 &&
                memchr(p, '=', len))
                size += n;
        } else if (len && *p == '\t' && sscanf(p, "\t0x%" SCNx64, &a) == 1) {
            mine |= a >= lo && a < hi;
        } else if (len == 0 && ncalls) {
            if (mine) {
                groups++;
                *calls += ncalls;
                *bytes += size;
            }
            ncalls = 0;
            size = 0;
            mine = false;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    return groups;
}

static h_result pp(const traced *t, const char *opts)
{
    return h_sh("%s %s %s", t->pp, opts, t->trace);
}

static void leaks_are_exactly_the_blocks_the_program_leaked(void **state)
{
    (void)state;
    traced t = trace_sites();
    h_result r = pp(&t, "-l");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    int calls;
    uint64_t bytes;
    assert_int_equal(program_records(r.out, &calls, &bytes), 6);
    assert_int_equal(calls, 6);
    assert_int_equal(bytes, 2500);
    for (int i = 0; i < 6; i++) {
        const char *fn = t.size[i] == 2000 || i < 3 ? "malloc" : "calloc";
        char *re = h_fmt("^[0-9]+\\. \\[[0-9:.]+\\] %s\\(%u\\) = %s$", fn, t.size[i], t.addr[i]);
        assert_int_equal(h_count_lines(r.out, re), 1);
        free(re);
    }
    assert_int_equal(h_count_lines(r.out, "^version=2\\.0, .*filter=leaks, "), 1);
    /* the summary counts every leak left, the C library's start-up ones too */
    char *want = h_fmt("^# %zu block\\(s\\) leaked with total size of [0-9]+ bytes$",
                       h_count_lines(r.out, "^[0-9]+\\. "));
    assert_int_equal(h_count_lines(r.out, want), 1);
    free(want);
    h_result_free(&r);
    traced_free(&t);
}

static void compress_groups_calls_by_site(void **state)
{
    (void)state;
    traced t = trace_sites();
    h_result r = pp(&t, "-c");
    assert_int_equal(r.status, 0);
    int calls;
    uint64_t bytes;
    /* the short-lived site, the realloc chain's malloc and its reallocs, the
     * three leak sites (releases have no backtrace by default) */
    assert_int_equal(program_records(r.out, &calls, &bytes), 6);
    assert_int_equal(calls, 50 + 1 + 8 + 6);
    assert_int_equal(bytes, 3200 + 8 + 4080 + 2500);
    assert_int_equal(h_count_lines(r.out, "^# allocation summary: 50 block\\(s\\) with total size 3200$"), 1);
    assert_int_equal(h_count_lines(r.out, "^# allocation summary: 8 block\\(s\\) with total size 4080$"), 1);
    assert_int_equal(h_count_lines(r.out, "^# allocation summary: 3 block\\(s\\) with total size 300$"), 1);
    assert_int_equal(h_count_lines(r.out, "^version=.*filter=compress, "), 1);
    h_result_free(&r);
    traced_free(&t);
}

static void leaks_compressed_and_sorted_by_size(void **state)
{
    (void)state;
    traced t = trace_sites();
    h_result r = pp(&t, "-lc -s size");
    assert_int_equal(r.status, 0);
    int calls;
    uint64_t bytes;
    assert_int_equal(program_records(r.out, &calls, &bytes), 3);
    assert_int_equal(calls, 6);
    assert_int_equal(bytes, 2500);
    const char *s2000 = strstr(r.out, "# allocation summary: 1 block(s) with total size 2000\n");
    const char *s300 = strstr(r.out, "# allocation summary: 3 block(s) with total size 300\n");
    const char *s200 = strstr(r.out, "# allocation summary: 2 block(s) with total size 200\n");
    assert_non_null(s2000);
    assert_non_null(s300);
    assert_non_null(s200);
    assert_true(s2000 < s300 && s300 < s200);
    assert_int_equal(h_count_lines(r.out, "^version=.*filter=leaks\\|compress, "), 1);
    h_result_free(&r);
    traced_free(&t);
}

/* The tracer's trace in the post-processor's normal form (full mode
 * writes the compressed form: calls of a backtrace together within each
 * chunk), in place. */
static void to_normal_form(const traced *t)
{
    h_result r = h_sh("%s %s > %s/normal && mv %s/normal %s", t->pp, t->trace, t->dir, t->dir,
                      t->trace);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
}

static void tracer_output_in_normal_form_comes_back_byte_for_byte(void **state)
{
    (void)state;
    traced t = trace_sites();
    to_normal_form(&t);
    h_result r = h_sh("%s %s | cmp - %s", t.pp, t.trace, t.trace);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    traced_free(&t);
}

static void filtered_output_is_idempotent(void **state)
{
    (void)state;
    traced t = trace_sites();
    /* the same filters again change nothing */
    h_result r = h_sh("%s -lc -s count %s -o %s/u && %s -lc -s count %s/u > %s/v && cmp %s/u %s/v",
                      t.pp, t.trace, t.dir, t.pp, t.dir, t.dir, t.dir, t.dir);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    h_result_free(&r);
    traced_free(&t);
}

static void truncated_trace_is_one_warning_and_the_rest_is_used(void **state)
{
    (void)state;
    traced t = trace_sites();
    to_normal_form(&t);
    /* cut the file 40 bytes before its end: inside the last record (a leak) */
    struct stat st;
    assert_int_equal(stat(t.trace, &st), 0);
    assert_int_equal(truncate(t.trace, st.st_size - 40), 0);
    h_result r = pp(&t, "-l");
    assert_int_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.err, "."), 1);
    assert_int_equal(h_count_lines(r.err, "^.*sites\\.trace:[0-9]+: warning: truncated last"), 1);
    int calls;
    uint64_t bytes;
    assert_int_equal(program_records(r.out, &calls, &bytes), 5);
    assert_int_equal(bytes, 2400);
    h_result_free(&r);
    traced_free(&t);
}

static void malformed_line_warns_and_strict_fails_with_status_2(void **state)
{
    (void)state;
    traced t = trace_sites();
    h_result a = h_sh("echo '9999. malloc(oops' >> %s && %s -l %s", t.trace, t.pp, t.trace);
    assert_int_equal(a.status, 0);
    assert_int_equal(h_count_lines(a.err, "sites\\.trace:[0-9]+: warning: malformed call line"), 1);
    h_result b = pp(&t, "--strict -l");
    assert_int_equal(b.status, 2);
    assert_int_equal(h_count_lines(b.err, "sites\\.trace:[0-9]+: error: malformed call line"), 1);
    h_result q = pp(&t, "-q -l");
    assert_int_equal(q.status, 0);
    assert_string_equal(q.err, "");
    h_result_free(&a);
    h_result_free(&b);
    h_result_free(&q);
    traced_free(&t);
}

static void option_errors_are_one_line_and_status_2(void **state)
{
    (void)state;
    char *bin = h_path("postproc/alloctrace-postproc");
    const char *cases[] = { "-c -s bogus", "--no-such-option", "-b", "-b 0", "-b x",
                            "-s size", "--call-address nothing", "- b", "-C 0xzz" };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        h_result r = h_sh("%s %s < /dev/null", bin, cases[i]);
        assert_int_equal(r.status, 2);
        assert_int_equal(h_count_lines(r.err, "."), 1);
        assert_int_equal(h_count_lines(r.err, "^alloctrace-postproc: "), 1);
        assert_string_equal(r.out, "");
        h_result_free(&r);
    }
    /* A file that cannot be read is an I/O error: 1 (README.md). */
    h_result m = h_sh("%s /no/such/trace", bin);
    assert_int_equal(m.status, 1);
    assert_int_equal(h_count_lines(m.err, "^alloctrace-postproc: /no/such/trace: "), 1);
    h_result_free(&m);
    free(bin);
}

static void version_and_help(void **state)
{
    (void)state;
    char *bin = h_path("postproc/alloctrace-postproc");
    h_result v = h_sh("%s --version", bin);
    assert_int_equal(v.status, 0);
    assert_string_equal(v.out, "alloctrace-postproc 0.1.0\n");
    h_result h = h_sh("%s --help", bin);
    assert_int_equal(h.status, 0);
    assert_int_equal(h_count_lines(h.out, "^Usage: alloctrace-postproc "), 1);
    assert_int_equal(h_count_lines(h.out, "--filter-leaks"), 1);
    h_result_free(&v);
    h_result_free(&h);
    free(bin);
}

static void excluding_the_frees_does_not_turn_freed_blocks_into_leaks(void **state)
{
    (void)state;
    traced t = trace_sites();
    /* Every release's index in an --exclude file: leaks are paired before
     * selection, so the result is still the six real leaks. */
    h_result r = h_sh("grep -E '^[0-9]+\\. .*(free|realloc)\\(0x' %s | cut -d. -f1 > %s/ex && "
                      "test $(wc -l < %s/ex) -ge 59 && %s -l --exclude %s/ex %s",
                      t.trace, t.dir, t.dir, t.pp, t.dir, t.trace);
    assert_int_equal(r.status, 0);
    int calls;
    uint64_t bytes;
    assert_int_equal(program_records(r.out, &calls, &bytes), 6);
    assert_int_equal(bytes, 2500);
    h_result all = pp(&t, "-l");
    assert_string_equal(r.out, all.out);
    h_result_free(&all);
    h_result_free(&r);
    traced_free(&t);
}

static void leaks_mode_trace_comes_back_and_pairs_to_itself(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/leaks.trace", dir);
    char *prog = h_path("build/tests/programs/postproc_sites");
    char *bin = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { prog, NULL };
    const char *env[] = { "ALLOCTRACE_MODE=leaks", NULL };
    h_result t = h_trace(trace, argv, env);
    assert_int_equal(t.status, 0);
    /* the tracer's leaks mode already wrote the leaks (compressed, by site
     * and kind): a plain run writes them plain, -l changes nothing, and the
     * plain form reads back to itself */
    h_result r = h_sh("%s %s > %s/plain && %s -l %s | cmp - %s/plain && %s %s/plain | cmp - %s/plain",
                      bin, trace, dir, bin, trace, dir, bin, dir, dir);
    assert_int_equal(r.status, 0);
    char *plain = h_fmt("%s/plain", dir);
    char *text = h_read_file(plain, NULL);
    assert_non_null(strstr(text, ", filter=leaks, "));
    int calls;
    uint64_t bytes;
    assert_int_equal(program_records(text, &calls, &bytes), 6);
    assert_int_equal(bytes, 2500);
    free(text);
    text = h_read_file(trace, NULL);
    assert_non_null(strstr(text, ", filter=leaks|compress, "));
    assert_int_equal(program_records(text, &calls, &bytes), 3);   /* three sites */
    assert_int_equal(calls, 6);
    assert_int_equal(bytes, 2500);
    free(text);
    free(plain);
    h_result_free(&t);
    h_result_free(&r);
    free(trace);
    free(prog);
    free(bin);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(leaks_are_exactly_the_blocks_the_program_leaked),
        cmocka_unit_test(compress_groups_calls_by_site),
        cmocka_unit_test(leaks_compressed_and_sorted_by_size),
        cmocka_unit_test(tracer_output_in_normal_form_comes_back_byte_for_byte),
        cmocka_unit_test(leaks_mode_trace_comes_back_and_pairs_to_itself),
        cmocka_unit_test(filtered_output_is_idempotent),
        cmocka_unit_test(truncated_trace_is_one_warning_and_the_rest_is_used),
        cmocka_unit_test(malformed_line_warns_and_strict_fails_with_status_2),
        cmocka_unit_test(option_errors_are_one_line_and_status_2),
        cmocka_unit_test(version_and_help),
        cmocka_unit_test(excluding_the_frees_does_not_turn_freed_blocks_into_leaks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
