/*
 * tests/integration/test_tracer_clock.c: record times and leaks mode's
 * order (preload/write/clock.c). tests/programs/tracer_clock has two threads
 * take turns allocating for over a second and brackets each allocation
 * with the time of day it read before and after; every record's time must
 * lie in that bracket (with 2 ms for the TSC's conversion and the
 * printing's grain), in full and in leaks mode, and in leaks mode the
 * blocks must be numbered in the order the turns forced across threads.
 * tests/programs/tracer_leak_order leaks blocks whose addresses run against
 * their allocation order: leaks mode must still number them in that order,
 * through the sort's merge of a few runs and through its radix sort, and
 * with the report's helper threads (30,000 blocks), with memcheck's kinds.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#define COUNT 300
#define SLACK_US 2000

struct bracket {
    uint64_t before, after;
};

/* The program's "i BEFORE AFTER" lines. */
static void read_brackets(const char *out, struct bracket *b)
{
    int seen = 0;
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        int i;
        unsigned long long x, y;
        if (sscanf(p, "%d %llu %llu", &i, &x, &y) == 3 && i >= 0 && i < COUNT) {
            b[i] = (struct bracket){ x, y };
            seen++;
        }
    }
    assert_int_equal(seen, COUNT);
}

/* The program's allocation i: the one record of 1000 + i bytes. */
static const struct t_rec *alloc_of(const struct t_trace *t, int i)
{
    const struct t_rec *found = NULL;
    for (size_t k = 0; k < t->n; k++)
        if (!t->recs[k].release && t->recs[k].size == 1000 + (uint64_t)i &&
            strcmp(t->recs[k].name, "malloc") == 0) {
            assert_null(found);
            found = &t->recs[k];
        }
    assert_non_null(found);
    return found;
}

/* Runs the program and checks every allocation's time against its
 * bracket; returns the trace for more checks. */
static struct t_trace run_and_check_times(const char *mode)
{
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_clock");
    const char *argv[] = { prog, NULL };
    const char *env[] = { mode, NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    struct bracket b[COUNT];
    read_brackets(r.out, b);
    struct t_trace t = t_load(trace);
    for (int i = 0; i < COUNT; i++) {
        const struct t_rec *rec = alloc_of(&t, i);
        assert_true(rec->has_time);
        if (rec->time_us + SLACK_US < b[i].before || rec->time_us > b[i].after + SLACK_US)
            fail_msg("%s: allocation %d at %llu us, read %llu-%llu us around it", mode, i,
                     (unsigned long long)rec->time_us, (unsigned long long)b[i].before,
                     (unsigned long long)b[i].after);
    }
    h_result_free(&r);
    free(prog);
    free(trace);
    return t;
}

static void test_full_mode_times_lie_between_the_clock_readings_around_each_call(void **state)
{
    (void)state;
    struct t_trace t = run_and_check_times("ALLOCTRACE_MODE=full");
    t_free(&t);
    h_cleanup();
}

static void test_leaks_mode_times_lie_between_the_clock_readings_around_each_call(void **state)
{
    (void)state;
    struct t_trace t = run_and_check_times("ALLOCTRACE_MODE=leaks");
    t_free(&t);
    h_cleanup();
}

/* Each thread allocates only after the other's allocation returned: the
 * numbers must follow the turns, though the threads share no index. */
static void test_leaks_mode_numbers_blocks_of_two_threads_in_their_true_order(void **state)
{
    (void)state;
    struct t_trace t = run_and_check_times("ALLOCTRACE_MODE=leaks");
    for (int i = 1; i < COUNT; i++)
        if (alloc_of(&t, i - 1)->index >= alloc_of(&t, i)->index)
            fail_msg("allocation %d numbered %llu, after %d numbered %llu", i,
                     (unsigned long long)alloc_of(&t, i)->index, i - 1,
                     (unsigned long long)alloc_of(&t, i - 1)->index);
    for (size_t k = 0; k < t.n; k++)
        assert_int_equal(t.recs[k].index, k + 1);
    t_free(&t);
    h_cleanup();
}

/* The kind of the block at `addr` in a leaks-mode trace's text: the
 * last "## leak kind:" line before its record (NULL: no record). */
static char *kind_of(const char *text, unsigned long long addr)
{
    char want[40], *kind = NULL;
    snprintf(want, sizeof want, " = 0x%llx\n", addr);
    const char *hit = strstr(text, want);
    if (!hit)
        return NULL;
    for (const char *p = text; p && p < hit; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, "## leak kind: ", 14) == 0) {
            free(kind);
            kind = strndup(p + 14, strcspn(p + 14, "\n"));
        }
    return kind;
}

/* Runs tracer_leak_order with n and keep: its reachable blocks' records
 * must come in the order it printed them, numbered one after another;
 * the kinds of the first and last, and of the lost blocks, as memcheck
 * gives them. */
