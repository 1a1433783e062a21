/* tests/integration/test_export.c: alloctrace-postproc --format on traces
 * written here with known stacks and sizes, read back by the real
 * consumers: callgrind_annotate (valgrind's) and our webgrind reader. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "unit/webgrind_reader.h"

/* Recursion (walk), one name in two files (helper), two allocation
 * functions and a truncated backtrace (the last call). 142 bytes, 4 blocks.
 * Inclusive: main 137, walk 112, helper [util.c] 30, helper [other.c] 7. */
static const char recursive_trace[] =
    "version=2.0, arch=x86_64, timestamp=2026.11.22 10:43:07, process=/usr/bin/walker, pid=77, "
    "origin=alloctrace 0.1.0, \n"
    "<1> : memory (memory allocation in bytes)\n"
    "1. malloc(100) = 0x1000\n"
    "\t0x401000 walk() at /src/tree.c:10\n"
    "\t0x401100 walk() at /src/tree.c:20\n"
    "\t0x401100 walk() at /src/tree.c:20\n"
    "\t0x403000 main() at /src/main.c:5\n"
    "\n"
    "2. malloc(30) = 0x2000\n"
    "\t0x405000 helper() at /src/util.c:3\n"
    "\t0x403010 main() at /src/main.c:6\n"
    "\n"
    "3. calloc(7) = 0x3000\n"
    "\t0x406000 helper() at /src/other.c:8\n"
    "\t0x401200 walk() at /src/tree.c:21\n"
    "\t0x403020 main() at /src/main.c:7\n"
    "\n"
    "4. malloc(5) = 0x4000\n"
    "\t0x401010 walk() at /src/tree.c:11\n"
    "\n"
    "5. free(0x2000)\n"
    "\n";

