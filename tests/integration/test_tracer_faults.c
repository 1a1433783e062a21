/*
 * tests/integration/test_tracer_faults.c: traces that survive faults.
 * Each case runs tests/programs/tracer_faults (or a Debian program) plain
 * and traced, in both modes where the mode matters, and checks that the
 * program printed the same and ended the same (status, signal), and that
 * the trace holds exactly what the program allocated up to the fault and
 * says how it was cut: signals the program leaves at SIG_DFL, its own
 * handler, exit and quick_exit from a thread while others allocate, fork
 * children that fail to exec or allocate nothing, a full disk (the file
 * size limit, and a full tmpfs where one can be mounted), and a trace cut
 * by SIGKILL at a 4 KiB boundary read by the post-processor.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "build/tests/programs/tracer_faults"

static const char *const modes[] = { "full", "leaks" };

/* The program's own run, and a traced run into DIR/trace.txt. */
struct both {
    h_result plain, traced;
    char *dir, *trace;
};

static struct both run_both(const char *mode, const char *const args[])
{
    struct both b = { .dir = h_tmpdir() };
    b.trace = h_fmt("%s/trace.txt", b.dir);
    char *prog = h_path(PROG);
    const char *argv[8] = { prog };
    for (int i = 0; args[i] && i < 6; i++)
        argv[i + 1] = args[i];
    b.plain = h_run(argv, NULL, NULL);
    char *m = h_fmt("ALLOCTRACE_MODE=%s", mode);
    const char *env[] = { m, NULL };
    b.traced = h_trace(b.trace, argv, env);
    free(m);
    free(prog);
    return b;
}

/* run_both with ALLOCTRACE_COMPRESS=`compress` for this run only. */
static struct both run_both_compressed(const char *mode, const char *const args[],
                                       const char *compress)
{
    char *was = getenv("ALLOCTRACE_COMPRESS") ? strdup(getenv("ALLOCTRACE_COMPRESS")) : NULL;
    setenv("ALLOCTRACE_COMPRESS", compress, 1);
    struct both b = run_both(mode, args);
    if (was)
        setenv("ALLOCTRACE_COMPRESS", was, 1);
    else
        unsetenv("ALLOCTRACE_COMPRESS");
    free(was);
    return b;
}

/* Text ending in whole records: the post-processor reads exactly `whole`
 * records of the cut trace under --strict, exits 0 and warns once with a
 * line matching `warning`. */
static void postproc_reads_whole_records(const char *trace, size_t whole, const char *warning)
{
    char *pp = h_path("postproc/alloctrace-postproc");
    h_result r = h_sh("%s --strict %s | grep -c '^[0-9]*\\. '", pp, trace);
    assert_int_equal(strtoul(r.out, NULL, 10), whole);
    h_result_free(&r);
    r = h_sh("%s --strict %s 2>&1 >/dev/null; echo \"status $?\"", pp, trace);
    assert_int_equal(h_count_lines(r.out, warning), 1);
    assert_int_equal(h_count_lines(r.out, "^status 0$"), 1);
    h_result_free(&r);
    free(pp);
}

/* The calls of text[0..n) whose records are whole: the call lines before
 * the last blank line (full mode writes the compressed form, where a
 * group's calls share the frames after them and one blank line). */
static size_t whole_calls(const char *text, size_t n)
{
    size_t end = 0, calls = 0;
    for (size_t i = 1; i < n; i++)
        if (text[i] == '\n' && text[i - 1] == '\n')
            end = i;
    for (size_t i = 0; i < end; i++)
        calls += (i == 0 || text[i - 1] == '\n') && text[i] >= '0' && text[i] <= '9';
    return calls;
}

/* Same output, same end: the tracer is a guest. */
static void same_run(const struct both *b)
{
    assert_int_equal(b->traced.status, b->plain.status);
    assert_string_equal(b->traced.out, b->plain.out);
    assert_string_equal(b->traced.err, b->plain.err);
}

