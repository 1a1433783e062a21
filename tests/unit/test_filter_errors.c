/*
 * tests/unit/test_filter_errors.c: every syntax error of docs/filters.md
 * section 6, with its exact column, location and message; filter files
 * (comments, names, labels, "FILE:LINE:COLUMN", rejected whole); the
 * printed error with its caret.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filter.h"

/* Parses expr, which must fail at `column` with a message starting with
 * `message`; the location is "--filter: column COLUMN". */
static void expect_error(const char *expr, int column, const char *message)
{
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    int rc = at_filter_set_add_expr(s, expr, NULL, &err);
    if (rc == 0)
        fail_msg("parsed, expected an error: %s", expr);
    if (err.column != column || strncmp(err.message, message, strlen(message)) != 0)
        fail_msg("%s\n  got column %d \"%s\"\n  expected column %d \"%s...\"", expr, err.column, err.message,
                 column, message);
    char loc[64];
    snprintf(loc, sizeof loc, "--filter: column %d", column);
    assert_string_equal(err.location, loc);
    assert_string_equal(err.source_line, expr);
    assert_int_equal(at_filter_set_count(s), 0);
    at_filter_error_clear(&err);
    assert_null(err.message);
    at_filter_set_free(s);
}

static void unknown_kind(void **state)
{
    (void)state;
    expect_error("callstak contains [ a ]", 1, "unknown list kind 'callstak'");
    expect_error("size > 1 && frames contains [ a ]", 13, "unknown list kind 'frames'");
    expect_error("[ a ]", 1, "unknown list kind '['");
}

static void unknown_predicate(void **state)
{
    (void)state;
    expect_error("callstack has [ a ]", 11, "unknown predicate 'has'");
    expect_error("functions containz[ a ]", 11, "unknown predicate 'containz'");
    expect_error("functions [ a ]", 11, "missing predicate after 'functions'");
}

static void missing_open_bracket(void **state)
{
    (void)state;
    expect_error("callstack contains a ]", 20, "missing '[' to open the callstack list");
    expect_error("modules excludes", 17, "missing '[' to open the modules list");
}

static void missing_close_bracket(void **state)
{
    (void)state;
    expect_error("callstack contains [ a", 23, "missing ']' to close the list opened at column 20");
    expect_error("string contains [ a b   ", 22, "missing ']'");
}

static void text_after_close_bracket(void **state)
{
    (void)state;
    expect_error("callstack contains [ a ] b", 26, "unexpected 'b' after the callstack filter");
    expect_error("functions contains [ a ]]", 25, "unexpected ']'");
    expect_error("size > 4k 5", 11, "unexpected '5' after the size filter");
    expect_error("functions contains [ a ] & size > 1", 26, "unexpected '&'");
}

static void unclosed_regex(void **state)
{
    (void)state;
    expect_error("functions contains [ #\"abc ]", 22, "unclosed regex");
    /* "# followed by other text does not close it */
    expect_error("functions contains [ #\"abc\"#x ]", 22, "unclosed regex");
}

static void invalid_regex_reports_pcre2_message_and_offset(void **state)
{
    (void)state;
    /* The pattern starts at column 24; PCRE2 reports offset 3 (its end). */
    expect_error("functions contains [ #\"a(b\"# ]", 27,
                 "invalid regex: missing closing parenthesis (at offset 3)");
    expect_error("functions contains [ #\"x{2,1}\"# ]", 29,
                 "invalid regex: numbers out of order in {} quantifier (at offset 5)");
    expect_error("string contains [ #\"*a\"# ]", 21,
                 "invalid regex: quantifier does not follow a repeatable item (at offset 0)");
}

static void line_spec_outside_callstack_lists(void **state)
{
    (void)state;
    expect_error("string contains [ a.c : 5 ]", 23, "a line spec is only allowed in a callstack list, not in a string list");
    expect_error("string contains [ a.c:5 ]", 22, "a line spec is only allowed in a callstack list, not in a string list");
    expect_error("functions contains [ #\"f\"#:5 ]", 27, "a line spec is only allowed in a callstack list, not in a functions list");
    expect_error("modules contains [ libc.so: _ ]", 27, "a line spec is only allowed in a callstack list, not in a modules list");
    expect_error("functions contains [ f:[1, 2] ]", 23, "a line spec is only allowed in a callstack list, not in a functions list");
}

