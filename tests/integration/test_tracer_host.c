/*
 * tests/integration/test_tracer_host.c: the tracer leaves its host alone.
 * Each case runs tests/programs/tracer_host plain and traced, in full and
 * in leaks mode, from a shell line (so limits can be set before the
 * program starts), and compares exit status, standard output and the
 * files the program wrote; the trace must be whole and hold the program's
 * allocations.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#include <unistd.h>

static const char *const modes[] = { "full", "leaks" };

/* What `tracer_host errno` prints when errno was never changed under it. */
#define ERRNO_KEPT "errno changed 0 times; failing malloc: NULL, errno ENOMEM\n"

/* Runs `sh -c "SETUP exec [tracer] tracer_host ARGS"` in its own new
 * directory (returned through *dirp); mode NULL runs plain. The trace is
 * DIR/trace.txt. */
static h_result host(char **dirp, const char *mode, const char *setup, const char *args)
{
    char *dir = h_tmpdir();
    char *prog = h_path("build/tests/programs/tracer_host");
    char *pre = mode ? h_fmt("env LD_PRELOAD=%s/preload/liballoctrace.so "
                             "ALLOCTRACE_OUTPUT=%s/trace.txt ALLOCTRACE_MODE=%s ",
                             h_root(), dir, mode)
                     : h_fmt("%s", "");
    h_result r = h_sh("cd '%s' && %s exec %s'%s' %s", dir, setup ? setup : "", pre, prog, args);
    free(pre);
    free(prog);
    *dirp = dir;
    return r;
}

static char *read_in(const char *dir, const char *file)
{
    char *path = h_fmt("%s/%s", dir, file);
    char *text = h_read_file(path, NULL);
    free(path);
    return text;
}

/* The trace of a traced run is whole; in full mode it holds the churn's
 * allocations (every host churns 1000 blocks or more of 10..209 bytes, 5 of each size). */
static void check_trace(const char *dir, const char *mode)
{
    char *path = h_fmt("%s/trace.txt", dir);
    struct t_trace t = t_load(path);
    assert_true(t.complete);
    if (strcmp(mode, "full") == 0)
        assert_true(t_count_allocs(&t, 50) >= 5);
    else
        assert_true(t.leak_summary);
    t_free(&t);
    free(path);
}

/* Runs the case plain, then traced in both modes; the same status, output
 * and file `file` (NULL: none) each time. Returns the plain output. */
static char *same_as_plain(const char *setup, const char *args, const char *file)
{
    char *dir;
    h_result plain = host(&dir, NULL, setup, args);
    char *want = file ? read_in(dir, file) : NULL;
    if (file)
        assert_non_null(want);
    for (size_t m = 0; m < 2; m++) {
        char *tdir;
        h_result r = host(&tdir, modes[m], setup, args);
        if (r.status != plain.status || strcmp(r.out, plain.out) != 0)
            fail_msg("%s mode: status %d, output \"%s\"; plain: %d, \"%s\"; stderr: %s",
                     modes[m], r.status, r.out, plain.status, plain.out, r.err);
        if (file) {
            char *got = read_in(tdir, file);
            assert_non_null(got);
            if (strcmp(got, want) != 0)
                fail_msg("%s mode: %s differs from the plain run's", modes[m], file);
            free(got);
        }
        check_trace(tdir, modes[m]);
        h_result_free(&r);
    }
    free(want);
    char *out = plain.out;
    plain.out = NULL;
    h_result_free(&plain);
    return out;
}

static void closeall(const char *how)
{
    char *args = h_fmt("closeall in.txt out.txt %s", how);
    /* in.txt is made in each run's directory by the setup line. */
    char *out = same_as_plain("seq 1 3000 > in.txt &&", args, "out.txt");
    assert_string_equal(out, "in=3 out=4 copied 13893 bytes\n");
    free(out);
    free(args);
}

static void test_close_loop_then_open_files_in_the_freed_numbers(void **state)
{
    (void)state;
    closeall("loop");
}

static void test_close_range_then_open_files_in_the_freed_numbers(void **state)
{
    (void)state;
    closeall("range");
}

static void test_closefrom_then_open_files_in_the_freed_numbers(void **state)
{
    (void)state;
    closeall("from");
}

static void test_daemon_closing_0_to_2_keeps_its_log(void **state)
{
    (void)state;
    char *out = same_as_plain(NULL, "daemon log.txt", "log.txt");
    assert_string_equal(out, "");
    free(out);
    char *dir;
    h_result r = host(&dir, "full", NULL, "daemon log.txt");
    char *log = read_in(dir, "log.txt");
    assert_int_equal(h_count_lines(log, "^line [0-9]+ of the log$"), 101);
    assert_int_equal(h_count_lines(log, "^stdin=0 stdout=1 stderr=2$"), 1);
    free(log);
    h_result_free(&r);
}

