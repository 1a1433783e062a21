/*
 * tests/harness.h: what integration tests share. They run the real tracer
 * and the real post-processor as a user would (programs, environment,
 * files), so the harness only spawns processes and reads what they wrote.
 */
#ifndef AT_TEST_HARNESS_H
#define AT_TEST_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* The build tree's root ("$(CURDIR)" of the Makefile). */
const char *h_root(void);

/* h_path("preload/liballoctrace.so") -> absolute path in the build tree. */
char *h_path(const char *relative);

/* A new empty directory under $TMPDIR, removed by h_cleanup(). */
char *h_tmpdir(void);
void h_cleanup(void);
/* h_cleanup() as a cmocka teardown: cmocka_unit_test_teardown(test, h_teardown). */
int h_teardown(void **state);

/* The result of a command: exit status (128+N when killed by signal N),
 * and everything it wrote. */
typedef struct h_result {
    int status;
    char *out;
    char *err;
} h_result;

/* Runs argv (NULL-terminated) with extra environment entries added
 * ("NAME=VALUE", NULL-terminated, may be NULL), in directory cwd (NULL:
 * current). Standard input is /dev/null. The resolver's disk cache is off
 * (ALLOCTRACE_CACHE_DIR=) unless env sets ALLOCTRACE_CACHE_DIR itself. */
h_result h_run(const char *const argv[], const char *const env[], const char *cwd);

/* Runs a shell command line built from a printf format. */
h_result h_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs argv under the tracer (LD_PRELOAD of the built library), writing
 * the trace to `trace_path`. Extra environment as for h_run. */
h_result h_trace(const char *trace_path, const char *const argv[], const char *const env[]);

void h_result_free(h_result *r);

/* The whole file, NUL-terminated (NULL if it cannot be read); a file of
 * zstd frames (a compressed trace) is given decompressed. */
char *h_read_file(const char *path, size_t *len);

/* Number of lines of `text` that match the POSIX extended regex `re`. */
size_t h_count_lines(const char *text, const char *re);

/* The first line of `text` matching `re`, as a new string (NULL if none). */
char *h_find_line(const char *text, const char *re);

/* Fails the test unless `text` holds `needle` (h_has), or unless it does
 * not (h_lacks), printing both. */
void h_has(const char *text, const char *needle);
void h_lacks(const char *text, const char *needle);

/* Whether `tool` is a command on PATH; when not, prints "skipped: TOOL is
 * not installed" for the test that is about to skip(). */
int h_have(const char *tool);
/* Whether the tests can run the tree's launcher as uid 65534 (nobody): as
 * root, with setpriv, and no private directory above the tree. Says why
 * not (skipped: ...). */
int h_nobody_runs_the_tree(void);

/* Whether headless chromium (/usr/bin/chromium) is installed; when not,
 * prints "skipped: /usr/bin/chromium is not installed". */
int h_have_chromium(void);
/* The DOM of the page file `page` (with `view`, a "#..." fragment,
 * appended unless NULL) after its scripts ran in headless chromium, with
 * a fresh profile under `dir`. Fails the test unless chromium exits 0. */
char *h_chromium_dom(const char *dir, const char *page, const char *view);

/* Formats into a new string. */
char *h_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
