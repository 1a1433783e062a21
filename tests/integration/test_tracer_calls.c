/*
 * tests/integration/test_tracer_calls.c: the records the tracer writes for
 * each allocation function, checked exactly against what the traced test
 * programs report about themselves (addresses, sizes, calling functions).
 */
#include "harness.h"
#include "test_tracer_trace.h"

#include <sys/stat.h>
#include <unistd.h>

struct run {
    h_result r;
    struct t_trace t;
    char *trace;
};

static struct run trace_program(const char *prog, const char *const env[])
{
    struct run x;
    char *dir = h_tmpdir();
    x.trace = h_fmt("%s/trace.txt", dir);
    char *path = h_path(prog);
    const char *argv[] = { path, NULL };
    x.r = h_trace(x.trace, argv, env);
    assert_int_equal(x.r.status, 0);
    x.t = t_load(x.trace);
    free(path);
    return x;
}

static void run_free(struct run *x)
{
    h_result_free(&x->r);
    t_free(&x->t);
    free(x->trace);
    h_cleanup();
}

/* The record following `r` in the file. */
static const struct t_rec *next_of(const struct t_trace *t, const struct t_rec *r)
{
    assert_true(r + 1 < t->recs + t->n);
    return r + 1;
}

static void check_alloc(const struct t_trace *t, uint64_t id, const char *name, uint64_t size,
                        uint64_t alignment)
{
    const struct t_rec *r = t_find_alloc(t, id);
    if (!r)
        fail_msg("no allocation of %#" PRIx64 " (%s)", id, name);
    assert_string_equal(r->name, name);
    assert_int_equal(r->size, size);
    assert_int_equal(r->alignment, alignment);
    assert_true(r->has_time);
}

static void test_header_registry_and_own_map_come_first(void **state)
{
    (void)state;
    struct run x = trace_program("build/tests/programs/tracer_calls", NULL);
    char *re = h_fmt("^version=2\\.0, arch=x86_64, timestamp=[0-9]{4}\\.[0-9]{2}\\.[0-9]{2} "
                     "[0-9]{2}:[0-9]{2}:[0-9]{2}, process=[^,]*tracer_calls, pid=[0-9]+, "
                     "filter=compress, backtrace depth=128, origin=alloctrace %s, time=on change, $",
                     AT_VERSION);
    assert_int_equal(h_count_lines(x.t.header, re), 1);
    assert_true(x.t.has_registry);
    char *exe = h_path("build/tests/programs/tracer_calls");
    char real[4096];
    assert_non_null(realpath(exe, real));
    int found = 0;
    for (size_t i = 0; i < x.t.nmaps; i++)
        if (strcmp(x.t.maps[i].path, real) == 0) {
            found = 1;
            assert_int_equal(x.t.maps[i].before_rec, 0);
        }
    assert_true(found);
    /* Every map line has its build id comment right after it. */
    char *text = h_read_file(x.trace, NULL);
    char *bid = h_fmt("^## build-id: %s => [0-9a-f]{40}$", real);
    assert_int_equal(h_count_lines(text, bid), 1);
    free(text);
    free(bid);
    free(exe);
    free(re);
    run_free(&x);
}

static void test_each_function_written_with_its_size_and_alignment(void **state)
{
    (void)state;
    struct run x = trace_program("build/tests/programs/tracer_calls", NULL);
    const char *o = x.r.out;
    check_alloc(&x.t, t_out_addr(o, "malloc"), "malloc", 100, 0);
    check_alloc(&x.t, t_out_addr(o, "calloc"), "calloc", 200, 0);
    check_alloc(&x.t, t_out_addr(o, "realloc"), "realloc", 300, 0);
    check_alloc(&x.t, t_out_addr(o, "realloc_null"), "realloc", 50, 0);
    check_alloc(&x.t, t_out_addr(o, "posix_memalign"), "posix_memalign", 128, 64);
    check_alloc(&x.t, t_out_addr(o, "aligned_alloc"), "aligned_alloc", 512, 256);
    check_alloc(&x.t, t_out_addr(o, "memalign"), "memalign", 96, 32);
    check_alloc(&x.t, t_out_addr(o, "valloc"), "valloc", 1000, 0);
    check_alloc(&x.t, t_out_addr(o, "pvalloc"), "pvalloc", 100, 0);
    check_alloc(&x.t, t_out_addr(o, "reallocarray"), "reallocarray", 63, 0);
    check_alloc(&x.t, t_out_addr(o, "reallocarray2"), "reallocarray", 63, 0);
    run_free(&x);
}