static void both_free(struct both *b)
{
    h_result_free(&b->plain);
    h_result_free(&b->traced);
    free(b->trace);
    h_cleanup();
}

/* The post-processor reads the trace with --strict -l and exits 0; its one
 * message is the warning about the cut line when there is one. */
static void postproc_accepts(const char *trace, const char *cut)
{
    char *pp = h_path("postproc/alloctrace-postproc");
    h_result r = h_sh("%s --strict -l %s >/dev/null", pp, trace);
    assert_int_equal(r.status, 0);
    if (!*cut) {
        assert_string_equal(r.err, "");
    } else {
        char *want = h_fmt(": the trace was cut (%s): what is read from it is incomplete\n", cut);
        assert_int_equal(h_count_lines(r.err, "."), 1);
        assert_int_equal(strncmp(r.err, "alloctrace-postproc: warning: ", 30), 0);
        assert_non_null(strstr(r.err, want));
        free(want);
    }
    h_result_free(&r);
    free(pp);
}

/* A trace cut by signal `sig` of a program that allocated the 777-byte
 * marker and 1000 blocks of 48 bytes first, none freed. */
static void check_cut_by_signal(const char *mode, const char *trace, const char *want_cut)
{
    struct t_trace t = t_load(trace);
    assert_string_equal(t.cut, want_cut);
    assert_int_equal(t_count_allocs(&t, 777), 1);
    assert_int_equal(t_count_allocs(&t, 48), 1000);
    if (strcmp(mode, "leaks") == 0) {
        assert_true(t.leak_summary);
        assert_int_equal(t.leak_blocks, t.n);
    }
    t_free(&t);
    postproc_accepts(trace, want_cut);
}

/* The program in both modes, killed by `sig` at the end of mode `args`. */
static void check_killed_by(const char *const args[], int sig, const char *want_cut)
{
    for (size_t m = 0; m < 2; m++) {
        struct both b = run_both(modes[m], args);
        same_run(&b);
        assert_int_equal(b.traced.status, 128 + sig);
        check_cut_by_signal(modes[m], b.trace, want_cut);
        both_free(&b);
    }
}

static void test_sigterm_writes_the_trace_and_says_it_was_cut(void **state)
{
    (void)state;
    const char *args[] = { "signal", "15", NULL };
    check_killed_by(args, 15, "killed by signal 15 (SIGTERM)");
}

static void test_sigint_while_threads_allocate_writes_the_trace(void **state)
{
    (void)state;
    const char *args[] = { "busy-signal", "2", NULL };
    check_killed_by(args, 2, "killed by signal 2 (SIGINT)");
}

/* SIGPIPE put back to SIG_DFL with signal(): the tracer's handler returns
 * and the program still dies of the write. */
static void test_sigpipe_after_signal_sig_dfl_writes_the_trace(void **state)
{
    (void)state;
    const char *args[] = { "sigpipe", NULL };
    check_killed_by(args, 13, "killed by signal 13 (SIGPIPE)");
}

/* A number as valgrind prints it ("52,873"). */
static unsigned long long vg_number(const char *p)
{
    unsigned long long v = 0;
    for (; (*p >= '0' && *p <= '9') || *p == ','; p++)
        v = *p == ',' ? v : v * 10 + (unsigned long long)(*p - '0');
    return v;
}

/* Next to valgrind, which also reports what is alive when a signal ends
 * the program: the same blocks and bytes as leaks mode's summary. */
