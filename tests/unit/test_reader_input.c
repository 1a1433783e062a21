/* tests/unit/test_reader_input.c: what the reader does with input that is
 * odd or no trace at all (issue 14) and with compressed input (issue 13):
 * CRLF traces, binary data, empty and CR-only files, zstd and gzip. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include "pp_run.h"

#define HDR "version=2.0, arch=x86_64, \n<1> : memory (bytes)\n"

/* A trace of n calls over a few stacks, with LF or CRLF line ends. */
static char *make_trace(unsigned n, bool crlf, size_t *len)
{
    const char *eol = crlf ? "\r\n" : "\n";
    size_t cap = 256 + (size_t)n * 128, l = 0;
    char *s = malloc(cap);
    l += (size_t)snprintf(s + l, cap - l, "version=2.0, arch=x86_64, %s<1> : memory (bytes)%s", eol, eol);
    for (unsigned i = 1; i <= n; i++) {
        l += (size_t)snprintf(s + l, cap - l, "%u. malloc(%u) = 0x%x%s", i, i % 64, i * 16, eol);
        for (unsigned f = 0; f <= i % 5; f++)
            l += (size_t)snprintf(s + l, cap - l, "\t0x%x f%u() at a.c:%u%s", 0x400000 + (i % 7) * 16 + f,
                                  f, f + 1, eol);
        l += (size_t)snprintf(s + l, cap - l, "%s", eol);
    }
    *len = l;
    return s;
}

/* Set by the "_from_a_file" runs of the zstd tests: the input is read as
 * a file is, decompressed on its own thread (postproc/read/input.c), and
 * every output and message must be the same. */
static bool from_fd;

static pp_result run_bytes(const char *data, size_t len, bool strict)
{
    pp_opts o = { .strict = strict, .from_fd = from_fd };
    return pp_run_bytes(data, len, &o);
}

static int read_from_a_file(void **state)
{
    (void)state;
    from_fd = true;
    return 0;
}

static int read_from_memory(void **state)
{
    (void)state;
    from_fd = false;
    return 0;
}

static void crlf_trace_gives_the_same_output_as_lf(void **state)
{
    (void)state;
    size_t llen, clen;
    char *lf = make_trace(20000, false, &llen), *crlf = make_trace(20000, true, &clen);
    pp_result a = run_bytes(lf, llen, true), b = run_bytes(crlf, clen, true);
    assert_int_equal(a.rc, 0);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.warnings, 0);
    assert_string_equal(a.out, b.out);
    assert_string_equal(a.out, lf); /* the normal form is LF */
    pp_free(&a);
    pp_free(&b);
    free(lf);
    free(crlf);
}

static void crlf_list_cut_after_the_cr_of_its_blank_line_is_a_truncated_record(void **state)
{
    (void)state;
    /* the input ends in "\n\r": the frame list is not known to be ended */
    const char *cut = HDR "1. malloc(8) = 0x10\r\n\t0x20\r\n\r";
    pp_result r = run_bytes(cut, strlen(cut), false);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.msgs, "truncated last record (call 1) dropped"));
    pp_free(&r);
    const char *whole = HDR "1. malloc(8) = 0x10\r\n\t0x20\r\n\r\n";
    pp_result s = run_bytes(whole, strlen(whole), true);
    assert_int_equal(s.rc, 0);
    assert_string_equal(s.out, HDR "1. malloc(8) = 0x10\n\t0x20\n\n");
    pp_free(&s);
}

/* Not a trace at all: an error without --strict too (exit 2), never an
 * empty result that would pass for an empty trace. */
static void nul_bytes_are_not_a_trace_and_an_error(void **state)
{
    (void)state;
    size_t n = 1u << 20;
    char *zeros = calloc(1, n);
    pp_result r = run_bytes(zeros, n, false);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.status, AT_EXIT_USAGE);
    assert_string_equal(r.msgs, "t.trace:1: error: not a trace: binary data (byte 0x00 at offset 0)\n");
    assert_string_equal(r.out, "");
    pp_free(&r);
    free(zeros);
}

static void binary_input_under_strict_is_one_error(void **state)
{
    (void)state;
    static const char elf[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0";
    pp_result r = run_bytes(elf, sizeof elf - 1, true);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.status, AT_EXIT_USAGE);
    assert_string_equal(r.msgs, "t.trace:1: error: not a trace: binary data (byte 0x7f at offset 0)\n");
    pp_free(&r);
}

static void text_that_is_no_trace_is_one_error(void **state)
{
    (void)state;
    pp_result r = run_bytes("hello world\nsecond line\n", 24, false);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.status, AT_EXIT_USAGE);
    assert_ptr_equal(strchr(r.msgs, '\n'), r.msgs + strlen(r.msgs) - 1); /* one line */
    assert_non_null(strstr(r.msgs, "t.trace:1: error: not a trace: its first line is neither a header"));
    assert_string_equal(r.out, "");
    pp_free(&r);
}

