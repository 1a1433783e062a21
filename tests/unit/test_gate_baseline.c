/*
 * tests/unit/test_gate_baseline.c: normalised stack keys, baseline files,
 * and the gate judging only new or grown groups against a baseline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "test_gate_util.h"

static char *tmp_path(const char *name)
{
    char dir[] = "/tmp/test_gate_baseline.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

static void remove_tmp(char *path)
{
    unlink(path);
    *strrchr(path, '/') = '\0';
    rmdir(path);
    free(path);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *key_of(at_stack_table *t, const char *const texts[], const at_maps *maps)
{
    const at_stack *s = stack_of(t, 0x7010, texts);
    at_frame_info info[32];
    at_frame_read_stack(s, maps, t, info);
    return at_baseline_key(info, s->nframes);
}

static void key_has_functions_and_file_names_outermost_first(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const a[] = { "xmalloc() at /home/u/app/src/util.c:40",
                              "load() at /home/u/app/src/config.c:88", NULL };
    char *k = key_of(t, a, NULL);
    assert_string_equal(k, "load@config.c -> xmalloc@util.c");
    free(k);
    at_stacks_free(t);
}

static void key_starts_at_main_leaving_libc_start_up_frames_out(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const a[] = { "f() at /s/a.c:4", "main() at /s/m.c:9",
                              "__libc_start_call_main() at ./csu/libc_start_call_main.h:58",
                              "_start() from /usr/bin/prog", NULL };
    char *k = key_of(t, a, NULL);
    assert_string_equal(k, "main@m.c -> f@a.c");
    free(k);
    at_stacks_free(t);
}

static void key_ignores_lines_addresses_and_checkout_directory(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const a[] = { "xmalloc() at /home/u/app/src/util.c:40",
                              "load() at /home/u/app/src/config.c:88", NULL };
    const char *const b[] = { "xmalloc() at /build/ci-7/src/util.c:42",
                              "load() at /build/ci-7/src/config.c:91", NULL };
    char *ka = key_of(t, a, NULL);
    const at_stack *s = stack_of(t, 0x5550, b);
    at_frame_info info[2];
    at_frame_read_stack(s, NULL, t, info);
    char *kb = at_baseline_key(info, 2);
    assert_string_equal(ka, kb);
    free(ka);
    free(kb);
    at_stacks_free(t);
}

static void key_of_unresolved_frame_uses_module_name(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_maps *m = at_maps_new();
    at_maps_add(m, "/usr/lib/libfoo.so.1", 0x7000, 0x8000);
    at_frame fr[] = { { 0x7010, NULL }, { 0x9000, "from /usr/lib/libbar.so" }, { 0x1, NULL } };
    const at_stack *s = at_stacks_intern(t, fr, 3);
    at_frame_info info[3];
    at_frame_read_stack(s, m, t, info);
    char *k = at_baseline_key(info, 3);
    assert_string_equal(k, "??@?? -> ??@libbar.so -> ??@libfoo.so.1");
    free(k);
    at_maps_free(m);
    at_stacks_free(t);
}

static void baseline_file_round_trips(void **state)
{
    (void)state;
    char *path = tmp_path("base.txt");
    at_baseline *b = at_baseline_new();
    at_baseline_put(b, "leaky", "main@a.c -> f@b.c", 100, 2);
    at_baseline_put(b, "other", "main@ns::X::y(int) const@x.cc", 7, 1);
    assert_int_equal(at_baseline_write(b, path), 0);
    at_baseline_free(b);
    char err[256];
    b = at_baseline_read(path, err, sizeof err);
    assert_non_null(b);
    uint64_t bytes = 0, blocks = 0;
    assert_true(at_baseline_get(b, "leaky", "main@a.c -> f@b.c", &bytes, &blocks));
    assert_int_equal(bytes, 100);
    assert_int_equal(blocks, 2);
    assert_true(at_baseline_get(b, "other", "main@ns::X::y(int) const@x.cc", &bytes, &blocks));
    assert_int_equal(bytes, 7);
    assert_false(at_baseline_get(b, "other", "main@a.c -> f@b.c", &bytes, &blocks));
    at_baseline_free(b);
    remove_tmp(path);
}

static void baseline_without_magic_line_is_rejected_at_line_1(void **state)
{
    (void)state;
    char *path = tmp_path("bad.txt");
    write_file(path, "leaky\t1\t1\tmain@a.c\n");
    char err[512];
    assert_null(at_baseline_read(path, err, sizeof err));
    char *want = malloc(strlen(path) + 64);
    sprintf(want, "%s:1: not an alloctrace baseline", path);
    assert_int_equal(strncmp(err, want, strlen(want)), 0);
    free(want);
    remove_tmp(path);
}

static void baseline_with_bad_number_names_its_line(void **state)
{
    (void)state;
    char *path = tmp_path("bad.txt");
    write_file(path, "# alloctrace baseline 1\n# comment\n\nleaky\t12x\t1\tmain@a.c\n");
    char err[512];
    assert_null(at_baseline_read(path, err, sizeof err));
    char *want = malloc(strlen(path) + 64);
    sprintf(want, "%s:4: bytes is not a decimal number", path);
    assert_string_equal(err, want);
    free(want);
    remove_tmp(path);
}

static void missing_baseline_file_is_an_error(void **state)
{
    (void)state;
    char err[512];
    assert_null(at_baseline_read("/nonexistent/base.txt", err, sizeof err));
    assert_string_equal(err, "/nonexistent/base.txt: No such file or directory");
}

/* Against a baseline: "make" known and within, "grow" grown, "fresh" new. */
static void only_new_and_grown_groups_gate(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const known[] = { "make() at /s/a.c:1", "main() at /s/m.c:2", NULL };
    const char *const grow[] = { "grow() at /s/a.c:5", "main() at /s/m.c:3", NULL };
    const char *const fresh[] = { "fresh() at /s/b.c:9", "main() at /s/m.c:4", NULL };
    at_baseline *b = at_baseline_new();
    at_baseline_put(b, "prog", "main@m.c -> make@a.c", 1000, 10);
    at_baseline_put(b, "prog", "main@m.c -> grow@a.c", 64, 1);
    at_gate_options opt;
    at_gate_options_init(&opt);
    at_gate *g = at_gate_new(&opt, NULL, b);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "/build/x/prog", 9);
    at_gate_block blocks[] = { { stack_of(t, 0x10, known), 500, AT_LEAK_UNKNOWN },
                               { stack_of(t, 0x20, grow), 64, AT_LEAK_UNKNOWN },
                               { stack_of(t, 0x20, grow), 64, AT_LEAK_UNKNOWN },
                               { stack_of(t, 0x30, fresh), 8, AT_LEAK_UNKNOWN } };
    at_gate_add_leaks(g, p, blocks, 4, NULL, t);
    assert_int_equal(at_gate_finish(g), AT_GATE_LEAKS);
    assert_int_equal(p->ngroups, 3);
    assert_string_equal(p->groups[0].frames[0].function, "grow");
    assert_int_equal(p->groups[0].base, AT_BASE_GROWN);
    assert_int_equal(p->groups[0].base_bytes, 64);
    assert_string_equal(p->groups[1].frames[0].function, "fresh");
    assert_int_equal(p->groups[1].base, AT_BASE_NEW);
    assert_string_equal(p->groups[2].frames[0].function, "make");
    assert_int_equal(p->groups[2].base, AT_BASE_KNOWN);
    assert_int_equal(p->gating_groups, 2);
    assert_int_equal(p->gating_bytes, 136);
    assert_int_equal(p->gating_blocks, 3);
    char *r = report_of(g, at_gate_print_report);
    assert_non_null(strstr(r, "Leak of 128 byte(s) in 2 block(s) in grow (a.c:5), allocated from: "
                              "[grown: baseline 64 byte(s) in 1 block(s)]\n"));
    assert_non_null(strstr(r, "Leak of 8 byte(s) in 1 block(s) in fresh (b.c:9), allocated from: [new]\n"));
    assert_non_null(strstr(r, "Leak of 500 byte(s) in 1 block(s) in make (a.c:1), allocated from: [in baseline]\n"));
    assert_non_null(strstr(r, "SUMMARY: alloctrace: 136 byte(s) leaked in 3 allocation(s).\n"));
    free(r);
    at_gate_free(g);
    at_baseline_free(b);
    at_stacks_free(t);
}

