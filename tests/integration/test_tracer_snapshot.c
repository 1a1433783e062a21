/*
 * tests/integration/test_tracer_snapshot.c: snapshots of a running process
 * and the control path (docs/tracer.md, "Talking to a running tracer").
 *
 * tests/programs/tracer_snapshot runs under the launcher and grows,
 * leaks and snapshots on command (one line on stdin, "ok" back), so the
 * test knows every block it holds when it asks `alloctrace --snapshot
 * PID` from outside, as a user would; the numbers checked are exact.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

/* The program under the launcher, talked to through pipes. */
typedef struct prog {
    pid_t launcher;
    FILE *in, *out;
    int pid;          /* the traced program's */
    char *dir, *trace, *err;
} prog;

static prog start(const char *mode, const char *trace_name, const char *const extra[])
{
    prog p = { 0 };
    p.dir = h_tmpdir();
    p.trace = h_fmt("%s/%s", p.dir, trace_name);
    p.err = h_fmt("%s/launcher.err", p.dir);
    int to[2], from[2];
    assert_int_equal(pipe(to), 0);
    assert_int_equal(pipe(from), 0);
    p.launcher = fork();
    assert_true(p.launcher >= 0);
    if (p.launcher == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        int e = open(p.err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(e, 2);
        close(to[1]);
        close(from[0]);
        const char *argv[16];
        int n = 0;
        argv[n++] = h_path("scripts/alloctrace");
        argv[n++] = "-m";
        argv[n++] = mode;
        argv[n++] = "-o";
        argv[n++] = p.trace;
        for (int i = 0; extra && extra[i]; i++)
            argv[n++] = extra[i];
        argv[n++] = "--";
        argv[n++] = h_path("build/tests/programs/tracer_snapshot");
        argv[n] = NULL;
        if (chdir(p.dir) != 0)
            _exit(127);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    p.in = fdopen(to[1], "w");
    p.out = fdopen(from[0], "r");
    setvbuf(p.in, NULL, _IOLBF, 0);
    char line[64];
    assert_non_null(fgets(line, sizeof line, p.out));
    p.pid = atoi(line);
    assert_true(p.pid > 0);
    return p;
}

/* Sends one command; returns its answer line (without the newline). */
static char *cmd(prog *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->in, fmt, ap);
    va_end(ap);
    fputc('\n', p->in);
    fflush(p->in);
    static char line[256];
    assert_non_null(fgets(line, sizeof line, p->out));
    line[strcspn(line, "\n")] = '\0';
    return line;
}

/* The command's answer once it is `want` (asked again every 10 ms, for
 * 5 s at most), or the last answer. */
static char *cmd_until(prog *p, const char *command, const char *want)
{
    char *answer = cmd(p, "%s", command);
    for (int i = 0; i < 500 && strcmp(answer, want) != 0; i++) {
        usleep(10000);
        answer = cmd(p, "%s", command);
    }
    return answer;
}

/* Ends the program; returns the launcher's exit status. */
static int finish(prog *p)
{
    fputs("quit\n", p->in);
    fclose(p->in);
    fclose(p->out);
    int st;
    assert_int_equal(waitpid(p->launcher, &st, 0), p->launcher);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static h_result snapshot(const prog *p, const char *label)
{
    char pid[16];
    snprintf(pid, sizeof pid, "%d", p->pid);
    const char *argv[] = { h_path("scripts/alloctrace"), "--snapshot", pid,
                           label ? "--label" : NULL, label, NULL };
    return h_run(argv, NULL, p->dir);
}

static h_result ctl(int pid, const char *verb, const char *arg)
{
    char num[16];
    snprintf(num, sizeof num, "%d", pid);
    const char *argv[] = { h_path("build/launcher/alloctrace-ctl"), num, verb, arg, NULL };
    return h_run(argv, NULL, NULL);
}

/* The leak kind of the first block of `size` bytes in a leaks-mode trace
 * (the "## leak kind:" line before its call, or before its group). */
static char *kind_of(const char *text, unsigned size)
{
    static char kind[32];
    kind[0] = '\0';
    char want[32];
    snprintf(want, sizeof want, "malloc(%u) = ", size);
    for (const char *l = text; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        if (strncmp(l, "## leak kind: ", 14) == 0)
            snprintf(kind, sizeof kind, "%.*s", (int)(len - 14), l + 14);
        else if (len > 0 && l[0] >= '0' && l[0] <= '9' && memmem(l, len, want, strlen(want)))
            return kind;
        l = end ? end + 1 : NULL;
    }
    return "(no such block)";
}

/* Snapshot n's file: .txt, or .txt.zst when leaks mode compresses
 * (ALLOCTRACE_COMPRESS=zstd); NULL when neither exists. */
static char *snap_file(const char *dir, int n)
{
    char *plain = h_fmt("%s/trace.snap%d.txt", dir, n), *z = h_fmt("%s.zst", plain);
    return access(plain, F_OK) == 0 ? plain : access(z, F_OK) == 0 ? z : NULL;
}

static char *postproc_diff(const char *dir, const char *old, const char *new)
{
    const char *argv[] = { h_path("postproc/alloctrace-postproc"), "-r", "--diff", old, new, NULL };
    h_result r = h_run(argv, NULL, dir);
    assert_int_equal(r.status, 0);
    return r.out;
}

/* ---- what grew ------------------------------------------------------ */

static void grows_then_diff(const char *mode, const char *trace_name)
{
    prog p = start(mode, trace_name, NULL);
    assert_string_equal(cmd(&p, "grow 10 1000"), "ok");
    h_result r1 = snapshot(&p, "before");
    assert_int_equal(r1.status, 0);
    char *snap1 = snap_file(p.dir, 1);
    assert_non_null(snap1);
    h_has(r1.err, h_fmt("alloctrace: snapshot 1 of process %d: %s\n", p.pid, snap1));
    assert_string_equal(cmd(&p, "grow 5 1000"), "ok");
    h_result r2 = snapshot(&p, NULL);
    assert_int_equal(r2.status, 0);
    char *snap2 = snap_file(p.dir, 2);
    assert_non_null(snap2);
    h_has(r2.err, h_fmt("alloctrace: snapshot 2 of process %d: %s\n", p.pid, snap2));
    h_has(r2.err, "what grew since snapshot 1: ");
    assert_int_equal(finish(&p), 0);

    char *out = postproc_diff(p.dir, snap1, snap2);
    h_has(out, "(snapshot 1 before) -> ");
    h_has(out, "  new and still live: 5 blocks, 5000 bytes; freed since: 0 blocks, 0 bytes\n");
    /* grow_cache's site: its 15 blocks of 1000 and the cache's calloc of 8192. */
    h_has(out, "sites with blocks new and still live: 1; top 1 by new bytes:\n"
               "   1. +5000 bytes in +5 blocks (now 23192 bytes in 16 blocks)\n"
               "        main@tracer_snapshot.c -> grow_cache@tracer_snapshot.c\n");
}

static void test_leaks_mode_diff_names_the_growing_site_and_its_bytes(void **state)
{
    (void)state;
    grows_then_diff("leaks", "trace.txt");
}

static void test_full_mode_diff_names_the_growing_site_and_its_bytes(void **state)
{
    (void)state;
    grows_then_diff("full", "trace.txt.zst");
}

/* ---- a leak check now ---------------------------------------------------- */

static void test_leak_check_now_gives_the_exit_reports_kinds_and_then_the_new_leak(void **state)
{
    (void)state;
    prog p = start("leaks", "trace.txt", NULL);
    assert_string_equal(cmd(&p, "leak 111"), "ok");
    assert_string_equal(cmd(&p, "leak 222"), "ok");
    assert_string_equal(cmd(&p, "grow 1 333"), "ok");
    h_result r1 = snapshot(&p, "check1");
    assert_int_equal(r1.status, 0);
    char *s1 = h_read_file(snap_file(p.dir, 1), NULL);
    assert_non_null(s1);
    h_has(s1, "## snapshot: 1 check1\n");
    assert_string_equal(kind_of(s1, 111), "definite");
    assert_string_equal(kind_of(s1, 222), "definite");
    assert_string_equal(kind_of(s1, 333), "reachable");
    assert_int_equal(h_count_lines(s1, "^## leak kind: definite$"), 1);   /* one group */
    assert_int_equal(h_count_lines(s1, "^[0-9]+\\. \\[[^]]*\\] malloc\\((111|222)\\) = "), 2);

    assert_string_equal(cmd(&p, "leak 444"), "ok");
    h_result r2 = snapshot(&p, "check2");
    assert_int_equal(r2.status, 0);
    assert_int_equal(finish(&p), 0);

    /* The exit report says the same of the same blocks. */
    char *exit_report = h_read_file(p.trace, NULL);
    assert_string_equal(kind_of(exit_report, 111), "definite");
    assert_string_equal(kind_of(exit_report, 222), "definite");
    assert_string_equal(kind_of(exit_report, 333), "reachable");
    assert_string_equal(kind_of(exit_report, 444), "definite");

    char *out = postproc_diff(p.dir, snap_file(p.dir, 1), snap_file(p.dir, 2));
    h_has(out, "  definitely lost  777 bytes in 3 blocks (+444 bytes in +1 new)\n");
    h_has(out, "  indirectly lost  0 bytes in 0 blocks (+0 bytes in +0 new)\n");
    h_has(out, "sites with new leaks: 1; top 1:\n"
               "   1. definitely lost +444 bytes in +1 new (now 3 blocks);\n"
               "        main@tracer_snapshot.c -> leak_one@tracer_snapshot.c\n");
}

/* ---- from the program, by signal, listed at the end ------------------------ */

static void test_program_snapshot_in_full_mode_is_made_and_listed_at_exit(void **state)
{
    (void)state;
    prog p = start("full", "trace.txt.zst", NULL);
    assert_string_equal(cmd(&p, "grow 3 64"), "ok");
    assert_string_equal(cmd(&p, "snap from-api"), "ok 1");
    assert_string_equal(cmd(&p, "grow 2 64"), "ok");
    assert_int_equal(finish(&p), 0);
    char *err = h_read_file(p.err, NULL);
    char *snap = h_fmt("%s/trace.snap1.txt", p.dir);
    h_has(err, h_fmt("alloctrace: snapshot 1 of process %d: %s\n", p.pid, snap));
    char *s = h_read_file(snap, NULL);
    assert_non_null(s);
    h_has(s, "## snapshot: 1 from-api\n");
    /* The 3 blocks of 64 made before the mark, not the 2 after it. */
    assert_int_equal(h_count_lines(s, "^[0-9]+\\. .*malloc\\(64\\) = "), 3);
}

/* A full-mode run that took snapshot 1 "from-api" of grow_cache's 3
 * blocks of 64 (and its table), then ended: its trace and snapshot file
 * are in p.dir. */
static prog ran_with_a_snapshot_from_the_api(void)
{
    prog p = start("full", "trace.txt", NULL);
    assert_string_equal(cmd(&p, "grow 3 64"), "ok");
    assert_string_equal(cmd(&p, "snap from-api"), "ok 1");
    assert_int_equal(finish(&p), 0);
    return p;
}

/* A snapshot's report calls its blocks live at that moment, not leaked:
 * they are what the running program held. */
static void test_snapshot_report_says_live_not_leaked(void **state)
{
    (void)state;
    prog p = ran_with_a_snapshot_from_the_api();
    char *snap = h_fmt("%s/trace.snap1.txt", p.dir);
    const char *argv[] = { h_path("postproc/alloctrace-postproc"), "-r", "--format", "report",
                           snap, NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 0);
    /* grow_cache's 3 blocks of 64 and its 1024-pointer table; stdio's buffer */
    h_has(r.out, "releases:     not in a snapshot (it holds the blocks live at that moment)\n"
                 "peak heap:    not in a snapshot\n"
                 "live:         ");
    h_has(r.out, " blocks at snapshot 1 (from-api)\n");
    h_has(r.out, " sites by live bytes (of ");
    h_has(r.out, "memory over time: none, a snapshot keeps no order in time\n");
    h_lacks(r.out, "leaked:");
    h_lacks(r.out, "by leaked bytes");
    h_lacks(r.out, "leaks only");
    h_lacks(r.out, "leaks-only");
    h_result_free(&r);
}

/* The stats and the HTML page of a snapshot say so too. */
static void test_snapshot_stats_and_page_say_live_at_the_snapshot(void **state)
{
    (void)state;
    prog p = ran_with_a_snapshot_from_the_api();
    char *snap = h_fmt("%s/trace.snap1.txt", p.dir), *page = h_fmt("%s/snap.html", p.dir);
    const char *stats[] = { h_path("postproc/alloctrace-postproc"), "--format", "stats", snap, NULL };
    h_result r = h_run(stats, NULL, NULL);
    assert_int_equal(r.status, 0);
    h_has(r.out, h_fmt("\"pid\": \"%d\", \"snapshot\": \"1 from-api\", ", p.pid));
    const char *whole[] = { h_path("postproc/alloctrace-postproc"), "--format", "stats", p.trace, NULL };
    h_result w = h_run(whole, NULL, NULL);
    h_has(w.out, "\"snapshot\": null, ");
    const char *html[] = { h_path("postproc/alloctrace-postproc"), "-r", "--format", "html", "-o",
                           page, snap, NULL };
    h_result h = h_run(html, NULL, NULL);
    assert_int_equal(h.status, 0);
    h_has(h_read_file(page, NULL), "\"snapshot\":\"1 from-api\",");
    if (h_have_chromium()) {
        char *dom = h_chromium_dom(p.dir, page, NULL);
        h_has(dom, "<dt>Live at snapshot 1 (from-api)</dt>");
        h_has(dom, "<p class=\"note\">This snapshot holds the blocks live at that moment: ");
        h_has(dom, "id=\"no-series\">No time series: a snapshot keeps no order in time.</p>");
        h_lacks(dom, "<dt>Leaked</dt>");
    }
    h_result_free(&r);
    h_result_free(&w);
    h_result_free(&h);
}

static void test_snapshot_signal_writes_a_leak_check(void **state)
{
    (void)state;
    const char *extra[] = { "--snapshot-signal", "USR1", NULL };
    prog p = start("leaks", "trace.txt", extra);
    assert_string_equal(cmd(&p, "leak 555"), "ok");
    assert_int_equal(kill(p.pid, SIGUSR1), 0);
    char *snap = NULL;
    for (int i = 0; i < 2000 && !(snap = snap_file(p.dir, 1)); i++)
        usleep(10000);
    assert_non_null(snap);
    char *s = h_read_file(snap, NULL);
    assert_non_null(s);
    h_has(s, "## snapshot: 1 signal\n");
    assert_string_equal(kind_of(s, 555), "definite");
    assert_string_equal(cmd(&p, "leak 1"), "ok");   /* still running, not killed by USR1 */
    assert_int_equal(finish(&p), 0);
}

/* A program that installs its own handler on the snapshot signal keeps
 * it (memcached's SIGUSR1 is its graceful stop): the signal reaches the
 * program, no snapshot is taken, and one line on stderr says why. */
static void test_program_handler_on_the_snapshot_signal_is_named(void **state)
{
    (void)state;
    const char *extra[] = { "--snapshot-signal", "USR1", NULL };
    prog p = start("full", "trace.txt", extra);
    assert_string_equal(cmd(&p, "handle %d", SIGUSR1), "ok");
    assert_int_equal(kill(p.pid, SIGUSR1), 0);
    assert_string_equal(cmd_until(&p, "handled", "ok 1"), "ok 1");
    assert_int_equal(finish(&p), 0);
    assert_null(snap_file(p.dir, 1));
    char *err = h_read_file(p.err, NULL);
    const char *why = "the program installs its own handler for SIGUSR1, the --snapshot-signal: "
                      "it replaces the tracer's, and that signal no longer takes a snapshot\n";
    h_has(err, h_fmt("alloctrace: %s", why));                  /* when it happens */
    h_has(err, h_fmt("alloctrace: pid %d: %s", p.pid, why));   /* and after the run */
    assert_int_equal(h_count_lines(err, "own handler"), 2);
}

/* Sampling on a program with one thread adds no thread of the tracer's:
 * a second thread would cost the program glibc's single-thread paths
 * (docs/tracer.md). Once the program starts a thread, the control
 * thread comes, and a snapshot by pid works. */
static void test_sampling_adds_a_thread_only_beside_the_programs(void **state)
{
    (void)state;
    const char *extra[] = { "--sample", "4k", NULL };
    prog p = start("full", "trace.txt", extra);
    assert_string_equal(cmd(&p, "grow 100 1000"), "ok");
    assert_string_equal(cmd(&p, "tasks"), "ok 1");
    assert_string_equal(cmd(&p, "thread"), "ok");
    assert_string_equal(cmd(&p, "grow 100 1000"), "ok");   /* picks: the thread starts */
    /* main, the program's thread, the control thread */
    assert_string_equal(cmd_until(&p, "tasks", "ok 3"), "ok 3");
    h_result s = snapshot(&p, NULL);
    assert_int_equal(s.status, 0);
    h_has(s.err, h_fmt("alloctrace: snapshot 1 of process %d: ", p.pid));
    h_result_free(&s);
    assert_int_equal(finish(&p), 0);
}

/* A program sampled on one thread (no control thread yet), for the tests
 * of its wake by gdb; skips where gdb is missing. */
static prog start_sampled_one_thread(void)
{
    if (!h_have("gdb"))
        skip();
    const char *extra[] = { "--sample", "4k", NULL };
    return start("full", "trace.txt", extra);
}

/* Sampling on one thread keeps its control socket, not the thread: the
 * first snapshot by pid has gdb start the thread (a moment's stop, as an
 * attach), and the snapshot holds what the trace holds. */
static void test_snapshot_by_pid_of_a_sampled_program_on_one_thread_starts_its_thread(void **state)
{
    (void)state;
    prog p = start_sampled_one_thread();
    assert_string_equal(cmd(&p, "grow 100 1000"), "ok");
    assert_string_equal(cmd(&p, "tasks"), "ok 1");
    h_result s1 = snapshot(&p, NULL);
    assert_int_equal(s1.status, 0);
    h_has(s1.err, h_fmt("alloctrace: process %d: sampled on one thread: starting its control "
                        "thread with gdb (from now on the program runs with it)\n", p.pid));
    h_has(s1.err, h_fmt("alloctrace: snapshot 1 of process %d: ", p.pid));
    assert_string_equal(cmd(&p, "tasks"), "ok 2");
    h_result s2 = snapshot(&p, NULL);   /* the thread is there: no gdb */
    assert_int_equal(s2.status, 0);
    h_lacks(s2.err, "gdb");
    assert_int_equal(finish(&p), 0);
    /* grow_cache's picked blocks of 1000 live to the end: the snapshot
     * holds every one the trace holds, and they are some of the 100. */
    char *snap = h_read_file(snap_file(p.dir, 1), NULL);
    char *trace = h_read_file(p.trace, NULL);
    int picked = h_count_lines(trace, "malloc\\(1000\\) = ");
    assert_true(picked > 0 && picked < 100);
    assert_int_equal(h_count_lines(snap, "malloc\\(1000\\) = "), picked);
    h_result_free(&s1);
    h_result_free(&s2);
}

/* The thread stopped by gdb is mostly inside malloc or free here: it is
 * run out of the tracer's hooks before the control thread is created
 * (which allocates), so the program goes on unharmed. */
static void test_snapshot_by_pid_of_a_sampled_program_busy_allocating(void **state)
{
    (void)state;
    prog p = start_sampled_one_thread();
    assert_string_equal(cmd(&p, "grow 10 1000"), "ok");
    fputs("churn 3000\n", p.in);
    fflush(p.in);
    usleep(300000);
    h_result s = snapshot(&p, NULL);
    if (s.status != 0)
        print_message("the launcher said: %s", s.err);
    assert_int_equal(s.status, 0);
    h_has(s.err, h_fmt("alloctrace: snapshot 1 of process %d: ", p.pid));
    char line[64];
    assert_non_null(fgets(line, sizeof line, p.out));   /* churn's answer */
    assert_string_equal(line, "ok\n");
    assert_string_equal(cmd(&p, "tasks"), "ok 2");
    assert_int_equal(finish(&p), 0);
    const char *argv[] = { h_path("postproc/alloctrace-postproc"), "--format", "stats", p.trace,
                           NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 0);
    h_has(r.out, "\"unknown_releases\": 0, \"lost_releases\": 0");
    h_result_free(&s);
    h_result_free(&r);
}

/* ---- the control path --------------------------------------------------- */

static void test_status_and_toggle(void **state)
{
    (void)state;
    prog p = start("full", "trace.txt", NULL);
    h_result s = ctl(p.pid, "status", NULL);
    assert_int_equal(s.status, 0);
    assert_string_equal(s.out, h_fmt("mode=full pid=%d trace=%s tracing=on sample=0\n", p.pid,
                                     p.trace));
    h_result off = ctl(p.pid, "toggle", "off");
    assert_int_equal(off.status, 0);
    assert_string_equal(off.out, "tracing=off\n");
    assert_string_equal(cmd(&p, "grow 3 100"), "ok");
    h_result on = ctl(p.pid, "toggle", "on");
    assert_string_equal(on.out, "tracing=on\n");
    assert_string_equal(cmd(&p, "grow 2 200"), "ok");
    assert_int_equal(finish(&p), 0);
    char *t = h_read_file(p.trace, NULL);
    assert_int_equal(h_count_lines(t, "malloc\\(100\\) = "), 0);
    assert_int_equal(h_count_lines(t, "malloc\\(200\\) = "), 2);
}

static void test_unknown_request_and_detach_of_a_launched_process_are_errors(void **state)
{
    (void)state;
    prog p = start("leaks", "trace.txt", NULL);
    h_result bad = ctl(p.pid, "bogus", NULL);
    assert_int_equal(bad.status, 1);
    assert_string_equal(bad.err, h_fmt("alloctrace: process %d: unknown request bogus\n", p.pid));
    h_result t = ctl(p.pid, "toggle", "sideways");
    assert_int_equal(t.status, 1);
    h_has(t.err, "toggle takes on or off");
    h_result d = ctl(p.pid, "detach", NULL);
    assert_int_equal(d.status, 1);
    assert_string_equal(d.err, h_fmt("alloctrace: process %d: not attached\n", p.pid));
    assert_int_equal(finish(&p), 0);
}

static void test_snapshot_of_no_such_process_is_one_line_and_exit_2(void **state)
{
    (void)state;
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    prog p = { .pid = gone, .dir = h_tmpdir() };
    h_result r = snapshot(&p, NULL);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.err, h_fmt("alloctrace: process %d: no such process\n", (int)gone));
}

static void test_snapshot_of_an_untraced_process_says_it_is_not_traced(void **state)
{
    (void)state;
    pid_t plain = fork();
    if (plain == 0) {
        execlp("sleep", "sleep", "20", (char *)NULL);
        _exit(127);
    }
    prog p = { .pid = plain, .dir = h_tmpdir() };
    h_result r = snapshot(&p, NULL);
    kill(plain, SIGKILL);
    waitpid(plain, NULL, 0);
    assert_int_equal(r.status, 2);
    h_has(r.err, h_fmt("alloctrace: process %d: not traced by alloctrace (no control socket "
                       "@alloctrace.%d: ",
                       (int)plain, (int)plain));
    assert_int_equal(h_count_lines(r.err, "."), 1);
}

static void test_control_off_leaves_no_socket(void **state)
{
    (void)state;
    setenv("ALLOCTRACE_CONTROL", "0", 1);
    prog p = start("leaks", "trace.txt", NULL);
    unsetenv("ALLOCTRACE_CONTROL");
    h_result r = ctl(p.pid, "status", NULL);
    assert_int_equal(r.status, 2);
    h_has(r.err, "not traced by alloctrace");
    assert_int_equal(finish(&p), 0);
}

static void test_control_socket_survives_the_program_closing_every_descriptor(void **state)
{
    (void)state;
    prog p = start("leaks", "trace.txt", NULL);
    assert_string_equal(cmd(&p, "closeall"), "ok");
    h_result r = ctl(p.pid, "status", NULL);
    assert_int_equal(r.status, 0);
    h_has(r.out, "mode=leaks ");
    assert_int_equal(finish(&p), 0);
}

static void test_forked_child_answers_on_its_own_socket(void **state)
{
    (void)state;
    prog p = start("full", "trace.txt", NULL);
    char *line = cmd(&p, "fork");
    int child = 0;
    assert_int_equal(sscanf(line, "child %d", &child), 1);
    h_result r = ctl(child, "status", NULL);
    h_result parent = ctl(p.pid, "status", NULL);
    kill(child, SIGKILL);
    assert_int_equal(r.status, 0);
    h_has(r.out, h_fmt("mode=full pid=%d trace=%s.%d ", child, p.trace, child));
    h_has(parent.out, h_fmt("mode=full pid=%d trace=%s ", p.pid, p.trace));
    /* The launcher waits for the whole tree and reports the child's
     * SIGKILL (137): not what this test is about. */
    finish(&p);
}

/* At the end of the run the launcher lists a child's snapshot under the
 * child's pid, not the program's. */
static void test_forked_childs_snapshot_is_listed_under_its_pid(void **state)
{
    (void)state;
    prog p = start("full", "trace.txt", NULL);
    int child = 0;
    assert_int_equal(sscanf(cmd(&p, "fork"), "child %d", &child), 1);
    prog c = { .pid = child, .dir = p.dir };
    h_result s = snapshot(&c, NULL);
    assert_int_equal(s.status, 0);
    kill(child, SIGKILL);
    finish(&p);
    char *err = h_read_file(p.err, NULL);
    h_has(err, h_fmt("alloctrace: snapshot 1 of process %d: %s/trace.txt.%d.snap1.txt\n", child,
                     p.dir, child));
    h_lacks(err, h_fmt("snapshot 1 of process %d", p.pid));
    h_result_free(&s);
}

/* How many of the 3 blocks of 4000 bytes its parent made before forking
 * are in a forked child's snapshot (the launcher's options `extra`). */
static size_t inherited_in_childs_snapshot(const char *const extra[])
{
    prog p = start("full", "trace.txt", extra);
    assert_string_equal(cmd(&p, "grow 3 4000"), "ok");
    int child = 0;
    assert_int_equal(sscanf(cmd(&p, "fork"), "child %d", &child), 1);
    prog c = { .pid = child, .dir = p.dir };
    h_result s = snapshot(&c, NULL);
    assert_int_equal(s.status, 0);
    h_lacks(s.err, "not in it");
    kill(child, SIGKILL);
    finish(&p);
    char *snap = h_read_file(h_fmt("%s/trace.txt.%d.snap1.txt", p.dir, child), NULL);
    h_has(snap, h_fmt(" block(s) inherited from pid %d at the fork, numbered 1 to ", p.pid));
    h_result_free(&s);
    return h_count_lines(snap, "^[0-9]+\\. .*malloc\\(4000\\) = 0x");
}

/* A full-mode snapshot of a forked child holds the blocks it inherited:
 * the post-processor reads its parent's trace with it. */
static void test_forked_childs_snapshot_holds_what_it_inherited(void **state)
{
    (void)state;
    assert_int_equal(inherited_in_childs_snapshot(NULL), 3);
}

/* The same when sampled: no writer thread writes the parent's calls, so
 * it writes them at the fork. */
static void test_sampled_forked_childs_snapshot_holds_what_it_inherited(void **state)
{
    (void)state;
    if (!h_have("gdb"))
        skip();
    const char *extra[] = { "--sample", "1", NULL };
    assert_int_equal(inherited_in_childs_snapshot(extra), 3);
}

static void test_another_users_request_is_refused(void **state)
{
    (void)state;
    if (geteuid() != 0 || !h_have("setpriv")) {
        print_message("skipped: needs root and setpriv to ask as another user\n");
        skip();
    }
    prog p = start("leaks", "trace.txt", NULL);
    char num[16];
    snprintf(num, sizeof num, "%d", p.pid);
    const char *argv[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           h_path("build/launcher/alloctrace-ctl"), num, "snapshot", NULL };
    h_result r = h_run(argv, NULL, "/");
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, h_fmt("alloctrace: process %d: permission denied\n", p.pid));
    assert_int_equal(finish(&p), 0);
    assert_null(snap_file(p.dir, 1));
}

