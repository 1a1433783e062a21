/*
 * tests/integration/test_gate_traces.c: `alloctrace-postproc --gate` on
 * traces written by the test: whole ones are judged, and every way a trace
 * can be untrustworthy (truncated, counts not matching its summary, empty)
 * fails closed with 3.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER(filter)                                                                          \
    "version=2.0, arch=x86_64, timestamp=2026.11.22 10:43:07, process=./fake, pid=77, "        \
    "filter=" filter ", backtrace depth=32, origin=alloctrace 0.1.0, \n"                         \
    "<1> : memory (memory allocation in bytes)\n"
#define LEAK(i, size, id)                                                                       \
    #i ". malloc(" #size ") = 0x" #id "\n"                                                      \
    "\t0x401000 alloc_it() at /src/fake.c:12\n"                                                 \
    "\t0x401100 main() at /src/fake.c:30\n\n"
#define SUMMARY(blocks, bytes)                                                                  \
    "# Resource - memory (memory allocation in bytes):\n"                                       \
    "# " #blocks " block(s) leaked with total size of " #bytes " bytes\n"

static char *write_trace(const char *text)
{
    char *path = h_fmt("%s/trace.txt", h_tmpdir());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static h_result gate(const char *a, const char *b, const char *c, const char *d)
{
    char *pp = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { pp, "--gate", a, b, c, d, NULL };
    h_result r = h_run(argv, NULL, NULL);
    free(pp);
    return r;
}

static void whole_leaks_trace_is_judged(void **state)
{
    (void)state;
    char *t = write_trace(HEADER("leaks") LEAK(1, 100, 1000) LEAK(2, 50, 2000) SUMMARY(2, 150));
    h_result r = gate(t, NULL, NULL, NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "== process ./fake (pid 77), trace "));
    assert_non_null(strstr(r.out, "Leak of 150 byte(s) in 2 block(s) in alloc_it (fake.c:12), allocated from:\n"
                                  "    #0 alloc_it at /src/fake.c:12\n"
                                  "    #1 main at /src/fake.c:30\n"));
    assert_non_null(strstr(r.out, "SUMMARY: alloctrace: 150 byte(s) leaked in 2 allocation(s).\n"));
    h_result_free(&r);
    free(t);
}

static void leaks_trace_without_summary_is_truncated(void **state)
{
    (void)state;
    char *t = write_trace(HEADER("leaks") LEAK(1, 100, 1000) LEAK(2, 50, 2000));
    h_result r = gate(t, NULL, NULL, NULL);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "not judged: truncated trace (no leak summary"));
    h_result_free(&r);
    free(t);
}

static void summary_not_matching_the_blocks_read_is_incomplete(void **state)
{
    (void)state;
    char *t = write_trace(HEADER("leaks") LEAK(1, 100, 1000) SUMMARY(2, 150));
    h_result r = gate(t, NULL, NULL, NULL);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "incomplete trace: its summary says 2 block(s), 150 bytes; "
                                  "1 block(s), 100 bytes were read"));
    h_result_free(&r);
    free(t);
}

static void empty_trace_is_untrusted(void **state)
{
    (void)state;
    char *t = write_trace("");
    h_result r = gate(t, NULL, NULL, NULL);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "empty or unreadable trace"));
    h_result_free(&r);
    free(t);
}

static void full_trace_is_paired_before_judging(void **state)
{
    (void)state;
    char *t = write_trace(HEADER("") LEAK(1, 100, 1000) LEAK(2, 50, 2000) "3. free(0x1000)\n\n");
    h_result r = gate(t, NULL, NULL, NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "SUMMARY: alloctrace: 50 byte(s) leaked in 1 allocation(s).\n"));
    h_result_free(&r);
    free(t);
}

/* dlclose, then another object over the same range: the leak made before
 * the new map line is named by the old object, although pairing held it
 * back to the end of the trace (the resolve stage's rule, as with -lr). */
static void leak_before_a_replaced_map_is_named_by_the_old_object(void **state)
{
    (void)state;
    char *t = write_trace(HEADER("")
                          ": /nonexistent/old.so => 0x7f0000000000-0x7f0000100000\n"
                          "1. malloc(8) = 0x1000\n\t0x7f0000001234\n\n"
                          ": /nonexistent/new.so => 0x7f0000000000-0x7f0000100000\n"
                          "2. malloc(16) = 0x2000\n\t0x7f0000001234\n\n");
    h_result r = gate(t, "-q", NULL, NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "Leak of 8 byte(s) in 1 block(s) in old.so@0x7f0000001234, allocated from:\n"
                                  "    #0 0x7f0000001234 from /nonexistent/old.so\n"));
    assert_non_null(strstr(r.out, "Leak of 16 byte(s) in 1 block(s) in new.so+0x1234, allocated from:\n"
                                  "    #0 0x7f0000001234 from /nonexistent/new.so\n"));
    h_result_free(&r);
    free(t);
}

static void full_trace_with_cut_last_line_is_truncated(void **state)
{
    (void)state;
    char *t = write_trace(HEADER("") LEAK(1, 100, 1000) "2. mallo");
    h_result r = gate(t, "-q", NULL, NULL);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "truncated trace (its last line is cut)"));
    h_result_free(&r);
    free(t);
}

static void baseline_is_not_updated_from_an_untrusted_run(void **state)
{
    (void)state;
    char *t = write_trace(HEADER("leaks") LEAK(1, 100, 1000));
    char *base = h_fmt("%s/b.txt", h_tmpdir());
    h_result r = gate("--baseline", base, "--update-baseline", t);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "not updated: nothing trustworthy to judge"));
    assert_null(h_read_file(base, NULL));
    h_result_free(&r);
    free(base);
    free(t);
}

static void usage_errors_exit_2(void **state)
{
    (void)state;
    h_result r = gate("/nonexistent/trace.txt", NULL, NULL, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "/nonexistent/trace.txt: No such file or directory\n"));
    h_result_free(&r);
    r = gate("--process", "(", "x", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--process: bad regular expression '('"));
    h_result_free(&r);
    r = gate("--update-baseline", "x", NULL, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--update-baseline needs --baseline FILE"));
    h_result_free(&r);
    r = gate("--leak-exitcode", "300", "x", NULL);
    assert_int_equal(r.status, 2);
    h_result_free(&r);
    r = gate("--help", NULL, NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "Usage: alloctrace-postproc --gate [OPTIONS] TRACE...\n"));
    h_result_free(&r);
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, h_teardown)
    const struct CMUnitTest tests[] = {
        T(whole_leaks_trace_is_judged),
        T(leaks_trace_without_summary_is_truncated),
        T(summary_not_matching_the_blocks_read_is_incomplete),
        T(empty_trace_is_untrusted),
        T(full_trace_is_paired_before_judging),
        T(leak_before_a_replaced_map_is_named_by_the_old_object),
        T(full_trace_with_cut_last_line_is_truncated),
        T(baseline_is_not_updated_from_an_untrusted_run),
        T(usage_errors_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
