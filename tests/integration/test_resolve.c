/*
 * tests/integration/test_resolve.c: trace the resolver's test programs
 * with the real tracer, run `alloctrace-postproc -r` on the trace and check
 * the frame lines of known allocation sites exactly: function, full source
 * path and the line of the "@LABEL" marker in the source.
 */
#include "harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SRC(name) AT_BUILD_ROOT "/tests/programs/" name
#define APP_SRC SRC("resolve_app.c")
#define LIB_SRC SRC("resolve_lib.c")
#define CXX_SRC SRC("resolve_cxx.cc")
#define NAMES_SRC SRC("resolve_names.cc")
#define LINE0_SRC SRC("resolve_line0.c")

static int teardown(void **state)
{
    (void)state;
    h_cleanup();
    return 0;
}

static unsigned marker_line(const char *src, const char *label)
{
    char *text = h_read_file(src, NULL);
    assert_non_null(text);
    char *mark = h_fmt("/* @%s */", label);
    unsigned line = 1, found = 0;
    for (const char *p = text; *p; p++) {
        if (strncmp(p, mark, strlen(mark)) == 0)
            found = line;
        if (*p == '\n')
            line++;
    }
    free(mark);
    free(text);
    assert_true(found > 0);
    return found;
}

/* "FUNC at FILE:LINE" for a marked site, optionally " [inlined]". */
static char *site_text(const char *function, const char *src, const char *label, bool inlined)
{
    return h_fmt("%s at %s:%u%s", function, src, marker_line(src, label), inlined ? " [inlined]" : "");
}

/* Number of frame lines "\t0xADDR TEXT" with exactly this text. */
static size_t count_frames(const char *out, const char *text)
{
    size_t n = 0, tl = strlen(text);
    for (const char *line = out; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *sp = memchr(line, ' ', len);
        if (len > 3 && line[0] == '\t' && line[1] == '0' && line[2] == 'x' && sp &&
            (size_t)(line + len - sp - 1) == tl && memcmp(sp + 1, text, tl) == 0)
            n++;
        line = end ? end + 1 : NULL;
    }
    return n;
}

/* Traces build/tests/programs/PROGRAM (a copy at `exe` when not NULL) into DIR/t.trace. */
static char *trace_program(const char *dir, const char *exe)
{
    char *trace = h_fmt("%s/t.trace", dir);
    const char *argv[] = { exe, NULL };
    h_result r = h_trace(trace, argv, NULL);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    return trace;
}

static char *program(const char *name)
{
    return h_fmt("%s/build/tests/programs/%s", h_root(), name);
}

/* Runs the post-processor with the given options on a trace. */
static h_result postproc(const char *opt1, const char *opt2, const char *opt3, const char *trace)
{
    char *pp = h_path("postproc/alloctrace-postproc");
    const char *argv[6] = { pp };
    int n = 1;
    if (opt1)
        argv[n++] = opt1;
    if (opt2)
        argv[n++] = opt2;
    if (opt3)
        argv[n++] = opt3;
    argv[n++] = trace;
    argv[n] = NULL;
    h_result r = h_run(argv, NULL, NULL);
    free(pp);
    return r;
}

static void assert_one_frame(const char *out, char *text)
{
    if (count_frames(out, text) != 1)
        fail_msg("expected one frame \"%s\" in:\n%s", text, out);
    free(text);
}

static void O0_sites_resolve_to_function_file_and_line(void **state)
{
    (void)state;
    char *exe = program("resolve_app_O0");
    char *trace = trace_program(h_tmpdir(), exe);
    h_result r = postproc("-r", NULL, NULL, trace);
    assert_int_equal(r.status, 0);
    assert_one_frame(r.out, site_text("alloc_direct()", APP_SRC, "direct", false));
    assert_one_frame(r.out, site_text("inline_leaf()", APP_SRC, "inline_leaf", false));
    assert_one_frame(r.out, site_text("resolve_lib_alloc()", LIB_SRC, "lib", false));
    assert_non_null(h_find_line(r.out, "^version=.*filter=resolve, "));
    assert_int_equal(h_count_lines(r.out, "^\t0x[0-9a-f]+$"), 0); /* every frame resolved */
    h_result_free(&r);
    free(trace);
    free(exe);
}

