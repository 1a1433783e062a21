/*
 * preload/diag.c: the tracer's one-line messages on stderr.
 *
 * At the bottom of the tracer, so that every file may say why it stops
 * or what it could not do without calling up into the lifecycle. One
 * write(2) of the whole line, assembled on the stack: no stdio (which
 * allocates, and locks a stream the program may hold) and async-signal-
 * safe, so handlers and the writer thread may call it. A line too long
 * is cut, never split. Under the launcher the line also goes to its list
 * (process/tracelist.c): a daemon's stderr is often a log file, or
 * nothing.
 */
#include <string.h>
#include <unistd.h>

#include "tracer.h"

void at_warn(const char *a, const char *b, const char *c)
{
    char msg[1024];
    size_t n = 0;
    const char *parts[] = { "alloctrace: ", a, b, c, "\n" };
    for (int i = 0; i < 5; i++) {
        size_t l = strlen(parts[i]);
        if (n + l > sizeof msg - 2)
            l = sizeof msg - 2 - n;
        memcpy(msg + n, parts[i], l);
        n += l;
    }
    if (msg[n - 1] != '\n')
        msg[n++] = '\n';
    ssize_t w = write(2, msg, n);
    (void)w;
    /* And to the launcher, which tells the user on its own stderr. */
    msg[n - 1] = '\0';
    at_tracelist_line("warn", 0, msg + strlen("alloctrace: "));
}
