/*
 * tests/unit/test_gate_supp.c: suppression files in the real filter
 * language behind the gate: a file hiding one of two groups, labels and
 * accounting, a broken file rejected with FILE:LINE:COLUMN, and generated
 * suppressions that, pasted into a file, take exactly their own group.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "gate_supp.h"
#include "test_gate_util.h"

static const char *const BUF[] = { "make_buffer() at /src/app/leaky.c:12",
                                   "main() at /src/app/leaky.c:30", NULL };
static const char *const BUF2[] = { "make_buffer() at /src/app/leaky.c:14",
                                    "main() at /src/app/leaky.c:30", NULL };
static const char *const CXX[] = { "operator new(unsigned long) from /usr/lib/libstdc++.so.6",
                                   "ns::Foo<int, char>::make() const at /src/my app/foo[1].cc:3",
                                   "main() at /src/app/leaky.c:31", NULL };

typedef supp_fixture fixture;

/* Judges BUF (2 x 100), BUF2 (1 x 10) and CXX (1 x 7) with suppressions s. */
static at_gate *judge(fixture *f, at_gate_supp *s)
{
    at_gate_options opt;
    at_gate_options_init(&opt);
    at_gate_matcher m = at_gate_supp_matcher(s);
    at_gate *g = at_gate_new(&opt, &m, NULL);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "./leaky", 1);
    at_gate_block b[] = { { stack_of(f->t, 0x10, BUF), 100, AT_LEAK_UNKNOWN }, { stack_of(f->t, 0x10, BUF), 100, AT_LEAK_UNKNOWN },
                          { stack_of(f->t, 0x20, BUF2), 10, AT_LEAK_UNKNOWN }, { stack_of(f->t, 0x30, CXX), 7, AT_LEAK_UNKNOWN } };
    at_gate_add_leaks(g, p, b, 4, NULL, f->t);
    at_gate_finish(g);
    return g;
}

static void file_suppression_hides_one_group_and_is_labelled(void **state)
{
    fixture *f = *state;
    write_text_file(f->path, "# mine\n\ncxx: functions contains [ ... #\"^ns::Foo<int, char>::make\"# ... ]\n"
                        "functions contains [ nothing ]\n");
    at_gate_supp *s = at_gate_supp_new();
    assert_int_equal(at_gate_supp_add_file(s, f->path, false), 0);
    at_gate *g = judge(f, s);
    assert_int_equal(g->procs[0].ngroups, 2);
    assert_int_equal(g->supps[0].blocks, 1);
    assert_int_equal(g->supps[0].bytes, 7);
    assert_string_equal(g->supps[0].label, "cxx");
    char want[200];
    snprintf(want, sizeof want, "Unused suppressions:\n  %s:4\n", f->path);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "Suppressions used:\n  cxx: 1 leak(s), 7 byte(s)\n"));
    assert_non_null(strstr(r, want));
    free(r);
    at_gate_free(g);
    at_gate_supp_free(s);
}

static void broken_file_is_rejected_with_line_and_column(void **state)
{
    fixture *f = *state;
    write_text_file(f->path, "functions contains [ main ]\nfunctions contians [ x ]\n");
    char err_path[160];
    snprintf(err_path, sizeof err_path, "%s/err.txt", f->dir);
    fflush(stderr);
    int saved = dup(2);
    FILE *e = freopen(err_path, "w", stderr);
    assert_non_null(e);
    at_gate_supp *s = at_gate_supp_new();
    int rc = at_gate_supp_add_file(s, f->path, false);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(rc, -1);
    assert_int_equal(at_gate_supp_matcher(s).count, 0);
    FILE *in = fopen(err_path, "r");
    char line[512] = "";
    assert_non_null(fgets(line, sizeof line, in));
    fclose(in);
    unlink(err_path);
    char want[200];
    snprintf(want, sizeof want, "alloctrace-postproc: %s:2:11: ", f->path);
    assert_int_equal(strncmp(line, want, strlen(want)), 0);
    at_gate_supp_free(s);
}

