/*
 * tests/integration/test_gate_recipes.c: the recipes of docs/gate.md
 * ("Using the gate as a test wrapper"), each run for real with the build
 * tool it is written for: meson test --wrap, automake's LOG_COMPILER,
 * ctest -T memcheck, and the same with libtool's wrapper scripts as the
 * tests. A test whose tool is not installed is skipped and
 * says so. Each suite holds a clean test, one that fails on its own
 * (exit 1, no leak), one that skips (exit 77) and one that leaks, and the
 * tool must count them as 1 pass, 2 failures, 1 skip: the gate keeps the
 * test's own verdict and adds its leaks.
 */
#include "harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The suite's suppression file: it takes a leak no test makes, so each
 * recipe shows where the file goes without changing the verdicts. */
#define LEAKS_SUPP "# leaks.supp\nold-cache: functions contains [ ... no_such_function ]\n"

static void write_file(const char *dir, const char *name, const char *text)
{
    char *path = h_fmt("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    free(path);
}

static void mkdir_tests(const char *dir)
{
    h_result r = h_sh("mkdir -p '%s/tests'", dir);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    char *sub = h_fmt("%s/tests", dir);
    write_file(sub, "leaks.supp", LEAKS_SUPP);
    free(sub);
}

/* docs/gate.md: meson test -C build
 * --wrap="alloctrace --check --suppressions $PWD/tests/leaks.supp --" */
static void meson_wrap_keeps_each_tests_verdict(void **state)
{
    (void)state;
    if (!h_have("meson") || !h_have("ninja"))
        skip();
    char *dir = h_tmpdir(), *prog = h_path("build/tests/programs/gate_leaky");
    char *gate = h_path("scripts/alloctrace");
    char *build = h_fmt("project('recipe')\n"
                        "leaky = find_program('%s')\n"
                        "test('clean', leaky)\n"
                        "test('fails', leaky, args: ['exit=1'])\n"
                        "test('skips', leaky, args: ['exit=77'])\n"
                        "test('leaks', leaky, args: ['buf=2'])\n", prog);
    write_file(dir, "meson.build", build);
    mkdir_tests(dir);
    h_result r = h_sh("cd '%s' && meson setup b >/dev/null && "
                      "meson test -C b --wrap=\"'%s' --check --suppressions $PWD/tests/leaks.supp --\"",
                      dir, gate);
    assert_int_not_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.out, "^Ok: +1 *$"), 1);
    assert_int_equal(h_count_lines(r.out, "^Fail: +2 *$"), 1);
    assert_int_equal(h_count_lines(r.out, "^Skipped: +1 *$"), 1);
    assert_int_equal(h_count_lines(r.out, "leaks +FAIL .*exit status 1"), 1);
    assert_int_equal(h_count_lines(r.out, "fails +FAIL .*exit status 1"), 1);
    h_result_free(&r);
    r = h_sh("cat '%s'/b/meson-logs/testlog*.txt", dir);
    h_has(r.out, "Leak of 1024 byte(s) in 2 block(s)");
    h_result_free(&r);
    free(build);
    free(gate);
    free(prog);
}

/* docs/gate.md: LOG_COMPILER = $(ALLOCTRACE) --check,
 * AM_LOG_FLAGS = --suppressions $(srcdir)/leaks.supp -- */
