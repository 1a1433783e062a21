/*
 * tests/integration/test_tracer_real.c: the tracer preloaded into real
 * programs (ls, sort, python3) leaves their output untouched and writes a
 * trace that parses; libunwind does not take over the program's unwinder;
 * a full trace round-trips through the post-processor and gives the leaks
 * leaks mode finds; the writer keeps up on one CPU.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#include <sched.h>
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

/* sort over 5000 shuffled lines, in dir, traced in `mode`. */
static char *trace_sort(const char *dir, const char *mode)
{
    char *input = h_fmt("%s/input", dir), *trace = h_fmt("%s/%s.trace", dir, mode);
    FILE *f = fopen(input, "w");
    for (int i = 0; i < 5000; i++)
        fprintf(f, "%u\n", (i * 2654435761u) % 100000);
    fclose(f);
    const char *argv[] = { "/usr/bin/sort", input, NULL };
    char *m = h_fmt("ALLOCTRACE_MODE=%s", mode);
    const char *env[] = { m, NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    free(m);
    free(input);
    return trace;
}

/* The post-processor's plain normal form of a full trace holds the same
 * records, frames and order as what the tracer wrote (plain or zstd). */
static void test_full_trace_of_sort_round_trips_through_postproc(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *trace = trace_sort(dir, "full");
    char *pp = h_path("postproc/alloctrace-postproc"), *out = h_fmt("%s/normal.txt", dir);
    h_result r = h_sh("%s --strict -o %s %s", pp, out, trace);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    struct t_trace a = t_load(trace), b = t_load(out);
    assert_true(a.n > 200);
    assert_int_equal(a.n, b.n);
    for (size_t i = 0; i < a.n; i++) {
        const struct t_rec *x = &a.recs[i], *y = &b.recs[i];
        assert_int_equal(x->index, y->index);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->release, y->release);
        assert_int_equal(x->size, y->size);
        assert_int_equal(x->id, y->id);
        assert_int_equal(x->nframes, y->nframes);
        assert_memory_equal(t_frames(&a, x), t_frames(&b, y), (size_t)x->nframes * sizeof(uint64_t));
    }
    t_free(&a);
    t_free(&b);
    h_result_free(&r);
    free(out);
    free(pp);
    free(trace);
    h_cleanup();
}

/* The sizes of a run's leaks, one a line, sorted, and its summary line. */
static char *leaked_sizes(const char *pp, const char *trace)
{
    h_result r = h_sh("%s -l %s | sed -n 's/^[0-9]*\\. .*(\\([0-9]*\\)) = .*/\\1/p; /leaked with/p' | sort",
                      pp, trace);
    assert_int_equal(r.status, 0);
    char *s = h_fmt("%s", r.out);
    h_result_free(&r);
    return s;
}

/* `-l` on a full trace of sort finds exactly the blocks leaks mode keeps
 * for the same run: same count, bytes and sizes. */
static void test_full_trace_leaks_are_leaks_modes(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *full = trace_sort(dir, "full"), *leaks = trace_sort(dir, "leaks");
    char *pp = h_path("postproc/alloctrace-postproc");
    char *a = leaked_sizes(pp, full), *b = leaked_sizes(pp, leaks);
    assert_true(h_count_lines(a, "^# [1-9][0-9]* block\\(s\\) leaked with total size of") == 1);
    assert_true(h_count_lines(a, "^[0-9]+$") > 10);
    assert_string_equal(a, b);
    free(a);
    free(b);
    free(pp);
    free(full);
    free(leaks);
    h_cleanup();
}

/* With one CPU for the program and the writer thread together, a traced
 * python3 making 200000 allocations of 1 KiB (several MiB of trace)
 * finishes, prints what it prints plain, and its trace holds every one. */
static void test_one_cpu_writer_keeps_up(void **state)
{
    (void)state;
    cpu_set_t all;
    t_python3_on_one_cpu(&all);
    const char *argv[] = { "/usr/bin/python3", "-c",
                           T_PY_CPUS
                           "k = [bytes(1000 + i % 7) for i in range(200000)]\n"
                           "print(len(k))\n", NULL };
    char *dir = h_tmpdir(), *trace = h_fmt("%s/trace.txt", dir);
    h_result r = h_trace(trace, argv, NULL);
    sched_setaffinity(0, sizeof all, &all);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "1\n200000\n");
    struct t_trace t = t_load(trace);
    assert_true(t.complete);
    size_t kib = 0;
    for (size_t i = 0; i < t.n; i++)
        kib += !t.recs[i].release && t.recs[i].size >= 1000 + 33 && t.recs[i].size <= 1006 + 33;
    assert_true(kib >= 200000);
    t_free(&t);
    h_result_free(&r);
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
        cmocka_unit_test(test_full_trace_of_sort_round_trips_through_postproc),
        cmocka_unit_test(test_full_trace_leaks_are_leaks_modes),
        cmocka_unit_test(test_one_cpu_writer_keeps_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
