/*
 * tests/unit/test_filter_match.c: the filter matcher on frame lists built
 * here. Every example of docs/filters.md and of the seed document, the
 * recursion case, anchoring, path and function-name rules, sizes, and the
 * per-stack cache.
 *
 * Lists are written outermost first, as filters read them; the helper
 * turns them into the innermost-first arrays that at_frame_read_stack
 * gives, so the tests also check that the matcher reads them backwards.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

typedef struct fr {
    const char *function;
    const char *file;
    unsigned line;
    const char *module;
} fr;

#define N_(a) (sizeof(a) / sizeof((a)[0]))

/* Innermost-first frame infos from an outermost-first list. */
static at_frame_info *frames_of(const fr *outer_first, size_t n)
{
    at_frame_info *f = calloc(n ? n : 1, sizeof *f);
    for (size_t i = 0; i < n; i++) {
        const fr *src = &outer_first[n - 1 - i];
        f[i] = (at_frame_info){ .addr = 0x1000 + i,
                                .function = src->function ? src->function : AT_UNKNOWN,
                                .file = src->file ? src->file : AT_UNKNOWN,
                                .line = src->line,
                                .module = src->module ? src->module : AT_UNKNOWN };
    }
    return f;
}

static bool match_sized(const char *expr, const fr *list, size_t n, uint64_t size)
{
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    if (at_filter_set_add_expr(s, expr, NULL, &err) != 0) {
        print_error("%s: %s\n", err.location, err.message);
        fail_msg("filter did not parse: %s", expr);
    }
    at_frame_info *f = frames_of(list, n);
    bool r = at_filter_matches_frames(s, 0, f, n, size);
    free(f);
    at_filter_set_free(s);
    return r;
}

static bool match(const char *expr, const fr *list, size_t n)
{
    return match_sized(expr, list, n, 16);
}

/* A list of file names (the seed's string lists). */
static bool match_files(const char *expr, const char *const *files, size_t n)
{
    fr list[16];
    for (size_t i = 0; i < n; i++)
        list[i] = (fr){ .file = files[i] };
    return match(expr, list, n);
}

/* A list of function names. */
static bool match_fns(const char *expr, const char *const *fns, size_t n)
{
    fr list[300];
    for (size_t i = 0; i < n; i++)
        list[i] = (fr){ .function = fns[i] };
    return match(expr, list, n);
}

#define FILES(...) ((const char *const[]){ __VA_ARGS__ }), N_(((const char *const[]){ __VA_ARGS__ }))
#define FNS(...) FILES(__VA_ARGS__)

/* ---- the seed's examples ----------------------------------------------- */

static void seed_literal_list_matches_exactly_that_list(void **state)
{
    (void)state;
    const char *f = "string listcontains[ file_name_1 file_name_2 ]";
    assert_true(match_files(f, FILES("file_name_1", "file_name_2")));
    assert_false(match_files(f, FILES("file_name_1")));
    assert_false(match_files(f, FILES("file_name_1", "file_name_2", "x")));
    assert_false(match_files(f, FILES("x", "file_name_1", "file_name_2")));
    assert_false(match_files(f, FILES("file_name_2", "file_name_1")));
}

static void seed_regex_relaxes_one_element(void **state)
{
    (void)state;
    const char *f = "string listcontains[ #\"file_name_[0-9]\"# file_name_2 ]";
    assert_true(match_files(f, FILES("file_name_7", "file_name_2")));
    assert_true(match_files(f, FILES("file_name_1", "file_name_2")));
    assert_false(match_files(f, FILES("file_name_x", "file_name_2")));
    assert_false(match_files(f, FILES("file_name_7", "file_name_3")));
}

static void seed_trailing_wildcard_matches_any_rest(void **state)
{
    (void)state;
    const char *f = "string listcontain[ #\"file_name_[0-9]\"# ... ]";
    assert_true(match_files(f, FILES("file_name_0")));
    assert_true(match_files(f, FILES("file_name_7", "anything", "at", "all")));
    assert_true(match_files(f, FILES("file_name_3", "file_name_7")));
    assert_false(match_files(f, FILES("anything", "file_name_3")));
    assert_false(match_files(f, FILES("")));
}