static void test_blocks_alive_at_a_signal_match_valgrind(void **state)
{
    (void)state;
    h_result v = h_sh("command -v valgrind");
    int have = v.status == 0;
    h_result_free(&v);
    if (!have) {
        print_message("skipped: valgrind is not installed\n");
        skip();
    }
    const char *cases[][2] = { { "signal", "15" }, { "sigpipe", NULL } };
    for (size_t c = 0; c < 2; c++) {
        const char *args[] = { cases[c][0], cases[c][1], NULL };
        struct both b = run_both("leaks", args);
        char *prog = h_path(PROG);
        v = h_sh("valgrind --leak-check=summary %s %s %s 2>&1 >/dev/null", prog, cases[c][0],
                 cases[c][1] ? cases[c][1] : "");
        assert_int_equal(v.status, b.plain.status);
        char *line = h_find_line(v.out, "in use at exit: [0-9,]+ bytes in [0-9,]+ blocks");
        assert_non_null(line);
        struct t_trace t = t_load(b.trace);
        assert_int_equal(t.leak_bytes, vg_number(strstr(line, "exit: ") + 6));
        assert_int_equal(t.leak_blocks, vg_number(strstr(line, "bytes in ") + 9));
        t_free(&t);
        free(line);
        free(prog);
        h_result_free(&v);
        both_free(&b);
    }
}

/* SIGKILL cannot be caught: the file still has the header and maps,
 * written at start, so it names the process; no cut line is possible. */
static void test_sigkill_leaves_at_least_the_header(void **state)
{
    (void)state;
    for (size_t m = 0; m < 2; m++) {
        const char *args[] = { "sigkill", NULL };
        struct both b = run_both(modes[m], args);
        same_run(&b);
        assert_int_equal(b.traced.status, 128 + 9);
        struct t_trace t = t_load(b.trace);
        assert_non_null(strstr(t.header, "/tracer_faults, pid="));
        assert_true(t.has_registry);
        assert_true(t.nmaps > 0);
        assert_string_equal(t.cut, "");
        assert_false(t.leak_summary);
        t_free(&t);
        postproc_accepts(b.trace, "");
        both_free(&b);
    }
}

/* sigaction() shows SIG_DFL where the tracer's handler is; the program's
 * handler replaces it and runs; the trace is the ordinary whole one. */
static void test_program_handler_sees_sig_dfl_and_runs_its_own(void **state)
{
    (void)state;
    for (size_t m = 0; m < 2; m++) {
        const char *args[] = { "handler", NULL };
        struct both b = run_both(modes[m], args);
        same_run(&b);
        assert_int_equal(b.traced.status, 7);
        assert_string_equal(b.traced.out, "SIGTERM was SIG_DFL, flags 0\nhandled SIGTERM\n");
        struct t_trace t = t_load(b.trace);
        assert_string_equal(t.cut, "");
        assert_int_equal(t_count_allocs(&t, 48), 1000);
        assert_int_equal(t.leak_summary, strcmp(modes[m], "leaks") == 0);
        t_free(&t);
        postproc_accepts(b.trace, "");
        both_free(&b);
    }
}

/* exit() or quick_exit() in a thread while two others allocate: the whole
 * trace, ending on a record (full) or with the leak summary (leaks). */
static void check_exit_from_thread(const char *mode_arg, int status)
{
    for (size_t m = 0; m < 2; m++) {
        const char *args[] = { mode_arg, NULL };
        struct both b = run_both(modes[m], args);
        same_run(&b);
        assert_int_equal(b.traced.status, status);
        size_t len;
        char *text = h_read_file(b.trace, &len);
        assert_non_null(text);
        struct t_trace t = t_load(b.trace);
        assert_string_equal(t.cut, "");
        assert_int_equal(t_count_allocs(&t, 555), 1);
        assert_int_equal(t_count_allocs(&t, 48), 1000);
        if (m == 0) {
            assert_true(t.complete);
            assert_true(t_ends_whole(text, len));
        } else {
            assert_true(t.leak_summary);
            assert_int_equal(t.leak_blocks, t.n);
        }
        t_free(&t);
        free(text);
        postproc_accepts(b.trace, "");
        both_free(&b);
    }
}

static void test_exit_from_a_thread_while_others_allocate_writes_a_whole_trace(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++)   /* the race it guards against is timing */
        check_exit_from_thread("thread-exit", 5);
}

static void test_quick_exit_from_a_thread_writes_the_trace(void **state)
{
    (void)state;
    check_exit_from_thread("thread-quick-exit", 6);
}

