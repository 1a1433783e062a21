/*
 * tests/unit/test_gate.c: the gate's grouping, suppression accounting,
 * verdict, text report and generated suppressions, on leaks built here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_gate_util.h"

static const char *const MAKE_BUF[] = { "make_buffer() at /src/app/leaky.c:12",
                                        "main() at /src/app/leaky.c:30",
                                        "__libc_start_call_main() from /usr/lib/libc.so.6", NULL };
static const char *const DUP_NAME[] = { "dup_name() at /src/app/names.c:7",
                                        "main() at /src/app/leaky.c:31", NULL };

typedef struct fixture {
    at_stack_table *t;
    const at_stack *buf, *dup;
    at_gate_options opt;
    fake_supps supps;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->t = at_stacks_new();
    f->buf = stack_of(f->t, 0x1000, MAKE_BUF);
    f->dup = stack_of(f->t, 0x2000, DUP_NAME);
    at_gate_options_init(&f->opt);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    at_stacks_free(f->t);
    free(f);
    return 0;
}

/* make_buffer: 3 blocks of 512 (1536 bytes); dup_name: 2 blocks 16 + 32. */
static at_gate *judge(fixture *f, const at_gate_matcher *m)
{
    at_gate *g = at_gate_new(&f->opt, m, NULL);
    at_gate_proc *p = at_gate_add_process(g, "/tmp/t/alloctrace.42.txt", "./leaky", 42);
    at_gate_block blocks[] = { { f->buf, 512, AT_LEAK_UNKNOWN }, { f->dup, 16, AT_LEAK_UNKNOWN }, { f->buf, 512, AT_LEAK_UNKNOWN },
                               { f->dup, 32, AT_LEAK_UNKNOWN }, { f->buf, 512, AT_LEAK_UNKNOWN } };
    at_gate_add_leaks(g, p, blocks, 5, NULL, f->t);
    at_gate_finish(g);
    return g;
}

static void blocks_of_one_stack_form_one_group_largest_first(void **state)
{
    fixture *f = *state;
    at_gate *g = judge(f, NULL);
    const at_gate_proc *p = &g->procs[0];
    assert_int_equal(p->ngroups, 2);
    assert_int_equal(p->groups[0].bytes, 1536);
    assert_int_equal(p->groups[0].blocks, 3);
    assert_string_equal(p->groups[0].frames[0].function, "make_buffer");
    assert_string_equal(p->groups[0].frames[0].file, "/src/app/leaky.c");
    assert_int_equal(p->groups[0].frames[0].line, 12);
    assert_int_equal(p->groups[0].frames[0].addr, 0x1000);
    assert_string_equal(p->groups[0].frames[2].module, "/usr/lib/libc.so.6");
    assert_int_equal(p->groups[1].bytes, 48);
    assert_int_equal(p->groups[1].blocks, 2);
    assert_string_equal(p->groups[1].frames[0].function, "dup_name");
    assert_int_equal(p->bytes, 1584);
    assert_int_equal(p->blocks, 5);
    at_gate_free(g);
}

static void leaks_left_give_exit_1(void **state)
{
    fixture *f = *state;
    at_gate *g = judge(f, NULL);
    assert_int_equal(g->verdict, AT_GATE_LEAKS);
    at_gate_free(g);
}

static void leak_exitcode_replaces_1(void **state)
{
    fixture *f = *state;
    f->opt.leak_exitcode = 23;
    at_gate *g = judge(f, NULL);
    assert_int_equal(g->verdict, 23);
    at_gate_free(g);
}

static void leak_exitcode_3_is_not_taken_for_untrusted(void **state)
{
    fixture *f = *state;
    f->opt.leak_exitcode = 3;
    at_gate *g = judge(f, NULL);
    assert_int_equal(g->verdict, 3);
    assert_null(g->untrusted);
    char *r = report_of(g, at_gate_print_report);
    assert_null(strstr(r, "nothing trustworthy"));
    assert_non_null(strstr(r, "alloctrace: 2 leak group(s) fail the gate\n"));
    free(r);
    at_gate_free(g);
}