static void seed_leading_wildcard_leaves_the_last_element(void **state)
{
    (void)state;
    const char *f = "string listcontain[ ... #\"file_name_[0-9]\"# ]";
    /* The seed's list, where a lazy scan would stop at file_name_7. */
    assert_true(match_files(f, FILES("some_file_name", "file_name_7", "another_file_name", "file_name_0")));
    assert_false(match_files(f, FILES("some_file_name", "file_name_7", "another_file_name")));
    assert_true(match_files(f, FILES("file_name_9")));
}

static bool line_matches(const char *spec, unsigned line)
{
    char expr[128];
    snprintf(expr, sizeof expr, "callstack contains [ a.c : %s ]", spec);
    fr list[] = { { .function = "f", .file = "/src/a.c", .line = line } };
    return match(expr, list, 1);
}

static void seed_line_filter_examples(void **state)
{
    (void)state;
    assert_true(line_matches("_", 1));
    assert_true(line_matches("_", 99999));
    assert_true(line_matches("7", 7));
    assert_false(line_matches("7", 8));
    assert_true(line_matches("[50, 102]", 50));
    assert_true(line_matches("[50, 102]", 102));
    assert_false(line_matches("[50, 102]", 49));
    assert_false(line_matches("[50, 102]", 103));
    /* docs/filters.md: "[50, _] is 50 and above" (the seed said greater than). */
    assert_true(line_matches("[50, _]", 50));
    assert_true(line_matches("[50, _]", 4000000));
    assert_false(line_matches("[50, _]", 49));
    assert_true(line_matches("[_, 102]", 1));
    assert_true(line_matches("[_, 102]", 102));
    assert_false(line_matches("[_, 102]", 103));
    assert_true(line_matches("[_, _]", 12345));
}

static void line_spec_accepts_leading_zeros_plus_and_free_spaces(void **state)
{
    (void)state;
    assert_true(line_matches("007", 7));
    assert_true(line_matches("+7", 7));
    assert_false(line_matches("+7", 70));
    assert_true(line_matches("[  +050 ,0102  ]", 102));
    assert_true(line_matches("[050,_]", 50));
    fr list[] = { { .file = "/src/a.c", .line = 9 } };
    assert_true(match("callstack contains [ a.c:9 ]", list, 1));
    assert_true(match("callstack contains [a.c:[1,9]]", list, 1));
}

static void seed_directory_with_any_line(void **state)
{
    (void)state;
    const char *f = "callstack contains [ ... src/ : _ ... ]";
    fr in_src[] = { { "main", "/home/u/app/main.c", 3, NULL }, { "parse", "/home/u/app/src/config.c", 88, NULL } };
    fr outside[] = { { "main", "/home/u/app/main.c", 3, NULL }, { "parse", "/home/u/app/lib/config.c", 88, NULL } };
    assert_true(match(f, in_src, 2));
    assert_false(match(f, outside, 2));
}

static void seed_regex_file_with_line(void **state)
{
    (void)state;
    const char *f = "callstack contains [ ... #\".*/\"# : 107 ]";
    fr at107[] = { { "main", "/a/b.c", 5, NULL }, { "g", "/x/y/z.c", 107, NULL } };
    fr at108[] = { { "main", "/a/b.c", 5, NULL }, { "g", "/x/y/z.c", 108, NULL } };
    fr nodir[] = { { "main", "/a/b.c", 5, NULL }, { "g", "z.c", 107, NULL } };
    assert_true(match(f, at107, 2));
    assert_false(match(f, at108, 2));
    assert_false(match(f, nodir, 2));
}

/* ---- docs/filters.md, "The language" 1: the shape examples ------------ */

