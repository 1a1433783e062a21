/*
 * postproc/analyze/print.c: the analysis stage's output for --format report
 * and --format stats (outputs.h): one FILE on a copy of the output
 * descriptor, closed here, so main still closes its own and a write error
 * (a full disk) is seen at fclose.
 */
#include "outputs.h"

#include <errno.h>
#include <unistd.h>

int at_an_print(void *opts, const at_analysis *an, at_trace *t)
{
    const at_an_print_opts *o = opts;
    int fd = dup(o->fd);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        errno = err;
        return -1;
    }
    int rc = o->stats ? at_an_write_stats(f, an, t, o->top) : at_an_write_report(f, an, t, o->top);
    int err = rc ? errno : 0;
    if (fclose(f) != 0 && !err)
        err = errno ? errno : EIO;
    errno = err;
    return err ? -1 : 0;
}
