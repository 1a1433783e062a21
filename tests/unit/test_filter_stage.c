/*
 * tests/unit/test_filter_stage.c: the filter stage on records built here:
 * which calls go on under --filter, --exclude-filter and --suppressions,
 * that a release follows its allocation, groups, the suppression report,
 * and the option helpers behind --check-filters.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filter_stage.h"

/* The stage after the filter: records the indices of the calls it gets. */
typedef struct sink {
    at_stage stage;
    uint64_t idx[64];
    size_t n;
    size_t groups, others;
    bool finished;
} sink;

static void sink_put(at_stage *self, const at_record *r)
{
    sink *s = (sink *)self;
    if (r->kind == AT_REC_CALL)
        s->idx[s->n++] = r->u.call->index;
    else if (r->kind == AT_REC_GROUP) {
        s->groups++;
        for (size_t i = 0; i < r->u.group->ncalls; i++)
            s->idx[s->n++] = r->u.group->calls[i]->index;
    } else
        s->others++;
}

static void sink_finish(at_stage *self)
{
    ((sink *)self)->finished = true;
}

typedef struct fixture {
    at_trace *t;
    const at_stack *parse, *load, *zlib;
    at_filter_opts o;
    sink out;
    at_stage *stage;
    char *report;
    size_t report_len;
    FILE *report_f;
    at_diag d;        /* messages go to msgs */
    char *msgs;
    size_t msgs_len;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->t = at_trace_new();
    at_frame parse[] = { { 0x10, "xstrdup() at /app/src/util.c:12" }, { 0x20, "parse() at /app/src/parse.c:40" },
                         { 0x30, "main() at /app/main.c:5" } };
    at_frame load[] = { { 0x40, "load() at /app/src/load.c:7" }, { 0x30, "main() at /app/main.c:6" } };
    at_frame zlib[] = { { 0x7f0010, NULL }, { 0x30, "main() at /app/main.c:9" } };
    f->parse = at_stacks_intern(f->t->stacks, parse, 3);
    f->load = at_stacks_intern(f->t->stacks, load, 2);
    f->zlib = at_stacks_intern(f->t->stacks, zlib, 2);
    at_maps_add(f->t->maps, "/usr/lib/libz.so.1", 0x7f0000, 0x7fffff);
    f->out.stage = (at_stage){ .put = sink_put, .finish = sink_finish };
    f->report_f = open_memstream(&f->report, &f->report_len);
    at_diag_init(&f->d, "t.trace");
    f->d.out = open_memstream(&f->msgs, &f->msgs_len);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    at_filter_stage_free(f->stage);
    at_filter_opts_free(&f->o);
    at_trace_free(f->t);
    if (f->report_f)
        fclose(f->report_f);
    free(f->report);
    fclose(f->d.out);
    free(f->msgs);
    free(f);
    return 0;
}

static void start(fixture *f)
{
    f->stage = at_filter_stage_new(&f->out.stage, f->t, &f->o, &f->d, f->report_f);
}

static void call(fixture *f, uint64_t index, const at_stack *st, bool alloc, uint64_t size, uint64_t id)
{
    at_call c = { .index = index, .name = alloc ? "malloc" : "free", .res = 1, .is_alloc = alloc,
                  .size = size, .id = id, .stack = st };
    at_record r = { .kind = AT_REC_CALL, .u.call = &c };
    at_stage_put(f->stage, &r);
}

static void end(fixture *f)
{
    at_stage_finish(f->stage);
    fflush(f->report_f);
}

static void expect_out(const fixture *f, const uint64_t *want, size_t n)
{
    assert_int_equal(f->out.n, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(f->out.idx[i], want[i]);
}

static void filter_keeps_only_matched_allocations(void **state)
{
    fixture *f = *state;
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_FILTER, "functions contains [ ... parse ... ]"), 0);
    start(f);
    call(f, 1, f->parse, true, 10, 0x100);
    call(f, 2, f->load, true, 20, 0x200);
    call(f, 3, f->zlib, true, 30, 0x300);
    end(f);
    expect_out(f, (uint64_t[]){ 1 }, 1);
    assert_true(f->out.finished);
}

static void several_filters_keep_what_any_matches(void **state)
{
    fixture *f = *state;
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_FILTER, "functions contains [ ... parse ... ]"), 0);
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_FILTER, "modules contains [ ... libz.so.1 ]"), 0);
    start(f);
    call(f, 1, f->parse, true, 10, 0x100);
    call(f, 2, f->load, true, 20, 0x200);
    call(f, 3, f->zlib, true, 30, 0x300);
    end(f);
    expect_out(f, (uint64_t[]){ 1, 3 }, 2);
}

