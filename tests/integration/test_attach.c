/*
 * tests/integration/test_attach.c: alloctrace -p PID and --detach PID on
 * programs started without the tracer (tests/programs/attach_target.c),
 * and every refusal, each one line and exit status 2 with the process
 * left running.
 *
 * The target reads one line a round on a pipe from the test, so the test
 * decides which rounds happen before, during and after an attach; a round
 * N allocates 7000+N bytes in grow_cache(). Needs gdb (a build
 * dependency); a test skips, saying so, where gdb is missing.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* grow_cache()'s malloc in tests/programs/attach_target.c. */
#define GROW_LINE 35

struct target {
    pid_t pid;
    int in;          /* the target's stdin */
    char *out;       /* its stdout, a file */
    int rounds;      /* rounds asked for */
};

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

/* Spawns argv with stdin from `in_fd` (-1: /dev/null) and stdout and
 * stderr to files (NULL: /dev/null); SIGINT and SIGTERM at their defaults. */
static pid_t spawn(const char *const argv[], int in_fd, const char *out, const char *err,
                   char *const env[])
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (in_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out ? out : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err ? err : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t sa;
    posix_spawnattr_init(&sa);
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGINT);
    sigaddset(&def, SIGTERM);
    posix_spawnattr_setsigdefault(&sa, &def);
    posix_spawnattr_setflags(&sa, POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, &sa, (char *const *)argv, env ? env : environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&sa);
    assert_int_equal(rc, 0);
    return pid;
}

static char *read_text(const char *path)
{
    char *t = h_read_file(path, NULL);
    return t ? t : strdup("");
}

/* Waits (30 s at most: an attach on a loaded machine took 3 s) until the
 * file holds `needle`. */
static void wait_for_text(const char *path, const char *needle)
{
    for (int i = 0; i < 3000; i++) {
        char *t = read_text(path);
        int found = strstr(t, needle) != NULL;
        free(t);
        if (found)
            return;
        sleep_ms(10);
    }
    char *t = read_text(path);
    fail_msg("%s never showed \"%s\"; it holds:\n%s", path, needle, t);
}

static struct target start_target(const char *dir, const char *name, const char *mode)
{
    char *prog = h_path("build/tests/programs/attach_target");
    const char *argv[] = { prog, mode, NULL };
    int p[2];
    assert_int_equal(pipe(p), 0);
    struct target t = { .out = h_fmt("%s/%s.out", dir, name) };
    t.pid = spawn(argv, p[0], t.out, NULL, NULL);
    close(p[0]);
    t.in = p[1];
    fcntl(t.in, F_SETFD, FD_CLOEXEC);
    free(prog);
    return t;
}

/* Asks for n rounds and waits until the target has printed them. */
static void rounds(struct target *t, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(write(t->in, "r\n", 2), 2);
    t->rounds += n;
    char *want = h_fmt("round %d: ", t->rounds - 1);
    wait_for_text(t->out, want);
    free(want);
}

static int wait_exit(pid_t pid)
{
    int st;
    for (int i = 0; i < 3000; i++) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    fail_msg("process %d did not end within 30 s", (int)pid);
    return -1;
}

/* Ends the target with "exit"; its exit status. */
static int finish_target(struct target *t)
{
    assert_int_equal(write(t->in, "exit\n", 5), 5);
    close(t->in);
    return wait_exit(t->pid);
}

/* The launcher in the background, its stderr in `err`. */
static pid_t launch_bg(const char *err, const char *a1, const char *a2, const char *a3,
                       const char *a4, const char *a5)
{
    char *launcher = h_path("scripts/alloctrace");
    const char *argv[] = { launcher, a1, a2, a3, a4, a5, NULL };
    pid_t pid = spawn(argv, -1, NULL, err, NULL);
    free(launcher);
    return pid;
}

/* The launcher in the foreground: status and output. */
static h_result launch(const char *a1, const char *a2, const char *a3, const char *a4)
{
    char *launcher = h_path("scripts/alloctrace");
    const char *argv[] = { launcher, a1, a2, a3, a4, NULL };
    h_result r = h_run(argv, NULL, NULL);
    free(launcher);
    return r;
}

