/*
 * tests/integration/test_tracer_times.c: full mode writes a call's time
 * only when its millisecond moves on ("time=on change", TEXT_FORMAT.md
 * section 4; preload/write/chunk.c), and alloctrace-postproc gives a call
 * without one the last time before it (postproc/read/reorder.c).
 *
 * tests/programs/tracer_threads with one thread makes 200,000 calls from
 * a few sites in a few hundred milliseconds: most calls share their
 * millisecond with the call before. The tracer's text is checked against
 * the rule; ALLOCTRACE_TIMESTAMPS=all gives every time back.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#include <inttypes.h>

static const char *const PROG_ARGS[] = { "1", "100000" };

/* Traces the program with `env` (NULL-ended, at most 3) into dir/name. */
static char *trace_threads(const char *dir, const char *name, const char *e1, const char *e2)
{
    char *trace = h_fmt("%s/%s", dir, name);
    char *prog = h_path("build/tests/programs/tracer_threads");
    const char *argv[] = { prog, PROG_ARGS[0], PROG_ARGS[1], NULL };
    const char *env[] = { e1, e2, NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    free(prog);
    return trace;
}

/* Whether text has the line "# chunk end: N" for index - 1: index is the
 * first call of a chunk, which always has its time. */
static int starts_chunk(const char *text, uint64_t index)
{
    char mark[64];
    snprintf(mark, sizeof mark, "\n# chunk end: %" PRIu64 "\n", index - 1);
    return index == 1 || strstr(text, mark) != NULL;
}

static void test_full_mode_writes_a_call_s_time_only_when_its_millisecond_moves_on(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = trace_threads(dir, "t.trace", NULL, NULL);
    char *text = h_read_file(trace, NULL);
    struct t_trace t = t_load(trace);
    char *key = h_fmt(", origin=alloctrace %s, time=on change, ", AT_VERSION);
    assert_non_null(strstr(t.header, key));
    assert_true(t.n >= 200000);
    assert_int_equal(t.recs[0].index, 1);
    assert_false(t.recs[0].carried);
    size_t written = 0, carried = 0, same_ms = 0;
    const struct t_rec *last = NULL;
    for (size_t i = 0; i < t.n; i++) {
        const struct t_rec *r = &t.recs[i];
        assert_true(r->has_time);
        if (r->carried) {
            carried++;
            continue;
        }
        /* a time written in the last one's millisecond opens a chunk */
        if (last && r->time_us / 1000 == last->time_us / 1000) {
            if (!starts_chunk(text, r->index))
                fail_msg("call %" PRIu64 " has a time in the millisecond of call %" PRIu64
                         "'s, and opens no chunk", r->index, last->index);
            same_ms++;
        }
        last = r;
        written++;
    }
    assert_int_equal(written + carried, t.n);
    /* a few hundred milliseconds, and a chunk every ~5,460 calls */
    assert_true(carried > t.n * 9 / 10);
    assert_true(same_ms <= t.n / 5000 + 1);
    t_free(&t);
    free(key);
    free(text);
    free(trace);
    h_cleanup();
}

static void test_all_timestamps_writes_every_call_s_time_and_no_key(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = trace_threads(dir, "t.trace", "ALLOCTRACE_TIMESTAMPS=all", NULL);
    struct t_trace t = t_load(trace);
    assert_null(strstr(t.header, "time="));
    assert_true(t.n >= 200000);
    for (size_t i = 0; i < t.n; i++) {
        assert_true(t.recs[i].has_time);
        assert_false(t.recs[i].carried);
    }
    t_free(&t);
    free(trace);
    h_cleanup();
}

/* Leaks mode's report at exit follows the same rule in index order
 * (preload/leaks/leakreport.c): tracer_leak_order keeps 60,000 blocks
 * made in a few milliseconds. */
static void test_leaks_mode_report_writes_a_block_s_time_only_when_its_millisecond_moves_on(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/l.trace", dir);
    char *prog = h_path("build/tests/programs/tracer_leak_order");
    const char *argv[] = { prog, "100", "60000", NULL };
    const char *env[] = { "ALLOCTRACE_MODE=leaks", NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    struct t_trace t = t_load(trace);
    char *key = h_fmt(", origin=alloctrace %s, time=on change, ", AT_VERSION);
    assert_non_null(strstr(t.header, key));
    assert_true(t.n >= 60000);
    assert_false(t.recs[0].carried);
    size_t carried = 0;
    uint64_t last_ms = UINT64_MAX;
    for (size_t i = 0; i < t.n; i++) {
        const struct t_rec *r = &t.recs[i];
        assert_true(r->has_time);
        if (r->carried) {
            carried++;
            continue;
        }
        assert_true(r->time_us / 1000 != last_ms);   /* written: a new millisecond */
        last_ms = r->time_us / 1000;
    }
    assert_true(carried > t.n / 2);
    t_free(&t);
    free(prog);
    free(trace);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_mode_writes_a_call_s_time_only_when_its_millisecond_moves_on),
        cmocka_unit_test(test_all_timestamps_writes_every_call_s_time_and_no_key),
        cmocka_unit_test(test_leaks_mode_report_writes_a_block_s_time_only_when_its_millisecond_moves_on),
    };
    return cmocka_run_group_tests(tests, NULL, h_teardown);
}