/* Leaks mode at exit counts the live blocks, then copies them, while other
 * threads still allocate and free: blocks allocated in between must not
 * push out blocks that were live all along (the 555-byte one went missing
 * about once in ten runs while two threads each held and freed 256 blocks
 * in turn). Run repeatedly because the race is timing; bounded. */
static void test_leaks_exit_keeps_every_block_while_others_allocate(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *prog = h_path(PROG);
    const char *argv[] = { prog, "thread-exit", "256", NULL };
    const char *env[] = { "ALLOCTRACE_MODE=leaks", NULL };
    for (int i = 0; i < 50; i++) {
        char *trace = h_fmt("%s/trace%d.txt", dir, i);
        h_result r = h_trace(trace, argv, env);
        assert_int_equal(r.status, 5);
        struct t_trace t = t_load(trace);
        assert_int_equal(t_count_allocs(&t, 555), 1);
        assert_int_equal(t_count_allocs(&t, 48), 1000);
        assert_int_equal(t_count_allocs(&t, 777), 1);
        assert_true(t.leak_summary);
        assert_int_equal(t.leak_blocks, t.n);
        t_free(&t);
        h_result_free(&r);
        unlink(trace);
        free(trace);
    }
    free(prog);
}

/* Traces in dir other than trace.txt (forked children's). */
static char *child_trace(const char *dir, size_t *count)
{
    char *found = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strncmp(e->d_name, "trace.txt.", 10) == 0) {
            (*count)++;
            free(found);
            found = h_fmt("%s/%s", dir, e->d_name);
        }
    if (d)
        closedir(d);
    return found;
}

static void test_fork_child_that_fails_to_exec_writes_its_header(void **state)
{
    (void)state;
    for (size_t m = 0; m < 2; m++) {
        const char *args[] = { "fork-noexec", NULL };
        struct both b = run_both(modes[m], args);
        same_run(&b);
        assert_string_equal(b.traced.out, "child exited 0\n");
        size_t n;
        char *child = child_trace(b.dir, &n);
        assert_int_equal(n, 1);
        struct t_trace t = t_load(child);
        assert_non_null(strstr(t.header, "/tracer_faults, pid="));
        char *pid = h_fmt(", pid=%s, ", strrchr(child, '.') + 1);
        assert_non_null(strstr(t.header, pid));
        assert_int_equal(t_count_allocs(&t, 888), 1);
        /* Full mode: the parent's calls are the parent's. Leaks mode: the
         * 1000 blocks the child inherited and never freed are its leaks
         * too (valgrind reports them in the child as well). */
        assert_int_equal(t_count_allocs(&t, 48), m == 0 ? 0 : 1000);
        t_free(&t);
        postproc_accepts(child, "");
        /* the post-processor names the process in what it writes */
        char *pp = h_path("postproc/alloctrace-postproc");
        h_result r = h_sh("%s --strict -l %s | head -n 1", pp, child);
        assert_non_null(strstr(r.out, "process=" ));
        assert_non_null(strstr(r.out, "tracer_faults"));
        h_result_free(&r);
        free(pp);
        free(pid);
        free(child);
        both_free(&b);
    }
}

/* Full mode: no file (it was created at fork, and removed at exit, empty).
 * Leaks mode: the child's report is its trace, here the parent's blocks
 * it inherited and left alive. */
static void test_fork_child_that_allocates_nothing_leaves_only_its_inherited_leaks(void **state)
{
    (void)state;
    for (size_t m = 0; m < 2; m++) {
        const char *args[] = { "fork-nothing", NULL };
        struct both b = run_both(modes[m], args);
        same_run(&b);
        size_t n;
        char *child = child_trace(b.dir, &n);
        if (m == 0) {
            assert_int_equal(n, 0);
            assert_null(child);
        } else {
            assert_int_equal(n, 1);
            struct t_trace t = t_load(child);
            assert_int_equal(t_count_allocs(&t, 48), 1000);
            assert_int_equal(t_count_allocs(&t, 777), 1);
            t_free(&t);
        }
        free(child);
        both_free(&b);
    }
}