static void leak_exitcode_0_reports_leaks_but_passes(void **state)
{
    fixture *f = *state;
    f->opt.leak_exitcode = 0;
    at_gate *g = judge(f, NULL);
    assert_int_equal(g->verdict, AT_GATE_PASS);
    char *r = report_of(g, at_gate_print_report);
    assert_null(strstr(r, "fail the gate"));
    assert_non_null(strstr(r, "SUMMARY: alloctrace: 1584 byte(s) leaked in 5 allocation(s).\n"));
    free(r);
    at_gate_free(g);
}

static void process_without_leaks_passes(void **state)
{
    fixture *f = *state;
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_add_process(g, "t.txt", "./clean", 7);
    assert_int_equal(at_gate_finish(g), AT_GATE_PASS);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "== process ./clean (pid 7), trace t.txt\nno leaks left"));
    assert_non_null(strstr(r, "\nSUMMARY: alloctrace: 0 byte(s) leaked in 0 allocation(s).\n"));
    free(r);
    at_gate_free(g);
}

static void suppression_hides_exactly_one_group_and_counts_it(void **state)
{
    fixture *f = *state;
    f->supps = (fake_supps){ .names = { "dup_name" }, .labels = { "my.supp:3" }, .count = 1 };
    at_gate_matcher m = fake_matcher(&f->supps, 0);
    at_gate *g = judge(f, &m);
    const at_gate_proc *p = &g->procs[0];
    assert_int_equal(p->ngroups, 1);
    assert_string_equal(p->groups[0].frames[0].function, "make_buffer");
    assert_int_equal(p->suppressed_blocks, 2);
    assert_int_equal(p->suppressed_bytes, 48);
    assert_int_equal(g->supps[0].blocks, 2);
    assert_int_equal(g->supps[0].bytes, 48);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "Suppressions used:\n  my.supp:3: 2 leak(s), 48 byte(s)\n"));
    assert_non_null(strstr(r, "SUMMARY: alloctrace: 1536 byte(s) leaked in 3 allocation(s).\n"));
    assert_null(strstr(r, "dup_name"));
    free(r);
    at_gate_free(g);
}

static void suppression_with_size_takes_only_blocks_of_that_size(void **state)
{
    fixture *f = *state;
    f->supps = (fake_supps){ .names = { "dup_name" }, .labels = { "s" }, .sizes = { 16 }, .count = 1 };
    at_gate_matcher m = fake_matcher(&f->supps, 0);
    at_gate *g = judge(f, &m);
    const at_gate_proc *p = &g->procs[0];
    assert_int_equal(p->ngroups, 2);
    assert_int_equal(p->groups[1].bytes, 32);
    assert_int_equal(p->groups[1].blocks, 1);
    assert_int_equal(g->supps[0].bytes, 16);
    at_gate_free(g);
}

static void suppressing_everything_passes(void **state)
{
    fixture *f = *state;
    f->supps = (fake_supps){ .names = { "main" }, .labels = { "all" }, .count = 1 };
    at_gate_matcher m = fake_matcher(&f->supps, 0);
    at_gate *g = judge(f, &m);
    assert_int_equal(g->verdict, AT_GATE_PASS);
    assert_int_equal(g->procs[0].ngroups, 0);
    assert_int_equal(g->supps[0].blocks, 5);
    assert_int_equal(g->supps[0].bytes, 1584);
    at_gate_free(g);
}

static void first_matching_suppression_takes_the_leak(void **state)
{
    fixture *f = *state;
    f->supps = (fake_supps){ .names = { "make_buffer", "main" }, .labels = { "a", "b" }, .count = 2 };
    at_gate_matcher m = fake_matcher(&f->supps, 0);
    at_gate *g = judge(f, &m);
    assert_int_equal(g->supps[0].blocks, 3);
    assert_int_equal(g->supps[0].bytes, 1536);
    assert_int_equal(g->supps[1].blocks, 2);
    assert_int_equal(g->supps[1].bytes, 48);
    at_gate_free(g);
}

static void unused_user_suppression_is_listed_default_one_is_not(void **state)
{
    fixture *f = *state;
    f->supps = (fake_supps){ .names = { "dl_init", "nothing_here" },
                             .labels = { "default.supp:4", "my.supp:9" }, .count = 2 };
    at_gate_matcher m = fake_matcher(&f->supps, 1);
    at_gate *g = judge(f, &m);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "Unused suppressions:\n  my.supp:9\n"));
    assert_null(strstr(r, "default.supp:4"));
    free(r);
    at_gate_free(g);
}

