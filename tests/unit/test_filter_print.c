/*
 * tests/unit/test_filter_print.c: what --check-filters shows (the normal
 * form, which parses back to itself, and the lint warnings) and the
 * suppression report.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

/* The normal form of one filter (a new string). */
static char *normal(const char *expr)
{
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    if (at_filter_set_add_expr(s, expr, NULL, &err) != 0)
        fail_msg("%s: %s", err.location, err.message);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    at_filter_print(out, s, 0);
    fclose(out);
    at_filter_set_free(s);
    return buf;
}

static void expect_normal(const char *expr, const char *want)
{
    char *got = normal(expr);
    assert_string_equal(got, want);
    /* The normal form is a fixed point. */
    char *again = normal(got);
    assert_string_equal(again, want);
    free(again);
    free(got);
}

static void normal_form_canonicalises_spellings(void **state)
{
    (void)state;
    expect_normal("string listcontains[ file_name_1 file_name_2 ]", "string contains [ file_name_1 file_name_2 ]");
    expect_normal("functions listexcludes[... ** ... f]", "functions excludes [ ... f ]");
    expect_normal("functions exclude [ ]", "functions excludes [ ]");
    expect_normal("modules contain [ ... #\"libfoo\\.so\"# ... ]", "modules contains [ ... #\"libfoo\\.so\"# ... ]");
}

static void normal_form_of_line_specs(void **state)
{
    (void)state;
    expect_normal("callstack contains [ ... src/ : _ ... ]", "callstack contains [ ... src/ ... ]");
    expect_normal("callstack contains [ a.c:007 b.c : [+50,_] c.c:[_,102] d.c:[_,_] e.c:[3, 3] ]",
                  "callstack contains [ a.c : 7 b.c : [50, _] c.c : [_, 102] d.c e.c : 3 ]");
    expect_normal("callstack contains [ #\".*/\"#:107 ]", "callstack contains [ #\".*/\"# : 107 ]");
}

static void normal_form_of_sizes_names_and_and(void **state)
{
    (void)state;
    expect_normal("big:callstack contains [ ... parser.c : [50, _] ... ]&&size>=4096",
                  "big: callstack contains [ ... parser.c : [50, _] ... ] && size >= 4k");
    expect_normal("size == 1048576 && size < 3221225472 && size > 1000 && size <= 0",
                  "size = 1M && size < 3G && size > 1000 && size <= 0");
    expect_normal("size in [0, 2k]", "size in [_, 2k]");
    expect_normal("size in [ 1025 , _ ]", "size in [1025, _]");
}

static void normal_form_keeps_tricky_regexes(void **state)
{
    (void)state;
    expect_normal("functions contains [ #\"a\"#x\"# #\"b\"\"# ]", "functions contains [ #\"a\"#x\"# #\"b\"\"# ]");
    expect_normal("functions contains [ #\"^ns::f\\(int\\) const$\"# ]",
                  "functions contains [ #\"^ns::f\\(int\\) const$\"# ]");
}

static char *lint(const char *expr, size_t *count)
{
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    if (at_filter_set_add_expr(s, expr, "--filter", &err) != 0)
        fail_msg("%s: %s", err.location, err.message);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    *count = at_filter_set_lint(s, out);
    fclose(out);
    at_filter_set_free(s);
    return buf;
}

static void expect_lint(const char *expr, size_t want_count, const char *want)
{
    size_t n;
    char *got = lint(expr, &n);
    assert_string_equal(got, want);
    assert_int_equal(n, want_count);
    free(got);
}

static void lint_finds_filters_that_never_match(void **state)
{
    (void)state;
    expect_lint("functions excludes [ ... ]", 1,
                "--filter: warning: filter can never match: 'functions excludes [ ... ]' excludes every stack\n");
    expect_lint("size < 0", 1, "--filter: warning: filter can never match: no size satisfies its size conditions\n");
    expect_lint("size > 4k && size < 1k", 1,
                "--filter: warning: filter can never match: no size satisfies its size conditions\n");
    expect_lint("size = 5 && size in [6, _]", 1,
                "--filter: warning: filter can never match: no size satisfies its size conditions\n");
}

static void lint_finds_filters_that_match_everything(void **state)
{
    (void)state;
    expect_lint("callstack contains [ ... ]", 1, "--filter: warning: filter matches every allocation\n");
    expect_lint("x: modules contains [ ** ... ] && size >= 0 && size in [_, _]", 1,
                "x: warning: filter matches every allocation\n");
    expect_lint("functions contains [ ]", 1,
                "--filter: warning: '[ ]' matches only allocations without any stack frame\n");
}

static void lint_is_quiet_on_ordinary_filters(void **state)
{
    (void)state;
    expect_lint("functions contains [ ... f ... ]", 0, "");
    expect_lint("callstack contains [ ... ] && size > 0", 0, "");
    expect_lint("functions excludes [ ... f ]", 0, "");
    expect_lint("size in [5, 5]", 0, "");
}

static void tally_report_lists_use_and_unused(void **state)
{
    (void)state;
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    assert_int_equal(at_filter_set_add_expr(s, "zlib: modules contains [ ... libz.so.1 ... ]", NULL, &err), 0);
    assert_int_equal(at_filter_set_add_expr(s, "functions contains [ ... f ]", "--suppressions", &err), 0);
    assert_int_equal(at_filter_set_add_expr(s, "old: functions contains [ ... g ]", NULL, &err), 0);
    at_filter_tally t[3] = { { 3, 96 }, { 0, 0 }, { 1, 4096 } };
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    at_filter_report_tally(out, s, t);
    fclose(out);
    assert_string_equal(buf, "suppressed 3 block(s), 96 bytes: zlib\n"
                             "suppressed 1 block(s), 4096 bytes: old\n"
                             "suppression matched nothing: --suppressions\n");
    free(buf);
    at_filter_set_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(normal_form_canonicalises_spellings),
        cmocka_unit_test(normal_form_of_line_specs),
        cmocka_unit_test(normal_form_of_sizes_names_and_and),
        cmocka_unit_test(normal_form_keeps_tricky_regexes),
        cmocka_unit_test(lint_finds_filters_that_never_match),
        cmocka_unit_test(lint_finds_filters_that_match_everything),
        cmocka_unit_test(lint_is_quiet_on_ordinary_filters),
        cmocka_unit_test(tally_report_lists_use_and_unused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