static void exclude_filter_drops_and_release_follows(void **state)
{
    fixture *f = *state;
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_EXCLUDE, "string contains [ ... load.c ]"), 0);
    start(f);
    call(f, 1, f->load, true, 20, 0x200);
    call(f, 2, f->parse, true, 10, 0x100);
    call(f, 3, f->zlib, false, 0, 0x200); /* frees the dropped block */
    call(f, 4, f->zlib, false, 0, 0x100); /* frees the kept block */
    call(f, 5, f->parse, true, 10, 0x200); /* the address again, kept now */
    call(f, 6, f->zlib, false, 0, 0x200);
    call(f, 7, f->zlib, false, 0, 0x999); /* allocated before the trace */
    end(f);
    expect_out(f, (uint64_t[]){ 2, 4, 5, 6, 7 }, 5);
}

static void suppressions_drop_and_report_what_each_took(void **state)
{
    fixture *f = *state;
    char path[] = "/tmp/test_supp_XXXXXX";
    int fd = mkstemp(path);
    const char *text = "# known\n"
                       "zlib: modules contains [ ... libz.so.1 ]\n"
                       "big-parse: functions contains [ ... parse xstrdup ] && size >= 1k\n"
                       "never: functions contains [ ... nothing ]\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_SUPPRESSIONS, path), 0);
    unlink(path);
    start(f);
    call(f, 1, f->zlib, true, 30, 0x1);
    call(f, 2, f->zlib, true, 34, 0x2);
    call(f, 3, f->parse, true, 4096, 0x3);
    call(f, 4, f->parse, true, 100, 0x4);
    call(f, 5, f->load, true, 5000, 0x5);
    end(f);
    expect_out(f, (uint64_t[]){ 4, 5 }, 2);
    assert_string_equal(f->report, "suppressed 2 block(s), 64 bytes: zlib\n"
                                   "suppressed 1 block(s), 4096 bytes: big-parse\n"
                                   "suppression matched nothing: never\n");
}

static void filter_then_suppression_counts_only_survivors(void **state)
{
    fixture *f = *state;
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_FILTER, "size > 15"), 0);
    char path[] = "/tmp/test_supp_XXXXXX";
    int fd = mkstemp(path);
    const char *text = "functions contains [ main ... ]\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_SUPPRESSIONS, path), 0);
    start(f);
    call(f, 1, f->parse, true, 10, 0x1);
    call(f, 2, f->load, true, 20, 0x2);
    end(f);
    expect_out(f, NULL, 0);
    char want[128];
    snprintf(want, sizeof want, "suppressed 1 block(s), 20 bytes: %s:1\n", path);
    assert_string_equal(f->report, want);
    unlink(path);
}

static void groups_keep_their_matching_calls(void **state)
{
    fixture *f = *state;
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_FILTER, "functions contains [ main parse ... ] && size < 100"), 0);
    start(f);
    at_call c[3] = {
        { .index = 1, .name = "malloc", .res = 1, .is_alloc = true, .size = 10, .id = 1, .stack = f->parse },
        { .index = 2, .name = "malloc", .res = 1, .is_alloc = true, .size = 200, .id = 2, .stack = f->parse },
        { .index = 3, .name = "malloc", .res = 1, .is_alloc = true, .size = 30, .id = 3, .stack = f->parse },
    };
    const at_call *calls[3] = { &c[0], &c[1], &c[2] };
    at_group g = { .stack = f->parse, .calls = calls, .ncalls = 3, .total_size = 240 };
    at_record r = { .kind = AT_REC_GROUP, .u.group = &g };
    at_stage_put(f->stage, &r);
    at_call c2 = { .index = 4, .name = "malloc", .res = 1, .is_alloc = true, .size = 10, .id = 4, .stack = f->load };
    const at_call *calls2[1] = { &c2 };
    at_group g2 = { .stack = f->load, .calls = calls2, .ncalls = 1, .total_size = 10 };
    at_record r2 = { .kind = AT_REC_GROUP, .u.group = &g2 };
    at_stage_put(f->stage, &r2); /* the load stack: nothing kept, no group */
    end(f);
    assert_int_equal(f->out.groups, 1);
    expect_out(f, (uint64_t[]){ 1, 3 }, 2);
}

static void other_records_pass(void **state)
{
    fixture *f = *state;
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_FILTER, "size > 1G"), 0);
    start(f);
    at_record r = { .kind = AT_REC_COMMENT, .u.comment = { "## hi", 5 } };
    at_stage_put(f->stage, &r);
    call(f, 1, f->parse, true, 10, 0x1);
    end(f);
    assert_int_equal(f->out.others, 1);
    assert_int_equal(f->out.n, 0);
}