static void headerless_records_are_still_read_with_a_warning(void **state)
{
    (void)state;
    pp_result r = run_bytes("1. malloc(8) = 0x10\n\n", 21, false);
    assert_int_equal(r.warnings, 1);
    assert_non_null(strstr(r.msgs, "no header line"));
    assert_string_equal(r.out, "1. malloc(8) = 0x10\n\n");
    pp_free(&r);
}

static void strict_rejects_an_empty_input(void **state)
{
    (void)state;
    pp_result r = run_bytes("", 0, true);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.status, AT_EXIT_USAGE);
    assert_string_equal(r.msgs, "t.trace:1: error: not a trace: the input is empty (did the traced "
                                "process write nothing?)\n");
    pp_free(&r);
}

static void strict_rejects_cr_only_line_ends(void **state)
{
    (void)state;
    size_t len;
    char *t = make_trace(5000, false, &len);
    for (size_t i = 0; i < len; i++)
        if (t[i] == '\n')
            t[i] = '\r';
    pp_result r = run_bytes(t, len, true);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.status, AT_EXIT_USAGE);
    assert_non_null(strstr(r.msgs, "t.trace:1: error: not a trace: its lines end in CR alone"));
    pp_free(&r);
    /* Without --strict too: no trace at all is an error. */
    pp_result w = run_bytes(t, len, false);
    assert_int_equal(w.rc, -1);
    assert_int_equal(w.status, AT_EXIT_USAGE);
    assert_string_equal(w.out, "");
    pp_free(&w);
    free(t);
}

static void nul_line_after_the_header_stops_the_read_in_bounded_memory(void **state)
{
    (void)state;
    /* 64 MiB of NUL bytes after a header and a record: the reader must not
     * gather them into one line (ASan would see 64+ MiB buffers) */
    size_t head = strlen(HDR "1. malloc(8) = 0x10\n\t0x20\n\n"), n = head + (64u << 20);
    char *t = calloc(1, n);
    memcpy(t, HDR "1. malloc(8) = 0x10\n\t0x20\n\n", head);
    pp_result r = run_bytes(t, n, false);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.warnings, 1);
    assert_non_null(strstr(r.msgs, "t.trace:6: warning: binary data (NUL bytes) in a line of more than 4 MiB"));
    assert_string_equal(r.out, HDR "1. malloc(8) = 0x10\n\t0x20\n\n");
    pp_free(&r);
    free(t);
}

/* ---- compressed input ---------------------------------------------------- */

static char *zstd_of(const char *data, size_t len, int level, size_t *zlen)
{
    size_t cap = ZSTD_compressBound(len);
    char *z = malloc(cap);
    *zlen = ZSTD_compress(z, cap, data, len, level);
    assert_false(ZSTD_isError(*zlen));
    return z;
}

static void zstd_input_gives_the_same_output_as_plain(void **state)
{
    (void)state;
    size_t len, zlen;
    char *t = make_trace(50000, false, &len);
    char *z = zstd_of(t, len, 1, &zlen);
    assert_true(zlen < len / 4);
    pp_result r = run_bytes(z, zlen, true);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.msgs, "");
    assert_string_equal(r.out, t);
    pp_free(&r);
    free(z);
    free(t);
}

static void concatenated_zstd_frames_are_one_stream(void **state)
{
    (void)state;
    size_t len, z1, z2;
    char *t = make_trace(3000, false, &len);
    size_t cut = (size_t)(strstr(t, "\n1500. ") + 1 - t);
    char *a = zstd_of(t, cut, 3, &z1), *b = zstd_of(t + cut, len - cut, 3, &z2);
    char *both = malloc(z1 + z2);
    memcpy(both, a, z1);
    memcpy(both + z1, b, z2);
    pp_result r = run_bytes(both, z1 + z2, true);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, t);
    pp_free(&r);
    free(both);
    free(a);
    free(b);
    free(t);
}

static void zstd_stream_cut_short_warns_and_keeps_the_whole_records(void **state)
{
    (void)state;
    size_t len, zlen;
    char *t = make_trace(50000, false, &len);
    char *z = zstd_of(t, len, 1, &zlen);
    pp_result r = run_bytes(z, zlen / 2, false);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.msgs, "the zstd stream ends inside a frame (the trace was cut short)"));
    /* what came out is a prefix of the trace ending at a whole record */
    size_t out = strlen(r.out);
    assert_true(out > 1000 && out < len);
    assert_memory_equal(r.out, t, out);
    assert_string_equal(r.out + out - 2, "\n\n");
    pp_free(&r);
    free(z);
    free(t);
}

