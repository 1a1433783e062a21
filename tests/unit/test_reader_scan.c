/* tests/unit/test_reader_scan.c: a zstd trace read from a file, with call
 * lines lexed and frame lists found ahead on the decompression thread
 * (postproc/read/scan.c), reads exactly as the same text read from memory
 * without hints: the same output, messages, line numbers and status. The
 * tests force the hints on (ALLOCTRACE_PP_SCAN=always, or auto) and check
 * that the reader did take some, so the path under test is the hinted one
 * (by default a machine of two CPUs reads no hints at all). The
 * thread's buffers are 256 KiB: the big traces cut lines and frame lists
 * at their ends. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "pp_run.h"

/* A trace of n calls: names, sizes and frame lists of varying lengths (so
 * that lines fall across the thread's buffer ends at every offset), LF or
 * CRLF. Call `bad` (0: none) has a malformed line instead. */
static char *make_trace(unsigned n, bool crlf, unsigned bad, size_t *len)
{
    const char *eol = crlf ? "\r\n" : "\n";
    size_t cap = 256 + (size_t)n * 1200, l = 0;
    char *s = malloc(cap);
    l += (size_t)snprintf(s + l, cap - l, "version=2.0, arch=x86_64, %s<1> : memory (bytes)%s", eol, eol);
    for (unsigned i = 1; i <= n; i++) {
        unsigned k = i % 13;
        if (i == bad)
            l += (size_t)snprintf(s + l, cap - l, "%u. malloc(%u) = 0xZZ%s", i, k, eol);
        else if (i % 3 == 0)
            l += (size_t)snprintf(s + l, cap - l, "%u. [00:00:%02u.%06u] free%.*s(0x%x)%s", i, i % 60,
                                  i % 1000000, (int)k, "_________________", i * 16 - 48, eol);
        else
            l += (size_t)snprintf(s + l, cap - l, "%u. [00:00:%02u.%06u] malloc%.*s(%u) = 0x%x%s", i,
                                  i % 60, i % 1000000, (int)k, "xxxxxxxxxxxxxxxxx", i % 977, i * 16, eol);
        if (i % 7 == 0)
            l += (size_t)snprintf(s + l, cap - l, "# allocation summary: 1 block(s) with total size %u%s",
                                  i % 977, eol);
        for (unsigned f = 0; f <= (i * 7) % 41; f++)
            l += (size_t)snprintf(s + l, cap - l, "\t0x%x%s", 0x400000 + (i % 11) * 64 + f, eol);
        l += (size_t)snprintf(s + l, cap - l, "%s", eol);
    }
    *len = l;
    return s;
}

static char *zstd_of(const char *data, size_t len, size_t *zlen)
{
    size_t cap = ZSTD_compressBound(len);
    char *z = malloc(cap);
    *zlen = ZSTD_compress(z, cap, data, len, 1);
    assert_false(ZSTD_isError(*zlen));
    return z;
}

/* text read from memory (no hints) and as a zstd file (hints): both results */
static void read_both(const char *text, size_t len, bool strict, pp_result *plain, pp_result *hinted)
{
    pp_opts mem = { .strict = strict }, file = { .strict = strict, .from_fd = true };
    size_t zlen;
    char *z = zstd_of(text, len, &zlen);
    *plain = pp_run_bytes(text, len, &mem);
    *hinted = pp_run_bytes(z, zlen, &file);
    free(z);
}

static void assert_same(const pp_result *a, const pp_result *b)
{
    assert_int_equal(a->rc, b->rc);
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->warnings, b->warnings);
    assert_string_equal(a->msgs, b->msgs);
    assert_string_equal(a->out, b->out);
}

static int hints_always(void **state)
{
    (void)state;
    setenv("ALLOCTRACE_PP_SCAN", "always", 1);
    return 0;
}

static int hints_auto(void **state)
{
    (void)state;
    setenv("ALLOCTRACE_PP_SCAN", "auto", 1);
    return 0;
}

static int hints_default(void **state)
{
    (void)state;
    unsetenv("ALLOCTRACE_PP_SCAN");
    return 0;
}

static void trace_smaller_than_one_buffer_reads_the_same(void **state)
{
    (void)state;
    size_t len;
    char *t = make_trace(5, false, 0, &len);
    pp_result a, b;
    read_both(t, len, true, &a, &b);
    assert_int_equal(a.rc, 0);
    assert_same(&a, &b);
    assert_true(b.hints >= 5); /* the calls, and the frame lists seen first */
    pp_free(&a);
    pp_free(&b);
    free(t);
}