static void unused_suppression_fails_only_when_asked(void **state)
{
    fixture *f = *state;
    f->supps = (fake_supps){ .names = { "main", "nothing_here" }, .labels = { "a", "b" }, .count = 2 };
    at_gate_matcher m = fake_matcher(&f->supps, 0);
    at_gate *g = judge(f, &m);
    assert_int_equal(g->verdict, AT_GATE_PASS);
    at_gate_free(g);
    f->opt.fail_on_unused = true;
    g = judge(f, &m);
    assert_int_equal(g->verdict, AT_GATE_LEAKS);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "unused suppressions fail the gate"));
    free(r);
    at_gate_free(g);
}

static void no_process_is_untrusted(void **state)
{
    fixture *f = *state;
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    assert_int_equal(at_gate_finish(g), AT_GATE_UNTRUSTED);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "nothing trustworthy to judge: no trace was written"));
    free(r);
    at_gate_free(g);
}

static void truncated_trace_is_untrusted_even_without_leaks(void **state)
{
    fixture *f = *state;
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "./a", 1);
    at_gate_set_problem(g, p, "t.txt: truncated trace");
    assert_int_equal(at_gate_finish(g), AT_GATE_UNTRUSTED);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "not judged: t.txt: truncated trace\n"));
    free(r);
    at_gate_free(g);
}

/* A wrapper that exec'd the test and a worker its program stopped have no
 * verdict of their own: the run is judged by the test alone. */
static void exec_wrapper_and_stopped_child_are_not_judged(void **state)
{
    fixture *f = *state;
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_set_exec(g, at_gate_add_process(g, NULL, "sh", 7), "./t");
    at_gate_add_process(g, NULL, "./t", 7);
    at_gate_set_stopped(g, at_gate_add_process(g, NULL, "./t", 8),
                        "killed by signal 15 (SIGTERM) before it exited");
    assert_int_equal(at_gate_finish(g), AT_GATE_PASS);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "== process sh (pid 7)\nexec'd ./t: not judged itself; the program it "
                              "became is judged below\n"));
    assert_non_null(strstr(r, "== process ./t (pid 7)\nno leaks left after suppressions\n"));
    assert_non_null(strstr(r, "== process ./t (pid 8)\nnot judged: killed by signal 15 (SIGTERM) "
                              "before it exited\n"));
    free(r);
    at_gate_free(g);
    /* A wrapper alone (its program left no trace) is nothing judged: 3. */
    g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_set_exec(g, at_gate_add_process(g, NULL, "sh", 7), "./t");
    assert_int_equal(at_gate_finish(g), AT_GATE_UNTRUSTED);
    at_gate_free(g);
}

static void killed_program_is_untrusted_and_named(void **state)
{
    fixture *f = *state;
    f->opt.program_signal = 11;
    at_gate *g = judge(f, NULL);
    assert_int_equal(g->verdict, AT_GATE_UNTRUSTED);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "alloctrace: the program was killed by signal 11 (Segmentation fault)\n"));
    free(r);
    at_gate_free(g);
}

static void program_status_is_the_verdict_unless_ignored(void **state)
{
    fixture *f = *state;
    f->opt.program_status = 4;
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_add_process(g, "t.txt", "./a", 1);
    assert_int_equal(at_gate_finish(g), 4);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "alloctrace: the program exited with status 4\n"));
    free(r);
    at_gate_free(g);
    f->opt.ignore_program_status = true;
    g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_add_process(g, "t.txt", "./a", 1);
    assert_int_equal(at_gate_finish(g), AT_GATE_PASS);
    at_gate_free(g);
}

/* One stack, every kind: only definite and indirect make (separate)
 * groups by default; every kind is in the LEAK SUMMARY; --leak-kinds=all
 * makes a group of each. */