static void generated_suppression_takes_exactly_its_group(void **state)
{
    fixture *f = *state;
    at_gate_supp *none = at_gate_supp_new();
    at_gate *g = judge(f, none);
    assert_int_equal(g->procs[0].ngroups, 3);
    for (size_t i = 0; i < 3; i++) {
        char *line = at_gate_suppression_line(g, &g->procs[0], i);
        write_text_file(f->path, line);
        free(line);
        at_gate_supp *s = at_gate_supp_new();
        assert_int_equal(at_gate_supp_add_file(s, f->path, false), 0);
        at_gate *again = judge(f, s);
        assert_int_equal(again->procs[0].ngroups, 2);
        assert_int_equal(again->supps[0].bytes, g->procs[0].groups[i].bytes);
        assert_int_equal(again->supps[0].blocks, g->procs[0].groups[i].blocks);
        at_gate_free(again);
        at_gate_supp_free(s);
    }
    at_gate_free(g);
    at_gate_supp_free(none);
}

static void generated_suppression_for_unnamed_frames_takes_only_its_module(void **state)
{
    fixture *f = *state;
    at_maps *maps = at_maps_new();
    at_maps_add(maps, "/opt/lib/libx.so", 0x7000, 0x8000);
    at_maps_add(maps, "/opt/lib/liby.so", 0x9000, 0xa000);
    at_frame fx[] = { { 0x7010, NULL } }, fy[] = { { 0x9010, NULL } };
    at_gate_options opt;
    at_gate_options_init(&opt);
    at_gate *g = at_gate_new(&opt, NULL, NULL);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "./x", 1);
    at_gate_block b[] = { { at_stacks_intern(f->t, fx, 1), 8, AT_LEAK_UNKNOWN }, { at_stacks_intern(f->t, fy, 1), 4, AT_LEAK_UNKNOWN } };
    at_gate_add_leaks(g, p, b, 2, maps, f->t);
    at_gate_finish(g);
    char *line = at_gate_suppression_line(g, p, 0);
    write_text_file(f->path, line);
    free(line);
    at_gate_supp *s = at_gate_supp_new();
    assert_int_equal(at_gate_supp_add_file(s, f->path, false), 0);
    at_gate_matcher m = at_gate_supp_matcher(s);
    at_gate *again = at_gate_new(&opt, &m, NULL);
    at_gate_proc *q = at_gate_add_process(again, "t.txt", "./x", 1);
    at_gate_add_leaks(again, q, b, 2, maps, f->t);
    at_gate_finish(again);
    assert_int_equal(q->ngroups, 1);
    assert_string_equal(q->groups[0].frames[0].module, "/opt/lib/liby.so");
    assert_int_equal(again->supps[0].bytes, 8);
    at_gate_free(again);
    at_gate_supp_free(s);
    at_gate_free(g);
    at_maps_free(maps);
}

static void default_file_comes_first_and_is_not_listed_unused(void **state)
{
    fixture *f = *state;
    char other[160];
    snprintf(other, sizeof other, "%s/user.supp", f->dir);
    write_text_file(f->path, "glibc: functions contains [ ... _IO_file_doallocate ]\n");
    write_text_file(other, "mine: functions contains [ ... make_buffer ]\n");
    at_gate_supp *s = at_gate_supp_new();
    assert_int_equal(at_gate_supp_add_file(s, f->path, true), 0);
    assert_int_equal(at_gate_supp_add_file(s, other, false), 0);
    at_gate_matcher m = at_gate_supp_matcher(s);
    assert_int_equal(m.count, 2);
    assert_int_equal(m.ndefault, 1);
    at_gate *g = judge(f, s);
    assert_true(g->supps[0].is_default);
    assert_int_equal(g->supps[1].bytes, 210);
    char *r = report_of(g, at_gate_print_report);
    assert_null(strstr(r, "Unused suppressions"));
    free(r);
    at_gate_free(g);
    at_gate_supp_free(s);
    unlink(other);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, supp_setup, supp_teardown)
    const struct CMUnitTest tests[] = {
        T(file_suppression_hides_one_group_and_is_labelled),
        T(broken_file_is_rejected_with_line_and_column),
        T(generated_suppression_takes_exactly_its_group),
        T(generated_suppression_for_unnamed_frames_takes_only_its_module),
        T(default_file_comes_first_and_is_not_listed_unused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