/* A limit the trace of 20000 blocks passes: 24 bytes in 25 of them
 * compress, so a compressed trace gets a tenth of the plain one's. */
static const char *size_limit(const char *mode)
{
    return t_zstd(mode) ? "20000" : "200000";
}

/* `ulimit -f` set by the program itself: its own run is untouched (no
 * SIGXFSZ), the trace ends whole within the limit with the cut line, the
 * tracer says so in one line, the launcher warns and the gate cannot
 * judge. A compressed trace ends with the last frame that fits (its
 * records halved until they do) and the cut line in a frame of its own. */
static void test_file_size_limit_cuts_the_trace_and_the_program_runs_on(void **state)
{
    (void)state;
    for (size_t m = 0; m < 2; m++) {
        const char *args[] = { "many", "20000", size_limit(modes[m]), NULL };
        off_t limit = atol(args[2]);
        struct both b = run_both(modes[m], args);
        assert_int_equal(b.traced.status, b.plain.status);
        assert_int_equal(b.traced.status, 0);
        assert_string_equal(b.traced.out, b.plain.out);
        char *warn = h_fmt("alloctrace: %s: trace cut, the program runs on untraced: the file "
                           "size limit (RLIMIT_FSIZE) is reached\n", b.trace);
        assert_string_equal(b.traced.err, warn);
        struct stat st;
        assert_int_equal(stat(b.trace, &st), 0);
        assert_true(st.st_size <= limit && st.st_size > limit / 4 * 3 - (t_zstd(modes[m]) ? limit / 2 : 0));
        struct t_trace t = t_load(b.trace);
        assert_string_equal(t.cut, "the file size limit (RLIMIT_FSIZE) is reached");
        assert_true(t.n > 100);
        t_free(&t);
        postproc_accepts(b.trace, "the file size limit (RLIMIT_FSIZE) is reached");
        free(warn);
        both_free(&b);
    }
}

static void test_launcher_warns_and_gate_cannot_judge_a_cut_trace(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *launcher = h_path("scripts/alloctrace"), *prog = h_path(PROG);
    h_result r = h_sh("cd %s && %s -o t.txt %s many 20000 %s", dir, launcher, prog, size_limit("full"));
    assert_int_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: warning: the trace was cut \\(the file "
                                          "size limit \\(RLIMIT_FSIZE\\) is reached\\): it is "
                                          "incomplete$"), 1);
    h_result_free(&r);
    r = h_sh("%s --check -- %s many 20000 200000", launcher, prog);
    assert_int_equal(r.status, 3);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: cannot judge this process: the trace was "
                                          "cut \\(the file size limit \\(RLIMIT_FSIZE\\) is "
                                          "reached\\)$"), 1);
    h_result_free(&r);
    free(launcher);
    free(prog);
    h_cleanup();
}

/* Leaks mode after SIGKILL: no summary, no cut line; the launcher says
 * what that means. After SIGTERM it names the signal instead. */
static void test_launcher_warns_about_a_leaks_trace_without_summary(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *launcher = h_path("scripts/alloctrace"), *prog = h_path(PROG);
    h_result r = h_sh("cd %s && %s -m leaks -o k.txt %s sigkill", dir, launcher, prog);
    assert_int_equal(r.status, 128 + 9);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: warning: the trace has no leak summary: "
                                          "the program ended without writing it \\(killed by "
                                          "SIGKILL\\?\\)$"), 1);
    assert_int_equal(h_count_lines(r.err, "warning"), 1);
    h_result_free(&r);
    r = h_sh("cd %s && %s -m leaks -o t.txt %s signal 15", dir, launcher, prog);
    assert_int_equal(r.status, 128 + 15);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: warning: the trace was cut \\(killed by "
                                          "signal 15 \\(SIGTERM\\)\\): it is incomplete$"), 1);
    assert_int_equal(h_count_lines(r.err, "warning"), 1);
    h_result_free(&r);
    free(launcher);
    free(prog);
    h_cleanup();
}