static void spec_functions_list_starts_at_main_and_ends_at_a_regex(void **state)
{
    (void)state;
    const char *f = "functions contains [ main ... #\"^xml(Malloc|Strdup)\"# ]";
    assert_true(match_fns(f, FNS("main", "parse", "xmlStrdup")));
    assert_true(match_fns(f, FNS("main", "xmlMallocAtomic")));
    assert_false(match_fns(f, FNS("main", "parse", "myxmlStrdup")));
    assert_false(match_fns(f, FNS("start", "main", "xmlStrdup")));
    assert_false(match_fns(f, FNS("main", "xmlStrdup", "inner")));
}

static void spec_modules_excludes(void **state)
{
    (void)state;
    const char *f = "modules excludes [ ... #\"libfoo\\.so\"# ... ]";
    fr with[] = { { .module = "/app" }, { .module = "/usr/lib/libfoo.so.1" }, { .module = "/lib/libc.so.6" } };
    fr without[] = { { .module = "/app" }, { .module = "/usr/lib/libfooXso" } };
    assert_false(match(f, with, 3));
    assert_true(match(f, without, 2));
}

static void spec_callstack_range_and_size(void **state)
{
    (void)state;
    const char *f = "callstack contains [ ... parser.c : [50, _] ... ] && size >= 4k";
    fr list[] = { { "main", "/a/main.c", 9, NULL }, { "p", "/a/parser.c", 61, NULL }, { "x", "/a/x.c", 2, NULL } };
    fr low[] = { { "main", "/a/main.c", 9, NULL }, { "p", "/a/parser.c", 49, NULL } };
    assert_true(match_sized(f, list, 3, 4096));
    assert_true(match_sized(f, list, 3, 1u << 20));
    assert_false(match_sized(f, list, 3, 4095));
    assert_false(match_sized(f, low, 2, 8192));
}

/* ---- section 2: order ---------------------------------------------------- */

static void list_reads_outermost_first(void **state)
{
    (void)state;
    assert_true(match_fns("functions contains [ main ... ]", FNS("main", "f", "xstrdup")));
    assert_false(match_fns("functions contains [ main ... ]", FNS("f", "main")));
    assert_true(match_fns("functions contains [ ... xstrdup ]", FNS("main", "f", "xstrdup")));
    assert_false(match_fns("functions contains [ ... xstrdup ]", FNS("main", "xstrdup", "f")));
}

static void unresolved_frames_read_as_unknown(void **state)
{
    (void)state;
    fr list[] = { { .function = "main", .file = "/a/m.c", .line = 3, .module = "/app" }, { .module = NULL } };
    assert_true(match("functions contains [ main ?? ]", list, 2));
    assert_true(match("string contains [ m.c ?? ]", list, 2));
    assert_true(match("modules contains [ app ?? ]", list, 2));
}

/* ---- section 3: elements -------------------------------------------------- */

static void path_literal_matches_at_component_boundaries(void **state)
{
    (void)state;
    fr list[] = { { .file = "/home/u/app/src/config.c" } };
    assert_true(match("string contains [ config.c ]", list, 1));
    assert_true(match("string contains [ src/config.c ]", list, 1));
    assert_true(match("string contains [ /home/u/app/src/config.c ]", list, 1));
    assert_false(match("string contains [ fig.c ]", list, 1));
    assert_false(match("string contains [ rc/config.c ]", list, 1));
    assert_false(match("string contains [ config ]", list, 1));
    /* A literal starting with '/' names the whole path. */
    assert_false(match("string contains [ /app/src/config.c ]", list, 1));
}

static void directory_literal_matches_whole_components_anywhere(void **state)
{
    (void)state;
    fr list[] = { { .file = "/home/u/app/src/config.c" } };
    assert_true(match("string contains [ src/ ]", list, 1));
    assert_true(match("string contains [ app/src/ ]", list, 1));
    assert_true(match("string contains [ u/ ]", list, 1));
    assert_true(match("string contains [ /home/ ]", list, 1));
    assert_false(match("string contains [ rc/ ]", list, 1));
    assert_false(match("string contains [ app/sr/ ]", list, 1));
    assert_false(match("string contains [ /u/ ]", list, 1));
    assert_false(match("string contains [ config.c/ ]", list, 1));
    fr rel[] = { { .file = "src/config.c" } };
    assert_true(match("string contains [ src/ ]", rel, 1));
}