/* Starting a sampled program's control thread takes ptrace: another user
 * is told why not, and what to do instead, in one line. */
static void test_another_user_cannot_start_a_sampled_programs_thread(void **state)
{
    (void)state;
    if (!h_have("gdb") || !h_nobody_runs_the_tree())
        skip();
    const char *extra[] = { "--sample", "4k", NULL };
    prog p = start("full", "trace.txt", extra);
    assert_string_equal(cmd(&p, "grow 10 1000"), "ok");
    char num[16];
    snprintf(num, sizeof num, "%d", p.pid);
    const char *argv[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           h_path("scripts/alloctrace"), "--snapshot", num, NULL };
    h_result r = h_run(argv, NULL, "/");
    assert_int_equal(r.status, 2);
    assert_string_equal(r.err, h_fmt("alloctrace: process %d (sampled on one thread, its control "
                                     "thread not started; gdb starts it): another user's process "
                                     "(uid 0): attach as that user or as root; or run the program "
                                     "with --snapshot-signal SIG\n", p.pid));
    assert_string_equal(cmd(&p, "tasks"), "ok 1");   /* nothing started */
    assert_int_equal(finish(&p), 0);
    h_result_free(&r);
}

/* gdb would have to run a stopped program to start its thread: the
 * launcher says so and leaves it stopped. */