static void O2_inline_chain_is_three_frames_of_one_address(void **state)
{
    (void)state;
    char *exe = program("resolve_app_O2");
    char *trace = trace_program(h_tmpdir(), exe);
    h_result r = postproc("--resolve", NULL, NULL, trace);
    assert_int_equal(r.status, 0);
    char *leaf = site_text("inline_leaf()", APP_SRC, "inline_leaf", true);
    char *first = h_find_line(r.out, "inline_leaf\\(\\) at ");
    assert_non_null(first);
    unsigned long long addr = 0;
    assert_int_equal(sscanf(first, "\t0x%llx", &addr), 1);
    char *mid = site_text("inline_mid()", APP_SRC, "inline_mid", true);
    char *outer = site_text("outer_caller()", APP_SRC, "outer_caller", false);
    char *block = h_fmt("\t0x%llx %s\n\t0x%llx %s\n\t0x%llx %s\n", addr, leaf, addr, mid, addr, outer);
    if (!strstr(r.out, block))
        fail_msg("no inline chain\n%s\nin:\n%s", block, r.out);
    free(block);
    free(leaf);
    free(mid);
    free(outer);
    free(first);
    h_result_free(&r);
    free(trace);
    free(exe);
}

static void non_pie_sites_resolve(void **state)
{
    (void)state;
    char *exe = program("resolve_app_nopie");
    char *trace = trace_program(h_tmpdir(), exe);
    h_result r = postproc("-r", NULL, NULL, trace);
    assert_int_equal(r.status, 0);
    assert_one_frame(r.out, site_text("alloc_direct()", APP_SRC, "direct", false));
    assert_one_frame(r.out, site_text("resolve_lib_alloc()", LIB_SRC, "lib", false));
    h_result_free(&r);
    free(trace);
    free(exe);
}

static void cxx_sites_are_demangled(void **state)
{
    (void)state;
    char *exe = program("resolve_cxx");
    char *trace = trace_program(h_tmpdir(), exe);
    h_result r = postproc("-r", NULL, NULL, trace);
    assert_int_equal(r.status, 0);
    assert_one_frame(r.out, site_text("double* shapes::make_array<double>(unsigned long)", CXX_SRC,
                                      "template", false));
    assert_one_frame(r.out, site_text("shapes::Widget::operator new(unsigned long)", CXX_SRC,
                                      "operator_new", false));
    assert_one_frame(r.out, site_text("shapes::Pool::grab(int) const", CXX_SRC, "method", false));
    assert_one_frame(r.out, site_text("main::{lambda(unsigned long)#1}::operator()(unsigned long) const",
                                      CXX_SRC, "lambda", false));
    h_result_free(&r);
    free(trace);
    free(exe);
}

/* clang writes no .debug_aranges: the units are found by their own
 * ranges, the executable's two units told apart, the inline chain whole. */
static void clang_program_without_aranges_resolves(void **state)
{
    (void)state;
    char *exe = program("resolve_app_clang");
    char *trace = trace_program(h_tmpdir(), exe);
    h_result r = postproc("-r", NULL, NULL, trace);
    assert_int_equal(r.status, 0);
    assert_one_frame(r.out, site_text("alloc_direct()", APP_SRC, "direct", false));
    assert_one_frame(r.out, site_text("inline_leaf()", APP_SRC, "inline_leaf", true));
    assert_one_frame(r.out, site_text("inline_mid()", APP_SRC, "inline_mid", true));
    assert_one_frame(r.out, site_text("outer_caller()", APP_SRC, "outer_caller", false));
    assert_one_frame(r.out, site_text("resolve_lib_alloc()", LIB_SRC, "lib", false));
    h_result_free(&r);
    free(trace);
    free(exe);
}

/* Inlined functions gcc gives no linkage name (static in a namespace, in
 * an anonymous namespace) are named from their scopes and parameter
 * types, as gdb names them; clang's linkage names give the same text. */
static void inlined_cxx_names_are_qualified(const char *exe_name)
{
    char *exe = program(exe_name);
    char *trace = trace_program(h_tmpdir(), exe);
    h_result r = postproc("-r", NULL, NULL, trace);
    assert_int_equal(r.status, 0);
    assert_one_frame(r.out, site_text("shop::make_array(int)", NAMES_SRC, "make_array", true));
    assert_one_frame(r.out, site_text("shop::basket::label(char const*, unsigned int)", NAMES_SRC, "label",
                                      true));
    assert_one_frame(r.out, site_text("shop::(anonymous namespace)::hidden(long)", NAMES_SRC, "hidden", true));
    assert_one_frame(r.out, site_text("shop::sized(unsigned long)", NAMES_SRC, "sized", true));
    h_result_free(&r);
    free(trace);
    free(exe);
}