static void corrupt_zstd_data_is_an_error_under_strict(void **state)
{
    (void)state;
    size_t len, zlen;
    char *t = make_trace(2000, false, &len);
    char *z = zstd_of(t, len, 1, &zlen);
    char *bad = malloc(zlen + 16);
    memcpy(bad, z, zlen);
    memcpy(bad + zlen, "garbage after it", 16);
    pp_result r = run_bytes(bad, zlen + 16, true);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.status, AT_EXIT_USAGE);
    assert_non_null(strstr(r.msgs, "error: t.trace: corrupt zstd data near byte"));
    pp_free(&r);
    pp_result w = run_bytes(bad, zlen + 16, false);
    assert_int_equal(w.rc, 0);
    assert_string_equal(w.out, t); /* everything before the garbage */
    pp_free(&w);
    free(bad);
    free(z);
    free(t);
}

static void zstd_frame_with_a_window_over_the_cap_is_one_error(void **state)
{
    (void)state;
    /* a 2^28 window, as zstd --long=28 writes: the frame header asks for
     * 256 MiB whatever the content, since its size is not known up front */
    size_t len;
    char *t = make_trace(100, false, &len);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 28);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
    char z[65536];
    ZSTD_outBuffer out = { z, sizeof z, 0 };
    ZSTD_inBuffer in = { t, len, 0 };
    assert_false(ZSTD_isError(ZSTD_compressStream2(c, &out, &in, ZSTD_e_continue)));
    ZSTD_inBuffer none = { NULL, 0, 0 };
    assert_int_equal(ZSTD_compressStream2(c, &out, &none, ZSTD_e_end), 0);
    ZSTD_freeCCtx(c);
    pp_result r = run_bytes(z, out.pos, false);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.status, AT_EXIT_USAGE);
    assert_string_equal(r.msgs, "alloctrace-postproc: t.trace: a zstd frame needs a window over 128 MiB "
                                "(compressed with --long?); recompress it with a window of at most 2^27 "
                                "(zstd --long=27)\n");
    pp_free(&r);
    free(t);
}

static void gzip_input_is_one_error_naming_the_format(void **state)
{
    (void)state;
    static const char gz[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x4b\x4c\x4a\x06\x00";
    pp_result r = run_bytes(gz, sizeof gz - 1, false);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.status, AT_EXIT_USAGE);
    assert_string_equal(r.msgs, "alloctrace-postproc: t.trace: gzip-compressed input, not a trace: "
                                "decompress it first (alloctrace-postproc reads plain and "
                                "zstd-compressed traces)\n");
    pp_free(&r);
}

static void binary_data_inside_zstd_is_judged_like_plain(void **state)
{
    (void)state;
    size_t n = 1u << 20, zlen;
    char *zeros = calloc(1, n);
    char *z = zstd_of(zeros, n, 1, &zlen);
    pp_result r = run_bytes(z, zlen, true);
    assert_int_equal(r.rc, -1);
    assert_string_equal(r.msgs, "t.trace:1: error: not a trace: binary data (byte 0x00 at offset 0)\n");
    pp_free(&r);
    free(z);
    free(zeros);
}

/* Reads the same bytes from memory and as a file (zstd on its own thread,
 * buffers of 256 KiB in a ring of four): the same output, messages and
 * status. */
static void assert_same_from_a_file(const char *z, size_t zlen, bool strict)
{
    pp_opts mem = { .strict = strict }, file = { .strict = strict, .from_fd = true };
    pp_result a = pp_run_bytes(z, zlen, &mem), b = pp_run_bytes(z, zlen, &file);
    assert_int_equal(a.rc, b.rc);
    assert_int_equal(a.status, b.status);
    assert_string_equal(a.msgs, b.msgs);
    assert_string_equal(a.out, b.out);
    pp_free(&a);
    pp_free(&b);
}

/* Several MiB of text (the thread's ring wraps many times), whole, cut
 * short, and with garbage after it, with and without --strict. */
static void a_long_zstd_stream_reads_the_same_from_a_file_whole_cut_or_corrupt(void **state)
{
    (void)state;
    size_t len, zlen;
    char *t = make_trace(200000, false, &len);
    assert_true(len > (8u << 20));
    char *z = zstd_of(t, len, 1, &zlen);
    char *bad = malloc(zlen + 16);
    memcpy(bad, z, zlen);
    memcpy(bad + zlen, "garbage after it", 16);
    for (int strict = 0; strict < 2; strict++) {
        assert_same_from_a_file(z, zlen, strict);
        assert_same_from_a_file(z, zlen - 100, strict);
        assert_same_from_a_file(z, zlen / 3, strict);
        assert_same_from_a_file(bad, zlen + 16, strict);
        assert_same_from_a_file(z, 3, strict); /* cut inside the magic number */
    }
    pp_opts file = { .from_fd = true };
    pp_result r = pp_run_bytes(z, zlen, &file);
    assert_string_equal(r.out, t); /* and that is the trace */
    pp_free(&r);
    free(bad);
    free(z);
    free(t);
}