static void module_literal_follows_path_rules(void **state)
{
    (void)state;
    fr list[] = { { .module = "/usr/lib/x86_64-linux-gnu/libc.so.6" } };
    assert_true(match("modules contains [ libc.so.6 ]", list, 1));
    assert_true(match("modules contains [ x86_64-linux-gnu/ ]", list, 1));
    assert_false(match("modules contains [ libc.so ]", list, 1));
}

static void function_literal_matches_without_parameter_list(void **state)
{
    (void)state;
    assert_true(match_fns("functions contains [ ns::Foo::bar ]", FNS("ns::Foo::bar(int) const")));
    assert_true(match_fns("functions contains [ ns::Foo::bar(int) ]", FNS("ns::Foo::bar(int)")));
    assert_true(match_fns("functions contains [ xmalloc ]", FNS("xmalloc")));
    assert_true(match_fns("functions contains [ S::operator() ]", FNS("S::operator()(int)")));
    assert_false(match_fns("functions contains [ Foo::bar ]", FNS("ns::Foo::bar(int) const")));
    assert_false(match_fns("functions contains [ ns::Foo::ba ]", FNS("ns::Foo::bar(int)")));
    assert_false(match_fns("functions contains [ xmalloc ]", FNS("xmalloc_impl")));
    assert_true(match_fns("functions contains [ f(a) ]", FNS("f(a)(b)")));
    assert_false(match_fns("functions contains [ f ]", FNS("f(a)(b)")));
}

static void regex_is_searched_unanchored(void **state)
{
    (void)state;
    assert_true(match_fns("functions contains [ #\"alloc\"# ]", FNS("xmalloc")));
    assert_false(match_fns("functions contains [ #\"^alloc$\"# ]", FNS("xmalloc")));
    assert_true(match_fns("functions contains [ #\"^xmalloc$\"# ]", FNS("xmalloc")));
    /* Spaces, brackets and ':' inside a regex. */
    assert_true(match_fns("functions contains [ #\"bar\\(int\\) const\"# ]", FNS("ns::Foo::bar(int) const")));
    assert_true(match_fns("functions contains [ #\"operator\\[\\]\"# ]", FNS("V::operator[](unsigned long)")));
    assert_true(match_fns("functions contains [ #\"ns::F\"#]", FNS("ns::Foo")));
}

static void regex_ends_at_first_quote_hash_before_a_delimiter(void **state)
{
    (void)state;
    /* "# followed by 'x' does not end it; "# followed by ']' does. */
    assert_true(match_fns("functions contains [ #\"a\"#x\"#]", FNS("a\"#x")));
    assert_true(match_fns("functions contains [ #\"a\"#x\"# ... ]", FNS("za\"#xz", "b")));
    fr list[] = { { .file = "/a/b.c", .line = 3 } };
    assert_true(match("callstack contains [ #\"b\\.c\"#:3 ]", list, 1));
}

static void wildcard_spellings_are_equivalent(void **state)
{
    (void)state;
    assert_true(match_fns("functions contains [ ** f ** ]", FNS("a", "f", "b")));
    assert_true(match_fns("functions contains [ ... f ... ]", FNS("a", "f", "b")));
    assert_false(match_fns("functions contains [ ** g ** ]", FNS("a", "f", "b")));
}

static void wildcard_must_be_a_token_of_its_own(void **state)
{
    (void)state;
    /* "...**..." and "...x" are literals, matched as names. */
    assert_false(match_fns("functions contains [ ...**... ]", FNS("main")));
    assert_true(match_fns("functions contains [ ...**... ]", FNS("...**...")));
    assert_false(match_fns("functions contains [ ...x ]", FNS("x")));
}

/* ---- section 4: matching --------------------------------------------------- */