static void test_dup2_onto_1000_survives_fork(void **state)
{
    (void)state;
    char *out = same_as_plain(NULL, "dup2fork file.txt", "file.txt");
    assert_string_equal(out, "child status 0, parent write ok\n");
    free(out);
}

static void test_errno_kept_by_successful_calls_in_8_threads(void **state)
{
    (void)state;
    char *out = same_as_plain(NULL, "errno", NULL);
    assert_string_equal(out, ERRNO_KEPT);
    free(out);
}

/* The trace's file cannot grow past 1 KiB (EFBIG, SIGXFSZ ignored): every
 * write of the tracer fails, the program's errno must not see it. */
static void test_errno_kept_when_the_trace_cannot_be_written(void **state)
{
    (void)state;
    for (size_t m = 0; m < 2; m++) {
        char *dir;
        h_result r = host(&dir, modes[m], "trap '' XFSZ; ulimit -f 2;", "errno");
        assert_int_equal(r.status, 0);
        assert_string_equal(r.out, ERRNO_KEPT);
        h_result_free(&r);
    }
}

/* A real full disk: a 64 KiB tmpfs in a mount namespace of its own (root
 * only; skipped otherwise). */
static void test_errno_kept_on_a_full_disk(void **state)
{
    (void)state;
    h_result probe = h_sh("unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs /mnt' 2>&1");
    int can = probe.status == 0;
    h_result_free(&probe);
    if (!can) {
        print_message("skipped: cannot mount a small tmpfs here (needs root and unshare)\n");
        skip();
    }
    char *prog = h_path("build/tests/programs/tracer_host");
    for (size_t m = 0; m < 2; m++) {
        h_result r = h_sh("unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs /mnt && "
                          "exec env LD_PRELOAD=%s/preload/liballoctrace.so "
                          "ALLOCTRACE_OUTPUT=/mnt/trace.txt ALLOCTRACE_MODE=%s %s errno'",
                          h_root(), modes[m], prog);
        assert_int_equal(r.status, 0);
        assert_string_equal(r.out, ERRNO_KEPT);
        h_result_free(&r);
    }
    free(prog);
}

static void test_soft_limit_of_4_descriptors(void **state)
{
    (void)state;
    char *out = same_as_plain("ulimit -S -n 4;", "nofile", NULL);
    assert_non_null(strstr(out, "limit 4: 1 opened: 3; then Too many open files\n"));
    free(out);
}

/* The program exits holding every number its soft limit allows: the
 * trace is written at exit through one number borrowed above the limit. */
static void test_soft_limit_all_in_use_at_exit(void **state)
{
    (void)state;
    char *out = same_as_plain("ulimit -S -n 16;", "nofile keep", NULL);
    assert_non_null(strstr(out, "then Too many open files\n"));
    free(out);
}

/* Soft and hard limit 4, every number in use at exit: the trace cannot be
 * opened; the program runs as plain and the tracer says so in one line. */
static void test_hard_limit_all_in_use_at_exit_is_said_in_one_line(void **state)
{
    (void)state;
    char *dir;
    h_result plain = host(&dir, NULL, "ulimit -n 4;", "nofile keep");
    for (size_t m = 0; m < 2; m++) {
        h_result r = host(&dir, modes[m], "ulimit -n 4;", "nofile keep");
        assert_int_equal(r.status, plain.status);
        assert_string_equal(r.out, plain.out);
        assert_int_equal(h_count_lines(r.err, "^alloctrace: .*/trace\\.txt: cannot open the trace to write "
                                              "it, records are lost: Too many open files$"), 1);
        assert_int_equal(h_count_lines(r.err, ""), 1);   /* that line only */
        h_result_free(&r);
    }
    h_result_free(&plain);
}

static void test_hard_limit_of_16_descriptors(void **state)
{
    (void)state;
    char *out = same_as_plain("ulimit -n 16;", "nofile", NULL);
    assert_non_null(strstr(out, "limit 16: "));
    free(out);
}

static void test_sigalrm_every_100us(void **state)
{
    (void)state;
    char *out = same_as_plain(NULL, "alarm", NULL);
    assert_string_equal(out, "lines echoed 3000 of 3000; errno changed 0 times; alarms seen\n");
    free(out);
}

/* ---- start-up ----------------------------------------------------------- */

/* The tracer finds the local time without localtime_r: the zone glibc
 * frees at the program's tzset is one the program's own calls loaded. */
static void test_program_tzset_frees_only_what_it_allocated(void **state)
{
    (void)state;
    char *out = same_as_plain(NULL, "tz", NULL);
    assert_string_equal(out, "Paris 23, New York 17\n");
    free(out);
    char *dir;
    h_result r = host(&dir, "full", NULL, "tz");
    char *path = h_fmt("%s/trace.txt", dir);
    struct t_trace t = t_load(path);
    assert_true(t.n > 4);
    assert_int_equal(t_unpaired_releases(&t), 0);
    t_free(&t);
    free(path);
    h_result_free(&r);
}