static at_gate *judge_kinds(fixture *f)
{
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "./kinds", 7);
    at_gate_block blocks[] = { { f->buf, 10, AT_LEAK_DEFINITE },  { f->buf, 20, AT_LEAK_INDIRECT },
                               { f->buf, 30, AT_LEAK_POSSIBLE },  { f->buf, 4000, AT_LEAK_REACHABLE },
                               { f->buf, 10, AT_LEAK_DEFINITE } };
    at_gate_add_leaks(g, p, blocks, 5, NULL, f->t);
    at_gate_finish(g);
    return g;
}

static void only_failing_kinds_make_groups_every_kind_is_summed(void **state)
{
    fixture *f = *state;
    at_gate *g = judge_kinds(f);
    assert_int_equal(g->verdict, AT_GATE_LEAKS);
    assert_int_equal(g->procs[0].ngroups, 2);
    assert_int_equal(g->procs[0].groups[0].kind, AT_LEAK_DEFINITE);
    assert_int_equal(g->procs[0].groups[0].bytes, 20);
    assert_int_equal(g->procs[0].groups[1].kind, AT_LEAK_INDIRECT);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "Leak of 20 byte(s) in 2 block(s) in make_buffer (leaky.c:12), allocated from: [definitely lost]\n"));
    assert_non_null(strstr(r, "LEAK SUMMARY:\n"
                              "   definitely lost: 20 bytes in 2 blocks\n"
                              "   indirectly lost: 20 bytes in 1 blocks\n"
                              "     possibly lost: 30 bytes in 1 blocks\n"
                              "   still reachable: 4,000 bytes in 1 blocks\n"
                              "        suppressed: 0 bytes in 0 blocks\n"
                              "SUMMARY: alloctrace: 40 byte(s) leaked in 3 allocation(s).\n"));
    free(r);
    at_gate_free(g);
    f->opt.fail_kinds = AT_LEAK_ALL;
    g = judge_kinds(f);
    assert_int_equal(g->procs[0].ngroups, 4);
    assert_int_equal(g->procs[0].gating_bytes, 4070);
    at_gate_free(g);
    f->opt.fail_kinds = AT_LEAK_BIT(AT_LEAK_REACHABLE);
    g = judge_kinds(f);
    assert_int_equal(g->procs[0].ngroups, 1);
    assert_int_equal(g->procs[0].groups[0].kind, AT_LEAK_REACHABLE);
    at_gate_free(g);
}

static void leak_kinds_list_parses_valgrind_words(void **state)
{
    (void)state;
    unsigned set;
    assert_int_equal(at_leak_kinds_parse("definite,indirect", &set), 0);
    assert_int_equal(set, AT_LEAK_DEFAULT_FAIL);
    assert_int_equal(at_leak_kinds_parse("all", &set), 0);
    assert_int_equal(set, AT_LEAK_ALL);
    assert_int_equal(at_leak_kinds_parse("none", &set), 0);
    assert_int_equal(set, 0);
    assert_int_equal(at_leak_kinds_parse("possible", &set), 0);
    assert_int_equal(set, AT_LEAK_BIT(AT_LEAK_POSSIBLE) | AT_LEAK_BIT(AT_LEAK_UNKNOWN));
    assert_int_equal(at_leak_kinds_parse("reachable,,possible", &set), -1);
    assert_int_equal(at_leak_kinds_parse("possible,lost", &set), -1);
    assert_int_equal(at_leak_kinds_parse("none,definite", &set), -1);
}

/* strdup, xmalloc, operator new and the C++ standard library's frames are
 * wrappers: the group's first line names the first frame past them; a
 * stack of nothing but wrappers names its innermost. */
