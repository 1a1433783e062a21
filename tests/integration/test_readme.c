/*
 * tests/integration/test_readme.c: README.md's five-minute tour, and the
 * examples of docs/tracer.md and docs/postproc.md, run as printed. The test reads the block
 * from the document itself, runs
 * its commands in order in one shell (so `P=...` carries on), in a new
 * directory that links to the build tree's scripts/, postproc/, build/,
 * examples/, preload/ and share/ (so the traces it writes stay out of the
 * clone), and checks for each command:
 *   - its exit status: 0, or N when a comment line before it says
 *     "exit status N";
 *   - the output lines printed under it as "#   TEXT": each must be a line
 *     of the command's output, the same numbers but those that vary from run
 *     to run (file sizes, times, pids, event counts: without_numbers), paths
 *     made relative to the clone. A line "#   ... TEXT" says what was left
 *     out and is not looked for.
 * `make` lines are not run: the build that runs this test has done them.
 * A command whose program is not installed (callgrind_annotate without
 * valgrind) fails the test, since README.md says what to install.
 */
#include "harness.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CMDS 64
#define MAX_EXPECT 16

typedef struct tour_cmd {
    char *text;
    int status;
    char *expect[MAX_EXPECT];
    int nexpect;
} tour_cmd;

/* The lines of the first ``` block after `marker` in the file `doc`. */
static char *doc_block(const char *doc, const char *marker)
{
    char *path = h_path(doc);
    char *text = h_read_file(path, NULL);
    free(path);
    assert_non_null(text);
    char *sec = strstr(text, marker);
    assert_non_null(sec);
    char *start = strstr(sec, "\n```");
    assert_non_null(start);
    start = strchr(start + 1, '\n') + 1;
    char *end = strstr(start, "\n```\n");
    assert_non_null(end);
    char *block = strndup(start, (size_t)(end - start) + 1);
    free(text);
    return block;
}

static size_t parse_tour(char *block, tour_cmd *cmds)
{
    size_t n = 0;
    int next_status = 0;
    for (char *line = strtok(block, "\n"); line; line = strtok(NULL, "\n")) {
        const char *st = strstr(line, "exit status ");
        if (strncmp(line, "#   ...", 7) == 0) {
            continue; /* an elision: "... and the top sites by ..." */
        } else if (strncmp(line, "#   ", 4) == 0) {
            assert_true(n > 0 && cmds[n - 1].nexpect < MAX_EXPECT);
            cmds[n - 1].expect[cmds[n - 1].nexpect++] = line + 4;
        } else if (line[0] == '#') {
            if (st)
                next_status = atoi(st + strlen("exit status "));
        } else if (strncmp(line, "make", 4) != 0) {
            assert_true(n < MAX_CMDS);
            cmds[n++] = (tour_cmd){ .text = line, .status = next_status };
            next_status = 0;
        }
    }
    return n;
}

/* The numbers that differ from run to run become '#': file sizes ("1.4 kB"),
 * times ("0.000210 s", "14 us"), pids and event counts (the runtime's own
 * allocations are in them). Every other number - calls, bytes, blocks,
 * leaks - must be the document's. */
static bool varies(const char *start, const char *end, const char *line)
{
    static const char *const after[] = { " kB", " MB", " KB", " s", " us", " ms", " events",
                                         " µs" };
    static const char *const before[] = { "pid ", "pid=", "pid: ", "\"time_us\":" };
    for (size_t i = 0; i < sizeof after / sizeof *after; i++) {
        size_t n = strlen(after[i]);
        if (strncmp(end, after[i], n) == 0 && !isalnum((unsigned char)end[n]))
            return true;
    }
    for (size_t i = 0; i < sizeof before / sizeof *before; i++) {
        size_t n = strlen(before[i]);
        if ((size_t)(start - line) >= n && strncmp(start - n, before[i], n) == 0)
            return true;
    }
    return false;
}

