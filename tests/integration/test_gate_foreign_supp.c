/*
 * tests/integration/test_gate_foreign_supp.c: suppression files of
 * valgrind and LeakSanitizer used on both tools. The valgrind file is the
 * one `valgrind --gen-suppressions=all` writes for the same leaks, and
 * valgrind itself must accept it and suppress with it; then the gate,
 * given the same file, must leave exactly the leaks valgrind left. The
 * LSan file is checked the same way with a -fsanitize=leak build of the
 * same program. Skipped, saying so, when valgrind or clang's LSan runtime
 * is missing.
 */
#include "harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG(name) h_path("build/tests/programs/" name)

/* valgrind --gen-suppressions=all on `prog args`: the suppression blocks
 * it printed, written to DIR/NAME; returns the path. */
static char *generate(const char *dir, const char *name, const char *prog, const char *args)
{
    char *path = h_fmt("%s/%s", dir, name);
    h_result r = h_sh("valgrind -q --leak-check=full --gen-suppressions=all --log-file='%s/gen.log' "
                      "'%s' %s && grep -v '^==' '%s/gen.log' > '%s'",
                      dir, prog, args, dir, path);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    return path;
}

/* gen-suppressions for two of gate_leaky's three leaks (one through
 * strdup): valgrind and the gate both leave only the third. */
static void valgrind_generated_file_suppresses_the_same_in_both_tools(void **state)
{
    (void)state;
    if (!h_have("valgrind"))
        skip();
    char *dir = h_tmpdir(), *prog = PROG("gate_leaky"), *gate = h_path("scripts/alloctrace");
    char *supp = generate(dir, "vg.supp", prog, "buf=2 name");
    char *text = h_read_file(supp, NULL);
    h_has(text, "   fun:strdup\n   fun:dup_name\n");   /* valgrind's own name for it */
    free(text);

    h_result r = h_sh("valgrind -q --leak-check=full --error-exitcode=9 --suppressions='%s' "
                      "'%s' buf=2 name extra", supp, prog);
    assert_int_equal(r.status, 9);
    h_has(r.err, "64 bytes in 1 blocks are definitely lost");
    h_lacks(r.err, "1,024 bytes");
    h_lacks(r.err, "24 bytes in 1 blocks");
    h_result_free(&r);

    r = h_sh("'%s' --check --suppressions '%s' -- '%s' buf=2 name extra", gate, supp, prog);
    assert_int_equal(r.status, 1);
    assert_int_equal(h_count_lines(r.err, "^Leak of "), 1);
    h_has(r.err, "Leak of 64 byte(s) in 1 block(s)");
    h_has(r.err, "SUMMARY: alloctrace: 64 byte(s) leaked in 1 allocation(s).\n");
    h_result_free(&r);
    free(supp);
    free(gate);
    free(prog);
}

/* C++: mangled names, operator new, new[] and the nothrow new. */
static void valgrind_generated_cxx_file_suppresses_the_same_in_both_tools(void **state)
{
    (void)state;
    if (!h_have("valgrind"))
        skip();
    char *dir = h_tmpdir(), *prog = PROG("gate_leaky_cxx"), *gate = h_path("scripts/alloctrace");
    char *supp = generate(dir, "cxx.supp", prog, "one nothrow");
    char *text = h_read_file(supp, NULL);
    h_has(text, "   fun:_Znwm\n   fun:_ZNK3app5Maker8make_oneEv\n");
    free(text);

    h_result r = h_sh("valgrind -q --leak-check=full --error-exitcode=9 --suppressions='%s' "
                      "'%s' one nothrow array", supp, prog);
    assert_int_equal(r.status, 9);
    h_has(r.err, "40 bytes in 1 blocks are definitely lost");
    h_lacks(r.err, "4 bytes in 1 blocks");
    h_result_free(&r);

    r = h_sh("'%s' --check --suppressions '%s' -- '%s' one nothrow array", gate, supp, prog);
    assert_int_equal(r.status, 1);
    assert_int_equal(h_count_lines(r.err, "^Leak of "), 1);
    h_has(r.err, "Leak of 40 byte(s) in 1 block(s)");
    h_result_free(&r);

    /* And the whole set: nothing left in either. */
    free(supp);
    supp = generate(dir, "all.supp", prog, "one nothrow array");
    r = h_sh("'%s' --check --suppressions '%s' -- '%s' one nothrow array", gate, supp, prog);
    assert_int_equal(r.status, 0);
    h_has(r.err, "SUMMARY: alloctrace: 0 byte(s) leaked in 0 allocation(s).\n");
    h_result_free(&r);
    free(supp);
    free(gate);
    free(prog);
}

/* --convert-suppressions prints the translation; fed back as a filter
 * file it suppresses what the valgrind file did. */
