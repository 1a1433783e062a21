/*
 * tests/integration/test_resolve_cache.c: the resolver's disk cache through
 * the real programs. Each test has a cache directory of its own (the
 * harness turns the cache off otherwise): a second run gives byte-identical
 * output; a rebuilt program, a debug directory added later and a broken
 * cache file never change what is printed; the gate takes --cache-dir and
 * --no-cache. (That a hit reads no DWARF is checked with the resolver's
 * counters in tests/unit/test_resolve.c.)
 */
#include "harness.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define APP_SRC AT_BUILD_ROOT "/tests/programs/resolve_app.c"

static int teardown(void **state)
{
    (void)state;
    h_cleanup();
    return 0;
}

static char *program(const char *name)
{
    return h_fmt("%s/build/tests/programs/%s", h_root(), name);
}

static char *trace_program(const char *dir, const char *name, const char *exe)
{
    char *trace = h_fmt("%s/%s.trace", dir, name);
    const char *argv[] = { exe, NULL };
    h_result r = h_trace(trace, argv, NULL);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    return trace;
}

/* alloctrace-postproc -r [--debug-dir DIR] TRACE with the cache in `cache`
 * (NULL: --no-cache); its output, after checking it succeeded. */
static char *resolve(const char *trace, const char *cache, const char *debug_dir)
{
    char *pp = h_path("postproc/alloctrace-postproc");
    char *env_cache = cache ? h_fmt("ALLOCTRACE_CACHE_DIR=%s", cache) : NULL;
    const char *env[] = { env_cache, NULL };
    const char *argv[8] = { pp, "-r", "-q" };
    int n = 3;
    if (!cache)
        argv[n++] = "--no-cache";
    if (debug_dir) {
        argv[n++] = "--debug-dir";
        argv[n++] = debug_dir;
    }
    argv[n++] = trace;
    h_result r = h_run(argv, env, NULL);
    if (r.status != 0)
        fail_msg("alloctrace-postproc failed (%d): %s", r.status, r.err);
    free(r.err);
    free(env_cache);
    free(pp);
    return r.out;
}

static size_t cache_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, ".cache") != NULL;
    closedir(d);
    return n;
}

static void second_run_is_byte_identical(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *cache = h_fmt("%s/cache/sub", dir); /* created with its parents */
    char *exe = program("resolve_app_O2");
    char *trace = trace_program(dir, "t", exe);
    char *uncached = resolve(trace, NULL, NULL);
    char *first = resolve(trace, cache, NULL);
    assert_true(cache_files(cache) >= 3); /* the program, its library, libc */
    char *second = resolve(trace, cache, NULL);
    assert_string_equal(first, uncached);
    assert_string_equal(second, uncached);
    assert_true(h_count_lines(second, "alloc_direct\\(\\) at ") > 0);
    free(uncached);
    free(first);
    free(second);
    free(trace);
    free(exe);
    free(cache);
}

/* A program rebuilt at the same path (another build id) is traced and
 * resolved with the cache of the old build: it gets its own lines. */
static void rebuilt_program_is_not_served_from_the_cache(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *cache = h_fmt("%s/cache", dir);
    char *exe = h_fmt("%s/app", dir);
    h_result c = h_sh("cp %s/build/tests/programs/resolve_app_O0 %s && cp %s/build/tests/programs/libresolve_lib.so %s/",
                      h_root(), exe, h_root(), dir);
    assert_int_equal(c.status, 0);
    h_result_free(&c);
    char *old_trace = trace_program(dir, "old", exe);
    free(resolve(old_trace, cache, NULL));
    size_t files = cache_files(cache);
    c = h_sh("cp %s/build/tests/programs/resolve_app_O2 %s", h_root(), exe);
    assert_int_equal(c.status, 0);
    h_result_free(&c);
    char *new_trace = trace_program(dir, "new", exe);
    char *cached = resolve(new_trace, cache, NULL);
    char *uncached = resolve(new_trace, NULL, NULL);
    assert_string_equal(cached, uncached);
    assert_int_equal(cache_files(cache), files + 1); /* a file of the new build beside the old */
    /* The old trace against the new file: a mismatch, never cached lines. */
    char *old_again = resolve(old_trace, cache, NULL);
    assert_int_equal(h_count_lines(old_again, "alloc_direct"), 0);
    free(old_again);
    free(cached);
    free(uncached);
    free(new_trace);
    free(old_trace);
    free(exe);
    free(cache);
}