static char *write_trace(const char *dir, const char *text)
{
    char *path = h_fmt("%s/in.trace", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static h_result postproc(const char *cwd, const char *a1, const char *a2, const char *a3,
                         const char *a4, const char *a5)
{
    char *exe = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { exe, a1, a2, a3, a4, a5, NULL };
    h_result r = h_run(argv, NULL, cwd);
    free(exe);
    return r;
}

/* The first number of callgrind_annotate's line for `what` ("PROGRAM
 * TOTALS", or a "file:function" marked with "*" in --tree=both output). */
static long long annotate_value(const char *out, const char *what, int column)
{
    for (const char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        size_t len = strcspn(line, "\n");
        char *l = h_fmt("%.*s", (int)len, line);
        char *name = strstr(l, "*  ");
        name = name ? name + 3 : strstr(l, "PROGRAM TOTALS");
        if (name && strcmp(name, what) == 0) {
            long long v[2] = { -1, -1 };
            char *p = l;
            for (int c = 0; c < 2; c++) {
                while (*p == ' ')
                    p++;
                long long x = 0;
                for (; (*p >= '0' && *p <= '9') || *p == ','; p++)
                    if (*p != ',')
                        x = x * 10 + (*p - '0');
                v[c] = x;
                p = strchr(p, ')') + 1;
            }
            free(l);
            return v[column];
        }
        free(l);
    }
    fail_msg("callgrind_annotate printed no line for '%s':\n%s", what, out);
    return -1;
}

static h_result annotate(const char *file)
{
    const char *argv[] = { "callgrind_annotate", "--inclusive=yes", "--tree=both",
                           "--threshold=100", file, NULL };
    return h_run(argv, NULL, NULL);
}

static void callgrind_annotate_reads_our_costs_without_warning(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *in = write_trace(dir, recursive_trace);
    char *cg = h_fmt("%s/out.cg", dir);
    h_result r = postproc(NULL, "--format", "callgrind", "-o", cg, in);
    assert_int_equal(r.status, 0);
    h_result a = annotate(cg);
    assert_int_equal(a.status, 0);
    assert_string_equal(a.err, "");
    assert_int_equal(annotate_value(a.out, "PROGRAM TOTALS", 0), 142);
    assert_int_equal(annotate_value(a.out, "PROGRAM TOTALS", 1), 4);
    assert_int_equal(annotate_value(a.out, "/src/main.c:main", 0), 137);
    assert_int_equal(annotate_value(a.out, "/src/tree.c:walk", 0), 112);
    assert_int_equal(annotate_value(a.out, "/src/tree.c:walk", 1), 3);
    assert_int_equal(annotate_value(a.out, "/src/util.c:helper [util.c]", 0), 30);
    assert_int_equal(annotate_value(a.out, "/src/other.c:helper [other.c]", 0), 7);
    assert_int_equal(annotate_value(a.out, "[allocator]:malloc", 0), 135);
    assert_int_equal(annotate_value(a.out, "[allocator]:calloc", 0), 7);
    h_result_free(&a);

    /* self costs: only the allocation functions have any */
    const char *argv[] = { "callgrind_annotate", "--inclusive=no", "--threshold=100", cg, NULL };
    a = h_run(argv, NULL, NULL);
    assert_string_equal(a.err, "");
    assert_non_null(h_find_line(a.out, "^135 \\([0-9.]+%\\) +3 \\([0-9.]+%\\) +\\[allocator\\]:malloc$"));
    assert_non_null(h_find_line(a.out, "^ *7 \\([0-9. ]+%\\) +1 \\([0-9. ]+%\\) +\\[allocator\\]:calloc$"));
    assert_int_equal(h_count_lines(a.out, "^ +0 +0 +(/src/|\\[alloctrace\\])"), 5);
    h_result_free(&a);
    h_result_free(&r);
    free(cg);
    free(in);
    h_cleanup();
}

static void leaks_name_the_events_and_count_only_leaks(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *in = write_trace(dir, recursive_trace);
    char *cg = h_fmt("%s/leaks.cg", dir);
    h_result r = postproc(NULL, "-l", "--format=callgrind", "-o", cg, in);
    assert_int_equal(r.status, 0);
    char *text = h_read_file(cg, NULL);
    assert_non_null(strstr(text, "event: LeakedBytes : bytes leaked\nevent: LeakedBlocks : blocks "
                                 "leaked\nevents: LeakedBytes LeakedBlocks\n"));
    assert_non_null(strstr(text, "\nsummary: 112 3\ntotals: 112 3\n"));
    h_result a = annotate(cg);
    assert_string_equal(a.err, "");
    assert_int_equal(annotate_value(a.out, "PROGRAM TOTALS", 0), 112);
    assert_int_equal(annotate_value(a.out, "/src/main.c:main", 0), 107);
    h_result_free(&a);
    h_result_free(&r);
    free(text);
    free(cg);
    free(in);
    h_cleanup();
}

static void webgrind_files_get_default_names_and_match_webgrind(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *in = write_trace(dir, recursive_trace);
    h_result r = postproc(dir, "--format", "webgrind", in, NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "wrote cachegrind.out.walker.77\n"));
    assert_non_null(strstr(r.err, "wrote cachegrind.out.walker.77.webgrind\n"));
    char *cg_path = h_fmt("%s/cachegrind.out.walker.77", dir);
    char *wg_path = h_fmt("%s/cachegrind.out.walker.77.webgrind", dir);
    struct stat cs, ws;
    assert_int_equal(stat(cg_path, &cs), 0);
    assert_int_equal(stat(wg_path, &ws), 0);
    assert_true(ws.st_mtim.tv_sec > cs.st_mtim.tv_sec ||
                (ws.st_mtim.tv_sec == cs.st_mtim.tv_sec && ws.st_mtim.tv_nsec >= cs.st_mtim.tv_nsec));
    char *cg = h_read_file(cg_path, NULL);
    size_t len = 0, elen = 0;
    unsigned char *bin = (unsigned char *)h_read_file(wg_path, &len);
    unsigned char *expected = wg_expected(cg, &elen);
    assert_int_equal(len, elen);
    assert_memory_equal(bin, expected, len);
    wg_file *w = wg_parse(bin, len);
    assert_non_null(w);
    assert_int_equal(w->nfuncs, 7);
    for (uint32_t i = 0; i < w->nfuncs; i++)
        assert_true(w->funcs[i].inclusive <= 142);
    assert_string_equal(w->funcs[3].name, "walk");
    assert_int_equal(w->funcs[3].inclusive, 112);
    wg_free(w);
    /* the same Callgrind file, given with -o, gets its .webgrind beside it */
    char *named = h_fmt("%s/cachegrind.out.mine", dir);
    h_result r2 = postproc(NULL, "--format", "webgrind", "-o", named, in);
    assert_int_equal(r2.status, 0);
    char *again = h_fmt("%s.webgrind", named);
    size_t len2 = 0;
    unsigned char *bin2 = (unsigned char *)h_read_file(again, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(bin2, bin, len);
    free(bin2);
    free(again);
    free(named);
    h_result_free(&r2);
    free(expected);
    free(bin);
    free(cg);
    free(cg_path);
    free(wg_path);
    h_result_free(&r);
    free(in);
    h_cleanup();
}

static void huge_costs_switch_both_files_to_kib(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *in = write_trace(dir, "version=2.0, process=big, pid=5, \n"
                                "<1> : memory (memory allocation in bytes)\n"
                                "1. malloc(3000000000) = 0x1000\n"
                                "\t0x401000 grow() at /src/big.c:3\n\n"
                                "2. malloc(1) = 0x2000\n"
                                "\t0x401000 grow() at /src/big.c:3\n\n");
    h_result r = postproc(dir, "--format", "webgrind", in, NULL, NULL);
    assert_int_equal(r.status, 0);
    char *cg_path = h_fmt("%s/cachegrind.out.big.5", dir);
    char *cg = h_read_file(cg_path, NULL);
    /* 3000000000 / 1024 = 2929687.5 -> 2929688, 1 byte -> 1 KiB */
    assert_non_null(strstr(cg, "events: AllocKiB AllocBlocks\n"));
    assert_non_null(strstr(cg, "summary: 2929689 2\n"));
    h_result a = annotate(cg_path);
    assert_string_equal(a.err, "");
    assert_int_equal(annotate_value(a.out, "/src/big.c:grow", 0), 2929689);
    char *wg_path = h_fmt("%s.webgrind", cg_path);
    size_t len = 0;
    unsigned char *bin = (unsigned char *)h_read_file(wg_path, &len);
    wg_file *w = wg_parse(bin, len);
    assert_non_null(w);
    assert_int_equal(w->funcs[0].self, 2929689);
    assert_non_null(strstr(w->headers, "events: AllocKiB AllocBlocks\n"));
    wg_free(w);
    free(bin);
    free(wg_path);
    h_result_free(&a);
    free(cg);
    free(cg_path);
    h_result_free(&r);
    free(in);
    h_cleanup();
}

static void an_empty_trace_exports_no_allocations(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *in = write_trace(dir, "version=2.0, process=idle, pid=9, \n");
    char *cg = h_fmt("%s/empty.cg", dir);
    h_result r = postproc(NULL, "--format", "callgrind", "-o", cg, in);
    assert_int_equal(r.status, 0);
    h_result a = annotate(cg);
    assert_int_equal(a.status, 0);
    assert_string_equal(a.err, "");
    assert_non_null(strstr(a.out, "[alloctrace]:(no allocations)"));
    h_result_free(&a);
    h_result_free(&r);
    free(cg);
    free(in);
    h_cleanup();
}

static void folded_and_report_go_to_stdout(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *in = write_trace(dir, recursive_trace);
    h_result r = postproc(NULL, "--format", "folded", in, NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "main;walk;walk;walk;malloc 100\n"
                               "main;helper [util.c];malloc 30\n"
                               "main;walk;helper [other.c];calloc 7\n"
                               "walk;malloc 5\n");
    h_result_free(&r);
    r = postproc(NULL, "--format", "report", "--top", "1", in);
    assert_int_equal(r.status, 0);
    /* 142 bytes in 4 calls, all live after call 4; call 5 frees the 30. */
    assert_non_null(strstr(r.out, "alloctrace report: /usr/bin/walker, pid 77\n"
                                  "allocations:  4 calls, 142 B (142 bytes)\n"
                                  "releases:     1 calls\n"
                                  "peak heap:    142 B (142 bytes) in 4 blocks, at allocation 4 of 4 "
                                  "(call 4 of the trace, releases counted)\n"
                                  "leaked:       112 B (112 bytes) in 3 blocks\n"
                                  "temporary:    0 allocations (0.0% of all)\n"));
    assert_non_null(strstr(r.out, "\ntop 1 sites by leaked bytes (of 4 sites):\n"
                                  "   1. 100 B (100 bytes) in 1 blocks by malloc in walk (tree.c:10)\n"
                                  "        walk at /src/tree.c:10\n"
                                  "        walk at /src/tree.c:20\n"
                                  "        walk at /src/tree.c:20\n"
                                  "        main at /src/main.c:5\n"));
    h_result_free(&r);
    free(in);
    h_cleanup();
}

/* A real trace: tests/programs/postproc_sites leaks 3 x 100 bytes from
 * leak_three, 2000 from leak_big and 2 x 100 from leak_pair; resolved and
 * exported, callgrind_annotate must agree with the trace's own leak
 * summary and with the program. */
static void a_real_resolved_trace_reads_back_in_callgrind_annotate(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/sites.trace", dir);
    char *prog = h_path("build/tests/programs/postproc_sites");
    const char *argv[] = { prog, NULL };
    h_result r = h_trace(trace, argv, NULL);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    r = postproc(NULL, "-l", trace, NULL, NULL, NULL);
    assert_int_equal(r.status, 0);
    char *summary = h_find_line(r.out, "^# [0-9]+ block\\(s\\) leaked with total size of [0-9]+ bytes$");
    assert_non_null(summary);
    long long blocks = 0, bytes = 0;
    assert_int_equal(sscanf(summary, "# %lld block(s) leaked with total size of %lld", &blocks, &bytes), 2);
    free(summary);
    h_result_free(&r);

    char *cg = h_fmt("%s/sites.cg", dir);
    r = postproc(NULL, "-lr", "--format=callgrind", "-o", cg, trace);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    const char *aargv[] = { "callgrind_annotate", "--inclusive=yes", "--tree=both",
                            "--threshold=100", cg, NULL };
    h_result a = h_run(aargv, NULL, dir);
    assert_int_equal(a.status, 0);
    assert_string_equal(a.err, "");
    assert_int_equal(annotate_value(a.out, "PROGRAM TOTALS", 0), bytes);
    assert_int_equal(annotate_value(a.out, "PROGRAM TOTALS", 1), blocks);
    char *src = h_path("tests/programs/postproc_sites.c");
    const char *fns[] = { "leak_three", "leak_big", "leak_pair", "main" };
    const long long want[][2] = { { 300, 3 }, { 2000, 1 }, { 200, 2 }, { 2500, 6 } };
    for (int i = 0; i < 4; i++) {
        char *name = h_fmt("%s:%s", src, fns[i]);
        assert_int_equal(annotate_value(a.out, name, 0), want[i][0]);
        assert_int_equal(annotate_value(a.out, name, 1), want[i][1]);
        free(name);
    }
    h_result_free(&a);

    /* compressed groups give the same profile as the calls one by one */
    char *cg2 = h_fmt("%s/sites-c.cg", dir);
    r = postproc(NULL, "-lcr", "--format=callgrind", "-o", cg2, trace);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    char *one = h_read_file(cg, NULL), *two = h_read_file(cg2, NULL);
    assert_string_equal(one, two);
    free(one);
    free(two);
    free(cg2);

    r = postproc(NULL, "-lr", "--format", "folded", trace, NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.out, ";main;leak_three;malloc 300$"), 1);
    assert_int_equal(h_count_lines(r.out, ";main;leak_pair;calloc 200$"), 1);
    h_result_free(&r);
    free(src);
    free(cg);
    free(prog);
    free(trace);
    h_cleanup();
}

static void bad_export_options_are_one_line_errors(void **state)
{
    (void)state;
    const char *bad[][2] = { { "--format", "xml" }, { "--cost", "pages" }, { "--top", "-3" },
                             { "--cost", "blocks" }, { "--top", "5" } };
    for (size_t i = 0; i < 5; i++) {
        h_result r = postproc(NULL, bad[i][0], bad[i][1], "/dev/null", NULL, NULL);
        assert_int_equal(r.status, 2);
        assert_int_equal(h_count_lines(r.err, "."), 1);
        assert_non_null(strstr(r.err, bad[i][0]));
        h_result_free(&r);
    }
    h_result r = postproc(NULL, "--format", "callgrind", "-o", "/nonexistent/dir/x.cg", "/dev/null");
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "/nonexistent/dir/x.cg"));
    h_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(callgrind_annotate_reads_our_costs_without_warning),
        cmocka_unit_test(leaks_name_the_events_and_count_only_leaks),
        cmocka_unit_test(webgrind_files_get_default_names_and_match_webgrind),
        cmocka_unit_test(huge_costs_switch_both_files_to_kib),
        cmocka_unit_test(an_empty_trace_exports_no_allocations),
        cmocka_unit_test(folded_and_report_go_to_stdout),
        cmocka_unit_test(a_real_resolved_trace_reads_back_in_callgrind_annotate),
        cmocka_unit_test(bad_export_options_are_one_line_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