static void test_realloc_is_release_then_allocation(void **state)
{
    (void)state;
    struct run x = trace_program("build/tests/programs/tracer_calls", NULL);
    uint64_t m = t_out_addr(x.r.out, "malloc"), r = t_out_addr(x.r.out, "realloc");
    const struct t_rec *rel = t_find_release(&x.t, m);
    assert_non_null(rel);
    assert_string_equal(rel->name, "realloc");
    const struct t_rec *alloc = next_of(&x.t, rel);
    assert_string_equal(alloc->name, "realloc");
    assert_false(alloc->release);
    assert_int_equal(alloc->id, r);
    assert_int_equal(alloc->index, rel->index + 1);
    /* realloc(NULL, 50) is the allocation alone. */
    const struct t_rec *null_alloc = t_find_alloc(&x.t, t_out_addr(x.r.out, "realloc_null"));
    assert_non_null(null_alloc);
    assert_true(null_alloc > x.t.recs);
    assert_false((null_alloc - 1)->release);
    /* reallocarray(rn, 7, 9) releases rn the same way. */
    const struct t_rec *rel2 = t_find_release(&x.t, t_out_addr(x.r.out, "realloc_null"));
    assert_non_null(rel2);
    assert_string_equal(rel2->name, "reallocarray");
    assert_int_equal(next_of(&x.t, rel2)->id, t_out_addr(x.r.out, "reallocarray2"));
    run_free(&x);
}

static void test_free_pairs_with_allocation_and_free_null_is_not_written(void **state)
{
    (void)state;
    struct run x = trace_program("build/tests/programs/tracer_calls", NULL);
    const char *keys[] = { "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign",
                           "valloc", "pvalloc", "reallocarray", "reallocarray2" };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        uint64_t id = t_out_addr(x.r.out, keys[i]);
        const struct t_rec *a = t_find_alloc(&x.t, id), *f = t_find_release(&x.t, id);
        assert_non_null(a);
        assert_non_null(f);
        assert_string_equal(f->name, "free");
        assert_true(f->index > a->index);
        assert_int_equal(f->nframes, 0);   /* no free backtraces by default */
    }
    for (size_t i = 0; i < x.t.n; i++)
        assert_false(x.t.recs[i].release && x.t.recs[i].id == 0);
    run_free(&x);
}

static void test_frame0_is_inside_the_calling_function_and_own_map(void **state)
{
    (void)state;
    struct run x = trace_program("build/tests/programs/tracer_calls", NULL);
    const char *names[] = { "malloc", "calloc", "posix_memalign", "aligned_alloc", "memalign",
                            "valloc", "pvalloc" };
    char real[4096];
    char *exe = h_path("build/tests/programs/tracer_calls");
    assert_non_null(realpath(exe, real));
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char *key = h_fmt("site %s", names[i]);
        uint64_t site = t_out_addr(x.r.out, key);
        const struct t_rec *r = t_find_alloc(&x.t, t_out_addr(x.r.out, names[i]));
        assert_non_null(r);
        assert_true(r->nframes >= 2);
        uint64_t f0 = t_frames(&x.t, r)[0];
        if (f0 <= site || f0 > site + 0x60)
            fail_msg("%s: frame 0 %#" PRIx64 " not in its caller at %#" PRIx64, names[i], f0, site);
        const struct t_map *m = t_map_of(&x.t, f0);
        assert_non_null(m);
        assert_string_equal(m->path, real);
        /* Frame 1 is main, in the same program. */
        assert_ptr_equal(t_map_of(&x.t, t_frames(&x.t, r)[1]), m);
        free(key);
    }
    free(exe);
    run_free(&x);
}