/* ---- other allocators ------------------------------------------------- */

static const char *const allocators[] = {
    "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
};

/* tracer_process fork-threads (three threads allocate while main forks 50
 * children that allocate 888) with `preload` as LD_PRELOAD, in its own
 * directory; traces DIR/t.PID. */
static h_result fork_threads(char **dirp, const char *preload, const char *mode)
{
    char *dir = h_tmpdir();
    char *prog = h_path("build/tests/programs/tracer_process");
    h_result r = h_sh("cd '%s' && LD_PRELOAD='%s' ALLOCTRACE_OUTPUT='%s/t.%%p' ALLOCTRACE_MODE=%s "
                      "exec '%s' fork-threads", dir, preload, dir, mode, prog);
    free(prog);
    *dirp = dir;
    return r;
}

static void test_tracer_first_over_jemalloc_and_tcmalloc(void **state)
{
    (void)state;
    int tried = 0;
    for (size_t a = 0; a < 2; a++) {
        if (access(allocators[a], R_OK) != 0) {
            print_message("skipped %s: not installed\n", allocators[a]);
            continue;
        }
        tried++;
        char *lib = h_fmt("%s/preload/liballoctrace.so:%s", h_root(), allocators[a]);
        for (size_t m = 0; m < 2; m++) {
            char *dir;
            h_result r = fork_threads(&dir, lib, modes[m]);
            assert_int_equal(r.status, 0);
            assert_string_equal(r.out, "forks 50\n");
            assert_string_equal(r.err, "");
            /* errno in 8 threads, and ENOMEM from the allocator itself. */
            char *host_prog = h_path("build/tests/programs/tracer_host");
            h_result e = h_sh("LD_PRELOAD='%s' ALLOCTRACE_OUTPUT='%s/e.%%p' ALLOCTRACE_MODE=%s '%s' errno",
                              lib, dir, modes[m], host_prog);
            assert_string_equal(e.out, ERRNO_KEPT);
            h_result_free(&e);
            free(host_prog);
            if (m == 0) {   /* full mode: every child's 888 is in its trace */
                h_result c = h_sh("ls '%s'/t.*", dir);
                size_t with = 0;
                for (char *name = strtok(c.out, "\n"); name; name = strtok(NULL, "\n")) {
                    char *text = h_read_file(name, NULL);   /* plain or zstd */
                    with += text && h_count_lines(text, "^[0-9]+\\. .*malloc\\(888\\) = ") > 0;
                    free(text);
                }
                assert_int_equal(with, 50);
                h_result_free(&c);
            }
            h_result_free(&r);
        }
        free(lib);
    }
    if (!tried)
        skip();
}

static void test_allocator_first_is_named_and_nothing_is_written(void **state)
{
    (void)state;
    int tried = 0;
    for (size_t a = 0; a < 2; a++) {
        if (access(allocators[a], R_OK) != 0)
            continue;
        tried++;
        char *lib = h_fmt("%s:%s/preload/liballoctrace.so", allocators[a], h_root());
        char *dir;
        h_result r = fork_threads(&dir, lib, "full");
        assert_int_equal(r.status, 0);
        assert_string_equal(r.out, "forks 50\n");
        char *want = h_fmt("alloctrace: malloc is taken by %s, loaded before the tracer: put "
                           "liballoctrace.so first in LD_PRELOAD; running untraced\n", allocators[a]);
        assert_string_equal(r.err, want);
        h_result n = h_sh("ls '%s' | wc -l", dir);
        assert_string_equal(n.out, "0\n");
        h_result_free(&n);
        free(want);
        h_result_free(&r);
        free(lib);
    }
    if (!tried)
        skip();
}

/* ---- the launcher ------------------------------------------------------ */

static void test_launcher_finds_a_scripts_trace_by_pid(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    h_result r = h_sh("cd '%s' && printf '#!/bin/sh\\necho from the script\\n' > s.sh && "
                      "chmod +x s.sh && '%s/scripts/alloctrace' -- ./s.sh", dir, h_root());
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "from the script\n");
    /* The trace is named for the interpreter, found by the pid. */
    char *line = h_find_line(r.err, "^alloctrace: trace: alloctrace\\.[a-z]+\\.[0-9]+\\.txt(\\.zst)? \\([0-9.]+ (bytes|kB)( zstd)?, [0-9]+ events\\)$");
    assert_non_null(line);
    char name[256];
    assert_int_equal(sscanf(line, "alloctrace: trace: %255s", name), 1);
    char *path = h_fmt("%s/%s", dir, name);
    assert_int_equal(access(path, R_OK), 0);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: note: \\./s\\.sh ran as [a-z]+ \\(a script or a "
                                          "shim\\); --follow-exec traces the programs it runs too$"), 1);
    free(path);
    free(line);
    h_result_free(&r);
}

