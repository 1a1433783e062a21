/* tests/integration/test_deep_cxx.c: a C++ program with deep stacks,
 * tests/programs/deep_cxx.cc, traced at the default settings: its stacks
 * reach main through a 60-frame recursion of templates, libstdc++'s
 * emergency exception pool is libc's caches and never leaked (report,
 * stats, HTML data, leaked flame graph), and --diff keeps the sites of its
 * stripped build apart by module and offset. */
#include "harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static h_result postproc(const char *a1, const char *a2, const char *a3, const char *a4,
                         const char *a5, const char *a6)
{
    char *exe = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { exe, a1, a2, a3, a4, a5, a6, NULL };
    h_result r = h_run(argv, NULL, NULL);
    free(exe);
    return r;
}

/* build/tests/programs/NAME [ARG] traced at the default settings into DIR. */
static char *traced_with(const char *dir, const char *name, const char *file, const char *arg)
{
    char *trace = h_fmt("%s/%s", dir, file);
    char *rel = h_fmt("build/tests/programs/%s", name);
    char *prog = h_path(rel);
    const char *argv[] = { prog, arg, NULL };
    h_result r = h_trace(trace, argv, NULL);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    free(prog);
    free(rel);
    return trace;
}

static char *traced(const char *dir, const char *name, const char *file)
{
    return traced_with(dir, name, file, NULL);
}

static void every_stack_through_the_recursion_reaches_main_at_the_default_depth(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = traced(dir, "deep_cxx", "deep.trace");
    h_result r = postproc("-r", trace, NULL, NULL, NULL, NULL);
    assert_int_equal(r.status, 0);
    /* Each call record ends at an empty line; those through descend<> are
     * the vector's 3 growths, the 3 strings and the leak: 7, each with 60
     * descend frames and main. */
    size_t through = 0;
    for (char *rec = r.out; rec && *rec;) {
        char *end = strstr(rec, "\n\n");
        if (end)
            *end = '\0';
        if (strstr(rec, " descend<")) {
            through++;
            h_has(rec, " main() at ");
            size_t n = h_count_lines(rec, " descend<.*deep_cxx\\.cc:");
            assert_int_equal(n, 60);
        }
        rec = end ? end + 2 : NULL;
    }
    assert_int_equal(through, 7);
    h_result_free(&r);
    free(trace);
    h_cleanup();
}

static void libstdcxx_pool_is_libc_caches_not_a_leak_in_every_output(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = traced(dir, "deep_cxx", "deep.trace");
    /* report: the one leak is the 123 bytes of new char[123] */
    h_result r = postproc("-r", "--format", "report", trace, NULL, NULL);
    assert_int_equal(r.status, 0);
    h_has(r.out, "leaked:       123 B (123 bytes) in 1 blocks\n"
                 "libc's caches: ");
    h_has(r.out, " in 1 blocks, the runtime's own, not leaked\n");
    h_has(r.out, "top 1 sites by leaked bytes (of 4 sites):\n"
                 "   1. 123 B (123 bytes) in 1 blocks by malloc in unsigned long "
                 "descend<std::__cxx11::basic_string<char, std::char_traits<char>, "
                 "std::allocator<char> > >(int, bool) (deep_cxx.cc:29)\n");
    /* the recursion is one line and a count */
    h_has(r.out, "        ... the line above 59 times in all (recursion)\n");
    h_result_free(&r);
    /* stats */
    r = postproc("-r", "--format", "stats", trace, NULL, NULL);
    assert_int_equal(r.status, 0);
    h_has(r.out, "\"leaked_bytes\": 123, \"leaked_blocks\": 1, \"cached_bytes\": ");
    h_has(r.out, ", \"cached_blocks\": 1, ");
    h_result_free(&r);
    /* the HTML report's data */
    char *html = h_fmt("%s/deep.html", dir);
    r = postproc("-r", "--format", "html", "-o", html, trace);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    char *page = h_read_file(html, NULL);
    assert_non_null(page);
    h_has(page, "\"leaked_bytes\":123,\"leaked_blocks\":1,\"cached_bytes\":");
    h_has(page, ",\"cached_blocks\":1,");
    free(page);
    /* the leaked flame graph: the pool is a leaf of its own */
    r = postproc("-l", "-r", "--format", "folded", trace, NULL);
    assert_int_equal(r.status, 0);
    h_has(r.out, ";malloc [libc's caches] ");
    assert_int_equal(h_count_lines(r.out, ";malloc [0-9]+$"), 1); /* the leak alone */
    h_has(r.out, "(int, bool);operator new(unsigned long);malloc 123\n");
    h_result_free(&r);
    free(html);
    free(trace);
    h_cleanup();
}