/* A trace with a malformed line near its end, under --strict, on a pipe
 * whose writer stays open: the read stops at that line with its error,
 * though the thread that decompresses ahead is by then waiting in read()
 * for more (it used to wait for the writer to close the pipe; the reader
 * parsing 20,000 calls first leaves the thread ample time to get there). */
static void a_pipe_left_open_does_not_hold_a_read_that_stops_early(void **state)
{
    (void)state;
    size_t len, zlen;
    char *t = make_trace(20000, false, &len);
    char *bad = malloc(len + 32);
    memcpy(bad, t, len);
    memcpy(bad + len, "this is no record\n", 18);
    char *z = zstd_of(bad, len + 18, 3, &zlen);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    int room = fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
    assert_true(room > 0 && zlen < (size_t)room); /* all of it fits in the pipe */
    assert_int_equal(write(fds[1], z, zlen), (ssize_t)zlen);
    at_diag d;
    at_diag_init(&d, "t.trace");
    d.strict = true;
    char *msgs = NULL;
    size_t mlen;
    d.out = open_memstream(&msgs, &mlen);
    at_trace *tr = at_trace_new();
    FILE *of = tmpfile();
    at_stage *w = at_writer_new(fileno(of), tr, &d);
    alarm(30); /* a hang fails the test instead of stopping the suite */
    int rc = at_read_fd(fds[0], tr, w, &d, NULL);
    alarm(0);
    assert_int_equal(rc, -1);
    fclose(d.out);
    assert_non_null(strstr(msgs, "error:"));
    at_writer_free(w);
    at_trace_free(tr);
    fclose(of);
    free(msgs);
    close(fds[0]);
    close(fds[1]);
    free(z);
    free(bad);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crlf_trace_gives_the_same_output_as_lf),
        cmocka_unit_test(crlf_list_cut_after_the_cr_of_its_blank_line_is_a_truncated_record),
        cmocka_unit_test(nul_bytes_are_not_a_trace_and_an_error),
        cmocka_unit_test(binary_input_under_strict_is_one_error),
        cmocka_unit_test(text_that_is_no_trace_is_one_error),
        cmocka_unit_test(headerless_records_are_still_read_with_a_warning),
        cmocka_unit_test(strict_rejects_an_empty_input),
        cmocka_unit_test(strict_rejects_cr_only_line_ends),
        cmocka_unit_test(nul_line_after_the_header_stops_the_read_in_bounded_memory),
        cmocka_unit_test(zstd_input_gives_the_same_output_as_plain),
        cmocka_unit_test(concatenated_zstd_frames_are_one_stream),
        cmocka_unit_test(zstd_stream_cut_short_warns_and_keeps_the_whole_records),
        cmocka_unit_test(corrupt_zstd_data_is_an_error_under_strict),
        cmocka_unit_test(zstd_frame_with_a_window_over_the_cap_is_one_error),
        cmocka_unit_test(gzip_input_is_one_error_naming_the_format),
        cmocka_unit_test(binary_data_inside_zstd_is_judged_like_plain),
        cmocka_unit_test(a_long_zstd_stream_reads_the_same_from_a_file_whole_cut_or_corrupt),
        cmocka_unit_test(a_pipe_left_open_does_not_hold_a_read_that_stops_early),
        /* the zstd tests again, read as a file is: decompressed on a thread */
        cmocka_unit_test_setup_teardown(zstd_input_gives_the_same_output_as_plain,
                                        read_from_a_file, read_from_memory),
        cmocka_unit_test_setup_teardown(concatenated_zstd_frames_are_one_stream,
                                        read_from_a_file, read_from_memory),
        cmocka_unit_test_setup_teardown(zstd_stream_cut_short_warns_and_keeps_the_whole_records,
                                        read_from_a_file, read_from_memory),
        cmocka_unit_test_setup_teardown(corrupt_zstd_data_is_an_error_under_strict,
                                        read_from_a_file, read_from_memory),
        cmocka_unit_test_setup_teardown(zstd_frame_with_a_window_over_the_cap_is_one_error,
                                        read_from_a_file, read_from_memory),
        cmocka_unit_test_setup_teardown(binary_data_inside_zstd_is_judged_like_plain,
                                        read_from_a_file, read_from_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