static void lines_and_frame_lists_across_buffer_ends_read_the_same(void **state)
{
    (void)state;
    size_t len;
    char *t = make_trace(40000, false, 0, &len); /* ~12 MB: ~45 buffer ends */
    assert_true(len > 8u << 20);
    pp_result a, b;
    read_both(t, len, true, &a, &b);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.warnings, 0);
    assert_same(&a, &b);
    assert_true(b.hints > 40000);
    pp_free(&a);
    pp_free(&b);
    free(t);
}

static void crlf_trace_reads_the_same_with_hints(void **state)
{
    (void)state;
    size_t len;
    char *t = make_trace(20000, true, 0, &len);
    pp_result a, b;
    read_both(t, len, true, &a, &b);
    assert_int_equal(a.rc, 0);
    assert_same(&a, &b);
    assert_true(b.hints > 20000);
    pp_free(&a);
    pp_free(&b);
    free(t);
}

/* The scanner makes no hint for the bad line; the reader reads it and
 * warns with its own line number, in the middle of a buffer. */
static void malformed_line_mid_buffer_is_reported_at_its_line(void **state)
{
    (void)state;
    size_t len;
    char *t = make_trace(30000, false, 12345, &len);
    pp_result a, b;
    read_both(t, len, false, &a, &b);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.warnings, 1);
    /* the bad call's line: count the lines before it */
    const char *at = strstr(t, "\n12345. malloc");
    assert_non_null(at);
    unsigned line = 2;
    for (const char *p = t; p < at; p++)
        line += *p == '\n';
    char want[128];
    snprintf(want, sizeof want, "t.trace:%u: warning: malformed call line: \"12345. malloc(", line);
    assert_non_null(strstr(b.msgs, want));
    assert_same(&a, &b);
    pp_free(&a);
    pp_free(&b);
    free(t);
}

/* Under --strict the bad line ends the read early, with hints of later
 * buffers made and never used, and the decompression thread still
 * running: the same records up to there, the same error, no hang. */
static void strict_error_mid_trace_stops_early_with_the_same_result(void **state)
{
    (void)state;
    size_t len;
    char *t = make_trace(40000, false, 9000, &len);
    pp_result a, b;
    read_both(t, len, true, &a, &b);
    assert_int_equal(b.rc, -1);
    assert_int_equal(b.status, AT_EXIT_USAGE);
    assert_non_null(strstr(b.msgs, "error: malformed call line: \"9000. malloc("));
    assert_same(&a, &b);
    assert_true(b.hints > 1000);
    pp_free(&a);
    pp_free(&b);
    free(t);
}

/* With ALLOCTRACE_PP_SCAN=auto call lines are lexed only while the reader
 * is behind: whatever the thread decides, buffer by buffer, the result is
 * the same. */
static void calls_lexed_only_while_the_reader_is_behind_read_the_same(void **state)
{
    (void)state;
    size_t len;
    char *t = make_trace(40000, false, 0, &len);
    pp_result a, b;
    read_both(t, len, true, &a, &b);
    assert_same(&a, &b);
    assert_true(b.hints > 0); /* the frame lists, in every buffer */
    pp_free(&a);
    pp_free(&b);
    free(t);
}

/* By default, on fewer than three CPUs (here: the test pinned to one),
 * nothing is read ahead: three busy threads on two cores cost more than
 * they saved. The read is the same. */
static void nothing_read_ahead_on_fewer_than_three_cpus(void **state)
{
    (void)state;
    cpu_set_t old, one;
    assert_int_equal(sched_getaffinity(0, sizeof old, &old), 0);
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &old)) {
            CPU_SET(c, &one);
            break;
        }
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    size_t len;
    char *t = make_trace(20000, false, 0, &len);
    pp_result a, b;
    read_both(t, len, true, &a, &b);
    assert_int_equal(sched_setaffinity(0, sizeof old, &old), 0);
    assert_same(&a, &b);
    assert_int_equal(b.hints, 0);
    pp_free(&a);
    pp_free(&b);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(trace_smaller_than_one_buffer_reads_the_same, hints_always),
        cmocka_unit_test_setup(lines_and_frame_lists_across_buffer_ends_read_the_same, hints_always),
        cmocka_unit_test_setup(crlf_trace_reads_the_same_with_hints, hints_always),
        cmocka_unit_test_setup(malformed_line_mid_buffer_is_reported_at_its_line, hints_always),
        cmocka_unit_test_setup(strict_error_mid_trace_stops_early_with_the_same_result, hints_always),
        cmocka_unit_test_setup(calls_lexed_only_while_the_reader_is_behind_read_the_same,
                               hints_auto),
        cmocka_unit_test_setup(nothing_read_ahead_on_fewer_than_three_cpus, hints_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
