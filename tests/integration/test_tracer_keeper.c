/*
 * tests/integration/test_tracer_keeper.c: leaks mode with its records
 * applied on the keeper thread (ALLOCTRACE_KEEPER=1, preload/hook/handoff.c):
 * blocks freed by another thread and given out again, fork while threads
 * allocate, a signal while records are still in the rings, the leak
 * kinds of blocks whose addresses are in the rings, one CPU. Each
 * runs with the keeper and with the inline path (ALLOCTRACE_KEEPER=0),
 * the reference, and both must give the same report.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#include <sched.h>
#include <unistd.h>

static const char *const keeper_env[2] = { "ALLOCTRACE_KEEPER=1", "ALLOCTRACE_KEEPER=0" };

static h_result run_keeper_prog(const char *trace, const char *what, int k)
{
    char *prog = h_path("build/tests/programs/tracer_keeper");
    const char *argv[] = { prog, what, NULL };
    const char *env[] = { "ALLOCTRACE_MODE=leaks", keeper_env[k], NULL };
    h_result r = h_trace(trace, argv, env);
    free(prog);
    return r;
}

static size_t count_sized(const struct t_trace *t, uint64_t lo, uint64_t hi)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += !t->recs[i].release && t->recs[i].size >= lo && t->recs[i].size <= hi;
    return n;
}

/* Thread A allocates, thread B frees, A gets the same addresses again,
 * 19,200 times: exactly the 8 blocks A keeps at the end are reported,
 * with their addresses, sizes and frame 0 in the function that made them
 * (and valgrind's leak kinds for them, below). */
static void test_blocks_freed_by_another_thread_and_reused_leave_exactly_the_live_ones(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        char *dir = h_tmpdir(), *trace = h_fmt("%s/trace.txt", dir);
        h_result r = run_keeper_prog(trace, "reuse", k);
        assert_int_equal(r.status, 0);
        const char *reused = strstr(r.out, "reused ");
        assert_non_null(reused);
        assert_true(strtoul(reused + 7, NULL, 10) > 5000);   /* the addresses came back */
        struct t_trace t = t_load(trace);
        assert_true(t.leak_summary);
        assert_int_equal(count_sized(&t, 2000, 2112), 8);
        uint64_t fn = t_out_addr(r.out, "keep_block");
        const char *p = r.out;
        for (int i = 0; i < 8; i++) {
            p = strstr(p, "keep 0x");
            assert_non_null(p);
            uint64_t id = strtoull(p + 5, NULL, 16);
            unsigned long size = strtoul(strchr(p + 5, ' ') + 1, NULL, 10);
            const struct t_rec *a = t_find_alloc(&t, id);
            if (!a)
                fail_msg("%s: the kept block %#llx is not reported", keeper_env[k],
                         (unsigned long long)id);
            assert_int_equal(a->size, size);
            assert_true(a->nframes >= 2);
            uint64_t f0 = t_frames(&t, a)[0];
            if (f0 <= fn || f0 > fn + 64)
                fail_msg("%s: frame 0 %#llx of the block of %lu bytes is not in keep_block (%#llx)",
                         keeper_env[k], (unsigned long long)f0, size, (unsigned long long)fn);
            p++;
        }
        t_free(&t);
        h_result_free(&r);
        free(trace);
        h_cleanup();
    }
}

/* 20 forks while three threads allocate and free each other's blocks: no
 * child hangs; each child's report has its own block, not the parent's;
 * the parent's has its own and none of the children's. */
