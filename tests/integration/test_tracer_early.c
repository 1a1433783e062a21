/*
 * tests/integration/test_tracer_early.c: every allocation, from the first.
 * The tracer starts at the first intercepted allocation, so blocks
 * allocated by a preinit function and by other libraries' constructors
 * (which the loader runs before the tracer's own) are in the trace, and
 * every release in a full trace of a real program pairs with an earlier
 * allocation.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#include <unistd.h>

static void test_preinit_and_constructor_allocations_come_first(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_early");
    const char *argv[] = { prog, NULL };
    h_result plain = h_run(argv, NULL, NULL);
    h_result r = h_trace(trace, argv, NULL);
    assert_int_equal(r.status, plain.status);
    assert_string_equal(r.out, plain.out);
    assert_string_equal(r.out, "early done\n");
    assert_string_equal(r.err, "");
    struct t_trace t = t_load(trace);
    assert_true(t.n >= 7);
    /* preinit, the library's constructor (twice), the program's. */
    const uint64_t sizes[] = { 40, 32, 48, 24 };
    for (size_t i = 0; i < 4; i++) {
        assert_false(t.recs[i].release);
        assert_string_equal(t.recs[i].name, "malloc");
        assert_int_equal(t.recs[i].size, sizes[i]);
        assert_true(t.recs[i].nframes > 0);
    }
    assert_int_equal(t_unpaired_releases(&t), 0);
    /* The header names the program although libc had not set
     * program_invocation_name yet. */
    assert_non_null(strstr(t.header, "process="));
    assert_non_null(strstr(t.header, "tracer_early"));
    t_free(&t);
    free(prog);
    free(trace);
    h_result_free(&r);
    h_result_free(&plain);
}

static void test_constructor_leak_fails_the_gate_like_valgrind(void **state)
{
    (void)state;
    char *gate = h_path("scripts/alloctrace");
    char *prog = h_path("build/tests/programs/tracer_early");
    const char *argv[] = { gate, "--check", "--", prog, NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "Leak of 32 byte(s) in 1 block(s) in ctorlib_init (tracer_ctorlib.c:13), "
                                  "allocated from: [definitely lost]\n"
                                  "    #0 ctorlib_init at "));
    assert_non_null(strstr(r.err, "SUMMARY: alloctrace: 32 byte(s) leaked in 1 allocation(s).\n"));
    h_result_free(&r);
    if (access("/usr/bin/valgrind", X_OK) != 0) {
        print_message("skipped the valgrind half: valgrind is not installed\n");
    } else {
        const char *vg[] = { "/usr/bin/valgrind", "--leak-check=full", prog, NULL };
        r = h_run(vg, NULL, NULL);
        assert_non_null(strstr(r.err, "32 bytes in 1 blocks are definitely lost"));
        assert_non_null(strstr(r.err, "ctorlib_init"));
        h_result_free(&r);
    }
    free(prog);
    free(gate);
}

/* Full traces of real programs, the process itself (not its children). */
static void every_release_pairs(const char *const argv[])
{
    if (access(argv[0], X_OK) != 0) {
        print_message("skipped %s: not installed\n", argv[0]);
        return;
    }
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    const char *env[] = { "ALLOCTRACE_FOLLOW_FORK=0", "TZ=Europe/Paris", NULL };
    h_result plain = h_run(argv, env, NULL);
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, plain.status);
    assert_string_equal(r.out, plain.out);
    struct t_trace t = t_load(trace);
    assert_true(t.n > 10);
    size_t bad = t_unpaired_releases(&t);
    if (bad)
        fail_msg("%s: %zu release(s) of blocks the trace never allocated", argv[0], bad);
    t_free(&t);
    free(trace);
    h_result_free(&r);
    h_result_free(&plain);
}

static void test_every_release_pairs_in_real_programs(void **state)
{
    (void)state;
    char *root = h_path(".");
    const char *git[] = { "/usr/bin/git", "-C", root, "log", "-1", "--format=%ad %s", NULL };
    every_release_pairs(git);
    const char *py[] = { "/usr/bin/python3", "-c", "import json, time; print(json.dumps(time.localtime(0)[:3]))", NULL };
    every_release_pairs(py);
    const char *pl[] = { "/usr/bin/perl", "-e", "print scalar(localtime(0)), qq(\\n)", NULL };
    every_release_pairs(pl);
    const char *sortp[] = { "/usr/bin/sort", "/etc/passwd", NULL };
    every_release_pairs(sortp);
    /* C++ programs whose libraries' static constructors allocate before
     * the tracer's constructor (4227 and 694 unpaired releases before). */
    const char *clang[] = { "/usr/bin/clang", "--version", NULL };
    every_release_pairs(clang);
    const char *cmake[] = { "/usr/bin/cmake", "--version", NULL };
    every_release_pairs(cmake);
    free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_preinit_and_constructor_allocations_come_first, h_teardown),
        cmocka_unit_test_teardown(test_constructor_leak_fails_the_gate_like_valgrind, h_teardown),
        cmocka_unit_test_teardown(test_every_release_pairs_in_real_programs, h_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