static void recursion_does_not_hide_a_match(void **state)
{
    (void)state;
    const char *f = "functions contains [ ... r_object read_object ... ]";
    /* main -> r_object -> r_object -> read_object (allocates): a lazy scan
     * takes the first r_object and then fails on the second; the glob
     * lets the wildcard take it. */
    assert_true(match_fns(f, FNS("main", "r_object", "r_object", "read_object")));
    /* The spec's list read innermost first (as the text format lists
     * it): outermost first that is r_object r_object read_object main. */
    assert_true(match_fns(f, FNS("r_object", "r_object", "read_object", "main")));
    /* Outermost first, main read_object r_object r_object has no
     * r_object directly followed by read_object: no cut fits. */
    assert_false(match_fns(f, FNS("main", "read_object", "r_object", "r_object")));
}

static void leading_wildcard_tests_only_the_last_frames(void **state)
{
    (void)state;
    const char *f = "functions contains [ ... a b ]";
    assert_true(match_fns(f, FNS("a", "b", "a", "b")));
    assert_true(match_fns(f, FNS("a", "b")));
    assert_false(match_fns(f, FNS("a", "b", "c")));
    assert_false(match_fns(f, FNS("b")));
}

static void plain_list_is_anchored_at_both_ends(void **state)
{
    (void)state;
    const char *f = "functions contains [ a b ]";
    assert_true(match_fns(f, FNS("a", "b")));
    assert_false(match_fns(f, FNS("x", "a", "b")));
    assert_false(match_fns(f, FNS("a", "b", "x")));
    assert_true(match_fns("functions contains [ a ... b ]", FNS("a", "b")));
    assert_true(match_fns("functions contains [ a ... b ]", FNS("a", "x", "y", "b")));
    assert_false(match_fns("functions contains [ a ... b ]", FNS("a", "x", "b", "y")));
}

static void empty_list_matches_only_the_empty_stack(void **state)
{
    (void)state;
    assert_true(match_fns("functions contains [ ]", NULL, 0));
    assert_false(match_fns("functions contains [ ]", FNS("main")));
    assert_true(match_fns("functions contains []", NULL, 0));
    assert_true(match_fns("functions excludes [ ]", FNS("main")));
}

static void lone_wildcard_matches_every_list(void **state)
{
    (void)state;
    assert_true(match_fns("functions contains [ ... ]", NULL, 0));
    assert_true(match_fns("functions contains [ ... ]", FNS("main")));
    assert_true(match_fns("functions contains [ ... ... ** ]", FNS("main", "f", "g")));
    assert_false(match_fns("functions excludes [ ... ]", FNS("main")));
}

static void consecutive_equal_frames_are_not_merged(void **state)
{
    (void)state;
    assert_false(match_fns("functions contains [ main f ]", FNS("main", "f", "f")));
    assert_true(match_fns("functions contains [ main f f ]", FNS("main", "f", "f")));
    assert_true(match_fns("functions contains [ main ... f ]", FNS("main", "f", "f")));
}

static void excludes_is_the_negation_of_contains(void **state)
{
    (void)state;
    assert_true(match_fns("functions excludes [ ... g ... ]", FNS("main", "f")));
    assert_false(match_fns("functions excludes [ ... f ... ]", FNS("main", "f")));
    assert_false(match_fns("functions exclude [ ... f ... ]", FNS("main", "f")));
    assert_false(match_fns("functions listexcludes [ ... f ... ]", FNS("main", "f")));
    assert_true(match_fns("functions contain [ ... f ... ]", FNS("main", "f")));
    assert_true(match_fns("functions listcontains[ ... f ... ]", FNS("main", "f")));
    assert_true(match_fns("functions listcontain[ ... f ... ]", FNS("main", "f")));
}

