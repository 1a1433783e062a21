/*
 * tests/integration/test_postproc_outfile.c: alloctrace-postproc never
 * destroys an output (postproc/outfile.c). The post-processor is started
 * reading a trace from a pipe the test keeps open, so it is caught while
 * its output is open (where the old code had truncated the file already);
 * then SIGINT or SIGTERM: the old file is intact, no temporary file is
 * left, and one line says so. A run that fails (an input that is no
 * trace) leaves the old file too; a run that succeeds replaces it.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OLD "the old report, kept\n"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The number of entries of dir whose name starts with prefix. */
static int count_named(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* Starts the post-processor with `format` and -o out, its stdin the read
 * end of a pipe whose write end is returned in *feed, stderr into err. */
static pid_t start_postproc(const char *format, const char *out, const char *err, int *feed)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    char *pp = h_path("postproc/alloctrace-postproc");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(p[0], 0);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(e, 2);
        close(p[0]);
        close(p[1]);
        /* Default dispositions, as at a terminal (a test runner may ignore SIGINT). */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execl(pp, pp, "--format", format, "-o", out, (char *)NULL);
        _exit(127);
    }
    free(pp);
    close(p[0]);
    *feed = p[1];
    return pid;
}

/* Waits until dir holds a temporary file for out (".out.XXXXXX"). */
static void wait_for_temporary(const char *dir, const char *prefix)
{
    for (int i = 0; i < 500 && count_named(dir, prefix) == 0; i++)
        nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    assert_int_equal(count_named(dir, prefix), 1);
}

static void interrupted(int sig, const char *format)
{
    char *dir = h_tmpdir();
    char *out = h_fmt("%s/report.out", dir), *err = h_fmt("%s/err", dir);
    write_file(out, OLD);
    int feed;
    pid_t pid = start_postproc(format, out, err, &feed);
    /* Half a trace, then nothing: the post-processor waits for more. */
    const char *part = "version=2.0, arch=x86_64, timestamp=2026.01.01 00:00:00, process=p, pid=1, \n"
                       "<1> : memory (memory allocation in bytes)\n"
                       "1. malloc(8) = 0x1000\n";
    assert_int_equal(write(feed, part, strlen(part)), (ssize_t)strlen(part));
    wait_for_temporary(dir, ".report.out.");
    assert_int_equal(kill(pid, sig), 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    close(feed);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), sig);
    char *now = h_read_file(out, NULL);
    assert_string_equal(now, OLD);
    assert_int_equal(count_named(dir, ".report.out."), 0);
    char *msgs = h_read_file(err, NULL);
    char *want = h_fmt("alloctrace-postproc: interrupted: %s left as it was (partial output removed)\n", out);
    assert_string_equal(msgs, want);
    free(want);
    free(msgs);
    free(now);
    free(out);
    free(err);
}

static void sigint_while_writing_html_leaves_the_old_file(void **state)
{
    (void)state;
    interrupted(SIGINT, "html");
}

static void sigterm_while_writing_text_leaves_the_old_file(void **state)
{
    (void)state;
    interrupted(SIGTERM, "text");
}

/* An error (the input is no trace): exit 2, the old file intact. */
static void failed_run_leaves_the_old_file(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *out = h_fmt("%s/report.out", dir);
    write_file(out, OLD);
    char *pp = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { pp, "-o", out, "/etc/passwd", NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 2);
    h_has(r.err, "/etc/passwd:1: error: not a trace: its first line is neither a header");
    char *want = h_fmt("alloctrace-postproc: %s left as it was (partial output removed)\n", out);
    h_has(r.err, want);
    char *now = h_read_file(out, NULL);
    assert_string_equal(now, OLD);
    assert_int_equal(count_named(dir, ".report.out."), 0);
    free(now);
    free(want);
    h_result_free(&r);
    free(pp);
    free(out);
}

/* A run that succeeds replaces the file, keeping its permission bits. */
static void successful_run_replaces_the_file_and_keeps_its_mode(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *out = h_fmt("%s/report.out", dir), *in = h_fmt("%s/t.trace", dir);
    write_file(out, OLD);
    assert_int_equal(chmod(out, 0640), 0);
    write_file(in, "version=2.0, arch=x86_64, timestamp=2026.01.01 00:00:00, process=p, pid=1, \n"
                   "<1> : memory (memory allocation in bytes)\n"
                   "1. malloc(8) = 0x1000\n\n");
    char *pp = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { pp, "-o", out, in, NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 0);
    char *now = h_read_file(out, NULL);
    h_has(now, "1. malloc(8) = 0x1000\n");
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(count_named(dir, ".report.out."), 0);
    free(now);
    h_result_free(&r);
    free(pp);
    free(out);
    free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(sigint_while_writing_html_leaves_the_old_file, h_teardown),
        cmocka_unit_test_teardown(sigterm_while_writing_text_leaves_the_old_file, h_teardown),
        cmocka_unit_test_teardown(failed_run_leaves_the_old_file, h_teardown),
        cmocka_unit_test_teardown(successful_run_replaces_the_file_and_keeps_its_mode, h_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
