/*
 * preload/process/tracelist.c: the launcher's list of what a process tree
 * did with its traces (ALLOCTRACE_TRACE_LIST, set by scripts/alloctrace).
 *
 * The launcher can see only its own child; a daemon's workers, a forked
 * child that changed directory, a program that exec'd another one are out
 * of its sight. So every traced process appends one line here for each
 * trace it creates or gives up, each exec, and each message it prints
 * (the program's stderr may be a log file the user never reads):
 *
 *   trace PID PPID PATH      a trace was created
 *   gone PID PATH            ... and removed, empty (the process exec'd)
 *   exec PID PATH            the process exec'd PATH, untraced
 *   warn PID TEXT            a message the tracer printed
 *
 * Decisions: the file is opened for each line (lines are rare: one per
 * process and per exec) with O_APPEND, and each line goes out in one
 * write(2), so lines of processes writing at once never mix; no descriptor
 * is kept, and the file is never created here (a stale name in the
 * environment of an unrelated run then writes nothing). Async-signal-safe
 * and without malloc, like diag.c, which calls it. At the bottom layer: it
 * reads only the configuration.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "tracer.h"

/* Decimal, by hand (the bottom layer has no format.c). */
static size_t put_dec(char *p, unsigned long v)
{
    char rev[24];
    size_t n = 0, i = 0;
    do
        rev[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n > 0)
        p[i++] = rev[--n];
    return i;
}

void at_tracelist_line(const char *word, pid_t ppid, const char *text)
{
    if (!at_cfg.trace_list[0])
        return;
    char line[PATH_MAX + 128];
    size_t n = 0, w = strlen(word), t = strlen(text);
    memcpy(line, word, w);
    n += w;
    line[n++] = ' ';
    n += put_dec(line + n, (unsigned long)getpid());
    line[n++] = ' ';
    if (ppid > 0) {
        n += put_dec(line + n, (unsigned long)ppid);
        line[n++] = ' ';
    }
    if (t > sizeof line - n - 1)
        t = sizeof line - n - 1;
    memcpy(line + n, text, t);
    n += t;
    /* One line a record: a message's own newline ends it. */
    while (n > 0 && line[n - 1] == '\n')
        n--;
    for (size_t i = 0; i < n; i++)
        if (line[i] == '\n')
            line[i] = ' ';
    line[n++] = '\n';
    int fd = open(at_cfg.trace_list, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    ssize_t r = write(fd, line, n);
    (void)r;
    extern int __close(int);
    __close(fd);
}