static void automake_log_compiler_keeps_each_tests_verdict(void **state)
{
    (void)state;
    if (!h_have("autoreconf") || !h_have("automake"))
        skip();
    char *dir = h_tmpdir(), *gate = h_path("scripts/alloctrace");
    write_file(dir, "configure.ac",
               "AC_INIT([recipe], [1])\nAM_INIT_AUTOMAKE([foreign])\nAC_PROG_CC\n"
               "AC_CONFIG_FILES([Makefile])\nAC_OUTPUT\n");
    write_file(dir, "Makefile.am",
               "check_PROGRAMS = t_clean t_fails t_skips t_leaks\n"
               "TESTS = $(check_PROGRAMS)\n"
               "ALLOCTRACE = alloctrace\n"
               "LOG_COMPILER = $(ALLOCTRACE) --check\n"
               "AM_LOG_FLAGS = --suppressions $(srcdir)/leaks.supp --\n");
    write_file(dir, "leaks.supp", LEAKS_SUPP);
    write_file(dir, "t_clean.c", "int main(void) { return 0; }\n");
    write_file(dir, "t_fails.c", "int main(void) { return 1; }\n");
    write_file(dir, "t_skips.c", "int main(void) { return 77; }\n");
    write_file(dir, "t_leaks.c", "#include <stdlib.h>\nvoid *volatile p;\n"
                                 "int main(void) { p = malloc(64); p = 0; return 0; }\n");
    h_result r = h_sh("cd '%s' && autoreconf -i >/dev/null 2>&1 && ./configure -q >/dev/null && "
                      "make -s check ALLOCTRACE='%s' >/dev/null 2>&1; cat test-suite.log t_leaks.log",
                      dir, gate);
    h_has(r.out, "# TOTAL: 4\n# PASS:  1\n# SKIP:  1\n# XFAIL: 0\n# FAIL:  2\n");
    h_has(r.out, "FAIL t_fails (exit status: 1)");
    h_has(r.out, "SKIP t_skips (exit status: 77)");
    h_has(r.out, "Leak of 64 byte(s) in 1 block(s)");
    h_result_free(&r);
    free(gate);
}

/* The number after "Defects: " in ctest's line for test `name`. */
static long ctest_defects(const char *out, const char *name)
{
    char *re = h_fmt("MemCheck: #[0-9]+: %s .*Defects: ", name);
    char *line = h_find_line(out, re);
    free(re);
    if (!line)
        return 0;
    long n = atol(strstr(line, "Defects: ") + 9);
    free(line);
    return n;
}

/* docs/gate.md: MEMORYCHECK_TYPE=Valgrind, MEMORYCHECK_COMMAND=alloctrace-check.
 * ctest's defect count per test equals the gate's leak group count. */
static void ctest_memcheck_counts_the_gates_leak_groups(void **state)
{
    (void)state;
    if (!h_have("cmake") || !h_have("ctest"))
        skip();
    char *dir = h_tmpdir(), *prog = h_path("build/tests/programs/gate_leaky");
    char *gate = h_path("scripts/alloctrace-check"), *cxx = h_path("build/tests/programs/reach_cxx");
    /* "cxx": a leaked new std::string, one definite and one indirect group
     * (valgrind would fold the second into the first's record). */
    char *lists = h_fmt("cmake_minimum_required(VERSION 3.10)\nproject(recipe NONE)\n"
                        "include(CTest)\n"
                        "add_test(NAME clean COMMAND %s)\n"
                        "add_test(NAME three COMMAND %s buf=2 name extra)\n"
                        "add_test(NAME one COMMAND %s buf=1)\n"
                        "add_test(NAME cxx COMMAND %s string)\n", prog, prog, prog, cxx);
    write_file(dir, "CMakeLists.txt", lists);
    h_result r = h_sh("cd '%s' && cmake -S . -B b -DMEMORYCHECK_TYPE=Valgrind "
                      "-DMEMORYCHECK_COMMAND='%s' >/dev/null && cd b && ctest -T memcheck",
                      dir, gate);
    assert_int_equal(ctest_defects(r.out, "clean"), 0);
    assert_int_equal(ctest_defects(r.out, "three"), 3);
    assert_int_equal(ctest_defects(r.out, "one"), 1);
    assert_int_equal(ctest_defects(r.out, "cxx"), 2);
    h_has(r.out, "Memory Leak - 6\n");
    h_result_free(&r);

    /* ctest hands MEMORYCHECK_SUPPRESSIONS_FILE, a valgrind file, to the
     * gate as --suppressions=FILE: one group fewer. */
    write_file(dir, "vg.supp", "{\n   buffers\n   Memcheck:Leak\n   match-leak-kinds: definite\n"
                               "   fun:malloc\n   fun:make_buffer\n}\n");
    r = h_sh("cd '%s' && cmake -S . -B b2 -DMEMORYCHECK_TYPE=Valgrind -DMEMORYCHECK_COMMAND='%s' "
             "-DMEMORYCHECK_SUPPRESSIONS_FILE='%s/vg.supp' >/dev/null && cd b2 && ctest -T memcheck",
             dir, gate, dir);
    assert_int_equal(ctest_defects(r.out, "three"), 2);
    assert_int_equal(ctest_defects(r.out, "one"), 0);
    h_has(r.out, "Memory Leak - 4\n");
    h_result_free(&r);

    /* The gate alone on the same test: the same three groups. */
    r = h_sh("'%s' -- '%s' buf=2 name extra", gate, prog);
    assert_int_equal(r.status, 1);
    assert_int_equal(h_count_lines(r.err, "^Leak of "), 3);
    h_result_free(&r);
    r = h_sh("'%s' -- '%s' string", gate, cxx);
    assert_int_equal(h_count_lines(r.err, "^Leak of "), 2);
    h_has(r.err, "[indirectly lost]\n");
    h_result_free(&r);
    free(cxx);
    free(lists);
    free(gate);
    free(prog);
}

