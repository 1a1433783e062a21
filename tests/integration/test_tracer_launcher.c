/*
 * tests/integration/test_tracer_launcher.c: scripts/alloctrace - options
 * become the tracer's settings, the program's exit status comes back, and
 * the closing lines say where the trace is and what it holds.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#include <sys/stat.h>
#include <unistd.h>

static h_result launch(const char *cwd, const char *const args[], const char *const env[])
{
    char *launcher = h_path("scripts/alloctrace");
    const char *argv[16] = { launcher };
    for (int i = 0; args[i] && i < 15; i++)
        argv[i + 1] = args[i];
    h_result r = h_run(argv, env, cwd);
    free(launcher);
    return r;
}

static void test_help_lists_every_option(void **state)
{
    (void)state;
    const char *args[] = { "--help", NULL };
    h_result r = launch(NULL, args, NULL);
    assert_int_equal(r.status, 0);
    const char *opts[] = { "--output", "--depth", "--no-timestamps", "--free-backtraces",
                           "--start-disabled", "--toggle-signal", "--follow-fork",
                           "--no-follow-fork", "--follow-exec", "--mode", "--version" };
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        assert_non_null(strstr(r.out, opts[i]));
    h_result_free(&r);
    const char *v[] = { "--version", NULL };
    r = launch(NULL, v, NULL);
    assert_int_equal(r.status, 0);
    char *want = h_fmt("alloctrace %s\n", AT_VERSION);
    assert_string_equal(r.out, want);
    free(want);
    h_result_free(&r);
}

static void test_default_trace_named_for_program_and_pid_and_summarised(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *prog = h_path("build/tests/programs/tracer_calls");
    const char *args[] = { prog, NULL };
    h_result r = launch(dir, args, NULL);
    assert_int_equal(r.status, 0);
    char *line = h_find_line(r.err, "^alloctrace: trace: alloctrace\\.tracer_calls\\.[0-9]+\\.txt(\\.zst)? \\([0-9.]+ (bytes|kB)( zstd)?, [0-9]+ events\\)$");
    assert_non_null(line);
    char name[256];
    unsigned long events;
    double size;
    char unit[16];
    assert_int_equal(sscanf(line, "alloctrace: trace: %255s (%lf %15[^,], %lu events)", name, &size,
                            unit, &events), 4);
    char *path = h_fmt("%s/%s", dir, name);
    struct t_trace t = t_load(path);   /* the text, decompressed when zstd */
    assert_int_equal(t.n, events);
    /* The size is the file's, as it lies on disk (compressed or not). */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    double bytes = strncmp(unit, "kB", 2) == 0 ? size * 1000 : size;
    assert_true(bytes - 50 <= (double)st.st_size && (double)st.st_size <= bytes + 50);
    assert_int_equal(strstr(unit, "zstd") != NULL, t_zstd("full"));
    /* Not installed: the post-processor of the build tree, by its path. */
    char *analyse = h_fmt("^alloctrace: analyse it with: %s/postproc/alloctrace-postproc -l -c -r %s$",
                          h_root(), name);
    assert_int_equal(h_count_lines(r.err, analyse), 1);
    t_free(&t);
    free(analyse);
    free(path);
    free(line);
    free(prog);
    h_result_free(&r);
    h_cleanup();
}

static void test_exit_status_is_the_programs(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *prog = h_path("build/tests/programs/tracer_process");
    const char *args[] = { "-q", prog, "_exit", NULL };
    h_result r = launch(dir, args, NULL);
    assert_int_equal(r.status, 4);
    assert_string_equal(r.err, "");   /* -q: no summary */
    h_result_free(&r);
    const char *args2[] = { "-q", prog, "abort", NULL };
    r = launch(dir, args2, NULL);
    assert_int_equal(r.status, 128 + 6);
    h_result_free(&r);
    free(prog);
    h_cleanup();
}

static void test_options_reach_the_tracer(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *out = h_fmt("%s/t.%%p.txt", dir);
    char *prog = h_path("build/tests/programs/tracer_leaks");
    const char *args[] = { "-o", out, "--depth=3", "--no-timestamps", "--mode", "leaks", "--", prog, NULL };
    h_result r = launch(dir, args, NULL);
    assert_int_equal(r.status, 0);
    char *line = h_find_line(r.err, "^alloctrace: trace: .*/t\\.[0-9]+\\.txt(\\.zst)? \\([0-9.]+ (bytes|kB)( zstd)?, 2 blocks alive at exit\\)$");
    assert_non_null(line);
    char path[1024];
    assert_int_equal(sscanf(line, "alloctrace: trace: %1023s", path), 1);
    struct t_trace t = t_load(path);
    assert_non_null(strstr(t.header, ", filter=leaks|compress, backtrace depth=3, "));
    assert_int_equal(t.n, 2);
    assert_false(t.recs[0].has_time);
    assert_true(t.recs[0].nframes <= 3);
    t_free(&t);
    free(line);
    free(prog);
    free(out);
    h_result_free(&r);
    h_cleanup();
}