static void test_fork_while_threads_allocate_in_leaks_mode(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        char *dir = h_tmpdir(), *trace = h_fmt("%s/trace.txt", dir);
        h_result r = run_keeper_prog(trace, "fork", k);
        assert_int_equal(r.status, 0);
        struct t_trace t = t_load(trace);
        assert_true(t.leak_summary);
        assert_int_equal(count_sized(&t, 8888, 8888), 1);
        assert_non_null(t_find_alloc(&t, t_out_addr(r.out, "parent")));
        assert_int_equal(count_sized(&t, 7777, 7777), 0);
        t_free(&t);
        size_t children = 0;
        for (const char *p = r.out; (p = strstr(p, "child ")) != NULL; p++) {
            int pid = (int)strtol(p + 6, NULL, 10);
            char *cpath = h_fmt("%s.%d", trace, pid);
            struct t_trace c = t_load(cpath);
            if (!c.leak_summary)
                fail_msg("%s: child %d's report has no leak summary", keeper_env[k], pid);
            assert_int_equal(count_sized(&c, 7777, 7777), 1);
            assert_int_equal(count_sized(&c, 8888, 8888), 0);
            t_free(&c);
            free(cpath);
            children++;
        }
        assert_int_equal(children, 20);
        h_result_free(&r);
        free(trace);
        h_cleanup();
    }
}

/* SIGTERM straight after 20,000 allocations: the records still in the
 * ring are applied by the signal's handler before the report. */
static void test_sigterm_with_records_in_the_ring_reports_them(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        char *dir = h_tmpdir(), *trace = h_fmt("%s/trace.txt", dir);
        h_result r = run_keeper_prog(trace, "sigterm", k);
        assert_int_equal(r.status, 128 + 15);
        assert_string_equal(r.err, "");
        struct t_trace t = t_load(trace);
        assert_string_equal(t.cut, "killed by signal 15 (SIGTERM)");
        assert_int_equal(count_sized(&t, 4097, 4097), 20000);
        t_free(&t);
        h_result_free(&r);
        free(trace);
        h_cleanup();
    }
}

/* The text after "KIND: " on the line of `kind` ("definitely lost"...). */
static char *kind_line(const char *text, const char *kind)
{
    const char *p = strstr(text, kind);
    if (!p)
        return h_fmt("(no \"%s\" line)", kind);
    p += strlen(kind);
    return h_fmt("%.*s", (int)strcspn(p, "\n"), p);
}

/* Next to valgrind: the reuse run's leak kinds through the gate (blocks
 * and bytes definitely, indirectly, possibly lost, still reachable) are
 * memcheck's, on both paths: the 8 kept blocks definitely lost, nothing
 * else. (Skipped, saying so, without valgrind.) */
static void test_reused_blocks_leak_kinds_match_valgrind(void **state)
{
    (void)state;
    if (!h_have("valgrind"))
        skip();
    char *prog = h_path("build/tests/programs/tracer_keeper");
    h_result v = h_sh("valgrind --leak-check=summary %s reuse 2>&1 >/dev/null", prog);
    assert_int_equal(v.status, 0);
    const char *kinds[] = { "definitely lost:", "indirectly lost:", "possibly lost:",
                            "still reachable:" };
    char *launcher = h_path("scripts/alloctrace");
    const char *argv[] = { launcher, "--check", "--", prog, "reuse", NULL };
    for (int k = 0; k < 2; k++) {
        const char *env[] = { keeper_env[k], NULL };
        h_result r = h_run(argv, env, h_tmpdir());
        char *all = h_fmt("%s%s", r.out, r.err);
        for (size_t i = 0; i < 4; i++) {
            char *want = kind_line(v.out, kinds[i]), *got = kind_line(all, kinds[i]);
            if (strcmp(want, got) != 0)
                fail_msg("%s: %s%s, valgrind: %s%s", keeper_env[k], kinds[i], got, kinds[i], want);
            free(want);
            free(got);
        }
        h_has(all, "definitely lost: 16,448 bytes in 8 blocks");
        free(all);
        h_result_free(&r);
        h_cleanup();
    }
    h_result_free(&v);
    free(launcher);
    free(prog);
}

/* The leak gate's kinds: a block whose address is only in a record of a
 * ring, the notes or the keeper's stack is still definitely lost (those
 * are no roots of the scan at exit). With the rings scanned, gate_leaky's
 * two 512-byte blocks passed for still reachable. */