/* A real full disk: a 1 MiB tmpfs, where this test may mount one (root).
 * Each run's trace is copied out and the tmpfs unmounted before anything
 * is checked, so a failed check never leaves the mount behind. */
static void test_full_disk_cuts_the_trace_and_the_program_runs_on(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *mnt = h_fmt("%s/full", dir);
    h_result r = h_sh("mkdir %s && mount -t tmpfs -o size=1m alloctrace-test %s 2>&1", mnt, mnt);
    int mounted = r.status == 0;
    h_result_free(&r);
    if (!mounted) {
        print_message("skipped: cannot mount a tmpfs here (needs root); the file size limit "
                      "test covers the cut\n");
        free(mnt);
        h_cleanup();
        skip();
    }
    char *prog = h_path(PROG);
    h_result plain[2], traced[2];
    for (size_t m = 0; m < 2; m++) {
        /* Enough to fill 1 MiB, compressed too. */
        const char *argv[] = { prog, "many", t_zstd(modes[m]) ? "600000" : "50000", NULL };
        plain[m] = h_run(argv, NULL, NULL);
        char *trace = h_fmt("%s/trace.txt", mnt), *mode = h_fmt("ALLOCTRACE_MODE=%s", modes[m]);
        const char *env[] = { mode, NULL };
        traced[m] = h_trace(trace, argv, env);
        h_result_free(&r);
        r = h_sh("mv %s %s/trace.%s.txt", trace, dir, modes[m]);
        free(mode);
        free(trace);
    }
    h_result_free(&r);
    r = h_sh("umount %s", mnt);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    for (size_t m = 0; m < 2; m++) {
        assert_int_equal(traced[m].status, plain[m].status);
        assert_string_equal(traced[m].out, plain[m].out);
        assert_non_null(strstr(traced[m].err, ": trace cut, the program runs on untraced: no "
                                              "space left on device\n"));
        char *trace = h_fmt("%s/trace.%s.txt", dir, modes[m]);
        struct t_trace t = t_load(trace);
        assert_string_equal(t.cut, "no space left on device");
        assert_true(t.n > 100);
        t_free(&t);
        postproc_accepts(trace, "no space left on device");
        h_result_free(&traced[m]);
        h_result_free(&plain[m]);
        free(trace);
    }
    free(prog);
    free(mnt);
    h_cleanup();
}

/* sort, killed by SIGPIPE at the end of a shell pipeline (head -n 1 goes
 * first), leaves a readable trace in both modes. */
static void test_sort_killed_by_sigpipe_in_a_pipeline_leaves_a_readable_trace(void **state)
{
    (void)state;
    for (size_t m = 0; m < 2; m++) {
        char *dir = h_tmpdir();
        char *lib = h_path("preload/liballoctrace.so");
        const char *pipeline = "seq 200000 | %s sort | head -n 1; echo \"sort: ${PIPESTATUS[1]}\"";
        char *plain_cmd = h_fmt(pipeline, "");
        char *env = h_fmt("LD_PRELOAD=%s ALLOCTRACE_MODE=%s ALLOCTRACE_OUTPUT=%s/s.txt", lib,
                          modes[m], dir);
        char *traced_cmd = h_fmt(pipeline, env);
        h_result plain = h_sh("exec bash -c '%s'", plain_cmd);
        h_result traced = h_sh("exec bash -c '%s'", traced_cmd);
        assert_string_equal(plain.out, "1\nsort: 141\n");
        assert_string_equal(traced.out, plain.out);
        char *trace = h_fmt("%s/s.txt", dir);
        struct t_trace t = t_load(trace);
        assert_string_equal(t.cut, "killed by signal 13 (SIGPIPE)");
        assert_true(t.n > 0);
        assert_int_equal(t.leak_summary, m == 1);
        t_free(&t);
        postproc_accepts(trace, "killed by signal 13 (SIGPIPE)");
        h_result_free(&plain);
        h_result_free(&traced);
        free(trace);
        free(traced_cmd);
        free(env);
        free(plain_cmd);
        free(lib);
        h_cleanup();
    }
}

