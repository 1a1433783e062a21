/*
 * postproc/read/progress.c: the progress line of a long read.
 *
 * Decisions:
 * - Only for a terminal: a log or a pipe gets no carriage returns. The
 *   caller decides (at_progress_wanted), so -q and small inputs stay quiet.
 * - The line is redrawn in place with '\r' at most four times a second,
 *   whatever the block size, so a fast disk does not flood the terminal,
 *   and padded so that a shorter line wipes a longer one. The cursor is
 *   left at the line's start, so a warning replaces the line rather than
 *   being glued to its end.
 * - The rate is the average since the start (steadier than the last
 *   block's); time left is what is left at that rate, shown once a
 *   second has passed, before which the rate means little.
 * - Sizes in MB (10^6 bytes), as the launcher's closing line.
 */
#include "progress.h"

#include <time.h>
#include <unistd.h>

#include "diag.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool at_progress_wanted(FILE *out, bool quiet, bool regular_file, uint64_t total)
{
    return !quiet && regular_file && total >= AT_PROGRESS_MIN_BYTES && isatty(fileno(out));
}

void at_progress_init(at_progress *p, FILE *out, uint64_t total)
{
    *p = (at_progress){ .out = out, .total = total, .start = now() };
    p->last = p->start - 1;
}

static void draw(at_progress *p, uint64_t bytes, double t, bool done)
{
    double elapsed = t - p->start;
    double rate = elapsed > 0 ? (double)bytes / elapsed : 0;
    int len = fprintf(p->out, "\r%s: %.1f of %.1f MB read, %.1f MB/s", at_program_name,
                      (double)bytes / 1e6, (double)p->total / 1e6, rate / 1e6);
    if (done) {
        len += fprintf(p->out, ", done in %.1f s", elapsed);
    } else if (elapsed >= 1 && rate > 0 && bytes < p->total) {
        unsigned left = (unsigned)((double)(p->total - bytes) / rate + 0.5);
        len += fprintf(p->out, ", %u:%02u left", left / 60, left % 60);
    }
    /* Back to the line's start: a warning printed meanwhile writes over
     * the progress line instead of after it. */
    fprintf(p->out, "%*s\r", len < 79 ? 79 - len : 0, "");
    fflush(p->out);
    p->last = t;
}

void at_progress_update(void *arg, uint64_t bytes)
{
    at_progress *p = arg;
    double t = now();
    p->bytes = bytes;
    if (t - p->last >= 0.25)
        draw(p, bytes, t, false);
}

void at_progress_end(at_progress *p)
{
    draw(p, p->bytes, now(), true);
    fputc('\n', p->out);
}
