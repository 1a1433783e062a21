/*
 * tests/integration/test_postproc_input.c: alloctrace-postproc on the
 * inputs a user hands it besides a plain trace: a trace of a real program
 * (sort) compressed by the zstd command, renamed or piped; the same trace
 * with CRLF line ends; a gzip file; a large file of NUL bytes, whose read
 * must stay in bounded memory (the child's peak RSS from wait4); an empty
 * and a CR-only file under --strict.
 */
#include "harness.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static bool have(const char *cmd)
{
    h_result r = h_sh("command -v %s >/dev/null 2>&1", cmd);
    bool ok = r.status == 0;
    h_result_free(&r);
    return ok;
}

/* A full trace of sort over 20000 lines, in dir, as plain text. */
static char *trace_sort(const char *dir)
{
    char *in = h_fmt("%s/lines", dir), *trace = h_fmt("%s/sort.trace", dir);
    h_result g = h_sh("seq 20000 -1 1 > '%s'", in);
    assert_int_equal(g.status, 0);
    h_result_free(&g);
    const char *argv[] = { "sort", in, NULL };
    const char *env[] = { "ALLOCTRACE_COMPRESS=none", NULL };   /* text the tests edit */
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    assert_int_equal(strncmp(r.out, "1\n10\n100\n", 9), 0);
    h_result_free(&r);
    free(in);
    return trace;
}

static h_result pp(const char *opt, const char *path)
{
    char *bin = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { bin, opt, path, NULL };
    const char *argv1[] = { bin, path, NULL };
    h_result r = h_run(opt ? argv : argv1, NULL, NULL);
    free(bin);
    return r;
}

static void zstd_trace_of_sort_reads_like_the_plain_one_by_content(void **state)
{
    (void)state;
    if (!have("zstd")) {
        skip(); /* the zstd command is installed by make deps */
        return;
    }
    char *dir = h_tmpdir(), *trace = trace_sort(dir);
    h_result z = h_sh("zstd -q -1 -o '%s.zst' '%s' && cp '%s.zst' '%s/renamed'", trace, trace, trace, dir);
    assert_int_equal(z.status, 0);
    h_result_free(&z);

    h_result plain = pp("-l", trace);
    assert_int_equal(plain.status, 0);
    assert_true(h_count_lines(plain.out, "^[0-9]+\\. ") > 0);
    char *zst = h_fmt("%s.zst", trace), *renamed = h_fmt("%s/renamed", dir);
    h_result a = pp("-l", zst), b = pp("-l", renamed);
    assert_int_equal(a.status, 0);
    assert_string_equal(a.err, "");
    assert_string_equal(a.out, plain.out);
    assert_int_equal(b.status, 0);
    assert_string_equal(b.out, plain.out);
    /* and through a pipe, where there is no name at all */
    char *bin = h_path("postproc/alloctrace-postproc");
    h_result c = h_sh("'%s' -l < '%s'", bin, zst);
    assert_int_equal(c.status, 0);
    assert_string_equal(c.out, plain.out);
    /* the plain 2.0 text comes out whole: normal form of the plain trace */
    h_result n1 = pp(NULL, trace), n2 = pp(NULL, zst);
    assert_string_equal(n1.out, n2.out);
    assert_true(strncmp(n2.out, "version=2.0, ", 13) == 0);

    h_result_free(&plain);
    h_result_free(&a);
    h_result_free(&b);
    h_result_free(&c);
    h_result_free(&n1);
    h_result_free(&n2);
    free(bin);
    free(zst);
    free(renamed);
    free(trace);
}

static void chunked_compressed_form_in_zstd_reads_back_to_the_plain_trace(void **state)
{
    (void)state;
    if (!have("zstd")) {
        skip();
        return;
    }
    /* what issue 13's tracer is to write: the calls regrouped by backtrace
     * chunk by chunk (here 50 calls a chunk, by -c over --include ranges),
     * each chunk a zstd frame of its own; the header and maps come once */
    char *dir = h_tmpdir(), *trace = trace_sort(dir);
    char *bin = h_path("postproc/alloctrace-postproc");
    h_result g = h_sh("cd '%s' && n=$(grep -c '^[0-9]*\\. ' '%s') && lo=1 && while [ $lo -le $n ]; do "
                      "echo \"$lo-$((lo + 49))\" > inc; '%s' -c --include inc '%s' > chunk || exit 1; "
                      "if [ $lo -gt 1 ]; then grep -v '^version=\\|^<\\|^: \\|^## build-id' chunk > c2; "
                      "mv c2 chunk; fi; zstd -q -c chunk >> chunked.zst; lo=$((lo + 50)); done; "
                      "[ $n -gt 200 ]",
                      dir, trace, bin, trace);
    assert_int_equal(g.status, 0);
    h_result_free(&g);
    char *chunked = h_fmt("%s/chunked.zst", dir);
    h_result a = pp(NULL, trace), b = pp(NULL, chunked);
    assert_int_equal(b.status, 0);
    assert_string_equal(b.err, "");
    assert_string_equal(a.out, b.out); /* index order and the plain normal form */
    h_result la = pp("-l", trace), lb = pp("-l", chunked);
    assert_string_equal(la.out, lb.out);
    h_result_free(&a);
    h_result_free(&b);
    h_result_free(&la);
    h_result_free(&lb);
    free(chunked);
    free(bin);
    free(trace);
}

static void crlf_trace_of_sort_gives_the_lf_result(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *trace = trace_sort(dir);
    h_result s = h_sh("sed 's/$/\\r/' '%s' > '%s.crlf'", trace, trace);
    assert_int_equal(s.status, 0);
    h_result_free(&s);
    char *crlf = h_fmt("%s.crlf", trace);
    h_result a = pp("-lc", trace), b = pp("-lc", crlf);
    assert_int_equal(b.status, 0);
    assert_string_equal(b.err, "");
    assert_string_equal(a.out, b.out);
    h_result_free(&a);
    h_result_free(&b);
    free(crlf);
    free(trace);
}