/* Resolved without its debug file first (cached as "from MODULE"), then
 * with --debug-dir: the better answer, not the cached one. */
static void debug_dir_added_later_gives_the_better_answer(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *cache = h_fmt("%s/cache", dir);
    char *exe = program("resolve_app_stripped");
    char *trace = trace_program(dir, "t", exe);
    char *debug = program("resolve_debug");
    char *without = resolve(trace, cache, NULL);
    assert_int_equal(h_count_lines(without, "alloc_direct"), 0);
    char *with = resolve(trace, cache, debug);
    char *expected = resolve(trace, NULL, debug);
    assert_string_equal(with, expected);
    assert_true(h_count_lines(with, "alloc_direct\\(\\) at " APP_SRC ":") > 0);
    char *without_again = resolve(trace, cache, NULL); /* and the old answer stays right too */
    assert_string_equal(without_again, without);
    free(without_again);
    free(expected);
    free(with);
    free(without);
    free(debug);
    free(trace);
    free(exe);
    free(cache);
}

/* Every cache file cut short, or filled with garbage: the output is still
 * right, and the files are whole again afterwards. */
static void corrupt_cache_files_are_ignored(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *cache = h_fmt("%s/cache", dir);
    char *exe = program("resolve_app_O2");
    char *trace = trace_program(dir, "t", exe);
    char *expected = resolve(trace, NULL, NULL);
    free(resolve(trace, cache, NULL));
    /* Cut: drop the closing "end N" line and garble an entry's text. */
    h_result c = h_sh("cd %s && for f in *.cache; do sed -i -e '$d' -e '2s|\\t.*|\\twrong() at /x.c:1|' \"$f\"; done",
                      cache);
    assert_int_equal(c.status, 0);
    h_result_free(&c);
    char *out = resolve(trace, cache, NULL);
    assert_string_equal(out, expected);
    free(out);
    c = h_sh("grep -L '^end [0-9]*$' %s/*.cache", cache); /* files without an end line */
    assert_string_equal(c.out, "");
    h_result_free(&c);
    c = h_sh("cd %s && for f in *.cache; do head -c 300 /dev/urandom > \"$f\"; done", cache);
    h_result_free(&c);
    out = resolve(trace, cache, NULL);
    assert_string_equal(out, expected);
    free(out);
    free(expected);
    free(trace);
    free(exe);
    free(cache);
}

/* The gate passes --cache-dir and --no-cache to the post-processor. */
static void gate_takes_cache_options(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *cache = h_fmt("%s/cache", dir);
    char *check = h_path("scripts/alloctrace-check");
    char *exe = program("resolve_app_O0");
    const char *with[] = { check, "--cache-dir", cache, "--", exe, NULL };
    h_result a = h_run(with, NULL, NULL);
    assert_true(cache_files(cache) >= 2);
    h_result b = h_run(with, NULL, NULL);
    assert_int_equal(a.status, b.status);
    const char *without[] = { check, "--no-cache", "--", exe, NULL };
    h_result n = h_run(without, NULL, NULL);
    assert_int_equal(n.status, a.status);
    /* The reports differ only in pids and trace paths. */
    assert_int_equal(h_count_lines(a.err, " at "), h_count_lines(b.err, " at "));
    assert_int_equal(h_count_lines(a.err, " at "), h_count_lines(n.err, " at "));
    h_result_free(&a);
    h_result_free(&b);
    h_result_free(&n);
    free(exe);
    free(check);
    free(cache);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(second_run_is_byte_identical, teardown),
        cmocka_unit_test_teardown(rebuilt_program_is_not_served_from_the_cache, teardown),
        cmocka_unit_test_teardown(debug_dir_added_later_gives_the_better_answer, teardown),
        cmocka_unit_test_teardown(corrupt_cache_files_are_ignored, teardown),
        cmocka_unit_test_teardown(gate_takes_cache_options, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