static void group_names_the_first_frame_that_is_not_an_allocation_wrapper(void **state)
{
    fixture *f = *state;
    const char *const wrapped[] = { "__strdup() at ./string/strdup.c:42",
                                    "xstrdup() at /src/app/util.c:5",
                                    "load_names() at /src/app/names.c:20",
                                    "main() at /src/app/leaky.c:31", NULL };
    const char *const cxx[] = { "operator new(unsigned long) from /usr/lib/libstdc++.so.6",
                                "__gnu_cxx::new_allocator<int>::allocate(unsigned long, void const*) at /usr/include/c++/12/ext/new_allocator.h:137",
                                "std::vector<int, std::allocator<int> >::_M_realloc_insert(int&&) at /usr/include/c++/12/bits/vector.tcc:440",
                                "main() at /src/app/v.cc:7", NULL };
    const char *const only[] = { "g_malloc() from /usr/lib/libglib-2.0.so.0", NULL };
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_proc *p = at_gate_add_process(g, NULL, "./leaky", 42);
    at_gate_block b[] = { { stack_of(f->t, 0x10, wrapped), 30, AT_LEAK_UNKNOWN },
                          { stack_of(f->t, 0x20, cxx), 20, AT_LEAK_UNKNOWN },
                          { stack_of(f->t, 0x30, only), 10, AT_LEAK_UNKNOWN } };
    at_gate_add_leaks(g, p, b, 3, NULL, f->t);
    at_gate_finish(g);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "== process ./leaky (pid 42)\n"));   /* no trace to name */
    assert_non_null(strstr(r, "Leak of 30 byte(s) in 1 block(s) in load_names (names.c:20), allocated from:\n"
                              "    #0 __strdup at ./string/strdup.c:42\n"));
    assert_non_null(strstr(r, "Leak of 20 byte(s) in 1 block(s) in main (v.cc:7), allocated from:\n"));
    assert_non_null(strstr(r, "Leak of 10 byte(s) in 1 block(s) in g_malloc (libglib-2.0.so.0), "
                              "allocated from:\n"));
    free(r);
    at_gate_free(g);
}

static void report_shows_each_frame_and_the_summary(void **state)
{
    fixture *f = *state;
    at_gate *g = judge(f, NULL);
    char *r = report_of(g, at_gate_print_report);
    const char *want = "== process ./leaky (pid 42), trace /tmp/t/alloctrace.42.txt\n\n"
                       "Leak of 1536 byte(s) in 3 block(s) in make_buffer (leaky.c:12), allocated from:\n"
                       "    #0 make_buffer at /src/app/leaky.c:12\n"
                       "    #1 main at /src/app/leaky.c:30\n"
                       "    #2 __libc_start_call_main from /usr/lib/libc.so.6\n\n"
                       "Leak of 48 byte(s) in 2 block(s) in dup_name (names.c:7), allocated from:\n"
                       "    #0 dup_name at /src/app/names.c:7\n"
                       "    #1 main at /src/app/leaky.c:31\n\n";
    assert_non_null(strstr(r, want));
    assert_non_null(strstr(r, "alloctrace: 2 leak group(s) fail the gate\n"
                              "LEAK SUMMARY:\n"
                              "   definitely lost: 0 bytes in 0 blocks\n"
                              "   indirectly lost: 0 bytes in 0 blocks\n"
                              "     possibly lost: 0 bytes in 0 blocks\n"
                              "   still reachable: 0 bytes in 0 blocks\n"
                              "    not classified: 1,584 bytes in 5 blocks\n"
                              "        suppressed: 0 bytes in 0 blocks\n"
                              "SUMMARY: alloctrace: 1584 byte(s) leaked in 5 allocation(s).\n"));
    free(r);
    at_gate_free(g);
}

static void unresolved_frames_show_address_and_module(void **state)
{
    fixture *f = *state;
    at_maps *maps = at_maps_new();
    at_maps_add(maps, "/opt/lib/libx.so", 0x7000, 0x8000);
    at_frame fr[] = { { 0x7010, NULL }, { 0x9999, NULL } };
    const at_stack *s = at_stacks_intern(f->t, fr, 2);
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "./a", -1);
    at_gate_block b = { s, 8, AT_LEAK_UNKNOWN };
    at_gate_add_leaks(g, p, &b, 1, maps, f->t);
    at_maps_free(maps);
    at_gate_finish(g);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "== process ./a, trace t.txt\n"));
    assert_non_null(strstr(r, "    #0 0x7010 from /opt/lib/libx.so\n    #1 0x9999 in ??\n"));
    free(r);
    at_gate_free(g);
}

static void max_groups_shows_the_largest_and_counts_the_rest(void **state)
{
    fixture *f = *state;
    f->opt.max_groups = 1;
    at_gate *g = judge(f, NULL);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "make_buffer"));
    assert_null(strstr(r, "dup_name"));
    assert_non_null(strstr(r, "1 more group(s) not shown (48 byte(s) in 2 block(s))\n"));
    free(r);
    at_gate_free(g);
}