/* The output of an untraced run of n rounds. */
static char *plain_output(const char *dir, int n)
{
    struct target t = start_target(dir, "plain", NULL);
    rounds(&t, n);
    assert_int_equal(finish_target(&t), 0);
    char *out = read_text(t.out);
    free(t.out);
    return out;
}

/* The trace resolved by the post-processor. */
static char *resolved(const char *trace)
{
    h_result r = h_sh("'%s/postproc/alloctrace-postproc' -r '%s'", h_root(), trace);
    assert_int_equal(r.status, 0);
    char *out = r.out;
    r.out = NULL;
    h_result_free(&r);
    return out;
}

/* The trace holds round n's block, allocated in grow_cache(). */
static void has_round(const char *text, int n)
{
    char *re = h_fmt("^[0-9]+\\. \\[[0-9:.]+\\] malloc\\(%d\\) = 0x[0-9a-f]+$", 7000 + n);
    assert_int_equal(h_count_lines(text, re), 1);
    free(re);
    char *rec = h_fmt("malloc(%d) = ", 7000 + n);
    const char *at = strstr(text, rec);
    assert_non_null(at);
    const char *frame = strchr(at, '\n') + 1;
    char *want = h_fmt("grow_cache() at %s/tests/programs/attach_target.c:%d\n", h_root(),
                       GROW_LINE);
    const char *eol = strchr(frame, '\n');
    char *line = strndup(frame, (size_t)(eol - frame + 1));
    h_has(line, want);
    free(line);
    free(want);
    free(rec);
}

static void lacks_round(const char *text, int n)
{
    char *re = h_fmt("malloc\\(%d\\)", 7000 + n);
    assert_int_equal(h_count_lines(text, re), 0);
    free(re);
}

static int have_gdb(void)
{
    return h_have("gdb");
}

/* ---- attach, trace, detach, attach again ---------------------------------- */

static void test_attach_mid_run_traces_what_follows_and_detach_leaves_it_running(void **state)
{
    (void)state;
    if (!have_gdb())
        skip();
    char *dir = h_tmpdir();
    char *plain = plain_output(dir, 10);

    struct target t = start_target(dir, "traced", NULL);
    rounds(&t, 3);                                   /* rounds 0-2: before */
    char *trace1 = h_fmt("%s/first.txt", dir), *err1 = h_fmt("%s/launch1.err", dir);
    char *pid = h_fmt("%d", (int)t.pid);
    pid_t l1 = launch_bg(err1, "-p", pid, "-o", trace1, "--compress=none");
    wait_for_text(err1, "Ctrl-C detaches");
    h_has(read_text(err1), h_fmt("alloctrace: attached to %s (attach_target), tracing into %s; Ctrl-C detaches\n", pid, trace1));
    /* Attaching twice is refused while the first is attached. */
    h_result again = launch("-p", pid, NULL, NULL);
    assert_int_equal(again.status, 2);
    h_has(again.err, h_fmt("alloctrace: %s (attach_target): already attached by alloctrace -p: detach with alloctrace --detach %s\n", pid, pid));
    h_result_free(&again);
    rounds(&t, 3);                                   /* rounds 3-5: traced */
    char *sock = h_fmt("@alloctrace.%s\n", pid);
    h_has(read_text("/proc/net/unix"), sock);       /* the control path is up */
    kill(l1, SIGINT);                                /* Ctrl-C */
    assert_int_equal(wait_exit(l1), 0);
    char *e1 = read_text(err1);
    h_has(e1, h_fmt("alloctrace: detached from %s (attach_target); it runs on\n", pid));
    h_has(e1, h_fmt("alloctrace: trace: %s (", trace1));
    rounds(&t, 2);                                   /* rounds 6-7: detached */
    h_lacks(read_text("/proc/net/unix"), sock);     /* socket and thread gone */
    h_result threads = h_sh("cat /proc/%s/task/*/comm", pid);
    h_lacks(threads.out, "alloctrace");              /* writer and control thread ended */
    assert_int_equal(h_count_lines(threads.out, "."), 2);   /* the program's own two */
    h_result_free(&threads);

    /* Again: the library stays loaded, a second attach reuses it. Detached
     * by alloctrace --detach this time. */
    char *trace2 = h_fmt("%s/second.txt", dir), *err2 = h_fmt("%s/launch2.err", dir);
    pid_t l2 = launch_bg(err2, "-p", pid, "-o", trace2, "--compress=none");
    wait_for_text(err2, "Ctrl-C detaches");
    rounds(&t, 1);                                   /* round 8: traced */
    h_result d = launch("--detach", pid, NULL, NULL);
    assert_int_equal(d.status, 0);
    h_has(d.err, h_fmt("alloctrace: detached from %s (attach_target); it runs on\n", pid));
    h_result_free(&d);
    assert_int_equal(wait_exit(l2), 0);
    h_has(read_text(err2), h_fmt("alloctrace: %s (attach_target) was detached (alloctrace --detach)\n", pid));
    rounds(&t, 1);                                   /* round 9 */
    assert_int_equal(finish_target(&t), 0);

    char *out = read_text(t.out);
    assert_string_equal(out, plain);                 /* byte-identical */

    char *r1 = resolved(trace1);
    h_has(r1, "## attached to a running process: releases of blocks allocated before the attach have no allocation in this trace\n");
    for (int n = 0; n <= 9; n++)
        if (n >= 3 && n <= 5)
            has_round(r1, n);
        else
            lacks_round(r1, n);
    /* strdup's malloc inside libc is redirected too. */
    assert_true(h_count_lines(r1, "^\t0x[0-9a-f]+ __strdup\\(\\)") >= 3);
    char *r2 = resolved(trace2);
    for (int n = 0; n <= 9; n++)
        if (n == 8)
            has_round(r2, n);
        else
            lacks_round(r2, n);
    /* Round 3 frees round -1's slot (nothing); round 4 frees block 0, made
     * before the attach: a release with no allocation, counted, no error. */
    h_result rep = h_sh("'%s/postproc/alloctrace-postproc' --format report '%s'", h_root(), trace1);
    assert_int_equal(rep.status, 0);
    h_lacks(rep.err, "error");
    assert_int_equal(h_count_lines(rep.out, "^releases: .* \\([0-9]+ of blocks not allocated in the trace\\)$"), 1);
    h_result_free(&rep);
    free(r1);
    free(r2);
    free(out);
    free(e1);
    free(pid);
    free(plain);
    h_cleanup();
}