static void test_non_pie_map_starts_at_lowest_load_address(void **state)
{
    (void)state;
    struct run x = trace_program("build/tests/programs/tracer_calls_nopie", NULL);
    char *exe = h_path("build/tests/programs/tracer_calls_nopie");
    char real[4096];
    assert_non_null(realpath(exe, real));
    /* The lowest PT_LOAD address, from the ELF file itself. */
    h_result re = h_sh("readelf -lW %s | awk '$1 == \"LOAD\" {print $3; exit}'", real);
    assert_int_equal(re.status, 0);
    uint64_t lowest = strtoull(re.out, NULL, 16);
    assert_true(lowest >= 0x400000);
    const struct t_map *m = NULL;
    for (size_t i = 0; i < x.t.nmaps; i++)
        if (strcmp(x.t.maps[i].path, real) == 0)
            m = &x.t.maps[i];
    assert_non_null(m);
    assert_int_equal(m->start, lowest & ~(uint64_t)0xfff);
    uint64_t site = t_out_addr(x.r.out, "site malloc");
    const struct t_rec *r = t_find_alloc(&x.t, t_out_addr(x.r.out, "malloc"));
    assert_non_null(r);
    uint64_t f0 = t_frames(&x.t, r)[0];
    assert_true(f0 > site && f0 <= site + 0x60);
    assert_ptr_equal(t_map_of(&x.t, f0), m);
    h_result_free(&re);
    free(exe);
    run_free(&x);
}

static void test_cxx_new_and_delete_arrive_as_malloc_and_free(void **state)
{
    (void)state;
    struct run x = trace_program("build/tests/programs/tracer_cxx", NULL);
    uint64_t item = t_out_addr(x.r.out, "new"), array = t_out_addr(x.r.out, "new[]");
    check_alloc(&x.t, item, "malloc", 40, 0);
    check_alloc(&x.t, array, "malloc", 100, 0);
    assert_non_null(t_find_release(&x.t, item));
    assert_non_null(t_find_release(&x.t, array));
    /* Frame 0 is operator new in libstdc++, frame 1 the program's code. */
    const struct t_rec *r = t_find_alloc(&x.t, item);
    const struct t_map *m0 = t_map_of(&x.t, t_frames(&x.t, r)[0]);
    const struct t_map *m1 = t_map_of(&x.t, t_frames(&x.t, r)[1]);
    assert_non_null(m0);
    assert_non_null(strstr(m0->path, "libstdc++"));
    assert_non_null(m1);
    assert_non_null(strstr(m1->path, "tracer_cxx"));
    run_free(&x);
}

static const struct t_rec *alloc_of_size(const struct t_trace *t, uint64_t size)
{
    for (size_t i = 0; i < t->n; i++)
        if (!t->recs[i].release && t->recs[i].size == size && strcmp(t->recs[i].name, "malloc") == 0)
            return &t->recs[i];
    return NULL;
}

static void test_contexts_mark_calls_and_disable_skips_them(void **state)
{
    (void)state;
    struct run x = trace_program("build/tests/programs/tracer_ctx", NULL);
    assert_non_null(strstr(x.r.out, "active 1 bits 1 2"));
    assert_string_equal(x.t.ctx_names[0], "parse");
    assert_string_equal(x.t.ctx_names[1], "render");
    assert_int_equal(alloc_of_size(&x.t, 11)->ctx, 0);
    assert_int_equal(alloc_of_size(&x.t, 22)->ctx, 1);
    assert_int_equal(alloc_of_size(&x.t, 33)->ctx, 3);
    assert_null(alloc_of_size(&x.t, 44));
    assert_int_equal(alloc_of_size(&x.t, 55)->ctx, 0);
    char *text = h_read_file(x.trace, NULL);
    assert_int_equal(h_count_lines(text, "^@ 1 : parse$"), 1);
    assert_int_equal(h_count_lines(text, "^@ 2 : render$"), 1);
    assert_int_equal(h_count_lines(text, "^[0-9]+\\. @3 (\\[[0-9:.]+\\] )?malloc\\(33\\) = 0x[0-9a-f]+$"), 1);
    free(text);
    run_free(&x);
}

static void test_context_api_is_inert_without_tracer(void **state)
{
    (void)state;
    char *prog = h_path("build/tests/programs/tracer_ctx");
    const char *argv[] = { prog, NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "active 0 bits 0 0"));
    h_result_free(&r);
    free(prog);
}

