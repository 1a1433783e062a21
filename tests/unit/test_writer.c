/* tests/unit/test_writer.c: the normal form written by postproc/writer.c,
 * the round trip (a normal-form trace comes back byte for byte) and
 * idempotence on traces that are not in normal form. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "pp_run.h"

#define HDR "version=2.0, arch=x86_64, timestamp=2026.11.22 10:43:07, process=./server, pid=4242, backtrace depth=32, origin=alloctrace 0.1.0, \n"

static const char normal_trace[] =
    HDR
    "<1> : memory (memory allocation in bytes)\n"
    "<2> : gobject (GObject instances) [refcount]\n"
    "@ 1 : parse-phase\n"
    ": /usr/lib/x86_64-linux-gnu/libc.so.6 => 0x7f3a12000000-0x7f3a121d6000\n"
    "## build-id: /usr/lib/x86_64-linux-gnu/libc.so.6 => 93ac61ec5a8e\n"
    ": /opt/my app/bin/server => 0x55d0c2f00000-0x55d0c2f40000\n"
    "17. [10:43:07.120544] malloc<memory>(32) = 0x55d0c3a0e2a0\n"
    "\t0x55d0c2f1a1c9\n"
    "\t0x55d0c2f1a2e4 parse_config() at /home/u/app/src/config.c:88\n"
    "\t0x7f3a1202a1ca __libc_start_call_main() from /usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "\t0x7f3a1202a28b from /usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "\t0x401000 in ??\n"
    "\n"
    "18. @1 [10:43:07.120601] calloc<memory>(400) = 0x55d0c3a0e2d0\n"
    "\n"
    "## a persistent comment with 100% and %s in it\n"
    "19. [10:43:07.120650] free<memory>(0x55d0c3a0e2a0)\n"
    "\n"
    "20. posix_memalign<memory>(4096) = 0x55d0c3a11000\n"
    "\t$alignment = 4096\n"
    "\t0x55d0c2f1a1c9\n"
    "\n"
    "21. g_object_new<gobject>(1) = 0x99\n"
    "\n"
    "& core : /tmp/core.4242\n";

static void normal_form_comes_back_byte_for_byte(void **state)
{
    (void)state;
    pp_result r = pp_run(normal_trace, NULL);
    assert_int_equal(r.warnings, 0);
    assert_string_equal(r.out, normal_trace);
    pp_free(&r);
}

static void tracer_style_trace_without_timestamps_round_trips(void **state)
{
    (void)state;
    const char *t = HDR "<1> : memory (memory allocation in bytes)\n"
                        "1. malloc(5) = 0x10\n\t0x7f01\n\t0x7f02\n\n"
                        "2. realloc(0x10)\n\t0x7f01\n\n"
                        "3. realloc(50) = 0x20\n\t0x7f01\n\n";
    pp_result r = pp_run(t, NULL);
    assert_string_equal(r.out, t);
    pp_free(&r);
}

static void other_forms_are_normalized_and_then_stable(void **state)
{
    (void)state;
    const char *in = "version=2.0, timestamp=2011.3.4 9:05:07, extra=1\r\n"
                     "<1> : memory (bytes)\r\n"
                     "# dropped\r\n"
                     "1. [01:02:03.456] malloc(8) = 0x10\r\n"
                     "\t0x20\r\n\r\n";
    const char *want = "version=2.0, timestamp=2011.03.04 09:05:07, extra=1, \n"
                       "<1> : memory (bytes)\n"
                       "1. [01:02:03.456000] malloc(8) = 0x10\n"
                       "\t0x20\n\n";
    pp_result r = pp_run(in, NULL);
    assert_string_equal(r.out, want);
    pp_result again = pp_run(r.out, NULL);
    assert_string_equal(again.out, want);
    pp_free(&r);
    pp_free(&again);
}

static void unknown_header_keys_go_after_known_ones(void **state)
{
    (void)state;
    pp_result r = pp_run("colour=blue, version=2.0, origin=x, pid=1\n", NULL);
    assert_string_equal(r.out, "version=2.0, pid=1, origin=x, colour=blue, \n");
    pp_free(&r);
}

static void compressed_input_is_written_back_uncompressed(void **state)
{
    (void)state;
    const char *in = "version=2.0, filter=compress|resolve, \n"
                     "5. malloc(10) = 0x10\n"
                     "9. malloc(20) = 0x20\n"
                     "# allocation summary: 2 block(s) with total size 30\n"
                     "\t0x400 f() at a.c:1\n\n";
    pp_result r = pp_run(in, NULL);
    assert_string_equal(r.out, "version=2.0, filter=resolve, \n"
                               "5. malloc(10) = 0x10\n\t0x400 f() at a.c:1\n\n"
                               "9. malloc(20) = 0x20\n\t0x400 f() at a.c:1\n\n");
    pp_free(&r);
}

static void leak_summary_is_written_for_a_leaks_trace_and_kept(void **state)
{
    (void)state;
    const char *in = "version=2.0, filter=leaks, \n<1> : memory (memory allocation in bytes)\n"
                     "1. malloc(10) = 0x10\n\n2. calloc(22) = 0x20\n\n"
                     "# Resource - memory (memory allocation in bytes):\n"
                     "# 5 block(s) leaked with total size of 1 bytes\n";
    pp_result r = pp_run(in, NULL);
    assert_string_equal(r.out, "version=2.0, filter=leaks, \n"
                               "<1> : memory (memory allocation in bytes)\n"
                               "1. malloc(10) = 0x10\n\n2. calloc(22) = 0x20\n\n"
                               "# Resource - memory (memory allocation in bytes):\n"
                               "# 2 block(s) leaked with total size of 32 bytes\n");
    pp_result again = pp_run(r.out, NULL);
    assert_string_equal(again.out, r.out);
    pp_free(&r);
    pp_free(&again);
}

static void header_values_with_commas_become_underscores(void **state)
{
    (void)state;
    at_trace *t = at_trace_new();
    at_diag d;
    at_diag_init(&d, "x");
    FILE *of = tmpfile();
    at_stage *w = at_writer_new(fileno(of), t, &d);
    t->header.present = true;
    at_header_set(&t->header.process, "./a,b", 5);
    at_record rec = { .kind = AT_REC_HEADER, .u.header = &t->header };
    at_stage_put(w, &rec);
    at_stage_finish(w);
    char *out = pp_slurp_fd(fileno(of));
    assert_string_equal(out, "process=./a_b, \n");
    free(out);
    fclose(of);
    at_writer_free(w);
    at_trace_free(t);
}

static void no_header_and_no_filter_writes_no_header(void **state)
{
    (void)state;
    pp_result r = pp_run("1. malloc(1) = 0x1\n\n", NULL);
    assert_string_equal(r.out, "1. malloc(1) = 0x1\n\n");
    assert_int_equal(r.warnings, 1);
    pp_free(&r);
}

/* A trace as sp-rtrace 2.0 wrote it: unpadded header timestamp,
 * millisecond times, resolved frames in its own text form, a context. */