static void test_blocks_only_in_the_rings_are_definitely_lost(void **state)
{
    (void)state;
    char *launcher = h_path("scripts/alloctrace"), *prog = h_path("build/tests/programs/gate_leaky");
    const char *argv[] = { launcher, "--check", "--", prog, "buf=2", NULL };
    for (int k = 0; k < 2; k++) {
        char *dir = h_tmpdir();
        const char *env[] = { keeper_env[k], NULL };
        h_result r = h_run(argv, env, dir);
        char *all = h_fmt("%s%s", r.out, r.err);
        if (!strstr(all, "definitely lost: 1,024 bytes in 2 blocks"))
            fail_msg("%s: the gate's report lacks the two definitely lost blocks:\n%s",
                     keeper_env[k], all);
        h_has(all, "still reachable: 0 bytes in 0 blocks");
        free(all);
        h_result_free(&r);
        h_cleanup();
    }
    free(prog);
    free(launcher);
}

/* Pinned to one CPU (as taskset -c 0), the program and the keeper share
 * it: python3 making some 400,000 allocations (the ring fills and waits,
 * or the program applies its own records), then keeping 5000 bytearrays
 * of 10000 to 14999 bytes and leaving by _exit. Both paths report a
 * block of each of those sizes, and about as many blocks in all
 * (python3's own blocks at exit vary from run to run, and may have any
 * size). The exact comparison is the C program's, above. */
static void test_one_cpu_keeper_reports_what_the_inline_path_does(void **state)
{
    (void)state;
    cpu_set_t all;
    t_python3_on_one_cpu(&all);
    const char *argv[] = { "/usr/bin/python3", "-c",
                           T_PY_CPUS
                           "tmp = [str(i) * 3 for i in range(200000)]\n"
                           "del tmp\n"
                           "keep = [bytearray(10000 + i) for i in range(5000)]\n"
                           "print(len(keep), flush=True)\n"
                           "os._exit(0)\n", NULL };
    char *dir = h_tmpdir();
    uint64_t blocks[2];
    for (int k = 0; k < 2; k++) {
        char *trace = h_fmt("%s/trace%d.txt", dir, k);
        const char *env[] = { "ALLOCTRACE_MODE=leaks", keeper_env[k], "PYTHONMALLOC=malloc", NULL };
        h_result r = h_trace(trace, argv, env);
        assert_int_equal(r.status, 0);
        assert_string_equal(r.out, "1\n5000\n");
        struct t_trace t = t_load(trace);
        assert_true(t.leak_summary);
        static unsigned char seen[5000];
        memset(seen, 0, sizeof seen);
        for (size_t i = 0; i < t.n; i++) {
            uint64_t size = t.recs[i].size;
            if (!t.recs[i].release && size >= 10001 && size <= 15000)
                seen[size - 10001] = 1;
        }
        for (int i = 0; i < 5000; i++)
            if (!seen[i])
                fail_msg("%s: no block of %d bytes", keeper_env[k], 10001 + i);
        blocks[k] = t.leak_blocks;
        t_free(&t);
        h_result_free(&r);
        free(trace);
    }
    sched_setaffinity(0, sizeof all, &all);
    /* python3's own blocks at exit differ by a few from run to run. */
    assert_true(blocks[0] + 100 > blocks[1] && blocks[1] + 100 > blocks[0]);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_freed_by_another_thread_and_reused_leave_exactly_the_live_ones),
        cmocka_unit_test(test_fork_while_threads_allocate_in_leaks_mode),
        cmocka_unit_test(test_sigterm_with_records_in_the_ring_reports_them),
        cmocka_unit_test(test_blocks_only_in_the_rings_are_definitely_lost),
        cmocka_unit_test(test_reused_blocks_leak_kinds_match_valgrind),
        cmocka_unit_test(test_one_cpu_keeper_reports_what_the_inline_path_does),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