static void and_requires_every_sub_filter(void **state)
{
    (void)state;
    fr list[] = { { "main", "/a/main.c", 5, "/app" }, { "f", "/a/f.c", 10, "/lib/libx.so" } };
    assert_true(match("functions contains [ ... f ] && modules contains [ ... libx.so ]", list, 2));
    assert_false(match("functions contains [ ... f ] && modules contains [ ... liby.so ]", list, 2));
    assert_true(match("functions contains [ ... f ]&&string contains [ main.c f.c ]&&size<17", list, 2));
    assert_false(match("functions contains [ ... f ] && size > 16", list, 2));
}

static void pathological_filter_over_a_long_stack_finishes(void **state)
{
    (void)state;
    /* Twelve "... a" then a final "b" over 250 frames "a" and no b: a
     * backtracking matcher would try ~C(250, 12) cuts; the DP does
     * 25 x 250 cells. */
    char expr[512] = "functions contains [";
    for (int i = 0; i < 12; i++)
        strcat(expr, " ... a");
    strcat(expr, " ... b ]");
    const char *fns[250];
    for (int i = 0; i < 250; i++)
        fns[i] = "a";
    assert_false(match_fns(expr, fns, 250));
    fns[249] = "b";
    assert_true(match_fns(expr, fns, 250));
}

static void size_operators_and_suffixes(void **state)
{
    (void)state;
    fr list[] = { { .function = "f" } };
    assert_true(match_sized("size = 1k", list, 1, 1024));
    assert_false(match_sized("size = 1k", list, 1, 1000));
    assert_true(match_sized("size == 2M", list, 1, 2u << 20));
    assert_true(match_sized("size < 1G", list, 1, (1u << 30) - 1));
    assert_false(match_sized("size < 1G", list, 1, 1u << 30));
    assert_true(match_sized("size <= 10", list, 1, 10));
    assert_true(match_sized("size > 10", list, 1, 11));
    assert_false(match_sized("size > 10", list, 1, 10));
    assert_true(match_sized("size >= 4K", list, 1, 4096));
    assert_true(match_sized("size in [1k, 2k]", list, 1, 1024));
    assert_true(match_sized("size in [1k, 2k]", list, 1, 2048));
    assert_false(match_sized("size in [1k, 2k]", list, 1, 2049));
    assert_true(match_sized("size in [_, 8]", list, 1, 0));
    assert_true(match_sized("size in[8,_]", list, 1, UINT64_MAX));
    assert_false(match_sized("size in [8, _]", list, 1, 7));
    assert_true(match_sized("size>=16G", list, 1, UINT64_C(16) << 30));
}

/* ---- the cache and sets ------------------------------------------------------ */

static void list_part_is_cached_per_stack_and_size_checked_each_call(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_frame raw[] = { { 0x10, "f() at /a/f.c:3" }, { 0x20, "main() at /a/main.c:9" } };
    const at_stack *st = at_stacks_intern(t, raw, 2);
    at_frame_info info[2];
    at_frame_read_stack(st, NULL, t, info);

    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    assert_int_equal(at_filter_set_add_expr(s, "functions contains [ main f ] && size > 8", NULL, &err), 0);
    assert_true(at_filter_matches(s, 0, st, info, 9));
    assert_false(at_filter_matches(s, 0, st, info, 8));
    /* Other frame infos for the same stack id: the cached answer stands. */
    at_frame_info other[2] = { info[1], info[0] };
    assert_true(at_filter_matches(s, 0, st, other, 100));
    at_filter_set_free(s);
    at_stacks_free(t);
}

