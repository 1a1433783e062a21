/*
 * launcher/alloctrace-ctl.c: talks to a running tracer (docs/tracer.md,
 * "Talking to a running tracer: the control path") for scripts/alloctrace.
 *
 *   alloctrace-ctl [--timeout SECONDS] PID VERB [ARGUMENT]
 *
 * Sends the request "VERB [ARGUMENT]" as one datagram to the abstract
 * socket @alloctrace.PID from an autobound address of its own, waits for
 * the one datagram that answers it and prints it: the lines of detail,
 * then the last line without its "ok " (exit 0), or "alloctrace: process
 * PID: REASON" on stderr for an "error REASON" (exit 1). Exit 2, with one
 * line, when there is no answer to wait for: no such process, a process
 * not traced (or traced with ALLOCTRACE_CONTROL=0), a process that ended
 * while we waited, no answer within the timeout (60 s by default: a leak
 * check of a large heap takes seconds), a process whose control thread is
 * not started (sampled on one thread: scripts/alloctrace starts it with
 * gdb first, preload/process/control.c).
 *
 * Why C: sh has no Unix sockets, and socat or nc may not be installed
 * (nor speak abstract datagram sockets the same way everywhere).
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "alloctrace/format.h"

static const char *me = "alloctrace";

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: alloctrace-ctl [--timeout SECONDS] PID VERB [ARGUMENT]\n"
            "\n"
            "Sends one request to the tracer running in process PID and prints its\n"
            "answer. Verbs: status, snapshot [LABEL], toggle on|off, flush, detach.\n"
            "Exit status: 0 ok, 1 the tracer answered with an error, 2 no answer\n"
            "(no such process, not traced, timeout).\n");
}

static int fail(long pid, const char *why)
{
    fprintf(stderr, "%s: process %ld: %s\n", me, pid, why);
    return 2;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Whether a thread of PID is named alloctrace-ct: the thread that answers
 * the socket. A process sampled on one thread opens its socket at start
 * and starts that thread later (preload/process/control.c). */
static int control_thread_running(long pid)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/task", pid);
    DIR *d = opendir(dir);
    if (!d)
        return 1;   /* cannot tell: wait for the answer as before */
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[sizeof dir + sizeof e->d_name + 8], name[32] = "";
        snprintf(path, sizeof path, "%s/%s/comm", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            found = fgets(name, sizeof name, f) && strcmp(name, "alloctrace-ct\n") == 0;
            fclose(f);
        }
    }
    closedir(d);
    return found;
}

int main(int argc, char **argv)
{
    double timeout = 60;
    int i = 1;
    if (i < argc && (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (i + 1 < argc && strcmp(argv[i], "--timeout") == 0) {
        char *end;
        timeout = strtod(argv[i + 1], &end);
        if (*end || !(timeout > 0)) {
            fprintf(stderr, "%s: --timeout %s: expected a number of seconds\n", me, argv[i + 1]);
            return 2;
        }
        i += 2;
    }
    if (argc - i < 2 || argc - i > 3) {
        usage(stderr);
        return 2;
    }
    char *end;
    long pid = strtol(argv[i], &end, 10);
    if (!*argv[i] || *end || pid <= 0 || pid > 0x3fffffff) {
        fprintf(stderr, "%s: %s: expected a process id\n", me, argv[i]);
        return 2;
    }
    char req[AT_CONTROL_MAX + 2];
    int rlen = snprintf(req, sizeof req, "%s%s%s\n", argv[i + 1], argc - i == 3 ? " " : "",
                        argc - i == 3 ? argv[i + 2] : "");
    if (rlen < 0 || (size_t)rlen > AT_CONTROL_MAX) {
        fprintf(stderr, "%s: the request is longer than %d bytes\n", me, AT_CONTROL_MAX);
        return 2;
    }
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return fail(pid, "no such process");

    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail(pid, strerror(errno));
    /* Autobind: an abstract address of our own, for the answer. */
    struct sockaddr_un self = { .sun_family = AF_UNIX };
    if (bind(fd, (struct sockaddr *)&self, sizeof(sa_family_t)) != 0)
        return fail(pid, strerror(errno));
    struct sockaddr_un to = { .sun_family = AF_UNIX };
    int n = snprintf(to.sun_path + 1, sizeof to.sun_path - 1, "%s%ld", AT_CONTROL_NAME, pid);
    socklen_t tolen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    /* Connected: only the tracer's datagrams reach us. */
    if (connect(fd, (struct sockaddr *)&to, tolen) != 0) {
        if (errno == ECONNREFUSED || errno == ENOENT) {
            char why[320];
            snprintf(why, sizeof why,
                     "not traced by alloctrace (no control socket @%s%ld: started without "
                     "the tracer, or with ALLOCTRACE_CONTROL=0)", AT_CONTROL_NAME, pid);
            return fail(pid, why);
        }
        return fail(pid, strerror(errno));
    }
    if (send(fd, req, (size_t)rlen, 0) != rlen)
        return fail(pid, strerror(errno));

    char ans[AT_CONTROL_MAX + 1];
    double until = now_s() + timeout;
    /* A thread being started (the program's first thread of its own) has
     * a second to appear; the request waits in the socket meanwhile. */
    double no_thread_until = now_s() + 1;
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, 100);
        if (r > 0) {
            ssize_t got = recv(fd, ans, sizeof ans - 1, 0);
            if (got < 0 && errno == ECONNREFUSED)
                return fail(pid, "the tracer's socket closed before it answered");
            if (got <= 0)
                return fail(pid, strerror(errno));
            ans[got] = '\0';
            break;
        }
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            return fail(pid, "the process ended before the tracer answered");
        if (now_s() > until)
            return fail(pid, "no answer from the tracer in time (see --timeout)");
        if (no_thread_until && now_s() > no_thread_until) {
            if (!control_thread_running(pid))
                return fail(pid, "its tracer's control thread is not started (sampled on one "
                                 "thread): alloctrace --snapshot or --status starts it with gdb");
            no_thread_until = 0;
        }
    }
    /* Lines of detail, then the last line. */
    size_t len = strlen(ans);
    while (len && ans[len - 1] == '\n')
        ans[--len] = '\0';
    char *last = strrchr(ans, '\n');
    last = last ? last + 1 : ans;
    fwrite(ans, 1, (size_t)(last - ans), stdout);
    if (strncmp(last, "ok", 2) == 0 && (last[2] == '\0' || last[2] == ' ')) {
        if (last[2])
            printf("%s\n", last + 3);
        return 0;
    }
    if (strncmp(last, "error ", 6) == 0) {
        fprintf(stderr, "%s: process %ld: %s\n", me, pid, last + 6);
        return 1;
    }
    fprintf(stderr, "%s: process %ld: unexpected answer: %s\n", me, pid, last);
    return 2;
}