/* A shim (as pyenv's python3): a script that execs the real program. With
 * --follow-exec every image of the pid has a trace; the launcher names
 * the last one, the real program's. */
static void test_launcher_names_the_real_program_behind_a_shim(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *prog = h_path("build/tests/programs/tracer_calls");
    h_result r = h_sh("cd '%s' && printf '#!/bin/sh\\nexec %s \\\"$@\\\"\\n' > shim && chmod +x shim && "
                      "'%s/scripts/alloctrace' --follow-exec -- ./shim", dir, prog, h_root());
    assert_int_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: trace: alloctrace\\.tracer_calls\\.[0-9]+\\.txt(\\.zst)? "
                                          "\\([0-9.]+ (bytes|kB)( zstd)?, [0-9]+ events\\)$"), 1);
    assert_null(strstr(r.err, "note:"));
    h_result ls = h_sh("ls '%s'", dir);
    assert_int_equal(h_count_lines(ls.out, "^alloctrace\\.sh\\.[0-9]+\\.txt(\\.zst)?$"), 1);
    h_result_free(&ls);
    free(prog);
    h_result_free(&r);
}

/* A setuid program of our own is traced (the loader keeps LD_PRELOAD when
 * the ids do not change); one of another owner is not, and only then does
 * the launcher warn (that half needs root to chown). */
static void test_launcher_warns_about_setuid_only_when_it_applies(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *prog = h_path("build/tests/programs/tracer_calls");
    h_result r = h_sh("cd '%s' && cp '%s' own && chmod u+s own && '%s/scripts/alloctrace' ./own",
                      dir, prog, h_root());
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "setuid"));
    assert_int_equal(h_count_lines(r.err, "^alloctrace: trace: alloctrace\\.own\\.[0-9]+\\.txt"), 1);
    h_result_free(&r);
    if (geteuid() != 0) {
        print_message("skipped the other-owner half: needs root to chown\n");
        free(prog);
        return;
    }
    r = h_sh("cd '%s' && cp '%s' other && chown nobody other && chmod u+s other && "
             "'%s/scripts/alloctrace' ./other; ls", dir, prog, h_root());
    assert_int_equal(h_count_lines(r.err, "setuid/setgid; the loader ignores LD_PRELOAD for it, "
                                          "so nothing will be traced$"), 1);
    assert_int_equal(h_count_lines(r.out, "^alloctrace\\.other\\."), 0);
    h_result_free(&r);
    free(prog);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_close_loop_then_open_files_in_the_freed_numbers, h_teardown),
        cmocka_unit_test_teardown(test_close_range_then_open_files_in_the_freed_numbers, h_teardown),
        cmocka_unit_test_teardown(test_closefrom_then_open_files_in_the_freed_numbers, h_teardown),
        cmocka_unit_test_teardown(test_daemon_closing_0_to_2_keeps_its_log, h_teardown),
        cmocka_unit_test_teardown(test_dup2_onto_1000_survives_fork, h_teardown),
        cmocka_unit_test_teardown(test_errno_kept_by_successful_calls_in_8_threads, h_teardown),
        cmocka_unit_test_teardown(test_errno_kept_when_the_trace_cannot_be_written, h_teardown),
        cmocka_unit_test_teardown(test_errno_kept_on_a_full_disk, h_teardown),
        cmocka_unit_test_teardown(test_soft_limit_of_4_descriptors, h_teardown),
        cmocka_unit_test_teardown(test_soft_limit_all_in_use_at_exit, h_teardown),
        cmocka_unit_test_teardown(test_hard_limit_all_in_use_at_exit_is_said_in_one_line, h_teardown),
        cmocka_unit_test_teardown(test_hard_limit_of_16_descriptors, h_teardown),
        cmocka_unit_test_teardown(test_sigalrm_every_100us, h_teardown),
        cmocka_unit_test_teardown(test_program_tzset_frees_only_what_it_allocated, h_teardown),
        cmocka_unit_test_teardown(test_tracer_first_over_jemalloc_and_tcmalloc, h_teardown),
        cmocka_unit_test_teardown(test_allocator_first_is_named_and_nothing_is_written, h_teardown),
        cmocka_unit_test_teardown(test_launcher_finds_a_scripts_trace_by_pid, h_teardown),
        cmocka_unit_test_teardown(test_launcher_names_the_real_program_behind_a_shim, h_teardown),
        cmocka_unit_test_teardown(test_launcher_warns_about_setuid_only_when_it_applies, h_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