static void colon_without_line_spec(void **state)
{
    (void)state;
    expect_error("callstack contains [ a.c : ]", 26, "':' without a line spec");
    expect_error("callstack contains [ a.c:", 25, "':' without a line spec");
}

static void empty_file_name(void **state)
{
    (void)state;
    expect_error("callstack contains [ : 5 ]", 22, "empty file name before ':'");
    expect_error("callstack contains [ a.c : 5 : 6 ]", 30, "empty file name before ':'");
}

static void bad_line_specs(void **state)
{
    (void)state;
    expect_error("callstack contains [ a.c : [5] ]", 30, "bad line spec: expected ',' in the range [LO, HI]");
    expect_error("callstack contains [ a.c : [a, 6] ]", 29, "bad line spec 'a'");
    expect_error("callstack contains [ a.c : [5, ] ]", 32, "bad line spec: expected a line number or _");
    expect_error("callstack contains [ a.c : -1 ]", 28, "bad line spec '-1'");
    expect_error("callstack contains [ a.c : 1.5 ]", 28, "bad line spec '1.5'");
    expect_error("callstack contains [ a.c : 5x ]", 28, "bad line spec '5x'");
    expect_error("callstack contains [ a.c : [1, 2, 3] ]", 33, "bad line spec: expected ']' to end the range");
    expect_error("callstack contains [ a.c : 99999999999 ]", 28, "line number '99999999999' is too large");
    expect_error("callstack contains [ a.c : b.c ]", 28, "bad line spec 'b.c'");
}

static void inverted_range(void **state)
{
    (void)state;
    expect_error("callstack contains [ a.c : [20, 10] ]", 28, "inverted line range [20, 10]");
    expect_error("size in [2k, 1k]", 9, "inverted size range");
}

static void wildcard_with_line_spec(void **state)
{
    (void)state;
    expect_error("callstack contains [ ... : 5 ]", 26, "a wildcard takes no line spec");
    expect_error("callstack contains [ **:_ ]", 24, "a wildcard takes no line spec");
}

static void and_with_nothing_after(void **state)
{
    (void)state;
    expect_error("callstack contains [ a ] &&", 26, "'&&' with nothing after it");
    expect_error("size > 1 &&   ", 10, "'&&' with nothing after it");
    expect_error("size > 1 && && size < 2", 13, "unknown list kind '&&'");
}

static void bad_sizes(void **state)
{
    (void)state;
    expect_error("size 5", 6, "expected =, <, <=, >, >= or 'in' after 'size'");
    expect_error("size > 5q", 8, "bad size '5q'");
    expect_error("size > ", 8, "bad size");
    expect_error("size > 99999999999999999999", 8, "size '99999999999999999999' is too large");
    expect_error("size > 17179869184G", 8, "size '17179869184G' is too large");
    expect_error("size in [1, ]", 13, "bad size");
    expect_error("size in 1, 2", 9, "missing '[' after 'size in'");
}

static void empty_filters(void **state)
{
    (void)state;
    expect_error("", 1, "empty filter");
    expect_error("   ", 4, "empty filter");
    expect_error("leak-1:  ", 10, "empty filter after the name");
}

static void nested_bracket_in_a_list(void **state)
{
    (void)state;
    expect_error("functions contains [ [ a ] ]", 22, "unexpected '[' inside a list");
}

/* ---- files --------------------------------------------------------------- */