static void inlined_cxx_names_are_qualified_with_gcc(void **state)
{
    (void)state;
    inlined_cxx_names_are_qualified("resolve_names_gcc");
}

static void inlined_cxx_names_are_qualified_with_clang(void **state)
{
    (void)state;
    inlined_cxx_names_are_qualified("resolve_names_clang");
}

/* gdb, the peer: its backtrace names the same functions (without the
 * parameter list, which it shows as arguments). */
static void inlined_cxx_names_match_gdb(void **state)
{
    (void)state;
    if (access("/usr/bin/gdb", X_OK) != 0) {
        printf("inlined_cxx_names_match_gdb: skipped: gdb is not installed\n");
        return;
    }
    char *exe = program("resolve_names_gcc");
    h_result g = h_sh("gdb -nx -q -batch -ex 'break main' -ex run -ex 'break malloc' -ex c -ex 'bt 2' "
                      "-ex c -ex 'bt 2' -ex c -ex 'bt 2' '%s' 2>&1 | sed -n 's/^#1 .* in \\(.*\\) (.*/\\1/p'",
                      exe);
    if (g.status != 0 || !*g.out) {
        printf("inlined_cxx_names_match_gdb: skipped: gdb could not run the program here\n");
        h_result_free(&g);
        free(exe);
        return;
    }
    assert_string_equal(g.out, "shop::make_array\nshop::basket::label\nshop::(anonymous namespace)::hidden\n");
    h_result_free(&g);
    free(exe);
}

/* Code of no particular line (line 0) keeps its file: the frame says
 * FILE:0 and the callstack filters match it with `_` or 0, not with a
 * range of real lines. */