static const char sp_rtrace_trace[] =
    "version=2.0, arch=arm, timestamp=2011.3.24 9:18:53, process=/usr/bin/app, pid=1234, "
    "filter=resolve, backtrace depth=10, origin=sp-rtrace, \n"
    "<1> : memory (memory allocation in bytes)\n"
    "@ 1 : loading\n"
    ": /usr/bin/app => 0x8000-0x9000\n"
    "1. [09:18:53.101] malloc(24) = 0x1a000\n"
    "\t0x80a4 (in main) at app.c:12\n"
    "\n"
    "2. @1 [09:18:53.102] calloc(100) = 0x1a020\n"
    "\t0x80c8 (in load) at app.c:30\n"
    "\n"
    "3. [09:18:53.250] free(0x1a000)\n"
    "\n";

static void sp_rtrace_trace_is_read_and_normalized(void **state)
{
    (void)state;
    pp_opts o = { .leaks = true };
    pp_result r = pp_run(sp_rtrace_trace, &o);
    assert_int_equal(r.warnings, 0);
    assert_string_equal(r.out,
        "version=2.0, arch=arm, timestamp=2011.03.24 09:18:53, process=/usr/bin/app, pid=1234, "
        "filter=leaks|resolve, backtrace depth=10, origin=sp-rtrace, \n"
        "<1> : memory (memory allocation in bytes)\n"
        "@ 1 : loading\n"
        ": /usr/bin/app => 0x8000-0x9000\n"
        "2. @1 [09:18:53.102000] calloc(100) = 0x1a020\n"
        "\t0x80c8 (in load) at app.c:30\n"
        "\n"
        "# Resource - memory (memory allocation in bytes):\n"
        "# 1 block(s) leaked with total size of 100 bytes\n");
    pp_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(normal_form_comes_back_byte_for_byte),
        cmocka_unit_test(tracer_style_trace_without_timestamps_round_trips),
        cmocka_unit_test(other_forms_are_normalized_and_then_stable),
        cmocka_unit_test(unknown_header_keys_go_after_known_ones),
        cmocka_unit_test(compressed_input_is_written_back_uncompressed),
        cmocka_unit_test(leak_summary_is_written_for_a_leaks_trace_and_kept),
        cmocka_unit_test(header_values_with_commas_become_underscores),
        cmocka_unit_test(no_header_and_no_filter_writes_no_header),
        cmocka_unit_test(sp_rtrace_trace_is_read_and_normalized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