static void generated_suppression_names_functions_and_files_outermost_first(void **state)
{
    fixture *f = *state;
    at_gate *g = judge(f, NULL);
    char *line = at_gate_suppression_line(g, &g->procs[0], 1);
    assert_string_equal(line, "leaky-leak-2: functions contains [ ... main dup_name ] && "
                              "string contains [ ... leaky.c names.c ]");
    free(line);
    line = at_gate_suppression_line(g, &g->procs[0], 0);
    assert_string_equal(line, "leaky-leak-1: functions contains [ ... main make_buffer ] && "
                              "string contains [ ... leaky.c leaky.c ]");
    free(line);
    at_gate_free(g);
}

static void groups_differing_only_in_lines_get_line_specs(void **state)
{
    fixture *f = *state;
    const char *const a[] = { "f() at /s/x.c:10", "main() at /s/m.c:5", NULL };
    const char *const b[] = { "f() at /s/x.c:11", "main() at /s/m.c:5", NULL };
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "./p", 1);
    at_gate_block blocks[] = { { stack_of(f->t, 0x10, a), 100, AT_LEAK_UNKNOWN }, { stack_of(f->t, 0x20, b), 10, AT_LEAK_UNKNOWN } };
    at_gate_add_leaks(g, p, blocks, 2, NULL, f->t);
    at_gate_finish(g);
    char *line = at_gate_suppression_line(g, p, 0);
    assert_string_equal(line, "p-leak-1: functions contains [ ... main f ] && "
                              "callstack contains [ ... m.c : 5 x.c : 10 ]");
    free(line);
    at_gate_free(g);
}

static void gen_suppressions_gives_lines_only_to_ambiguous_groups(void **state)
{
    fixture *f = *state;
    const char *const a[] = { "f() at /s/x.c:10", "main() at /s/m.c:5", NULL };
    const char *const b[] = { "f() at /s/x.c:11", "main() at /s/m.c:5", NULL };
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "./p", 1);
    at_gate_block blocks[] = { { stack_of(f->t, 0x10, a), 100, AT_LEAK_UNKNOWN }, { stack_of(f->t, 0x20, b), 10, AT_LEAK_UNKNOWN },
                               { f->dup, 5, AT_LEAK_UNKNOWN } };
    at_gate_add_leaks(g, p, blocks, 3, NULL, f->t);
    at_gate_finish(g);
    char *r = report_of(g, at_gate_print_suppressions);
    assert_non_null(strstr(r, "\np-leak-1: functions contains [ ... main f ] && "
                              "callstack contains [ ... m.c : 5 x.c : 10 ]\n"
                              "p-leak-2: functions contains [ ... main f ] && "
                              "callstack contains [ ... m.c : 5 x.c : 11 ]\n"
                              "p-leak-3: functions contains [ ... main dup_name ] && "
                              "string contains [ ... leaky.c names.c ]\n"));
    free(r);
    at_gate_free(g);
}

static void unnamed_frames_add_their_modules(void **state)
{
    fixture *f = *state;
    at_maps *maps = at_maps_new();
    at_maps_add(maps, "/opt/lib/libx.so", 0x7000, 0x8000);
    at_maps_add(maps, "/usr/bin/app", 0x400000, 0x500000);
    at_frame fr[] = { { 0x7010, NULL }, { 0x400100, NULL } };
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "/usr/bin/app", 1);
    at_gate_block b = { at_stacks_intern(f->t, fr, 2), 8, AT_LEAK_UNKNOWN };
    at_gate_add_leaks(g, p, &b, 1, maps, f->t);
    at_maps_free(maps);
    at_gate_finish(g);
    char *line = at_gate_suppression_line(g, p, 0);
    assert_string_equal(line, "app-leak-1: functions contains [ ... ?? ?? ] && string contains "
                              "[ ... ?? ?? ] && modules contains [ ... app libx.so ]");
    free(line);
    at_gate_free(g);
}