/* A libtool project: libleak.la and four tests linked with it, each a
 * libtool wrapper script in the build directory that execs the real
 * program (.libs/t_NAME or .libs/lt-t_NAME): the gate must judge that
 * program, not the script nor the subshells it forks first. t_leaks leaks in its own code and through the library. Built
 * once, in dir; false when a tool is missing (the caller skips). */
static bool libtool_project(const char *dir)
{
    if (!h_have("autoreconf") || !h_have("automake") || !h_have("libtoolize"))
        return false;
    write_file(dir, "configure.ac",
               "AC_INIT([ltrecipe], [1])\nAM_INIT_AUTOMAKE([foreign])\nAC_PROG_CC\nLT_INIT\n"
               "AC_CONFIG_FILES([Makefile])\nAC_OUTPUT\n");
    write_file(dir, "Makefile.am",
               "lib_LTLIBRARIES = libleak.la\nlibleak_la_SOURCES = leak.c\n"
               "check_PROGRAMS = t_clean t_fails t_skips t_leaks\n"
               "LDADD = libleak.la\n"
               "TESTS = $(check_PROGRAMS)\n"
               "ALLOCTRACE = alloctrace\n"
               "LOG_COMPILER = $(ALLOCTRACE) --check\n"
               "AM_LOG_FLAGS = --suppressions $(srcdir)/leaks.supp --\n");
    write_file(dir, "leaks.supp", LEAKS_SUPP);
    write_file(dir, "leak.c", "#include <stdlib.h>\nvoid *volatile lib_keep;\n"
                              "void lib_leak(void) { lib_keep = malloc(48); lib_keep = 0; }\n"
                              "int lib_ok(void) { return 0; }\n");
    write_file(dir, "t_clean.c", "int lib_ok(void);\nint main(void) { return lib_ok(); }\n");
    write_file(dir, "t_fails.c", "int lib_ok(void);\nint main(void) { return lib_ok() + 1; }\n");
    write_file(dir, "t_skips.c", "int lib_ok(void);\nint main(void) { return lib_ok() + 77; }\n");
    write_file(dir, "t_leaks.c", "#include <stdlib.h>\nvoid lib_leak(void);\nvoid *volatile p;\n"
                                 "int main(void) { p = malloc(64); p = 0; lib_leak(); return 0; }\n");
    h_result r = h_sh("cd '%s' && autoreconf -i >/dev/null 2>&1 && ./configure -q >/dev/null 2>&1 && "
                      "make -s check_PROGRAMS='t_clean t_fails t_skips t_leaks' libleak.la t_clean "
                      "t_fails t_skips t_leaks >/dev/null 2>&1 && head -c 2 t_leaks && "
                      "grep -c 'libtool' t_leaks", dir);
    bool ok = r.status == 0 && strncmp(r.out, "#!", 2) == 0;   /* a wrapper script */
    if (!ok)
        print_message("the libtool project did not build: %s%s\n", r.out, r.err);
    h_result_free(&r);
    return ok;
}

/* libtool's wrapper scripts under each tool: the gate judges the program
 * the wrapper execs, names it, and keeps each test's verdict (the wrapper
 * used to give exit 3: "truncated trace"). */