static void options_report_names_and_activity(void **state)
{
    fixture *f = *state;
    assert_false(at_filter_opts_active(&f->o));
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_EXCLUDE, "modules contains [ ... ]"), 0);
    assert_true(at_filter_opts_active(&f->o));
    assert_false(at_filter_opts_needs_names(&f->o));
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_FILTER, "callstack contains [ ... a.c:5 ]"), 0);
    assert_true(at_filter_opts_needs_names(&f->o));
    /* A syntax error adds nothing and says so. */
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_FILTER, "callstack contains [ ... a.c:5"), -1);
    assert_int_equal(at_filter_set_count(f->o.keep), 1);

    char *out = NULL, *warn = NULL;
    size_t lo, lw;
    FILE *fo = open_memstream(&out, &lo), *fw = open_memstream(&warn, &lw);
    assert_int_equal(at_filter_opts_check(&f->o, fo, fw), 1);
    fclose(fo);
    fclose(fw);
    assert_string_equal(out, "# kept: --filter, --filter-file\n"
                             "callstack contains [ ... a.c : 5 ]\n"
                             "# dropped: --exclude-filter\n"
                             "modules contains [ ... ]\n");
    assert_string_equal(warn, "--exclude-filter: warning: filter matches every allocation\n");
    free(out);
    free(warn);
}

/* A stack whose one frame's function is `fn`. */
static const at_stack *stack_in(fixture *f, uint64_t addr, const char *fn)
{
    char text[256];
    snprintf(text, sizeof text, "%s() at /app/x.c:1", fn);
    at_frame fr = { addr, text };
    return at_stacks_intern(f->t->stacks, &fr, 1);
}

/* Six allocations, three in functions the exponential regex matches at
 * once ("aaa...a"), three in functions on which it backtracks past
 * PCRE2's match limit ("aaa...ab"). */
static void run_backtracking_filter(fixture *f)
{
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_FILTER, "functions contains [ ... #\"^(a+)+$\"# ... ]"), 0);
    start(f);
    char fn[64];
    for (int i = 0; i < 6; i++) {
        memset(fn, 'a', 40);
        fn[40] = i % 2 ? 'b' : '\0';
        fn[41] = '\0';
        call(f, (uint64_t)i + 1, stack_in(f, 0x1000 + (uint64_t)i * 16 + (uint64_t)(i % 2), fn), true, 8,
             0x100 + (uint64_t)i);
    }
    end(f);
    fflush(f->d.out);
}

static void regex_past_the_match_limit_is_reported_once_not_silently_dropped(void **state)
{
    fixture *f = *state;
    run_backtracking_filter(f);
    uint64_t want[] = { 1, 3, 5 };
    expect_out(f, want, 3);
    /* one line naming the filter, the regex and the frame, then the total */
    assert_non_null(strstr(f->msgs, "alloctrace-postproc: warning: filter --filter: regex #\"^(a+)+$\"# could "
                                    "not be decided on \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\" (PCRE2: "
                                    "match limit exceeded); such frames count as not matching\n"));
    assert_non_null(strstr(f->msgs, "filter regexes could not decide 3 frame test(s) in all"));
    assert_int_equal(f->d.warnings, 1);
    assert_false(f->d.failed);
}

static void regex_past_the_match_limit_is_an_error_under_strict(void **state)
{
    fixture *f = *state;
    f->d.strict = true;
    run_backtracking_filter(f);
    assert_true(f->d.failed);
    assert_int_equal(f->d.status, AT_EXIT_USAGE);
    assert_non_null(strstr(f->msgs, "alloctrace-postproc: error: filter --filter: regex"));
}

static void backtracking_regex_over_many_frames_costs_bounded_work(void **state)
{
    fixture *f = *state;
    /* 2000 distinct frames, each past the limit: after a few, the regex
     * is tested with the tight limit (a test that cannot fail on time
     * would be a timed test; this one counts the undecided tests and
     * checks each allocation still got an answer) */
    assert_int_equal(at_filter_opts_add(&f->o, AT_FOPT_FILTER, "functions contains [ ... #\"^(a+)+$\"# ... ]"), 0);
    start(f);
    char fn[64];
    for (int i = 0; i < 2000; i++) {
        snprintf(fn, sizeof fn, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa%04d", i);
        call(f, (uint64_t)i + 1, stack_in(f, 0x1000 + (uint64_t)i * 16, fn), true, 8, 0x100 + (uint64_t)i);
    }
    end(f);
    fflush(f->d.out);
    assert_int_equal(f->out.n, 0);
    assert_int_equal(at_filter_set_undecided(f->o.keep)->count, 2000);
    assert_int_equal(f->d.warnings, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(filter_keeps_only_matched_allocations, setup, teardown),
        cmocka_unit_test_setup_teardown(regex_past_the_match_limit_is_reported_once_not_silently_dropped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(regex_past_the_match_limit_is_an_error_under_strict, setup, teardown),
        cmocka_unit_test_setup_teardown(backtracking_regex_over_many_frames_costs_bounded_work, setup, teardown),
        cmocka_unit_test_setup_teardown(several_filters_keep_what_any_matches, setup, teardown),
        cmocka_unit_test_setup_teardown(exclude_filter_drops_and_release_follows, setup, teardown),
        cmocka_unit_test_setup_teardown(suppressions_drop_and_report_what_each_took, setup, teardown),
        cmocka_unit_test_setup_teardown(filter_then_suppression_counts_only_survivors, setup, teardown),
        cmocka_unit_test_setup_teardown(groups_keep_their_matching_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(other_records_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(options_report_names_and_activity, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
