/*
 * tests/integration/test_tracer_times.c: full mode writes a call's time
 * only when its millisecond moves on ("time=on change", TEXT_FORMAT.md
 * section 4; preload/write/chunk.c), and alloctrace-postproc gives a call
 * without one the last time before it (postproc/read/reorder.c).
 *
 * tests/programs/tracer_threads with one thread makes 200,000 calls from
 * a few sites in a few hundred milliseconds: most calls share their
 * millisecond with the call before. The tracer's text is checked against
 * the rule; ALLOCTRACE_TIMESTAMPS=all gives every time back; and the
 * post-processor reads a trace with times on change as it reads the same
 * calls with every time, to the millisecond.
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

/* The tracer's rule applied to a trace with every time: in index order
 * (t, loaded), a call's time is kept only when its millisecond differs
 * from the last kept; the text (all) drops the others' and its header
 * gets the key. */
static char *times_on_change(const char *all, const struct t_trace *t)
{
    uint64_t top = 0;
    for (size_t i = 0; i < t->n; i++)
        top = t->recs[i].index > top ? t->recs[i].index : top;
    char *keep = calloc(top + 1, 1);
    assert_non_null(keep);
    uint64_t last_ms = UINT64_MAX;
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].time_us / 1000 != last_ms) {
            keep[t->recs[i].index] = 1;
            last_ms = t->recs[i].time_us / 1000;
        }
    size_t n = strlen(all);
    char *out = malloc(n + 32), *o = out;
    assert_non_null(out);
    const char *eol = strchr(all, '\n');
    assert_non_null(eol);
    memcpy(o, all, (size_t)(eol - all));
    o += eol - all;
    o += sprintf(o, "time=on change, ");
    for (const char *line = eol; *line; line = eol) {
        eol = strchr(line + 1, '\n');
        eol = eol ? eol : line + strlen(line);
        const char *t2 = strstr(line, ". [");   /* "\nN. [HH:MM:SS.uuuuuu] " */
        if (t2 && t2 < eol && line[1] >= '0' && line[1] <= '9' && t2 + 19 < eol && t2[18] == ']') {
            uint64_t index = strtoull(line + 1, NULL, 10);
            if (index <= top && !keep[index]) {
                memcpy(o, line, (size_t)(t2 + 2 - line));
                o += t2 + 2 - line;
                line = t2 + 20;   /* past "] " */
            }
        }
        memcpy(o, line, (size_t)(eol - line));
        o += eol - line;
    }
    *o = '\0';
    free(keep);
    return out;
}

/* The number after "KEY": in alloctrace-postproc's stats. */
static uint64_t stat_of(const char *json, const char *key)
{
    char *k = h_fmt("\"%s\": ", key);
    const char *at = strstr(json, k);
    if (!at)
        fail_msg("no %s in %s", k, json);
    uint64_t v = strtoull(at + strlen(k), NULL, 10);
    free(k);
    return v;
}

/* What the post-processor makes of a trace with times on change is what it
 * makes of the same calls with every time, to the millisecond: counts and
 * peaks exactly, durations within a millisecond; and the text it writes
 * back has every call's time, the carried one. */
static void test_on_change_trace_reads_as_every_time_to_the_millisecond(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *all = trace_threads(dir, "all.trace", "ALLOCTRACE_TIMESTAMPS=all", NULL);
    struct t_trace ta = t_load(all);
    char *all_text = h_read_file(all, NULL), *chg_text = times_on_change(all_text, &ta);
    char *chg = h_fmt("%s/chg.trace", dir), *back = h_fmt("%s/back.trace", dir);
    FILE *f = fopen(chg, "w");
    assert_non_null(f);
    fputs(chg_text, f);
    fclose(f);
    char *pp = h_path("postproc/alloctrace-postproc");
    h_result sa = h_sh("%s --format stats %s", pp, all), sc = h_sh("%s --format stats %s", pp, chg);
    h_result wb = h_sh("%s -o %s %s", pp, back, chg);
    assert_int_equal(sa.status + sc.status + wb.status, 0);
    const char *exact[] = { "allocations", "releases", "allocated_bytes", "leaked_bytes",
                            "leaked_blocks", "bytes", "blocks", "index" };   /* the last three: the peak's */
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
        assert_int_equal(stat_of(sc.out, exact[i]), stat_of(sa.out, exact[i]));
    uint64_t da = stat_of(sa.out, "duration_us"), dc = stat_of(sc.out, "duration_us");
    uint64_t pa = stat_of(sa.out, "time_us"), pc = stat_of(sc.out, "time_us");
    assert_true(da > 1000 && dc <= da && da - dc < 1000);
    assert_true(pc <= pa && pa - pc < 1000);
    struct t_trace tc = t_load(chg), tb = t_load(back);
    assert_int_equal(tc.n, ta.n);
    assert_int_equal(tb.n, ta.n);
    size_t carried = 0;
    for (size_t i = 0; i < ta.n; i++) {
        assert_true(tc.recs[i].time_us / 1000 == ta.recs[i].time_us / 1000 &&
                    tc.recs[i].time_us <= ta.recs[i].time_us);
        assert_false(tb.recs[i].carried);   /* written back with every time */
        assert_true(tb.recs[i].time_us == tc.recs[i].time_us);
        carried += (size_t)tc.recs[i].carried;
    }
    assert_true(carried > ta.n * 9 / 10);
    t_free(&ta);
    t_free(&tc);
    t_free(&tb);
    h_result_free(&sa);
    h_result_free(&sc);
    h_result_free(&wb);
    free(pp);
    free(back);
    free(chg);
    free(chg_text);
    free(all_text);
    free(all);
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
        cmocka_unit_test(test_on_change_trace_reads_as_every_time_to_the_millisecond),
        cmocka_unit_test(test_leaks_mode_report_writes_a_block_s_time_only_when_its_millisecond_moves_on),
    };
    return cmocka_run_group_tests(tests, NULL, h_teardown);
}