/* A library dlopen'd after the attach is redirected before dlopen returns. */
static void test_objects_dlopened_after_the_attach_are_traced(void **state)
{
    (void)state;
    if (!have_gdb())
        skip();
    char *dir = h_tmpdir();
    struct target t = start_target(dir, "t", NULL);
    rounds(&t, 1);
    char *pid = h_fmt("%d", (int)t.pid);
    char *trace = h_fmt("%s/dlopen.txt", dir), *err = h_fmt("%s/dlopen.err", dir);
    pid_t l = launch_bg(err, "-p", pid, "-o", trace, "--compress=none");
    wait_for_text(err, "Ctrl-C detaches");
    char *cmd = h_fmt("dlopen %s/build/tests/programs/tracer_dlib.so\n", h_root());
    assert_int_equal(write(t.in, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
    wait_for_text(t.out, "loaded \n");
    rounds(&t, 1);
    kill(l, SIGINT);
    assert_int_equal(wait_exit(l), 0);
    assert_int_equal(finish_target(&t), 0);
    char *text = resolved(trace);
    assert_int_equal(h_count_lines(text, "^[0-9]+\\. \\[[0-9:.]+\\] malloc\\(4321\\) = 0x[0-9a-f]+$"), 1);
    h_has(text, h_fmt("malloc(4321) = "));
    const char *at = strstr(text, "malloc(4321) = ");
    const char *frame = strchr(at, '\n') + 1;
    char *want = h_fmt("\t0x");
    assert_int_equal(strncmp(frame, want, 3), 0);
    char *line = strndup(frame, (size_t)(strchr(frame, '\n') - frame));
    h_has(line, h_fmt(" dlib_alloc() at %s/tests/programs/tracer_dlib.c:7", h_root()));
    h_has(text, h_fmt(": %s/build/tests/programs/tracer_dlib.so => ", h_root()));
    free(line);
    free(want);
    free(text);
    free(cmd);
    free(pid);
    h_cleanup();
}

/* With the control path off (ALLOCTRACE_CONTROL=0) there is no socket to
 * ask: --detach goes through gdb and at_detach. */
static void test_detach_without_the_control_path_goes_through_gdb(void **state)
{
    (void)state;
    if (!have_gdb())
        skip();
    char *dir = h_tmpdir();
    struct target t = start_target(dir, "t", NULL);
    rounds(&t, 1);
    char *pid = h_fmt("%d", (int)t.pid);
    char *trace = h_fmt("%s/nocontrol.txt", dir), *err = h_fmt("%s/nocontrol.err", dir);
    setenv("ALLOCTRACE_CONTROL", "0", 1);
    pid_t l = launch_bg(err, "-p", pid, "-o", trace, "--compress=none");
    unsetenv("ALLOCTRACE_CONTROL");
    wait_for_text(err, "Ctrl-C detaches");
    char *sock = h_fmt("@alloctrace.%s\n", pid);
    h_lacks(read_text("/proc/net/unix"), sock);
    rounds(&t, 1);                                   /* round 1 */
    h_result d = launch("--detach", pid, NULL, NULL);
    assert_int_equal(d.status, 0);
    h_has(d.err, h_fmt("alloctrace: detached from %s (attach_target); it runs on\n", pid));
    h_result_free(&d);
    assert_int_equal(wait_exit(l), 0);
    rounds(&t, 1);
    assert_int_equal(finish_target(&t), 0);
    char *text = resolved(trace);
    has_round(text, 1);
    lacks_round(text, 0);
    lacks_round(text, 2);
    free(text);
    free(sock);
    free(pid);
    h_cleanup();
}

/* make install's launcher finds its library and gdb driver beside it. */
static void test_installed_launcher_attaches_and_detaches(void **state)
{
    (void)state;
    if (!have_gdb())
        skip();
    char *dest = h_tmpdir();
    h_result in = h_sh("make -s -C '%s' install DESTDIR='%s' PREFIX=/usr >/dev/null", h_root(), dest);
    assert_int_equal(in.status, 0);
    h_result_free(&in);
    struct target t = start_target(dest, "t", NULL);
    rounds(&t, 1);
    char *launcher = h_fmt("%s/usr/bin/alloctrace", dest);
    char *trace = h_fmt("%s/installed.txt", dest), *err = h_fmt("%s/installed.err", dest);
    char *pid = h_fmt("%d", (int)t.pid);
    const char *argv[] = { launcher, "-p", pid, "-o", trace, "--compress=none", NULL };
    pid_t l = spawn(argv, -1, NULL, err, NULL);
    wait_for_text(err, "Ctrl-C detaches");
    rounds(&t, 1);                                   /* round 1 */
    kill(l, SIGINT);
    assert_int_equal(wait_exit(l), 0);
    h_has(read_text(err), h_fmt("alloctrace: detached from %s (attach_target); it runs on\n", pid));
    rounds(&t, 1);
    assert_int_equal(finish_target(&t), 0);
    char *text = resolved(trace);
    has_round(text, 1);
    lacks_round(text, 0);
    lacks_round(text, 2);
    h_has(text, h_fmt(": %s/usr/lib/alloctrace/liballoctrace-attach.so => ", dest));
    free(text);
    free(pid);
    free(launcher);
    h_cleanup();
}

/* ---- refusals: one line, exit 2, the process untouched --------------------- */

static void refused(h_result *r, const char *line)
{
    assert_int_equal(r->status, 2);
    assert_string_equal(r->err, line);
}

static void test_no_such_process_is_refused(void **state)
{
    (void)state;
    h_result r = launch("-p", "999999999", NULL, NULL);
    refused(&r, "alloctrace: 999999999: no such process\n");
    h_result_free(&r);
    r = launch("-p", "12ab", NULL, NULL);
    refused(&r, "alloctrace: -p needs a process id, not '12ab'\n");
    h_result_free(&r);
    r = launch("--detach", "999999999", NULL, NULL);
    refused(&r, "alloctrace: 999999999: no such process\n");
    h_result_free(&r);
}

static void test_gdb_missing_is_said_in_one_line(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    struct target t = start_target(dir, "t", NULL);
    rounds(&t, 1);
    char *pid = h_fmt("%d", (int)t.pid);
    h_result r = h_sh("PATH=/nonexistent '%s/scripts/alloctrace' -p %s", h_root(), pid);
    refused(&r, "alloctrace: gdb missing: attaching to a running process needs it (apt-get install gdb)\n");
    h_result_free(&r);
    rounds(&t, 1);
    assert_int_equal(finish_target(&t), 0);
    free(pid);
    h_cleanup();
}

static void test_static_binary_is_refused(void **state)
{
    (void)state;
    if (!have_gdb())
        skip();
    char *prog = h_path("build/tests/programs/attach_static");
    const char *argv[] = { prog, NULL };
    char *dir = h_tmpdir();
    int p[2];
    assert_int_equal(pipe(p), 0);
    char *out = h_fmt("%s/static.out", dir);
    pid_t pid = spawn(argv, p[0], out, NULL, NULL);
    close(p[0]);
    assert_int_equal(write(p[1], "r\n", 2), 2);
    wait_for_text(out, "round 0: ");
    char *spid = h_fmt("%d", (int)pid);
    h_result r = launch("-p", spid, NULL, NULL);
    refused(&r, h_fmt("alloctrace: %s (attach_static): a static binary: there is no dynamic loader to load the tracer with (only dynamically linked programs can be traced)\n", spid));
    h_result_free(&r);
    assert_int_equal(write(p[1], "r\nexit\n", 7), 7);
    close(p[1]);
    assert_int_equal(wait_exit(pid), 0);
    h_has(read_text(out), "round 1: ");
    free(spid);
    free(prog);
    h_cleanup();
}

static void test_process_traced_by_another_ptracer_is_refused(void **state)
{
    (void)state;
    if (!have_gdb())
        skip();
    char *dir = h_tmpdir();
    struct target t = start_target(dir, "t", NULL);
    rounds(&t, 1);
    pid_t tracer = fork();
    assert_true(tracer >= 0);
    if (tracer == 0) {   /* seizes without stopping it, then waits to be killed */
        if (ptrace(PTRACE_SEIZE, t.pid, NULL, NULL) != 0)
            _exit(1);
        for (;;)
            pause();
    }
    char *pid = h_fmt("%d", (int)t.pid);
    char *status = h_fmt("/proc/%d/status", (int)t.pid);
    wait_for_text(status, h_fmt("TracerPid:\t%d\n", (int)tracer));
    h_result r = launch("-p", pid, NULL, NULL);
    char *comm = read_text(h_fmt("/proc/%d/comm", (int)tracer));
    comm[strcspn(comm, "\n")] = '\0';
    refused(&r, h_fmt("alloctrace: %s (attach_target): already traced by process %d (%s): only one debugger or tracer can ptrace it; detach that one first\n", pid, (int)tracer, comm));
    h_result_free(&r);
    kill(tracer, SIGKILL);
    waitpid(tracer, NULL, 0);
    rounds(&t, 1);
    assert_int_equal(finish_target(&t), 0);
    free(pid);
    h_cleanup();
}

static void test_process_started_under_the_tracer_is_refused(void **state)
{
    (void)state;
    if (!have_gdb())
        skip();
    char *dir = h_tmpdir();
    char *prog = h_path("build/tests/programs/attach_target");
    char *lib = h_fmt("LD_PRELOAD=%s/preload/liballoctrace.so", h_root());
    char *outp = h_fmt("ALLOCTRACE_OUTPUT=%s/pre.txt", dir);
    char *env[] = { lib, outp, NULL };
    const char *argv[] = { prog, NULL };
    int p[2];
    assert_int_equal(pipe(p), 0);
    char *out = h_fmt("%s/pre.out", dir);
    pid_t pid = spawn(argv, p[0], out, NULL, env);
    close(p[0]);
    assert_int_equal(write(p[1], "r\n", 2), 2);
    wait_for_text(out, "round 0: ");
    char *spid = h_fmt("%d", (int)pid);
    h_result r = launch("-p", spid, NULL, NULL);
    refused(&r, h_fmt("alloctrace: %s (attach_target): already traced: it was started under alloctrace\n", spid));
    h_result_free(&r);
    assert_int_equal(write(p[1], "exit\n", 5), 5);
    close(p[1]);
    assert_int_equal(wait_exit(pid), 0);
    free(spid);
    free(prog);
    h_cleanup();
}

/* Another user's process, as a user without privileges (setpriv). */
static void test_another_users_process_is_refused(void **state)
{
    (void)state;
    if (!h_nobody_runs_the_tree())
        skip();
    char *dir = h_tmpdir();
    chmod(dir, 0755);
    struct target t = start_target(dir, "t", NULL);
    rounds(&t, 1);
    h_result r = h_sh("cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "
                      "'%s/scripts/alloctrace' -p %d", h_root(), (int)t.pid);
    refused(&r, h_fmt("alloctrace: %d (attach_target): another user's process (uid 0): attach as that user or as root\n", (int)t.pid));
    h_result_free(&r);
    rounds(&t, 1);
    assert_int_equal(finish_target(&t), 0);
    h_cleanup();
}

/* A process stopped by SIGSTOP: an attach would have to let it run. */
static void test_stopped_process_is_refused_and_stays_stopped(void **state)
{
    (void)state;
    if (!have_gdb())
        skip();
    char *dir = h_tmpdir();
    struct target t = start_target(dir, "t", NULL);
    rounds(&t, 1);
    kill(t.pid, SIGSTOP);
    char *status = h_fmt("/proc/%d/status", (int)t.pid);
    wait_for_text(status, "State:\tT (stopped)");
    h_result r = launch("-p", h_fmt("%d", (int)t.pid), NULL, NULL);
    refused(&r, h_fmt("alloctrace: %d (attach_target): stopped (by a signal): continue it first (kill -CONT %d); attaching would have to run it\n", (int)t.pid, (int)t.pid));
    h_result_free(&r);
    h_has(read_text(status), "State:\tT (stopped)");
    kill(t.pid, SIGCONT);
    rounds(&t, 1);
    assert_int_equal(finish_target(&t), 0);
    free(status);
    h_cleanup();
}

/* The target run as uid 65534 (nobody), after its first round; its
 * input is *in (write "exit\n" to end it). */
static pid_t start_as_nobody(int *in)
{
    char *dir = h_tmpdir();
    chmod(dir, 0777);
    char *prog = h_path("build/tests/programs/attach_target");
    int p[2];
    assert_int_equal(pipe(p), 0);
    char *out = h_fmt("%s/nobody.out", dir);
    const char *argv[] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                           "--clear-groups", prog, NULL };
    pid_t pid = spawn(argv, p[0], out, NULL, NULL);
    close(p[0]);
    assert_int_equal(write(p[1], "r\n", 2), 2);
    wait_for_text(out, "round 0: ");
    free(prog);
    free(out);
    *in = p[1];
    return pid;
}

/* Ends a target started by start_as_nobody. */
static void finish_nobody(pid_t pid, int in)
{
    assert_int_equal(write(in, "exit\n", 5), 5);
    close(in);
    assert_int_equal(wait_exit(pid), 0);
    h_cleanup();
}

/* Root without CAP_SYS_PTRACE (a container's default) and another user's
 * process. */
static void test_root_without_cap_sys_ptrace_is_told_so(void **state)
{
    (void)state;
    if (!h_nobody_runs_the_tree())
        skip();
    int in;
    pid_t pid = start_as_nobody(&in);
    h_result r = h_sh("setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace "
                      "'%s/scripts/alloctrace' -p %d", h_root(), (int)pid);
    refused(&r, h_fmt("alloctrace: %d (attach_target): another user's process, and this root has no CAP_SYS_PTRACE (a container? run it with --cap-add=SYS_PTRACE)\n", (int)pid));
    h_result_free(&r);
    finish_nobody(pid, in);
}

/* kernel.yama.ptrace_scope=1: a user may attach only to its descendants. */
static void test_ptrace_scope_is_named_with_its_fix(void **state)
{
    (void)state;
    char *scope = h_read_file("/proc/sys/kernel/yama/ptrace_scope", NULL);
    if (!scope || strcmp(scope, "1\n") != 0 || !h_nobody_runs_the_tree()) {
        printf("skipped: needs kernel.yama.ptrace_scope=1 (this kernel: %s), root and setpriv\n",
               scope ? scope : "no Yama\n");
        free(scope);
        skip();
    }
    free(scope);
    int in;
    pid_t pid = start_as_nobody(&in);
    h_result r = h_sh("cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "
                      "'%s/scripts/alloctrace' -p %d", h_root(), (int)pid);
    refused(&r, h_fmt("alloctrace: %d (attach_target): kernel.yama.ptrace_scope=1 lets only a parent attach: run as root, or sudo sysctl kernel.yama.ptrace_scope=0\n", (int)pid));
    h_result_free(&r);
    finish_nobody(pid, in);
}

static void test_process_exiting_during_the_attach_is_said(void **state)
{
    (void)state;
    if (!have_gdb())
        skip();
    char *dir = h_tmpdir();
    struct target t = start_target(dir, "t", "exit-on-load");
    rounds(&t, 1);
    char *pid = h_fmt("%d", (int)t.pid);
    char *trace = h_fmt("%s/gone.txt", dir);
    h_result r = launch("-p", pid, "-o", trace);
    refused(&r, h_fmt("alloctrace: %s: the process exited during the attach\n", pid));
    h_result_free(&r);
    assert_int_equal(wait_exit(t.pid), 3);   /* its own exit, not a signal of ours */
    close(t.in);
    free(pid);
    h_cleanup();
}

/* The tracer cannot create its trace: nothing is patched, the process runs
 * on, and a later attach works. */
static void test_failed_attach_leaves_the_process_as_it_was(void **state)
{
    (void)state;
    if (!have_gdb())
        skip();
    char *dir = h_tmpdir();
    struct target t = start_target(dir, "t", NULL);
    rounds(&t, 1);
    char *pid = h_fmt("%d", (int)t.pid);
    h_result r = launch("-p", pid, "-o", "/proc/no-trace-here.txt");
    assert_int_equal(r.status, 2);
    h_has(r.err, h_fmt("alloctrace: %s: /proc/no-trace-here.txt: cannot create the trace", pid));
    assert_int_equal(h_count_lines(r.err, "."), 1);
    h_result_free(&r);
    rounds(&t, 2);
    char *trace = h_fmt("%s/after.txt", dir), *err = h_fmt("%s/after.err", dir);
    pid_t l = launch_bg(err, "-p", pid, "-o", trace, "--compress=none");
    wait_for_text(err, "Ctrl-C detaches");
    rounds(&t, 1);                                   /* round 3 */
    kill(l, SIGTERM);
    assert_int_equal(wait_exit(l), 0);
    rounds(&t, 1);
    assert_int_equal(finish_target(&t), 0);
    char *text = resolved(trace);
    has_round(text, 3);
    lacks_round(text, 2);
    lacks_round(text, 4);
    free(text);
    free(pid);
    h_cleanup();
}

static void test_leaks_mode_and_program_arguments_are_refused(void **state)
{
    (void)state;
    h_result r = launch("-m", "leaks", "-p", "1");
    refused(&r, "alloctrace: -m leaks cannot attach: a leaks report needs every block from the start (an attached process is traced in full mode)\n");
    h_result_free(&r);
    r = launch("-p", "1", "ls", NULL);
    refused(&r, "alloctrace: -p and --detach take no program (ls): the process is already running\n");
    h_result_free(&r);
}

/* ---- a real server under load: memcached ----------------------------------- */

struct load {
    int port;
    volatile int stop;
    volatile unsigned long answered, failed;
    double longest_ms;   /* the longest wait for one answer */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = { 5, 0 };   /* an answer later than 5 s counts as failed */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads until `want` has come (exactly), or fails. */
static int expect(int fd, const char *want)
{
    char buf[128];
    size_t n = strlen(want), got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return memcmp(buf, want, n) == 0 ? 0 : -1;
}

/* set and get in turn on one connection, as fast as answers come (at most
 * 5,000,000 requests or 20 s). */
static void *load_main(void *arg)
{
    struct load *l = arg;
    int fd = connect_to(l->port);
    time_t end = time(NULL) + 20;
    for (unsigned long i = 0; !l->stop && i < 5000000 && time(NULL) < end; i++) {
        char req[96], key[32];
        snprintf(key, sizeof key, "k%lu", i / 2 % 64);   /* got right after its set */
        int ok;
        double t0 = now_ms();
        if (i % 2 == 0) {
            snprintf(req, sizeof req, "set %s 0 0 5\r\nhello\r\n", key);
            ok = fd >= 0 && write(fd, req, strlen(req)) == (ssize_t)strlen(req) &&
                 expect(fd, "STORED\r\n") == 0;
        } else {
            snprintf(req, sizeof req, "get %s\r\n", key);
            char want[96];
            snprintf(want, sizeof want, "VALUE %s 0 5\r\nhello\r\nEND\r\n", key);
            ok = fd >= 0 && write(fd, req, strlen(req)) == (ssize_t)strlen(req) &&
                 expect(fd, want) == 0;
        }
        if (now_ms() - t0 > l->longest_ms)
            l->longest_ms = now_ms() - t0;
        if (ok)
            l->answered++;
        else
            l->failed++;
        if (!ok) {
            if (fd >= 0)
                close(fd);
            fd = connect_to(l->port);
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_memcached_answers_every_request_through_attach_and_detach(void **state)
{
    (void)state;
    if (!have_gdb() || !h_have("memcached"))
        skip();
    char *dir = h_tmpdir();
    struct load l = { .port = free_port() };
    char *port = h_fmt("%d", l.port);
    const char *argv[] = { "/usr/bin/memcached", "-l", "127.0.0.1", "-p", port, "-U", "0",
                           "-t", "2", "-u", "root", NULL };
    pid_t mc = spawn(argv, -1, NULL, NULL, NULL);
    int fd = -1;
    for (int i = 0; i < 500 && (fd = connect_to(l.port)) < 0; i++)
        sleep_ms(10);
    assert_true(fd >= 0);
    close(fd);
    pthread_t t;
    pthread_create(&t, NULL, load_main, &l);
    sleep_ms(300);
    unsigned long before = l.answered;
    char *pid = h_fmt("%d", (int)mc), *trace = h_fmt("%s/memcached.txt", dir);
    char *err = h_fmt("%s/launch.err", dir);
    pid_t launcher = launch_bg(err, "-p", pid, "-o", trace, "--compress=none");
    wait_for_text(err, "Ctrl-C detaches");
    unsigned long attached = l.answered;
    sleep_ms(500);
    unsigned long traced = l.answered - attached;
    kill(launcher, SIGINT);
    assert_int_equal(wait_exit(launcher), 0);
    sleep_ms(300);
    l.stop = 1;
    pthread_join(t, NULL);
    printf("memcached: %lu requests answered before the attach, %lu while traced, %lu in all, "
           "%lu failed; the longest wait for an answer %.0f ms\n", before, traced, l.answered,
           l.failed, l.longest_ms);
    assert_int_equal(l.failed, 0);
    assert_true(before > 0 && traced > 0);
    assert_int_equal(kill(mc, 0), 0);   /* still running */
    h_has(read_text(err), h_fmt("alloctrace: detached from %s (memcached); it runs on\n", pid));
    char *text = read_text(trace);
    h_has(text, "## attached to a running process");
    h_has(text, "process=/usr/bin/memcached, ");
    kill(mc, SIGTERM);
    assert_int_equal(wait_exit(mc), 0);
    free(text);
    free(pid);
    free(port);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_attach_mid_run_traces_what_follows_and_detach_leaves_it_running, h_teardown),
        cmocka_unit_test_teardown(test_memcached_answers_every_request_through_attach_and_detach, h_teardown),
        cmocka_unit_test_teardown(test_objects_dlopened_after_the_attach_are_traced, h_teardown),
        cmocka_unit_test_teardown(test_installed_launcher_attaches_and_detaches, h_teardown),
        cmocka_unit_test_teardown(test_detach_without_the_control_path_goes_through_gdb, h_teardown),
        cmocka_unit_test(test_no_such_process_is_refused),
        cmocka_unit_test_teardown(test_gdb_missing_is_said_in_one_line, h_teardown),
        cmocka_unit_test_teardown(test_static_binary_is_refused, h_teardown),
        cmocka_unit_test_teardown(test_process_traced_by_another_ptracer_is_refused, h_teardown),
        cmocka_unit_test_teardown(test_process_started_under_the_tracer_is_refused, h_teardown),
        cmocka_unit_test_teardown(test_another_users_process_is_refused, h_teardown),
        cmocka_unit_test_teardown(test_stopped_process_is_refused_and_stays_stopped, h_teardown),
        cmocka_unit_test_teardown(test_root_without_cap_sys_ptrace_is_told_so, h_teardown),
        cmocka_unit_test(test_ptrace_scope_is_named_with_its_fix),
        cmocka_unit_test_teardown(test_process_exiting_during_the_attach_is_said, h_teardown),
        cmocka_unit_test_teardown(test_failed_attach_leaves_the_process_as_it_was, h_teardown),
        cmocka_unit_test(test_leaks_mode_and_program_arguments_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