static void converted_file_suppresses_what_the_original_did(void **state)
{
    (void)state;
    if (!h_have("valgrind"))
        skip();
    char *dir = h_tmpdir(), *prog = PROG("gate_leaky"), *gate = h_path("scripts/alloctrace");
    char *supp = generate(dir, "vg.supp", prog, "buf=1 name");
    h_result r = h_sh("'%s' --convert-suppressions '%s' > '%s/conv.supp'", gate, supp, dir);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    r = h_sh("cat '%s/conv.supp' && '%s' --check --suppressions '%s/conv.supp' -- '%s' buf=1 name extra",
             dir, gate, dir, prog);
    assert_int_equal(r.status, 1);
    h_has(r.out, "# alloctrace filters translated from the valgrind suppressions of ");
    h_has(r.out, "functions contains [ ... #\"^(?:__)?main$\"# #\"^(?:__)?dup_name$\"# "
               "#\"^(?:__)?strdup$\"# ]\n");
    assert_int_equal(h_count_lines(r.err, "^Leak of "), 1);
    h_has(r.err, "Leak of 64 byte(s) in 1 block(s)");
    h_result_free(&r);
    free(supp);
    free(gate);
    free(prog);
}

/* The suppression files Debian ships with valgrind (its own default.supp,
 * python3.supp, ncurses.supp, debian.supp) are read, translated and
 * applied: a clean program still passes with each. */
static void debian_valgrind_suppression_files_are_read(void **state)
{
    (void)state;
    h_result r = h_sh("ls /usr/libexec/valgrind/default.supp /usr/lib/valgrind/*.supp 2>/dev/null");
    if (r.out[0] == '\0') {
        print_message("skipped: no valgrind suppression files installed\n");
        h_result_free(&r);
        skip();
    }
    char *gate = h_path("scripts/alloctrace"), *prog = PROG("gate_clean");
    size_t files = 0;
    for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n"), files++) {
        h_result c = h_sh("'%s' --convert-suppressions '%s' | grep -c '^[A-Za-z0-9_.-]*: ' && "
                          "'%s' --check --suppressions '%s' -- '%s'", gate, line, gate, line, prog);
        if (c.status != 0 || atoi(c.out) == 0)
            fail_msg("%s: status %d\n%s%s", line, c.status, c.out, c.err);
        h_result_free(&c);
    }
    assert_true(files > 0);
    h_result_free(&r);
    free(prog);
    free(gate);
}

/* The same program built with -fsanitize=leak and LSan's own file. */
static void lsan_file_suppresses_the_same_in_both_tools(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *src = h_path("tests/programs/gate_leaky.c");
    h_result r = h_sh("clang -g -O0 -fsanitize=leak '%s' -o '%s/leaky_lsan' 2>&1", src, dir);
    bool built = r.status == 0;
    h_result_free(&r);
    if (!built) {
        print_message("skipped: clang with LeakSanitizer (libclang-rt) is not installed\n");
        free(src);
        skip();
    }
    char *prog = PROG("gate_leaky"), *gate = h_path("scripts/alloctrace");
    char *supp = h_fmt("%s/lsan.supp", dir);
    FILE *f = fopen(supp, "w");
    assert_non_null(f);
    fputs("# LeakSanitizer suppressions\nleak:make_buffer\nleak:^dup_name$\n", f);
    fclose(f);
    /* fast_unwind_on_malloc=0: LSan's frame-pointer unwinder stops in libc's strdup. */
    r = h_sh("LSAN_OPTIONS=suppressions='%s':fast_unwind_on_malloc=0 '%s/leaky_lsan' buf=2 name extra",
             supp, dir);
    assert_int_not_equal(r.status, 0);
    h_has(r.err, "SUMMARY: LeakSanitizer: 64 byte(s) leaked in 1 allocation(s).\n");
    h_result_free(&r);
    r = h_sh("'%s' --check --suppressions '%s' -- '%s' buf=2 name extra", gate, supp, prog);
    assert_int_equal(r.status, 1);
    h_has(r.err, "SUMMARY: alloctrace: 64 byte(s) leaked in 1 allocation(s).\n");
    char *want = h_fmt("  %s:2: 2 leak(s), 1024 byte(s)\n  %s:3: 1 leak(s), 24 byte(s)\n", supp, supp);
    h_has(r.err, want);
    free(want);
    h_result_free(&r);
    free(supp);
    free(gate);
    free(prog);
    free(src);
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, h_teardown)
    const struct CMUnitTest tests[] = {
        T(valgrind_generated_file_suppresses_the_same_in_both_tools),
        T(valgrind_generated_cxx_file_suppresses_the_same_in_both_tools),
        T(converted_file_suppresses_what_the_original_did),
        T(debian_valgrind_suppression_files_are_read),
        T(lsan_file_suppresses_the_same_in_both_tools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
