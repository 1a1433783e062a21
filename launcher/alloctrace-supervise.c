/*
 * launcher/alloctrace-supervise.c: runs the traced program for
 * scripts/alloctrace and stays with it, and with every process it leaves
 * behind, until the last one ends; passes the signals a supervisor sends.
 *
 *   alloctrace-supervise [--then-sh SCRIPT] -- PROGRAM [ARGS...]
 *
 * The launcher execs this helper, so the launcher's pid is the helper's:
 * systemd, docker stop, a CI timeout or a user's kill reach it directly.
 * Decisions:
 *
 * - A child subreaper (PR_SET_CHILD_SUBREAPER): a daemon's double fork
 *   leaves its process orphaned to us, not to init, so the helper sees
 *   it end (and can pass it signals); the launcher then names the traces
 *   of the whole tree, not only of the parent that exited at once.
 * - Signals are taken with sigwaitinfo, never by a handler: SIGTERM,
 *   SIGINT, SIGHUP and SIGQUIT (those that stop a service) are passed to
 *   the program, to its process group where it made one of its own, and
 *   to every process orphaned to us (a daemon, in its own session); the
 *   helper never dies of them, so a second Ctrl-C loses nothing. A signal
 *   the terminal sent (si_code SI_KERNEL) already reached every process in
 *   our process group and is not sent twice; nor is one already pending
 *   in the target (a kill of our whole group). A signal ignored when the
 *   launcher started stays ignored, for us and the program.
 * - The exit status is the program's own (128+N for a signal N); when it
 *   exited 0 leaving a daemon behind, the daemon's, the last to end.
 * - With --then-sh, once everything ended, SCRIPT is exec'd by /bin/sh
 *   with AT_SUPERVISED_STATUS and AT_SUPERVISED_PID in its environment:
 *   the launcher prints its summary there, still under the pid the
 *   supervisor knows.
 * - The program gets LD_PRELOAD from AT_LAUNCH_PRELOAD, only for its exec
 *   (the helper itself is not traced), and no AT_LAUNCH_* variable.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static const char me[] = "alloctrace";
static const int passed[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
#define NPASSED (int)(sizeof passed / sizeof *passed)

static void usage(FILE *f)
{
    fprintf(f, "Usage: alloctrace-supervise [--then-sh SCRIPT] -- PROGRAM [ARGS...]\n"
               "Runs PROGRAM (with LD_PRELOAD=$AT_LAUNCH_PRELOAD) as a child subreaper,\n"
               "passes it SIGTERM, SIGINT, SIGHUP and SIGQUIT, waits for it and every\n"
               "process it leaves behind, and exits with its status (or runs SCRIPT with\n"
               "AT_SUPERVISED_STATUS and AT_SUPERVISED_PID set). Called by alloctrace.\n");
}

/* The program's environment: LD_PRELOAD for it alone, no AT_LAUNCH_*. */
static void child_environment(void)
{
    const char *pre = getenv("AT_LAUNCH_PRELOAD");
    if (pre && *pre)
        setenv("LD_PRELOAD", pre, 1);
    extern char **environ;
    for (char **e = environ; e && *e;) {
        if (strncmp(*e, "AT_LAUNCH_", 10) == 0) {
            char name[64];
            size_t n = strcspn(*e, "=");
            if (n < sizeof name) {
                memcpy(name, *e, n);
                name[n] = '\0';
                unsetenv(name);
                continue;   /* the vector moved down */
            }
        }
        e++;
    }
}

static pid_t start(char **argv, const sigset_t *old_mask)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    child_environment();
    execvp(argv[0], argv);
    int e = errno;
    fprintf(stderr, "%s: %s: %s\n", me, argv[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

/* Whether `sig` is already pending in process `pid` (shared pending set):
 * sending it again would change nothing, or make it arrive twice. */
static int pending_in(pid_t pid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long mask = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "ShdPnd: %llx", &mask) == 1)
            break;
    fclose(f);
    return (mask >> (sig - 1)) & 1;
}

/* Our children now: the program and whatever was orphaned to us. */
static size_t our_children(pid_t *out, size_t cap)
{
    size_t n = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    pid_t self = getpid();
    struct dirent *de;
    while ((de = readdir(d)) && n < cap) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = '\0';
        /* "pid (comm) state ppid ...": comm may hold spaces and parens. */
        char *rp = strrchr(buf, ')');
        int ppid;
        char state;
        if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == self && state != 'Z')
            out[n++] = (pid_t)pid;
    }
    closedir(d);
    return n;
}

/* Passes `sig` on to each child, or to its process group where it has one
 * of its own. `from_tty`: the terminal sent it to our whole group. */
static void pass_on(int sig, int from_tty)
{
    pid_t kids[256];
    size_t n = our_children(kids, sizeof kids / sizeof *kids);
    pid_t our_pg = getpgrp();
    for (size_t i = 0; i < n; i++) {
        pid_t pg = getpgid(kids[i]);
        if (pg == our_pg) {
            if (from_tty || pending_in(kids[i], sig))
                continue;
            kill(kids[i], sig);
        } else if (pg == kids[i]) {
            kill(-pg, sig);   /* a leader: its workers are in its group */
        } else {
            kill(kids[i], sig);
        }
    }
}

static int status_code(int st)
{
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
    const char *then = NULL;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "--then-sh") == 0 && i + 1 < argc) {
            then = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        fprintf(stderr, "%s: warning: cannot become a child subreaper (%s): a daemon's "
                        "processes will not be followed\n", me, strerror(errno));

    sigset_t set, old;
    sigemptyset(&set);
    for (int k = 0; k < NPASSED; k++)
        sigaddset(&set, passed[k]);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old);

    pid_t main_pid = start(argv + i, &old);
    if (main_pid < 0) {
        fprintf(stderr, "%s: cannot start %s: %s\n", me, argv[i], strerror(errno));
        return 126;
    }
    int main_status = -1, last_status = 0, told = 0;
    for (;;) {
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
            if (pid == main_pid)
                main_status = status_code(st);
            else
                last_status = status_code(st);
        }
        if (pid < 0 && errno == ECHILD)
            break;
        if (main_status >= 0 && !told) {
            pid_t kids[8];
            size_t left = our_children(kids, 8);
            if (left) {
                fprintf(stderr, "%s: %s exited (status %d) and left %zu process%s running "
                                "(a daemon): following %s until %s; stop %s as usual, or "
                                "send SIGTERM to alloctrace (pid %d)\n",
                        me, argv[i], main_status, left, left > 1 ? "es" : "",
                        left > 1 ? "them" : "it", left > 1 ? "they end" : "it ends",
                        left > 1 ? "them" : "it", (int)getpid());
                told = 1;
            }
        }
        siginfo_t si;
        int sig = sigwaitinfo(&set, &si);
        if (sig < 0 || sig == SIGCHLD)
            continue;
        pass_on(sig, si.si_code == SI_KERNEL);
    }
    int status = main_status > 0 ? main_status : last_status;
    if (main_status < 0)
        status = last_status;
    if (!then)
        return status;
    char num[16];
    snprintf(num, sizeof num, "%d", status);
    setenv("AT_SUPERVISED_STATUS", num, 1);
    snprintf(num, sizeof num, "%d", (int)main_pid);
    setenv("AT_SUPERVISED_PID", num, 1);
    sigprocmask(SIG_SETMASK, &old, NULL);
    execl("/bin/sh", "sh", then, (char *)NULL);
    fprintf(stderr, "%s: cannot run %s for the summary: %s\n", me, then, strerror(errno));
    return status;
}