static void test_stopped_sampled_program_is_left_stopped(void **state)
{
    (void)state;
    prog p = start_sampled_one_thread();
    assert_string_equal(cmd(&p, "grow 10 1000"), "ok");
    assert_int_equal(kill(p.pid, SIGSTOP), 0);
    char *status = h_fmt("/proc/%d/status", p.pid);
    for (int i = 0; i < 500 && !strstr(h_read_file(status, NULL), "State:\tT"); i++)
        usleep(10000);
    h_result r = snapshot(&p, NULL);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.err, h_fmt("alloctrace: process %d (sampled on one thread, its control "
                                     "thread not started; gdb starts it): stopped (by a signal): "
                                     "continue it first (kill -CONT %d); gdb would have to run it\n",
                                     p.pid, p.pid));
    h_has(h_read_file(status, NULL), "State:\tT");
    assert_int_equal(kill(p.pid, SIGCONT), 0);
    assert_string_equal(cmd(&p, "tasks"), "ok 1");
    assert_int_equal(finish(&p), 0);
    h_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leaks_mode_diff_names_the_growing_site_and_its_bytes),
        cmocka_unit_test(test_full_mode_diff_names_the_growing_site_and_its_bytes),
        cmocka_unit_test(test_leak_check_now_gives_the_exit_reports_kinds_and_then_the_new_leak),
        cmocka_unit_test(test_program_snapshot_in_full_mode_is_made_and_listed_at_exit),
        cmocka_unit_test(test_snapshot_report_says_live_not_leaked),
        cmocka_unit_test(test_snapshot_stats_and_page_say_live_at_the_snapshot),
        cmocka_unit_test(test_snapshot_signal_writes_a_leak_check),
        cmocka_unit_test(test_program_handler_on_the_snapshot_signal_is_named),
        cmocka_unit_test(test_sampling_adds_a_thread_only_beside_the_programs),
        cmocka_unit_test(test_snapshot_by_pid_of_a_sampled_program_on_one_thread_starts_its_thread),
        cmocka_unit_test(test_snapshot_by_pid_of_a_sampled_program_busy_allocating),
        cmocka_unit_test(test_status_and_toggle),
        cmocka_unit_test(test_unknown_request_and_detach_of_a_launched_process_are_errors),
        cmocka_unit_test(test_snapshot_of_no_such_process_is_one_line_and_exit_2),
        cmocka_unit_test(test_snapshot_of_an_untraced_process_says_it_is_not_traced),
        cmocka_unit_test(test_control_off_leaves_no_socket),
        cmocka_unit_test(test_control_socket_survives_the_program_closing_every_descriptor),
        cmocka_unit_test(test_forked_child_answers_on_its_own_socket),
        cmocka_unit_test(test_forked_childs_snapshot_is_listed_under_its_pid),
        cmocka_unit_test(test_forked_childs_snapshot_holds_what_it_inherited),
        cmocka_unit_test(test_sampled_forked_childs_snapshot_holds_what_it_inherited),
        cmocka_unit_test(test_another_users_request_is_refused),
        cmocka_unit_test(test_another_user_cannot_start_a_sampled_programs_thread),
        cmocka_unit_test(test_stopped_sampled_program_is_left_stopped),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_cleanup();
    return rc;
}