static void line_zero_frame_keeps_its_file(void **state)
{
    (void)state;
    char *exe = program("resolve_line0");
    char *trace = trace_program(h_tmpdir(), exe);
    h_result r = postproc("-r", NULL, NULL, trace);
    assert_int_equal(r.status, 0);
    char *text = h_fmt("zero_line() at %s:0", LINE0_SRC);
    assert_one_frame(r.out, text);
    h_result_free(&r);
    const struct { const char *filter; int kept; } cases[] = {
        { "callstack contains [ ... resolve_line0.c : _ ]", 1 },
        { "callstack contains [ ... resolve_line0.c : 0 ]", 1 },
        { "string contains [ ... resolve_line0.c ]", 1 },
        { "callstack contains [ ... resolve_line0.c : [1, _] ]", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        h_result f = postproc("-r", "--filter", cases[i].filter, trace);
        assert_int_equal(f.status, 0);
        if ((int)h_count_lines(f.out, " malloc\\(24\\) = 0x") != cases[i].kept)
            fail_msg("%s: expected %d allocation(s) kept:\n%s", cases[i].filter, cases[i].kept, f.out);
        h_result_free(&f);
    }
    free(trace);
    free(exe);
}

static void stripped_program_resolves_with_debug_dir(void **state)
{
    (void)state;
    char *exe = program("resolve_app_stripped");
    char *trace = trace_program(h_tmpdir(), exe);
    char *dir = program("resolve_debug");
    h_result r = postproc("-r", "--debug-dir", dir, trace);
    assert_int_equal(r.status, 0);
    assert_one_frame(r.out, site_text("alloc_direct()", APP_SRC, "direct", false));
    h_result_free(&r);
    r = postproc("-r", NULL, NULL, trace); /* without it: the module only */
    assert_int_equal(r.status, 0);
    assert_int_equal(count_frames(r.out, site_text("alloc_direct()", APP_SRC, "direct", false)), 0);
    char *from = h_fmt("from %s", exe);
    assert_true(count_frames(r.out, from) >= 3);
    free(from);
    h_result_free(&r);
    free(dir);
    free(trace);
    free(exe);
}

/* The program is rebuilt after the run: its frames must not get the new
 * build's lines. */
static void rebuilt_program_warns_once_and_gives_module_only(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *exe = h_fmt("%s/app", dir);
    h_result c = h_sh("cp %s/build/tests/programs/resolve_app_O0 %s && cp %s/build/tests/programs/libresolve_lib.so %s/",
                      h_root(), exe, h_root(), dir);
    assert_int_equal(c.status, 0);
    h_result_free(&c);
    char *trace = trace_program(dir, exe);
    c = h_sh("cp %s/build/tests/programs/resolve_app_O2 %s", h_root(), exe);
    assert_int_equal(c.status, 0);
    h_result_free(&c);
    h_result r = postproc("-r", NULL, NULL, trace);
    assert_int_equal(r.status, 0);
    char *warning = h_fmt("^alloctrace-postproc: WARNING: %s: build id [0-9a-f]+ is not the traced", exe);
    assert_int_equal(h_count_lines(r.err, warning), 1);
    assert_int_equal(h_count_lines(r.err, "WARNING"), 1);
    assert_int_equal(h_count_lines(r.out, "alloc_direct"), 0);
    char *from = h_fmt("from %s", exe);
    assert_true(count_frames(r.out, from) >= 3);
    assert_one_frame(r.out, site_text("resolve_lib_alloc()", LIB_SRC, "lib", false));
    h_result_free(&r);
    r = postproc("-r", "-q", NULL, trace);
    assert_string_equal(r.err, "");
    h_result_free(&r);
    free(from);
    free(warning);
    free(trace);
    free(exe);
}

static void deleted_library_warns_once(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    h_result c = h_sh("cp %s/build/tests/programs/resolve_app_O0 %s/build/tests/programs/libresolve_lib.so %s/",
                      h_root(), h_root(), dir);
    assert_int_equal(c.status, 0);
    h_result_free(&c);
    char *exe = h_fmt("%s/resolve_app_O0", dir);
    char *trace = trace_program(dir, exe);
    c = h_sh("rm %s/libresolve_lib.so", dir);
    h_result_free(&c);
    h_result r = postproc("-r", NULL, NULL, trace);
    assert_int_equal(r.status, 0);
    char *warning = h_fmt("^alloctrace-postproc: WARNING: cannot read %s/libresolve_lib.so: ", dir);
    assert_int_equal(h_count_lines(r.err, warning), 1);
    assert_int_equal(h_count_lines(r.err, "WARNING"), 1);
    char *from = h_fmt("from %s/libresolve_lib.so", dir);
    assert_int_equal(count_frames(r.out, from), 2); /* the probe and resolve_lib_alloc */
    assert_one_frame(r.out, site_text("alloc_direct()", APP_SRC, "direct", false));
    h_result_free(&r);
    free(from);
    free(warning);
    free(trace);
    free(exe);
}

/* -l, -c and -r in one run, and -r on an already compressed trace. */
static void resolve_works_with_leaks_and_compress(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *exe = program("resolve_app_O0");
    char *trace = trace_program(dir, exe);
    h_result r = postproc("-lcr", NULL, NULL, trace);
    assert_int_equal(r.status, 0);
    assert_non_null(h_find_line(r.out, "^version=.*filter=leaks\\|compress\\|resolve, "));
    /* alloc_direct's and the inline site's blocks leak; the library's is freed */
    assert_one_frame(r.out, site_text("alloc_direct()", APP_SRC, "direct", false));
    assert_one_frame(r.out, site_text("inline_leaf()", APP_SRC, "inline_leaf", false));
    assert_int_equal(count_frames(r.out, site_text("resolve_lib_alloc()", LIB_SRC, "lib", false)), 0);
    h_result_free(&r);

    char *compressed = h_fmt("%s/c.trace", dir);
    h_result c = h_sh("%s/postproc/alloctrace-postproc -c -o %s %s", h_root(), compressed, trace);
    assert_int_equal(c.status, 0);
    h_result_free(&c);
    r = postproc("-r", NULL, NULL, compressed);
    assert_int_equal(r.status, 0);
    /* "compress" is set only by a run that compresses (TEXT_FORMAT.md section 1) */
    assert_non_null(h_find_line(r.out, "^version=.*filter=resolve, "));
    assert_one_frame(r.out, site_text("resolve_lib_alloc()", LIB_SRC, "lib", false));
    h_result_free(&r);
    free(compressed);
    free(trace);
    free(exe);
}

static void resolved_trace_keeps_text_unless_re_resolve(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *exe = program("resolve_app_O0");
    char *trace = trace_program(dir, exe);
    char *edited = h_fmt("%s/e.trace", dir);
    /* An earlier run's text for alloc_direct's frame, made stale on purpose. */
    h_result c = h_sh("%s/postproc/alloctrace-postproc -r %s | sed 's/alloc_direct() at .*/stale() at old.c:1/' > %s",
                      h_root(), trace, edited);
    assert_int_equal(c.status, 0);
    h_result_free(&c);
    h_result r = postproc("-r", NULL, NULL, edited);
    assert_int_equal(count_frames(r.out, "stale() at old.c:1"), 1);
    h_result_free(&r);
    r = postproc("--re-resolve", NULL, NULL, edited);
    assert_int_equal(count_frames(r.out, "stale() at old.c:1"), 0);
    assert_one_frame(r.out, site_text("alloc_direct()", APP_SRC, "direct", false));
    h_result_free(&r);
    free(edited);
    free(trace);
    free(exe);
}

/* dlclose, then another object over the same range: calls before the new
 * map line resolve in the old object, also when -l held them to the end. */
static void replaced_map_resolves_earlier_calls_in_old_object(void **state)
{
    (void)state;
    char *trace = h_fmt("%s/replaced.trace", h_tmpdir());
    FILE *f = fopen(trace, "w");
    assert_non_null(f);
    fputs("version=2.0, arch=x86_64, timestamp=2026.11.22 10:00:00, process=x, pid=1, \n"
          "<1> : memory (memory allocation in bytes)\n"
          ": /nonexistent/old.so => 0x7f0000000000-0x7f0000100000\n"
          "1. malloc(8) = 0x1000\n\t0x7f0000001234\n\n"
          ": /nonexistent/new.so => 0x7f0000000000-0x7f0000100000\n"
          "2. malloc(16) = 0x2000\n\t0x7f0000001234\n\n",
          f);
    fclose(f);
    const char *runs[] = { "-r", "-lr" };
    for (int i = 0; i < 2; i++) {
        h_result r = postproc(runs[i], "-q", NULL, trace);
        assert_int_equal(r.status, 0);
        char *first = h_find_line(r.out, "^\t0x7f0000001234 ");
        assert_non_null(first);
        assert_string_equal(first, "\t0x7f0000001234 from /nonexistent/old.so");
        assert_int_equal(count_frames(r.out, "from /nonexistent/old.so"), 1);
        assert_int_equal(count_frames(r.out, "from /nonexistent/new.so"), 1);
        free(first);
        h_result_free(&r);
    }
    free(trace);
}

static void debug_dir_without_resolve_is_a_usage_error(void **state)
{
    (void)state;
    h_result r = postproc("--debug-dir", "/tmp", NULL, "/dev/null");
    assert_int_equal(r.status, 2);
    assert_int_equal(h_count_lines(r.err, "^alloctrace-postproc: .*need -r/--resolve"), 1);
    h_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(O0_sites_resolve_to_function_file_and_line, teardown),
        cmocka_unit_test_teardown(O2_inline_chain_is_three_frames_of_one_address, teardown),
        cmocka_unit_test_teardown(non_pie_sites_resolve, teardown),
        cmocka_unit_test_teardown(cxx_sites_are_demangled, teardown),
        cmocka_unit_test_teardown(clang_program_without_aranges_resolves, teardown),
        cmocka_unit_test_teardown(inlined_cxx_names_are_qualified_with_gcc, teardown),
        cmocka_unit_test_teardown(inlined_cxx_names_are_qualified_with_clang, teardown),
        cmocka_unit_test_teardown(inlined_cxx_names_match_gdb, teardown),
        cmocka_unit_test_teardown(line_zero_frame_keeps_its_file, teardown),
        cmocka_unit_test_teardown(stripped_program_resolves_with_debug_dir, teardown),
        cmocka_unit_test_teardown(rebuilt_program_warns_once_and_gives_module_only, teardown),
        cmocka_unit_test_teardown(deleted_library_warns_once, teardown),
        cmocka_unit_test_teardown(resolve_works_with_leaks_and_compress, teardown),
        cmocka_unit_test_teardown(resolved_trace_keeps_text_unless_re_resolve, teardown),
        cmocka_unit_test_teardown(replaced_map_resolves_earlier_calls_in_old_object, teardown),
        cmocka_unit_test_teardown(debug_dir_without_resolve_is_a_usage_error, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