static void first_match_returns_the_first_filter_in_order(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_frame raw[] = { { 0x10, "f() at /a/f.c:3" }, { 0x20, "main() at /a/main.c:9" } };
    at_frame raw2[] = { { 0x30, "g() at /a/g.c:4" }, { 0x20, "main() at /a/main.c:9" } };
    const at_stack *st = at_stacks_intern(t, raw, 2);
    const at_stack *st2 = at_stacks_intern(t, raw2, 2);

    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    assert_int_equal(at_filter_set_add_expr(s, "functions contains [ ... g ]", NULL, &err), 0);
    assert_int_equal(at_filter_set_add_expr(s, "big: functions contains [ ... f ] && size >= 1k", NULL, &err), 0);
    assert_int_equal(at_filter_set_add_expr(s, "string contains [ main.c ... ]", "--exclude-filter", &err), 0);
    assert_int_equal(at_filter_set_count(s), 3);
    assert_string_equal(at_filter_label(s, 0), "--filter");
    assert_string_equal(at_filter_label(s, 1), "big");
    assert_string_equal(at_filter_label(s, 2), "--exclude-filter");

    assert_int_equal(at_filter_set_first_match_stack(s, st, NULL, t, 2048), 1);
    assert_int_equal(at_filter_set_first_match_stack(s, st, NULL, t, 10), 2);
    assert_int_equal(at_filter_set_first_match_stack(s, st2, NULL, t, 10), 0);
    /* Known stacks are not read again: frames may be NULL. */
    assert_int_equal(at_filter_set_first_match(s, st, NULL, 4096), 1);
    at_filter_set_free(s);
    at_stacks_free(t);
}

static void modules_come_from_the_maps_for_unresolved_frames(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_maps *m = at_maps_new();
    at_maps_add(m, "/usr/lib/libfoo.so.1", 0x7f0000, 0x7fffff);
    at_maps_add(m, "/home/u/app", 0x400000, 0x4fffff);
    at_frame raw[] = { { 0x7f0100, NULL }, { 0x400100, NULL }, { 0x10, NULL } };
    const at_stack *st = at_stacks_intern(t, raw, 3);

    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    assert_int_equal(at_filter_set_add_expr(s, "modules contains [ ?? app libfoo.so.1 ]", NULL, &err), 0);
    assert_false(at_filter_set_needs_names(s));
    assert_int_equal(at_filter_set_first_match_stack(s, st, m, t, 1), 0);
    at_filter_set_free(s);
    at_maps_free(m);
    at_stacks_free(t);
}

static void shared_frames_answer_each_stack_correctly(void **state)
{
    (void)state;
    /* Stacks sharing frames: per-frame answers are reused, per-stack
     * results still differ where the lists differ. */
    at_stack_table *t = at_stacks_new();
    at_frame a[] = { { 0x10, "f() at /a/f.c:3" }, { 0x20, "main() at /a/main.c:9" } };
    at_frame b[] = { { 0x30, "g() at /a/g.c:4" }, { 0x10, "f() at /a/f.c:3" }, { 0x20, "main() at /a/main.c:9" } };
    at_frame c[] = { { 0x10, "f() at /a/f.c:30" }, { 0x20, "main() at /a/main.c:9" } };
    const at_stack *sa = at_stacks_intern(t, a, 2), *sb = at_stacks_intern(t, b, 3), *sc = at_stacks_intern(t, c, 2);
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    assert_int_equal(at_filter_set_add_expr(s, "callstack contains [ main.c f.c : 3 ]", NULL, &err), 0);
    assert_int_equal(at_filter_set_add_expr(s, "functions contains [ main f ... ]", NULL, &err), 0);
    assert_int_equal(at_filter_set_first_match_stack(s, sa, NULL, t, 1), 0);
    assert_int_equal(at_filter_set_first_match_stack(s, sb, NULL, t, 1), 1);
    /* Same address, other text (another resolution): another frame. */
    assert_int_equal(at_filter_set_first_match_stack(s, sc, NULL, t, 1), 1);
    at_filter_set_free(s);
    at_stacks_free(t);
}

static void an_address_reused_by_another_module_is_another_frame(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_maps *m = at_maps_new();
    at_maps_add(m, "/lib/liba.so", 0x1000, 0x2000);
    at_frame ra[] = { { 0x1100, NULL } };
    at_frame rb[] = { { 0x1100, NULL }, { 0x10, NULL } };
    const at_stack *a = at_stacks_intern(t, ra, 1), *b = at_stacks_intern(t, rb, 2);
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    assert_int_equal(at_filter_set_add_expr(s, "modules contains [ ... libb.so ]", NULL, &err), 0);
    assert_int_equal(at_filter_set_first_match_stack(s, a, m, t, 1), -1);
    /* liba.so unloaded, libb.so loaded over its range: the address now
     * belongs to libb.so in the stacks that follow. */
    at_maps_add(m, "/lib/libb.so", 0x1000, 0x2000);
    assert_int_equal(at_filter_set_first_match_stack(s, b, m, t, 1), 0);
    at_filter_set_free(s);
    at_maps_free(m);
    at_stacks_free(t);
}

