/*
 * postproc/diag.c: the one-line messages of diag.h. Messages are built
 * with vfprintf from a fixed format, never from input text, so a '%' in a
 * trace line cannot be taken for a conversion.
 */
#include "diag.h"

#include <stdarg.h>

const char *at_program_name = AT_PROGRAM;

void at_diag_init(at_diag *d, const char *file)
{
    *d = (at_diag){ .file = file ? file : "<stdin>", .out = stderr, .max_shown = AT_MAX_WARNINGS };
}

static void vmessage(at_diag *d, uint64_t line, const char *kind, const char *fmt, va_list ap)
{
    if (line)
        fprintf(d->out, "%s:%llu: %s", d->file, (unsigned long long)line, kind);
    else
        fprintf(d->out, "%s: %s", at_program_name, kind);
    vfprintf(d->out, fmt, ap);
    fputc('\n', d->out);
}

bool at_diag_input(at_diag *d, uint64_t line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    d->warnings++;
    if (d->strict) {
        vmessage(d, line, "error: ", fmt, ap);
        d->failed = true;
        d->status = AT_EXIT_USAGE;
    } else if (!d->quiet && (!d->max_shown || d->warnings <= d->max_shown)) {
        vmessage(d, line, "warning: ", fmt, ap);
    } else if (!d->quiet && d->warnings == d->max_shown + 1) {
        fprintf(d->out, "%s: more warnings about %s not shown\n", at_program_name, d->file);
    }
    va_end(ap);
    return d->strict;
}

void at_diag_warn(at_diag *d, const char *fmt, ...)
{
    if (d->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmessage(d, 0, "warning: ", fmt, ap);
    va_end(ap);
}

void at_diag_error(at_diag *d, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(d, 0, "", fmt, ap);
    va_end(ap);
    if (!d->failed)
        d->status = status;
    d->failed = true;
}

void at_diag_input_error(at_diag *d, uint64_t line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(d, line, "error: ", fmt, ap);
    va_end(ap);
    if (!d->failed)
        d->status = AT_EXIT_USAGE;
    d->failed = true;
}