static void diff_of_a_stripped_program_keeps_its_sites_apart_and_says_why(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *old = traced(dir, "deep_cxx_stripped", "old.trace");
    char *new = traced(dir, "deep_cxx_stripped", "new.trace");
    h_result r = postproc("-r", "--diff", old, new, NULL, NULL);
    assert_int_equal(r.status, 0);
    /* The program's frames have no names: matched by module+offset, the
     * four sites stay four (by function they would all read "??"). */
    h_has(r.out, "note: ");
    h_has(r.out, " sites with frames without function names, matched by module and offset "
                 "(only the same binary matches); resolve (-r, with debug info) so that they "
                 "match by function\n");
    h_has(r.out, "sites that changed: 0 of 4 (0 grew, 0 shrank, 0 new, 0 gone)");
    h_has(r.out, "  libc's caches ");
    h_result_free(&r);
    /* One more leak in NEW: its site, named by module+offset, never "??". */
    char *more = traced_with(dir, "deep_cxx_stripped", "more.trace", "again");
    r = postproc("-r", "--diff", old, more, NULL, NULL);
    assert_int_equal(r.status, 0);
    h_has(r.out, "sites that changed: 1 of 5 (0 grew, 0 shrank, 1 new, 0 gone)");
    h_has(r.out, "   1. bytes +123, calls +1, peak +0, leaked +123 [new]\n");
    h_has(r.out, " -> deep_cxx_stripped+0x");
    h_lacks(r.out, "??@deep_cxx_stripped");
    h_result_free(&r);
    free(more);
    free(old);
    free(new);
    h_cleanup();
}

/* The DOM chromium makes of a page, or NULL (saying so) without it. */
static char *dom_of(const char *dir, const char *page)
{
    return h_have_chromium() ? h_chromium_dom(dir, page, NULL) : NULL;
}

static void diff_as_html_is_one_page_comparing_the_two_runs(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *old = traced(dir, "deep_cxx_stripped", "old.trace");
    char *more = traced_with(dir, "deep_cxx_stripped", "more.trace", "again");
    char *page = h_fmt("%s/diff.html", dir);
    char *exe = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { exe, "-r", "--diff", old, "--format", "html", "-o", page, more, NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    char *html = h_read_file(page, NULL);
    assert_non_null(html);
    h_has(html, "<h1>Comparison of two runs</h1>");
    h_lacks(html, "<script src=");
    h_has(html, "\"changed\":1,\"sites\":5,");
    free(html);
    char *d = dom_of(dir, page);
    if (d) {
        h_has(d, "data-ready=\"1\"");
        h_has(d, "<p id=\"changes-count\">1 of 5 sites changed;");
        h_has(d, "<tr data-total=\"leaked_bytes\"><td>leaked bytes</td><td class=\"n\">123</td>"
                 "<td class=\"n\">246</td><td class=\"n\">+123 (+100.0%)</td></tr>");
        h_has(d, "<summary>deep_cxx_stripped+0x");
        h_has(d, "sites with frames without function names, matched by module and offset");
        free(d);
    }
    free(exe);
    free(page);
    free(more);
    free(old);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_stack_through_the_recursion_reaches_main_at_the_default_depth),
        cmocka_unit_test(libstdcxx_pool_is_libc_caches_not_a_leak_in_every_output),
        cmocka_unit_test(diff_of_a_stripped_program_keeps_its_sites_apart_and_says_why),
        cmocka_unit_test(diff_as_html_is_one_page_comparing_the_two_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
