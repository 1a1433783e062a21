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
 * nothing. During an attach (process/attach.c) the lines go to a buffer
 * the launcher reads back instead: the program's stderr is the program's.
 */
#include <string.h>
#include <unistd.h>

#include "tracer.h"

static char *capture;
static size_t capture_cap;

void at_warn_capture(char *buf, size_t cap)
{
    capture = buf;
    capture_cap = cap;
    if (buf && cap)
        buf[0] = '\0';
}

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
    if (capture) {   /* the first line says why: later ones are consequences */
        if (!capture[0] && capture_cap) {
            size_t k = n - 1 - 12 < capture_cap - 1 ? n - 1 - 12 : capture_cap - 1;
            memcpy(capture, msg + 12, k);   /* without "alloctrace: " and "\n" */
            capture[k] = '\0';
        }
        return;
    }
    ssize_t w = write(2, msg, n);
    (void)w;
    /* And to the launcher, which tells the user on its own stderr. */
    msg[n - 1] = '\0';
    at_tracelist_line("warn", 0, msg + strlen("alloctrace: "));
}