static void names_with_spaces_become_escaped_regexes(void **state)
{
    fixture *f = *state;
    const char *const a[] = { "ns::Foo::bar(int) const at /s/foo file.cc:3", NULL };
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "/usr/bin/my app", 1);
    at_gate_block blk = { stack_of(f->t, 0x10, a), 1, AT_LEAK_UNKNOWN };
    at_gate_add_leaks(g, p, &blk, 1, NULL, f->t);
    at_gate_finish(g);
    char *line = at_gate_suppression_line(g, p, 0);
    assert_string_equal(line, "my_app-leak-1: functions contains [ ... "
                              "#\"^ns::Foo::bar\\(int\\) const$\"# ] && "
                              "string contains [ ... #\"(^|/)foo file\\.cc$\"# ]");
    free(line);
    at_gate_free(g);
}

static void gen_suppressions_lists_every_gating_group(void **state)
{
    fixture *f = *state;
    at_gate *g = judge(f, NULL);
    char *r = report_of(g, at_gate_print_suppressions);
    assert_int_equal(strncmp(r, "# Suppressions", 14), 0);
    assert_non_null(strstr(r, "\nleaky-leak-1: "));
    assert_non_null(strstr(r, "\nleaky-leak-2: "));
    free(r);
    at_gate_free(g);
}

static void processes_are_judged_together(void **state)
{
    fixture *f = *state;
    at_gate *g = at_gate_new(&f->opt, NULL, NULL);
    at_gate_proc *a = at_gate_add_process(g, "a.txt", "./a", 1);
    at_gate_proc *b = at_gate_add_process(g, "b.txt", "./b", 2);
    at_gate_block x = { f->buf, 10, AT_LEAK_UNKNOWN }, y = { f->dup, 20, AT_LEAK_UNKNOWN };
    at_gate_add_leaks(g, a, &x, 1, NULL, f->t);
    at_gate_add_leaks(g, b, &y, 1, NULL, f->t);
    assert_int_equal(at_gate_finish(g), AT_GATE_LEAKS);
    char *r = report_of(g, at_gate_print_report);
    char *pa = strstr(r, "== process ./a (pid 1)"), *pb = strstr(r, "== process ./b (pid 2)");
    assert_non_null(pa);
    assert_non_null(pb);
    assert_true(pa < pb);
    assert_non_null(strstr(r, "SUMMARY: alloctrace: 30 byte(s) leaked in 2 allocation(s).\n"));
    free(r);
    at_gate_free(g);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(blocks_of_one_stack_form_one_group_largest_first),
        T(leaks_left_give_exit_1),
        T(leak_exitcode_replaces_1),
        T(leak_exitcode_3_is_not_taken_for_untrusted),
        T(leak_exitcode_0_reports_leaks_but_passes),
        T(process_without_leaks_passes),
        T(suppression_hides_exactly_one_group_and_counts_it),
        T(suppression_with_size_takes_only_blocks_of_that_size),
        T(suppressing_everything_passes),
        T(first_matching_suppression_takes_the_leak),
        T(unused_user_suppression_is_listed_default_one_is_not),
        T(unused_suppression_fails_only_when_asked),
        T(no_process_is_untrusted),
        T(truncated_trace_is_untrusted_even_without_leaks),
        T(exec_wrapper_and_stopped_child_are_not_judged),
        T(killed_program_is_untrusted_and_named),
        T(only_failing_kinds_make_groups_every_kind_is_summed),
        cmocka_unit_test(leak_kinds_list_parses_valgrind_words),
        T(program_status_is_the_verdict_unless_ignored),
        T(group_names_the_first_frame_that_is_not_an_allocation_wrapper),
        T(report_shows_each_frame_and_the_summary),
        T(unresolved_frames_show_address_and_module),
        T(max_groups_shows_the_largest_and_counts_the_rest),
        T(generated_suppression_names_functions_and_files_outermost_first),
        T(groups_differing_only_in_lines_get_line_specs),
        T(gen_suppressions_gives_lines_only_to_ambiguous_groups),
        T(unnamed_frames_add_their_modules),
        T(names_with_spaces_become_escaped_regexes),
        T(gen_suppressions_lists_every_gating_group),
        T(processes_are_judged_together),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
