/*
 * postproc/analyze/print.c: the analysis stage's output for --format report
 * and --format stats (outputs.h), and the way every analysis output reaches
 * its descriptor (the HTML report's too): one FILE on a copy of the output
 * descriptor, closed here, so main still closes its own and a write error
 * (a full disk) is seen at fclose.
 */
#include "outputs.h"

#include <errno.h>
#include <unistd.h>

int at_an_print_to(int fd_out, int (*write)(FILE *f, void *arg), void *arg)
{
    int fd = dup(fd_out);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        errno = err;
        return -1;
    }
    errno = 0;
    int err = write(f, arg) ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !err)
        err = errno ? errno : EIO;
    errno = err;
    return err ? -1 : 0;
}

typedef struct printing {
    const at_an_print_opts *o;
    const at_analysis *an;
    at_trace *t;
} printing;

static int print_one(FILE *f, void *arg)
{
    const printing *p = arg;
    return p->o->stats ? at_an_write_stats(f, p->an, p->t, p->o->top)
                       : at_an_write_report(f, p->an, p->t, p->o->top);
}

int at_an_print(void *opts, const at_analysis *an, at_trace *t)
{
    printing p = { opts, an, t };
    return at_an_print_to(((const at_an_print_opts *)opts)->fd, print_one, &p);
}
