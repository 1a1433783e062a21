/*
 * tests/integration/test_tracer_unwind.c: libunwind under the tracer -
 * fork while other threads are in its slow path (its global locks),
 * short-lived threads on recycled libunwind caches, and a program that
 * unwinds with the same libunwind from its SIGPROF handler.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#include <dirent.h>
#include <unistd.h>

/* The program's own frames: those in the map line of the test program. */
static int in_program(const struct t_trace *t, uint64_t addr)
{
    const struct t_map *m = t_map_of(t, addr);
    size_t n = m ? strlen(m->path) : 0;
    return n >= 13 && strcmp(m->path + n - 13, "tracer_unwind") == 0;
}

/* A child's trace (full or leaks mode): its 200 blocks of 777 bytes, each
 * with the four frames of the call path it took, innermost in the program. */
static void check_child_trace(const char *path)
{
    struct t_trace t = t_load(path);
    if (t.error[0])
        fail_msg("%s: %s", path, t.error);
    assert_true(t.complete);
    assert_int_equal(t_count_allocs(&t, 777), 200);
    for (size_t i = 0; i < t.n; i++) {
        const struct t_rec *r = &t.recs[i];
        if (r->release || r->size != 777)
            continue;
        assert_true(r->nframes >= 6);
        for (int f = 0; f < 5; f++)   /* 4 steps and child_work */
            assert_true(in_program(&t, t_frames(&t, r)[f]));
    }
    t_free(&t);
}

/* Runs the fork program in `mode` ("full" or "leaks") with `nforks`
 * forks; checks that no child hung and every child's trace; returns the
 * parent's trace. */
static struct t_trace run_forks(const char *dir, const char *mode, int nforks)
{
    char *trace = h_fmt("%s/trace.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_unwind");
    char *forks = h_fmt("%d", nforks);
    char *mode_env = h_fmt("ALLOCTRACE_MODE=%s", mode);
    const char *argv[] = { prog, "fork", forks, NULL };
    const char *env[] = { mode_env, NULL };
    h_result r = h_trace(trace, argv, env);
    char *want = h_fmt("forks %d hung 0\n", nforks);
    assert_string_equal(r.out, want);
    assert_int_equal(r.status, 0);
    size_t children = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, "trace.txt.", 10) != 0)
            continue;
        char *path = h_fmt("%s/%s", dir, e->d_name);
        check_child_trace(path);
        free(path);
        children++;
    }
    if (d)
        closedir(d);
    assert_int_equal(children, (size_t)nforks);
    struct t_trace t = t_load(trace);
    assert_true(t.complete);
    free(want);
    free(mode_env);
    free(forks);
    free(prog);
    free(trace);
    h_result_free(&r);
    return t;
}

static void test_fork_while_threads_unwind_new_paths_leaves_no_child_hanging(void **state)
{
    (void)state;
    struct t_trace t = run_forks(h_tmpdir(), "full", 60);
    assert_int_equal(t_unpaired_releases(&t), 0);
    assert_true(t_count_allocs(&t, 48) >= 1000);
    t_free(&t);
    h_cleanup();
}

/* The same in leaks mode, with fewer forks: each child's exit scans the
 * heap it inherited for leak kinds, ~0.5 s apiece here. Each child's 200
 * blocks are its leaks; the parent freed everything it allocated. */
static void test_fork_while_threads_unwind_in_leaks_mode_leaves_no_child_hanging(void **state)
{
    (void)state;
    struct t_trace t = run_forks(h_tmpdir(), "leaks", 10);
    assert_true(t.leak_summary);
    assert_int_equal(t_count_allocs(&t, 48), 0);
    assert_int_equal(t_count_allocs(&t, 777), 0);
    t_free(&t);
    h_cleanup();
}

/* 300 threads one after another, each with its 20 blocks of 10000 + its
 * number bytes from the same call path: every thread after the first
 * unwinds on a libunwind cache an earlier thread left, and every record
 * must still carry the same whole backtrace. */
static void test_short_lived_threads_on_recycled_caches_get_whole_backtraces(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_unwind");
    const char *argv[] = { prog, "threads", "300", NULL };
    h_result r = h_trace(trace, argv, NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "threads 300\n");
    struct t_trace t = t_load(trace);
    assert_true(t.complete);
    const struct t_rec *first = NULL;
    size_t per_thread[300] = { 0 };
    for (size_t i = 0; i < t.n; i++) {
        const struct t_rec *rec = &t.recs[i];
        if (rec->release || rec->size < 10000 || rec->size >= 10300)
            continue;
        per_thread[rec->size - 10000]++;
        if (!first) {
            first = rec;
            assert_true(first->nframes >= 4);
            for (int f = 0; f < 3; f++)   /* child_1, child_0, the thread's function */
                assert_true(in_program(&t, t_frames(&t, first)[f]));
            continue;
        }
        assert_int_equal(rec->nframes, first->nframes);
        assert_memory_equal(t_frames(&t, rec), t_frames(&t, first),
                            (size_t)first->nframes * sizeof(uint64_t));
    }
    for (int k = 0; k < 300; k++)
        assert_int_equal(per_thread[k], 20);
    t_free(&t);
    free(prog);
    free(trace);
    h_result_free(&r);
    h_cleanup();
}

/* The program links libunwind and calls unw_backtrace from a SIGPROF
 * handler every 100 us of CPU time while 4000 short threads allocate
 * (slow-path unwinds under libunwind's lock). The tracer shares that
 * libunwind, so it must keep libunwind's signal blocking: with it skipped
 * this run hung 4 times out of 4 (the program's alarm ends it after 60
 * s). Every block must still be recorded whole. */
static void test_program_unwinding_in_its_sigprof_handler_with_the_same_libunwind_completes(
    void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_unwind_sigprof");
    const char *argv[] = { prog, "4000", NULL };
    h_result r = h_trace(trace, argv, NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "threads 4000 samples some\n");
    struct t_trace t = t_load(trace);
    assert_true(t.complete);
    assert_int_equal(t_count_allocs(&t, 64), 4000 * 60);
    assert_int_equal(t_unpaired_releases(&t), 0);
    t_free(&t);
    free(prog);
    free(trace);
    h_result_free(&r);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fork_while_threads_unwind_new_paths_leaves_no_child_hanging),
        cmocka_unit_test(test_fork_while_threads_unwind_in_leaks_mode_leaves_no_child_hanging),
        cmocka_unit_test(test_short_lived_threads_on_recycled_caches_get_whole_backtraces),
        cmocka_unit_test(test_program_unwinding_in_its_sigprof_handler_with_the_same_libunwind_completes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