static char *write_tmp(const char *text)
{
    char *path = strdup("/tmp/test_filter_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void file_with_comments_names_and_labels(void **state)
{
    (void)state;
    char *path = write_tmp("# known leaks\n"
                           "\n"
                           "   # indented comment\n"
                           "zlib-init: modules contains [ ... libz.so.1 ... ]\r\n"
                           "functions contains [ ... xstrdup ]\n"
                           "  \t\n"
                           "big.one: size >= 1M");
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    assert_int_equal(at_filter_set_add_file(s, path, &err), 0);
    assert_int_equal(at_filter_set_count(s), 3);
    assert_string_equal(at_filter_label(s, 0), "zlib-init");
    char want[128];
    snprintf(want, sizeof want, "%s:5", path);
    assert_string_equal(at_filter_label(s, 1), want);
    assert_string_equal(at_filter_label(s, 2), "big.one");
    at_filter_set_free(s);
    unlink(path);
    free(path);
}

static void file_with_an_error_is_rejected_whole(void **state)
{
    (void)state;
    char *path = write_tmp("functions contains [ ... a ]\n"
                           "# fine so far\n"
                           "functions contains [ ... b ]\n"
                           "string contains [ x.c : 3 ]\n"
                           "functions contains [ ... c ]\n");
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    assert_int_equal(at_filter_set_add_expr(s, "size > 1", NULL, &err), 0);
    assert_int_equal(at_filter_set_add_file(s, path, &err), -1);
    char want[128];
    snprintf(want, sizeof want, "%s:4:23", path);
    assert_string_equal(err.location, want);
    assert_int_equal(err.column, 23);
    assert_string_equal(err.source_line, "string contains [ x.c : 3 ]");
    assert_int_equal(at_filter_set_count(s), 1);
    at_filter_error_clear(&err);
    at_filter_set_free(s);
    unlink(path);
    free(path);
}

static void unreadable_file_is_an_error_without_column(void **state)
{
    (void)state;
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    assert_int_equal(at_filter_set_add_file(s, "/nonexistent/filters.txt", &err), -1);
    assert_string_equal(err.location, "/nonexistent/filters.txt");
    assert_string_equal(err.message, "cannot open filter file: No such file or directory");
    assert_int_equal(err.column, 0);
    at_filter_error_clear(&err);
    at_filter_set_free(s);
}

static void nul_byte_in_a_file_is_an_error(void **state)
{
    (void)state;
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    const char text[] = "size > 1\nsize > \0 2\n";
    assert_int_equal(at_filter_set_add_text(s, text, sizeof text - 1, "f.txt", &err), -1);
    assert_string_equal(err.location, "f.txt:2:8");
    assert_string_equal(err.message, "NUL byte in a filter file");
    at_filter_error_clear(&err);
    assert_int_equal(at_filter_set_count(s), 0);
    at_filter_set_free(s);
}

static void error_print_with_and_without_caret(void **state)
{
    (void)state;
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    assert_int_equal(at_filter_set_add_expr(s, "\tcallstack contains [ a ] x", "--exclude-filter", &err), -1);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    at_filter_error_print(out, &err, false);
    fflush(out);
    assert_string_equal(buf, "alloctrace-postproc: --exclude-filter: column 27: unexpected 'x' after the callstack filter (expected '&&' or the end)\n");
    rewind(out);
    at_filter_error_print(out, &err, true);
    fclose(out);
    assert_string_equal(buf, "alloctrace-postproc: --exclude-filter: column 27: unexpected 'x' after the callstack filter (expected '&&' or the end)\n"
                             "  \tcallstack contains [ a ] x\n"
                             "  \t                         ^\n");
    free(buf);
    at_filter_error_clear(&err);
    at_filter_set_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unknown_kind),
        cmocka_unit_test(unknown_predicate),
        cmocka_unit_test(missing_open_bracket),
        cmocka_unit_test(missing_close_bracket),
        cmocka_unit_test(text_after_close_bracket),
        cmocka_unit_test(unclosed_regex),
        cmocka_unit_test(invalid_regex_reports_pcre2_message_and_offset),
        cmocka_unit_test(line_spec_outside_callstack_lists),
        cmocka_unit_test(colon_without_line_spec),
        cmocka_unit_test(empty_file_name),
        cmocka_unit_test(bad_line_specs),
        cmocka_unit_test(inverted_range),
        cmocka_unit_test(wildcard_with_line_spec),
        cmocka_unit_test(and_with_nothing_after),
        cmocka_unit_test(bad_sizes),
        cmocka_unit_test(empty_filters),
        cmocka_unit_test(nested_bracket_in_a_list),
        cmocka_unit_test(file_with_comments_names_and_labels),
        cmocka_unit_test(file_with_an_error_is_rejected_whole),
        cmocka_unit_test(unreadable_file_is_an_error_without_column),
        cmocka_unit_test(nul_byte_in_a_file_is_an_error),
        cmocka_unit_test(error_print_with_and_without_caret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