static void gzip_trace_is_one_error_with_status_2(void **state)
{
    (void)state;
    if (!have("gzip")) {
        skip();
        return;
    }
    char *dir = h_tmpdir(), *trace = trace_sort(dir);
    h_result g = h_sh("gzip -k '%s'", trace);
    assert_int_equal(g.status, 0);
    h_result_free(&g);
    char *gz = h_fmt("%s.gz", trace);
    h_result r = pp(NULL, gz);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_int_equal(h_count_lines(r.err, "."), 1);
    assert_non_null(strstr(r.err, "sort.trace.gz: gzip-compressed input, not a trace: decompress it first"));
    h_result_free(&r);
    free(gz);
    free(trace);
}

/* Runs the post-processor on path with its output to /dev/null and its
 * messages to err_path; returns the exit status and the peak RSS in KiB. */
static int pp_rss(const char *opt, const char *path, const char *err_path, long *maxrss_kib)
{
    char *bin = h_path("postproc/alloctrace-postproc");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int out = open("/dev/null", O_WRONLY), err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(out, 1);
        dup2(err, 2);
        if (opt)
            execl(bin, bin, opt, path, (char *)NULL);
        else
            execl(bin, bin, path, (char *)NULL);
        _exit(127);
    }
    int st;
    struct rusage ru;
    assert_int_equal(wait4(pid, &st, 0, &ru), pid);
    free(bin);
    *maxrss_kib = ru.ru_maxrss;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void file_of_nul_bytes_is_refused_in_bounded_memory(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *nul = h_fmt("%s/zeros", dir), *hdr = h_fmt("%s/header-then-zeros", dir);
    char *err = h_fmt("%s/err", dir);
    /* 64 MiB: the old reader gathered it as one line (128 MiB buffer) */
    h_result g = h_sh("head -c 67108864 /dev/zero > '%s' && "
                      "{ printf 'version=2.0, arch=x86_64, \\n1. malloc(8) = 0x10\\n\\n'; cat '%s'; } > '%s'",
                      nul, nul, hdr);
    assert_int_equal(g.status, 0);
    h_result_free(&g);

    long rss;
    assert_int_equal(pp_rss(NULL, nul, err, &rss), 2);
    assert_true(rss < 32 * 1024);
    char *msgs = h_read_file(err, NULL);
    assert_int_equal(h_count_lines(msgs, "."), 1);
    assert_non_null(strstr(msgs, "zeros:1: error: not a trace: binary data (byte 0x00 at offset 0)"));
    free(msgs);

    assert_int_equal(pp_rss("--strict", nul, err, &rss), 2);
    msgs = h_read_file(err, NULL);
    assert_non_null(strstr(msgs, "zeros:1: error: not a trace: binary data"));
    free(msgs);

    /* after a header and a record: the record is kept, the NULs refused */
    assert_int_equal(pp_rss("-l", hdr, err, &rss), 0);
    assert_true(rss < 32 * 1024);
    msgs = h_read_file(err, NULL);
    assert_non_null(strstr(msgs, "header-then-zeros:4: warning: binary data (NUL bytes) in a line of more than"));
    free(msgs);
    h_result r = pp("-l", hdr);
    assert_non_null(strstr(r.out, "1. malloc(8) = 0x10\n"));
    h_result_free(&r);

    free(nul);
    free(hdr);
    free(err);
}

static void strict_rejects_empty_and_cr_only_files(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *trace = trace_sort(dir);
    char *empty = h_fmt("%s/empty", dir), *cr = h_fmt("%s/cr", dir);
    h_result g = h_sh(": > '%s' && tr '\\n' '\\r' < '%s' > '%s'", empty, trace, cr);
    assert_int_equal(g.status, 0);
    h_result_free(&g);

    h_result e = pp("--strict", empty);
    assert_int_equal(e.status, 2);
    assert_string_equal(e.out, "");
    assert_non_null(strstr(e.err, "empty:1: error: not a trace: the input is empty (did the traced "
                                  "process write nothing?)\n"));
    h_result c = pp("--strict", cr);
    assert_int_equal(c.status, 2);
    assert_string_equal(c.out, "");
    assert_non_null(strstr(c.err, "cr:1: error: not a trace: its lines end in CR alone"));
    /* without --strict too: an empty file is no trace (one line, exit 2) */
    h_result e2 = pp(NULL, empty);
    assert_int_equal(e2.status, 2);
    assert_string_equal(e2.out, "");
    assert_int_equal(h_count_lines(e2.err, "."), 1);
    assert_non_null(strstr(e2.err, "empty:1: error: not a trace: the input is empty"));
    h_result_free(&e);
    h_result_free(&c);
    h_result_free(&e2);
    free(empty);
    free(cr);
    free(trace);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(zstd_trace_of_sort_reads_like_the_plain_one_by_content, h_teardown),
        cmocka_unit_test_teardown(chunked_compressed_form_in_zstd_reads_back_to_the_plain_trace, h_teardown),
        cmocka_unit_test_teardown(crlf_trace_of_sort_gives_the_lf_result, h_teardown),
        cmocka_unit_test_teardown(gzip_trace_is_one_error_with_status_2, h_teardown),
        cmocka_unit_test_teardown(file_of_nul_bytes_is_refused_in_bounded_memory, h_teardown),
        cmocka_unit_test_teardown(strict_rejects_empty_and_cr_only_files, h_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