static void libtool_wrapped_tests_are_judged_as_the_test_under_each_tool(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *gate = h_path("scripts/alloctrace");
    if (!libtool_project(dir))
        skip();
    /* The wrapper alone. */
    h_result r = h_sh("cd '%s' && '%s' --check -- ./t_leaks", dir, gate);
    assert_int_equal(r.status, 1);
    assert_int_equal(h_count_lines(r.err, "^exec'd .*/\\.libs/(lt-)?t_leaks: not judged itself"), 1);
    /* The wrapper's own $(...) subshells (bash's, which leak) are not the test. */
    assert_int_equal(h_count_lines(r.err, "^== process "), 2);
    h_has(r.err, "Leak of 64 byte(s) in 1 block(s) in main (t_leaks.c:4), allocated from: [definitely lost]\n");
    h_has(r.err, "Leak of 48 byte(s) in 1 block(s) in lib_leak (leak.c:3), allocated from: [definitely lost]\n");
    h_result_free(&r);
    r = h_sh("cd '%s' && '%s' --check -- ./t_clean", dir, gate);
    assert_int_equal(r.status, 0);
    h_result_free(&r);

    /* automake's LOG_COMPILER. */
    r = h_sh("cd '%s' && make -s check ALLOCTRACE='%s' >/dev/null 2>&1; cat test-suite.log t_leaks.log",
             dir, gate);
    h_has(r.out, "# TOTAL: 4\n# PASS:  1\n# SKIP:  1\n# XFAIL: 0\n# FAIL:  2\n");
    h_has(r.out, "SKIP t_skips (exit status: 77)");
    h_has(r.out, "Leak of 48 byte(s) in 1 block(s) in lib_leak (leak.c:3)");
    h_result_free(&r);

    /* meson test --wrap, the wrappers as the tests. */
    if (h_have("meson") && h_have("ninja")) {
        char *build = h_fmt("project('ltwrap')\n"
                            "foreach t : ['clean', 'fails', 'skips', 'leaks']\n"
                            "  test(t, find_program('%s/t_' + t))\n"
                            "endforeach\n", dir);
        char *mdir = h_fmt("%s/m", dir);
        h_result mk = h_sh("mkdir -p '%s'", mdir);
        h_result_free(&mk);
        write_file(mdir, "meson.build", build);
        r = h_sh("cd '%s' && meson setup b >/dev/null && meson test -C b --wrap=\"'%s' --check --\"",
                 mdir, gate);
        assert_int_equal(h_count_lines(r.out, "^Ok: +1 *$"), 1);
        assert_int_equal(h_count_lines(r.out, "^Fail: +2 *$"), 1);
        assert_int_equal(h_count_lines(r.out, "^Skipped: +1 *$"), 1);
        h_result_free(&r);
        free(build);
        free(mdir);
    } else {
        print_message("meson or ninja is not installed: its part is skipped\n");
    }

    /* ctest -T memcheck with the gate as valgrind: 2 defects for t_leaks. */
    if (h_have("cmake") && h_have("ctest")) {
        char *check = h_path("scripts/alloctrace-check");
        char *lists = h_fmt("cmake_minimum_required(VERSION 3.10)\nproject(ltwrap NONE)\n"
                            "include(CTest)\n"
                            "add_test(NAME clean COMMAND %s/t_clean)\n"
                            "add_test(NAME leaks COMMAND %s/t_leaks)\n", dir, dir);
        char *cdir = h_fmt("%s/c", dir);
        h_result mk = h_sh("mkdir -p '%s'", cdir);
        h_result_free(&mk);
        write_file(cdir, "CMakeLists.txt", lists);
        r = h_sh("cd '%s' && cmake -S . -B b -DMEMORYCHECK_TYPE=Valgrind -DMEMORYCHECK_COMMAND='%s' "
                 ">/dev/null && cd b && ctest -T memcheck", cdir, check);
        assert_int_equal(ctest_defects(r.out, "clean"), 0);
        assert_int_equal(ctest_defects(r.out, "leaks"), 2);
        h_has(r.out, "Memory Leak - 2\n");
        h_result_free(&r);
        free(lists);
        free(cdir);
        free(check);
    } else {
        print_message("cmake or ctest is not installed: its part is skipped\n");
    }
    free(gate);
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, h_teardown)
    const struct CMUnitTest tests[] = {
        T(meson_wrap_keeps_each_tests_verdict),
        T(automake_log_compiler_keeps_each_tests_verdict),
        T(ctest_memcheck_counts_the_gates_leak_groups),
        T(libtool_wrapped_tests_are_judged_as_the_test_under_each_tool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