static void groups_sharing_a_key_are_compared_as_one_sum(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const l1[] = { "f() at /s/a.c:1", "main() at /s/m.c:2", NULL };
    const char *const l2[] = { "f() at /s/a.c:2", "main() at /s/m.c:2", NULL };
    at_baseline *b = at_baseline_new();
    at_baseline_put(b, "prog", "main@m.c -> f@a.c", 30, 2);
    at_gate_options opt;
    at_gate_options_init(&opt);
    at_gate *g = at_gate_new(&opt, NULL, b);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "prog", 9);
    at_gate_block blocks[] = { { stack_of(t, 0x10, l1), 10, AT_LEAK_UNKNOWN }, { stack_of(t, 0x20, l2), 20, AT_LEAK_UNKNOWN } };
    at_gate_add_leaks(g, p, blocks, 2, NULL, t);
    assert_int_equal(at_gate_finish(g), AT_GATE_PASS);
    at_baseline *now = at_baseline_from_gate(g);
    uint64_t bytes, blocks_n;
    assert_true(at_baseline_get(now, "prog", "main@m.c -> f@a.c", &bytes, &blocks_n));
    assert_int_equal(bytes, 30);
    assert_int_equal(blocks_n, 2);
    at_baseline_free(now);
    at_gate_free(g);
    at_baseline_free(b);
    at_stacks_free(t);
}

