/*
 * tests/fuzz/fuzz_filter.c: the filter parser on arbitrary bytes, read
 * both as a filter file and as one --filter expression. Beyond "no crash,
 * no leak", it checks the parser's promise about the normal form: what
 * parsed prints to a filter that parses back and prints the same. Every
 * parsed filter is also matched against a small stack and linted, so the
 * matcher sees what the parser lets through.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

static const at_frame_info frames[] = {
    { 0x10, "xstrdup", "/home/u/app/src/util.c", 12, "/home/u/app/app", false, false, 0 },
    { 0x20, "ns::Foo::bar(int) const", "/home/u/app/src/foo.cc", 88, "/home/u/app/app", true, false, 0 },
    { 0x30, AT_UNKNOWN, AT_UNKNOWN, 0, "/usr/lib/libz.so.1", false, false, 0 },
    { 0x40, "main", "main.c", 3, AT_UNKNOWN, false, false, 0 },
};

static char *normal_form(at_filter_set *s, size_t i)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        abort();
    at_filter_print(out, s, i);
    fclose(out);
    return buf;
}

/* The normal form of each filter must parse back to the same form. */
static void check_round_trip(at_filter_set *s)
{
    for (size_t i = 0; i < at_filter_set_count(s); i++) {
        char *first = normal_form(s, i);
        at_filter_set *again = at_filter_set_new();
        at_filter_error err;
        if (at_filter_set_add_expr(again, first, NULL, &err) != 0) {
            fprintf(stderr, "normal form does not parse: %s\n  %s: %s\n", first, err.location, err.message);
            abort();
        }
        char *second = normal_form(again, 0);
        if (strcmp(first, second) != 0) {
            fprintf(stderr, "normal form not stable:\n  %s\n  %s\n", first, second);
            abort();
        }
        free(second);
        free(first);
        at_filter_set_free(again);
    }
}

static void exercise(at_filter_set *s)
{
    check_round_trip(s);
    size_t n = sizeof frames / sizeof frames[0];
    for (size_t i = 0; i < at_filter_set_count(s); i++) {
        (void)at_filter_label(s, i);
        for (size_t k = 0; k <= n; k++)
            (void)at_filter_matches_frames(s, i, frames + n - k, k, 4096);
    }
    (void)at_filter_set_needs_names(s);
    FILE *sink = fopen("/dev/null", "w");
    if (sink) {
        at_filter_set_lint(s, sink);
        fclose(sink);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    if (at_filter_set_add_text(s, (const char *)data, size, "fuzz.filters", &err) == 0)
        exercise(s);
    else
        at_filter_error_clear(&err);
    at_filter_set_free(s);

    char *expr = malloc(size + 1);
    memcpy(expr, data, size);
    expr[size] = '\0';
    s = at_filter_set_new();
    if (at_filter_set_add_expr(s, expr, NULL, &err) == 0)
        exercise(s);
    else
        at_filter_error_clear(&err);
    at_filter_set_free(s);
    free(expr);
    return 0;
}