/* SIGKILL cannot be caught: a full trace then ends wherever the last
 * write(2) ended, which may be a page boundary inside a record. The
 * post-processor reads it up to its last whole record, with one warning,
 * also under --strict. */
static void test_trace_cut_at_a_4k_boundary_reads_to_its_last_whole_record(void **state)
{
    (void)state;
    const char *args[] = { "many", "3000", NULL };
    struct both b = run_both_compressed("full", args, "none");   /* a plain file's pages */
    assert_int_equal(b.traced.status, 0);
    struct stat st;
    assert_int_equal(stat(b.trace, &st), 0);
    size_t len;
    char *text = h_read_file(b.trace, &len);
    off_t cut = (st.st_size / 2) & ~(off_t)4095;
    while (text[cut - 1] == '\n' && text[cut] != '\t' && text[cut] != '\n')
        cut += 4096;   /* a page boundary inside a record */
    assert_true(cut < st.st_size);
    assert_int_equal(truncate(b.trace, cut), 0);
    size_t whole = whole_calls(text, (size_t)cut);
    postproc_reads_whole_records(b.trace, whole, "^.*trace\\.txt:[0-9]+: warning: truncated last");
    free(text);
    both_free(&b);
}

/* A compressed trace cut inside a frame (a SIGKILL during a write): the
 * post-processor reads the frames before the cut and what the cut frame's
 * whole blocks hold, up to the last whole record, with one warning. */
static void test_compressed_trace_cut_inside_a_frame_reads_to_its_last_whole_record(void **state)
{
    (void)state;
    const char *args[] = { "many", "30000", NULL };
    struct both b = run_both_compressed("full", args, "zstd");
    assert_int_equal(b.traced.status, 0);
    struct stat st;
    assert_int_equal(stat(b.trace, &st), 0);
    assert_int_equal(truncate(b.trace, st.st_size / 2), 0);
    size_t len;
    char *text = h_read_file(b.trace, &len);   /* what a decoder gets */
    size_t whole = whole_calls(text, len);
    assert_true(whole > 1000);
    postproc_reads_whole_records(b.trace, whole, "the zstd stream ends inside a frame");
    free(text);
    both_free(&b);
}

#define T(f) cmocka_unit_test_teardown(f, h_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_sigterm_writes_the_trace_and_says_it_was_cut),
        T(test_sigint_while_threads_allocate_writes_the_trace),
        T(test_sigpipe_after_signal_sig_dfl_writes_the_trace),
        T(test_blocks_alive_at_a_signal_match_valgrind),
        T(test_sigkill_leaves_at_least_the_header),
        T(test_program_handler_sees_sig_dfl_and_runs_its_own),
        T(test_exit_from_a_thread_while_others_allocate_writes_a_whole_trace),
        T(test_leaks_exit_keeps_every_block_while_others_allocate),
        T(test_quick_exit_from_a_thread_writes_the_trace),
        T(test_fork_child_that_fails_to_exec_writes_its_header),
        T(test_fork_child_that_allocates_nothing_leaves_only_its_inherited_leaks),
        T(test_file_size_limit_cuts_the_trace_and_the_program_runs_on),
        T(test_launcher_warns_and_gate_cannot_judge_a_cut_trace),
        T(test_launcher_warns_about_a_leaks_trace_without_summary),
        T(test_full_disk_cuts_the_trace_and_the_program_runs_on),
        T(test_sort_killed_by_sigpipe_in_a_pipeline_leaves_a_readable_trace),
        T(test_trace_cut_at_a_4k_boundary_reads_to_its_last_whole_record),
        T(test_compressed_trace_cut_inside_a_frame_reads_to_its_last_whole_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
