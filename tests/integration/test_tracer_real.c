/*
 * tests/integration/test_tracer_real.c: the tracer preloaded into real
 * programs (ls, sort, python3) leaves their output untouched and writes a
 * trace that parses; libunwind does not take over the program's unwinder.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#include <unistd.h>

/* Runs argv plain and traced; both must succeed with the same output. */
static void same_output_and_trace(const char *const argv[], size_t min_events)
{
    h_result plain = h_run(argv, NULL, NULL);
    assert_int_equal(plain.status, 0);
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    h_result traced = h_trace(trace, argv, NULL);
    assert_int_equal(traced.status, 0);
    assert_string_equal(traced.out, plain.out);
    assert_string_equal(traced.err, plain.err);
    struct t_trace t = t_load(trace);
    assert_true(t.has_registry);
    assert_true(t.complete);
    assert_true(t.n >= min_events);
    /* Frame 0 of every allocation with frames lies in a mapped object. */
    size_t with_frames = 0, mapped = 0;
    for (size_t i = 0; i < t.n; i++)
        if (!t.recs[i].release && t.recs[i].nframes) {
            with_frames++;
            mapped += t_map_of(&t, t_frames(&t, &t.recs[i])[0]) != NULL;
        }
    assert_true(with_frames > 0);
    assert_int_equal(mapped, with_frames);
    t_free(&t);
    h_result_free(&plain);
    h_result_free(&traced);
    free(trace);
    h_cleanup();
}

static void test_ls_output_unchanged(void **state)
{
    (void)state;
    char *dir = h_path("tests");
    const char *argv[] = { "/bin/ls", "-la", "--time-style=+", dir, NULL };
    same_output_and_trace(argv, 50);
    free(dir);
}

static void test_sort_output_unchanged(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *input = h_fmt("%s/input", dir);
    FILE *f = fopen(input, "w");
    for (int i = 0; i < 5000; i++)
        fprintf(f, "line %d %x\n", (i * 7919) % 5000, i * 2654435761u);
    fclose(f);
    const char *argv[] = { "/usr/bin/sort", input, NULL };
    same_output_and_trace(argv, 10);
    free(input);
}

static void test_python3_output_unchanged(void **state)
{
    (void)state;
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    const char *argv[] = { "/usr/bin/python3", "-c",
                           "import json, collections\n"
                           "d = collections.Counter(str(i % 97) for i in range(20000))\n"
                           "print(json.dumps(sorted(d.items())[:5]))\n", NULL };
    same_output_and_trace(argv, 1000);
}

static void test_cxx_exceptions_keep_their_unwinder(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_cxx");
    const char *argv[] = { prog, NULL };
    const char *env[] = { "LD_DEBUG=bindings", NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "caught 42"));
    /* No symbol of the program or its libraries is bound to libunwind. */
    assert_int_equal(h_count_lines(r.err, "binding file .* to .*libunwind\\.so.*_Unwind_"), 0);
    assert_int_equal(h_count_lines(r.err, "binding file .* to .*libunwind\\.so.*`backtrace'"), 0);
    assert_true(h_count_lines(r.err, "binding file .* to .*libgcc_s\\.so.*_Unwind_RaiseException") > 0);
    h_result_free(&r);
    free(prog);
    free(trace);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ls_output_unchanged),
        cmocka_unit_test(test_sort_output_unchanged),
        cmocka_unit_test(test_python3_output_unchanged),
        cmocka_unit_test(test_cxx_exceptions_keep_their_unwinder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
