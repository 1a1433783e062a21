/*
 * postproc/diag.h: warnings and errors of alloctrace-postproc, one line
 * each, "FILE:LINE: message" for things found in the input and
 * "alloctrace-postproc: message" for the rest. -q silences warnings (never
 * errors); --strict turns an input warning into an error, which the run
 * reports and then stops with exit status 2. A garbage input would print a
 * warning for every line, so after the first AT_MAX_WARNINGS input
 * warnings one notice says that the rest are not shown.
 */
#ifndef AT_DIAG_H
#define AT_DIAG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define AT_PROGRAM "alloctrace-postproc"

/* The name messages start with: AT_PROGRAM, or the name the user typed
 * when a script runs this program for them (`alloctrace --check` runs
 * `--gate --name alloctrace`). */
extern const char *at_program_name;

#define AT_MAX_WARNINGS 100

/* Exit statuses. */
#define AT_EXIT_OK    0
#define AT_EXIT_FAIL  1 /* I/O errors */
#define AT_EXIT_USAGE 2 /* bad options, or bad input under --strict */

typedef struct at_diag {
    const char *file;   /* input name for messages ("<stdin>") */
    bool quiet;         /* -q: no warnings */
    bool strict;        /* --strict: input warnings are errors */
    FILE *out;          /* where messages go (stderr) */
    uint64_t warnings;  /* input warnings so far */
    uint64_t max_shown; /* input warnings printed at most, then one notice (0: all) */
    bool failed;        /* an error was reported (strict input error, I/O) */
    int status;         /* exit status the error asks for */
} at_diag;

void at_diag_init(at_diag *d, const char *file);

/* A problem in the input at `line` (0: no line). Returns true when the run
 * must stop (--strict). */
bool at_diag_input(at_diag *d, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An input that cannot be read at all (not a trace, empty): "FILE:LINE:
 * error: ...", an error with or without --strict (exit 2). */
void at_diag_input_error(at_diag *d, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A warning that is not an input error (never fatal). */
void at_diag_warn(at_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An error: always printed; sets failed and status. */
void at_diag_error(at_diag *d, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