static void test_timestamps_off_and_depth_limit(void **state)
{
    (void)state;
    const char *env[] = { "ALLOCTRACE_TIMESTAMPS=0", "ALLOCTRACE_DEPTH=2", NULL };
    struct run x = trace_program("build/tests/programs/tracer_calls", env);
    assert_non_null(strstr(x.t.header, ", backtrace depth=2, "));
    assert_true(x.t.n > 10);
    for (size_t i = 0; i < x.t.n; i++) {
        assert_false(x.t.recs[i].has_time);
        assert_true(x.t.recs[i].nframes <= 2);
    }
    const struct t_rec *r = t_find_alloc(&x.t, t_out_addr(x.r.out, "malloc"));
    assert_int_equal(r->nframes, 2);
    run_free(&x);
}

static void test_free_backtraces_on_request(void **state)
{
    (void)state;
    const char *env[] = { "ALLOCTRACE_FREE_BACKTRACES=1", NULL };
    struct run x = trace_program("build/tests/programs/tracer_calls", env);
    const struct t_rec *f = t_find_release(&x.t, t_out_addr(x.r.out, "calloc"));
    assert_non_null(f);
    assert_true(f->nframes >= 2);
    assert_non_null(t_map_of(&x.t, t_frames(&x.t, f)[0]));
    run_free(&x);
}

static void test_bad_value_runs_untraced_with_one_line(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_calls");
    const char *argv[] = { prog, NULL };
    const char *env[] = { "ALLOCTRACE_DEPTH=lots", NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "reallocarray2 0x"));
    assert_int_equal(h_count_lines(r.err, "."), 1);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: ALLOCTRACE_DEPTH=lots: .*untraced"), 1);
    assert_int_equal(access(trace, F_OK), -1);
    h_result_free(&r);
    const char *env2[] = { "ALLOCTRACE_MODE=everything", NULL };
    r = h_trace(trace, argv, env2);
    assert_int_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: ALLOCTRACE_MODE=everything: "), 1);
    assert_int_equal(access(trace, F_OK), -1);
    h_result_free(&r);
    free(prog);
    free(trace);
    h_cleanup();
}

static void test_existing_output_is_never_overwritten(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *trace = h_fmt("%s/trace.txt", dir);
    FILE *f = fopen(trace, "w");
    fputs("precious\n", f);
    fclose(f);
    char *prog = h_path("build/tests/programs/tracer_calls");
    const char *argv[] = { prog, NULL };
    h_result r = h_trace(trace, argv, NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: .*trace\\.txt: .*File exists"), 1);
    char *text = h_read_file(trace, NULL);
    assert_string_equal(text, "precious\n");
    free(text);
    h_result_free(&r);
    free(prog);
    free(trace);
    h_cleanup();
}

static void test_pid_in_output_name(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *pattern = h_fmt("%s/t.%%p.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_calls");
    const char *argv[] = { prog, NULL };
    h_result r = h_trace(pattern, argv, NULL);
    assert_int_equal(r.status, 0);
    h_result ls = h_sh("ls %s", dir);
    assert_int_equal(h_count_lines(ls.out, "^t\\.[0-9]+\\.txt$"), 1);
    h_result_free(&ls);
    h_result_free(&r);
    free(prog);
    free(pattern);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_registry_and_own_map_come_first),
        cmocka_unit_test(test_each_function_written_with_its_size_and_alignment),
        cmocka_unit_test(test_realloc_is_release_then_allocation),
        cmocka_unit_test(test_free_pairs_with_allocation_and_free_null_is_not_written),
        cmocka_unit_test(test_frame0_is_inside_the_calling_function_and_own_map),
        cmocka_unit_test(test_non_pie_map_starts_at_lowest_load_address),
        cmocka_unit_test(test_cxx_new_and_delete_arrive_as_malloc_and_free),
        cmocka_unit_test(test_contexts_mark_calls_and_disable_skips_them),
        cmocka_unit_test(test_context_api_is_inert_without_tracer),
        cmocka_unit_test(test_timestamps_off_and_depth_limit),
        cmocka_unit_test(test_free_backtraces_on_request),
        cmocka_unit_test(test_bad_value_runs_untraced_with_one_line),
        cmocka_unit_test(test_existing_output_is_never_overwritten),
        cmocka_unit_test(test_pid_in_output_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