static void needs_names_for_every_kind_but_modules(void **state)
{
    (void)state;
    const char *named[] = { "callstack contains [ ... ]", "string contains [ ... ]",
                            "functions contains [ ... ]", "size > 1 && functions excludes [ ]" };
    for (size_t i = 0; i < N_(named); i++) {
        at_filter_set *s = at_filter_set_new();
        at_filter_error err;
        assert_int_equal(at_filter_set_add_expr(s, named[i], NULL, &err), 0);
        assert_true(at_filter_set_needs_names(s));
        at_filter_set_free(s);
    }
    at_filter_set *s = at_filter_set_new();
    at_filter_error err;
    assert_int_equal(at_filter_set_add_expr(s, "modules contains [ ... ] && size > 1", NULL, &err), 0);
    assert_false(at_filter_set_needs_names(s));
    at_filter_set_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_literal_list_matches_exactly_that_list),
        cmocka_unit_test(seed_regex_relaxes_one_element),
        cmocka_unit_test(seed_trailing_wildcard_matches_any_rest),
        cmocka_unit_test(seed_leading_wildcard_leaves_the_last_element),
        cmocka_unit_test(seed_line_filter_examples),
        cmocka_unit_test(line_spec_accepts_leading_zeros_plus_and_free_spaces),
        cmocka_unit_test(seed_directory_with_any_line),
        cmocka_unit_test(seed_regex_file_with_line),
        cmocka_unit_test(spec_functions_list_starts_at_main_and_ends_at_a_regex),
        cmocka_unit_test(spec_modules_excludes),
        cmocka_unit_test(spec_callstack_range_and_size),
        cmocka_unit_test(list_reads_outermost_first),
        cmocka_unit_test(unresolved_frames_read_as_unknown),
        cmocka_unit_test(path_literal_matches_at_component_boundaries),
        cmocka_unit_test(directory_literal_matches_whole_components_anywhere),
        cmocka_unit_test(module_literal_follows_path_rules),
        cmocka_unit_test(function_literal_matches_without_parameter_list),
        cmocka_unit_test(regex_is_searched_unanchored),
        cmocka_unit_test(regex_ends_at_first_quote_hash_before_a_delimiter),
        cmocka_unit_test(wildcard_spellings_are_equivalent),
        cmocka_unit_test(wildcard_must_be_a_token_of_its_own),
        cmocka_unit_test(recursion_does_not_hide_a_match),
        cmocka_unit_test(leading_wildcard_tests_only_the_last_frames),
        cmocka_unit_test(plain_list_is_anchored_at_both_ends),
        cmocka_unit_test(empty_list_matches_only_the_empty_stack),
        cmocka_unit_test(lone_wildcard_matches_every_list),
        cmocka_unit_test(consecutive_equal_frames_are_not_merged),
        cmocka_unit_test(excludes_is_the_negation_of_contains),
        cmocka_unit_test(and_requires_every_sub_filter),
        cmocka_unit_test(pathological_filter_over_a_long_stack_finishes),
        cmocka_unit_test(size_operators_and_suffixes),
        cmocka_unit_test(list_part_is_cached_per_stack_and_size_checked_each_call),
        cmocka_unit_test(first_match_returns_the_first_filter_in_order),
        cmocka_unit_test(modules_come_from_the_maps_for_unresolved_frames),
        cmocka_unit_test(shared_frames_answer_each_stack_correctly),
        cmocka_unit_test(an_address_reused_by_another_module_is_another_frame),
        cmocka_unit_test(needs_names_for_every_kind_but_modules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