static size_t count_files(const char *dir, const char *re)
{
    h_result ls = h_sh("ls %s", dir);
    size_t n = h_count_lines(ls.out, re);
    h_result_free(&ls);
    return n;
}

static void test_follow_options_reach_the_tracer(void **state)
{
    (void)state;
    char *prog = h_path("build/tests/programs/tracer_process");
    char *dir = h_tmpdir();
    char *out = h_fmt("%s/t.txt", dir);
    const char *a1[] = { "-q", "--no-follow-fork", "-o", out, prog, "fork", NULL };
    h_result r = launch(dir, a1, NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(count_files(dir, "^t\\.txt"), 1);   /* no child file */
    h_result_free(&r);
    char *dir2 = h_tmpdir();
    char *out2 = h_fmt("%s/t.txt", dir2);
    const char *a2[] = { "-q", "--follow-exec", "-o", out2, prog, "fork-exec", NULL };
    r = launch(dir2, a2, NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(count_files(dir2, "^t\\.txt$"), 1);
    assert_int_equal(count_files(dir2, "^t\\.txt\\.2$"), 1);   /* /bin/true's own trace */
    h_result_free(&r);
    free(out);
    free(out2);
    free(prog);
    h_cleanup();
}

static void test_bad_options_fail_clearly(void **state)
{
    (void)state;
    const char *a1[] = { "--depth", "999", "/bin/true", NULL };
    h_result r = launch(NULL, a1, NULL);
    assert_int_equal(r.status, 2);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: --depth 999: expected a number from 0 to 256$"), 1);
    h_result_free(&r);
    const char *a2[] = { "--frobnicate", "/bin/true", NULL };
    r = launch(NULL, a2, NULL);
    assert_int_equal(r.status, 2);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: unknown option --frobnicate"), 1);
    h_result_free(&r);
    const char *a3[] = { NULL };
    r = launch(NULL, a3, NULL);
    assert_int_equal(r.status, 2);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: no program given"), 1);
    h_result_free(&r);
    const char *a4[] = { "--mode", "some", "/bin/true", NULL };
    r = launch(NULL, a4, NULL);
    assert_int_equal(r.status, 2);
    h_result_free(&r);
}

static void test_existing_ld_preload_is_kept(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    const char *args[] = { "-q", "/bin/sh", "-c", "echo \"[$LD_PRELOAD]\"", NULL };
    const char *env[] = { "LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6", NULL };
    h_result r = launch(dir, args, env);
    assert_int_equal(r.status, 0);
    /* The tracer removed only its own entry for the shell's children. */
    assert_string_equal(r.out, "[/lib/x86_64-linux-gnu/libm.so.6]\n");
    h_result ls = h_sh("ls %s", dir);
    assert_int_equal(h_count_lines(ls.out, "^alloctrace\\.sh\\.[0-9]+\\.txt(\\.zst)?$"), 1);
    h_result_free(&ls);
    h_result_free(&r);
    h_cleanup();
}

static void test_static_and_setuid_programs_are_warned_about(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    if (access("/sbin/ldconfig", X_OK) == 0) {
        const char *args[] = { "-q", "/sbin/ldconfig", "--version", NULL };
        h_result r = launch(dir, args, NULL);
        assert_int_equal(r.status, 0);
        assert_int_equal(h_count_lines(r.err, "^alloctrace: warning: .*ldconfig is statically linked"), 1);
        h_result_free(&r);
    }
    if (access("/bin/su", X_OK) == 0) {
        const char *args[] = { "-q", "/bin/su", "--help", NULL };
        h_result r = launch(dir, args, NULL);
        /* Root runs root's setuid su with its own ids: traced, not warned about. */
        assert_int_equal(h_count_lines(r.err, "^alloctrace: warning: .*su is setuid"),
                         geteuid() == 0 ? 0 : 1);
        h_result_free(&r);
    }
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_lists_every_option),
        cmocka_unit_test(test_default_trace_named_for_program_and_pid_and_summarised),
        cmocka_unit_test(test_exit_status_is_the_programs),
        cmocka_unit_test(test_options_reach_the_tracer),
        cmocka_unit_test(test_follow_options_reach_the_tracer),
        cmocka_unit_test(test_bad_options_fail_clearly),
        cmocka_unit_test(test_existing_ld_preload_is_kept),
        cmocka_unit_test(test_static_and_setuid_programs_are_warned_about),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
