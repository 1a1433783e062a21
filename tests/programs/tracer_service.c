/*
 * tests/programs/tracer_service.c: a service as the tests trace it through
 * its whole life (tests/integration/test_tracer_service.c).
 *
 *   serve PIDFILE   a foreground server: writes its pid to PIDFILE once
 *                   ready, waits for SIGTERM, SIGINT or SIGHUP, then leaks
 *                   222 bytes, prints "stopped by signal N" and exits 0 (it
 *                   handles the signal itself, as a service does)
 *   daemon PIDFILE  a daemon, the classic way: leaks 1001 bytes, forks; the
 *                   parent waits for the first child and exits 0; the child
 *                   calls setsid, forks again and exits 0; the grandchild
 *                   (the daemon) does chdir("/"), closes every descriptor,
 *                   opens /dev/null on 0-2, leaks 2002 bytes, writes its pid
 *                   to PIDFILE, waits for SIGTERM, leaks 3003 bytes, exits 0
 *   shim PROGRAM ARGS...  leaks 444 bytes, then execs PROGRAM (as env or a
 *                   wrapper script would)
 *   leak            leaks 555 bytes and exits 0 (what the shim runs)
 *
 * Leaks are made by dropping the only pointer, so they are definite in
 * valgrind's words as in the tracer's.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    stop = sig;
}

/* Allocates n bytes and forgets them. */
static void leak(size_t n)
{
    char *volatile p = malloc(n);
    memset(p, 1, n);
    p = NULL;
}

static void write_pid(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        exit(3);
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
    rename(tmp, path);   /* the test sees it whole or not at all */
}

static void wait_for(const int *sigs, int n)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < n; i++)
        sigaction(sigs[i], &sa, NULL);
}

static int serve(const char *pidfile)
{
    const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
    wait_for(sigs, 3);
    write_pid(pidfile);
    while (!stop)
        pause();
    leak(222);
    printf("stopped by signal %d\n", (int)stop);
    return 0;
}

static int daemonize(const char *pidfile)
{
    leak(1001);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid > 0) {
        int st;
        waitpid(pid, &st, 0);
        return 0;
    }
    setsid();
    pid = fork();
    if (pid < 0)
        exit(1);
    if (pid > 0)
        exit(0);
    const int sigs[] = { SIGTERM };
    wait_for(sigs, 1);
    if (chdir("/") != 0)
        exit(1);
    umask(0);
    for (int fd = 0; fd < 1024; fd++)
        close(fd);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
    }
    leak(2002);
    write_pid(pidfile);
    while (!stop)
        pause();
    leak(3003);
    exit(0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "serve") == 0 && argc == 3)
        return serve(argv[2]);
    if (strcmp(mode, "daemon") == 0 && argc == 3)
        return daemonize(argv[2]);
    if (strcmp(mode, "shim") == 0 && argc >= 3) {
        leak(444);
        execv(argv[2], argv + 2);
        perror(argv[2]);
        return 127;
    }
    if (strcmp(mode, "leak") == 0) {
        leak(555);
        return 0;
    }
    fprintf(stderr, "usage: tracer_service serve|daemon PIDFILE | shim PROGRAM ARGS... | leak\n");
    return 2;
}