static char *without_numbers(const char *s)
{
    char *out = malloc(strlen(s) + 1), *o = out;
    const char *line = s;
    while (*s) {
        if (!isdigit((unsigned char)*s) || (s > line && isalnum((unsigned char)s[-1]))) {
            *o++ = *s++;
            continue;
        }
        const char *end = s;
        while (isdigit((unsigned char)*end) || (*end == '.' && isdigit((unsigned char)end[1])) ||
               (*end == ',' && isdigit((unsigned char)end[1])))
            end++;
        if (varies(s, end, line)) {
            *o++ = '#';
        } else {
            memcpy(o, s, (size_t)(end - s));
            o += end - s;
        }
        s = end;
    }
    *o = '\0';
    return out;
}

static void output_has_line(const tour_cmd *c, const char *output, const char *want)
{
    char *w = without_numbers(want);
    char *copy = strdup(output);
    bool found = false;
    for (char *l = strtok(copy, "\n"); l && !found; l = strtok(NULL, "\n")) {
        char *g = without_numbers(l);
        found = strcmp(g, w) == 0;
        free(g);
    }
    if (!found)
        fail_msg("`%s` did not print\n  %s\ngot:\n%s", c->text, want, output);
    free(copy);
    free(w);
}

/* Runs the commands of a documentation block as described above. */
static void block_runs_as_printed(const char *doc, const char *marker, size_t min_cmds)
{
    char *block = doc_block(doc, marker);
    tour_cmd cmds[MAX_CMDS];
    size_t n = parse_tour(block, cmds);
    assert_true(n >= min_cmds);

    char *dir = h_tmpdir();
    /* One script: each command's output and status into files of its own. */
    char *script = h_fmt("cd '%s' || exit 99\n", dir);
    const char *links[] = { "scripts", "postproc", "build", "examples", "preload", "share" };
    for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
        char *s = h_fmt("%sln -s '%s/%s' %s\n", script, h_root(), links[i], links[i]);
        free(script);
        script = s;
    }
    for (size_t i = 0; i < n; i++) {
        char *s = h_fmt("%s{ %s\n} > out.%zu 2>&1; echo $? > status.%zu\n", script, cmds[i].text, i, i);
        free(script);
        script = s;
    }
    h_result r = h_sh("%s", script);
    assert_int_equal(r.status, 0);

    for (size_t i = 0; i < n; i++) {
        char *sp = h_fmt("%s/status.%zu", dir, i), *op = h_fmt("%s/out.%zu", dir, i);
        char *status = h_read_file(sp, NULL), *out = h_read_file(op, NULL);
        assert_non_null(status);
        assert_non_null(out);
        /* The clone's own paths, as a user in the clone would see them. */
        char *root = h_fmt("%s/", h_root());
        for (char *p; (p = strstr(out, root));)
            memmove(p, p + strlen(root), strlen(p + strlen(root)) + 1);
        if (atoi(status) != cmds[i].status)
            fail_msg("%s: `%s` exited %d, expected %d:\n%s", doc, cmds[i].text, atoi(status),
                     cmds[i].status, out);
        for (int k = 0; k < cmds[i].nexpect; k++)
            output_has_line(&cmds[i], out, cmds[i].expect[k]);
        free(root);
        free(status);
        free(out);
        free(sp);
        free(op);
    }
    h_result_free(&r);
    free(script);
    free(block);
    h_cleanup();
}

static void tour_runs_as_printed(void **state)
{
    (void)state;
    block_runs_as_printed("README.md", "\n## A five-minute tour\n", 8);
}

/* docs/tracer.md's first examples: the launcher and a hand-set LD_PRELOAD. */
static void tracer_examples_run_as_printed(void **state)
{
    (void)state;
    block_runs_as_printed("docs/tracer.md", "\nsays where the trace is.\n", 3);
}

/* docs/postproc.md's examples, on the bundled example too. */
static void postproc_examples_run_as_printed(void **state)
{
    (void)state;
    block_runs_as_printed("docs/postproc.md", "\nFrom the top of a clone after `make`", 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tour_runs_as_printed),
        cmocka_unit_test(tracer_examples_run_as_printed),
        cmocka_unit_test(postproc_examples_run_as_printed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