static void baseline_from_gate_keeps_the_largest_of_one_program(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const l1[] = { "f() at /s/a.c:1", NULL };
    at_gate_options opt;
    at_gate_options_init(&opt);
    at_gate *g = at_gate_new(&opt, NULL, NULL);
    const at_stack *s = stack_of(t, 0x10, l1);
    at_gate_block small = { s, 10, AT_LEAK_UNKNOWN }, big[] = { { s, 40, AT_LEAK_UNKNOWN }, { s, 40, AT_LEAK_UNKNOWN } };
    at_gate_add_leaks(g, at_gate_add_process(g, "1.txt", "./t", 1), &small, 1, NULL, t);
    at_gate_add_leaks(g, at_gate_add_process(g, "2.txt", "/x/t", 2), big, 2, NULL, t);
    at_gate_finish(g);
    at_baseline *now = at_baseline_from_gate(g);
    uint64_t bytes, blocks;
    assert_true(at_baseline_get(now, "t", "f@a.c", &bytes, &blocks));
    assert_int_equal(bytes, 80);
    assert_int_equal(blocks, 2);
    at_baseline_free(now);
    at_gate_free(g);
    at_stacks_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(key_has_functions_and_file_names_outermost_first),
        cmocka_unit_test(key_starts_at_main_leaving_libc_start_up_frames_out),
        cmocka_unit_test(key_ignores_lines_addresses_and_checkout_directory),
        cmocka_unit_test(key_of_unresolved_frame_uses_module_name),
        cmocka_unit_test(baseline_file_round_trips),
        cmocka_unit_test(baseline_without_magic_line_is_rejected_at_line_1),
        cmocka_unit_test(baseline_with_bad_number_names_its_line),
        cmocka_unit_test(missing_baseline_file_is_an_error),
        cmocka_unit_test(only_new_and_grown_groups_gate),
        cmocka_unit_test(groups_sharing_a_key_are_compared_as_one_sum),
        cmocka_unit_test(baseline_from_gate_keeps_the_largest_of_one_program),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