static void check_leak_order(int n, int keep, const char *threads)
{
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_leak_order");
    char *arg = h_fmt("%d", n), *arg2 = h_fmt("%d", keep);
    const char *argv[] = { prog, arg, arg2, NULL };
    const char *env[] = { "ALLOCTRACE_MODE=leaks", threads, NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    struct t_trace t = t_load(trace);
    char *text = h_read_file(trace, NULL);
    assert_non_null(text);
    size_t printed = 0, lost = 0, k = 0;
    uint64_t last_index = 0;
    unsigned long long first_addr = 0, last_addr = 0;
    for (const char *p = r.out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        unsigned long long a;
        if (sscanf(p, "lost %llx", &a) == 1) {
            char *kind = kind_of(text, a);
            assert_non_null(kind);
            assert_string_equal(kind, "definite");
            free(kind);
            lost++;
            continue;
        }
        if (sscanf(p, "live %llx", &a) != 1)
            continue;
        printed++;
        if (printed == 1)
            first_addr = a;
        last_addr = a;
        while (k < t.n && t.recs[k].id != a)
            k++;
        if (k == t.n)
            fail_msg("n=%d: block %zu (0x%llx) not found after the record of block %zu", n,
                     printed, a, printed - 1);
        assert_int_equal(t.recs[k].size, printed <= (size_t)keep ? 56 : 40);
        if (printed > 1)
            assert_int_equal(t.recs[k].index, last_index + 1);
        last_index = t.recs[k].index;
    }
    assert_int_equal(printed, (size_t)keep + 2 * (size_t)n);
    assert_int_equal(lost, 8);
    for (size_t i = 0; i < t.n; i++)
        assert_int_equal(t.recs[i].index, i + 1);
    char *kind = kind_of(text, first_addr);
    assert_string_equal(kind, "reachable");
    free(kind);
    kind = kind_of(text, last_addr);
    assert_string_equal(kind, "reachable");
    free(kind);
    free(text);
    t_free(&t);
    h_result_free(&r);
    free(arg);
    free(arg2);
    free(prog);
    free(trace);
    h_cleanup();
}

static void test_leaks_mode_numbers_blocks_against_their_address_order_when_merging_runs(void **state)
{
    (void)state;
    check_leak_order(100, 0, NULL);   /* ~100 runs: merged */
}

static void test_leaks_mode_numbers_blocks_against_their_address_order_when_radix_sorting(void **state)
{
    (void)state;
    check_leak_order(2000, 0, NULL);   /* ~2000 runs: past the merge's 256 */
}

/* 30,000 blocks and more: the report's sort and part of its text run
 * on a helper thread (ALLOCTRACE_EXIT_THREADS=1: whether a core is free
 * or not), or all on one (=0). */
static void test_leaks_mode_numbers_and_kinds_hold_with_the_exit_helpers_merging(void **state)
{
    (void)state;
    check_leak_order(100, 30000, "ALLOCTRACE_EXIT_THREADS=1");
}

static void test_leaks_mode_numbers_and_kinds_hold_with_the_exit_helpers_radix_sorting(void **state)
{
    (void)state;
    check_leak_order(2000, 30000, "ALLOCTRACE_EXIT_THREADS=1");
}

static void test_leaks_mode_numbers_and_kinds_hold_without_the_exit_helpers(void **state)
{
    (void)state;
    check_leak_order(2000, 30000, "ALLOCTRACE_EXIT_THREADS=0");
}

/* A program under a seccomp filter that kills it on clone exits as it
 * would untraced, with its 10,000 blocks reported: the report at exit
 * starts no helper there, even when told to. */
static void test_leaks_mode_starts_no_exit_helper_under_a_seccomp_filter(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_seccomp_exit");
    const char *argv[] = { prog, NULL };
    const char *env[] = { "ALLOCTRACE_MODE=leaks", "ALLOCTRACE_EXIT_THREADS=1", NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    struct t_trace t = t_load(trace);
    size_t kept = 0;
    for (size_t i = 0; i < t.n; i++)
        kept += t.recs[i].size == 48 && strcmp(t.recs[i].name, "malloc") == 0;
    assert_true(kept >= 10000);
    t_free(&t);
    h_result_free(&r);
    free(prog);
    free(trace);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_mode_times_lie_between_the_clock_readings_around_each_call),
        cmocka_unit_test(test_leaks_mode_times_lie_between_the_clock_readings_around_each_call),
        cmocka_unit_test(test_leaks_mode_numbers_blocks_of_two_threads_in_their_true_order),
        cmocka_unit_test(test_leaks_mode_numbers_blocks_against_their_address_order_when_merging_runs),
        cmocka_unit_test(test_leaks_mode_numbers_blocks_against_their_address_order_when_radix_sorting),
        cmocka_unit_test(test_leaks_mode_numbers_and_kinds_hold_with_the_exit_helpers_merging),
        cmocka_unit_test(test_leaks_mode_numbers_and_kinds_hold_with_the_exit_helpers_radix_sorting),
        cmocka_unit_test(test_leaks_mode_numbers_and_kinds_hold_without_the_exit_helpers),
        cmocka_unit_test(test_leaks_mode_starts_no_exit_helper_under_a_seccomp_filter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
