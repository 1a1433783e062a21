/*
 * tests/integration/test_cli.c: the command line speaks with one voice.
 * Every help text has the same "Usage:" form, every mode answers
 * --version, errors are one line starting with the name the user typed,
 * bad values stop before the program starts, short options bundle, and
 * each documented exit status is the one a user gets (README.md, "Exit
 * status").
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAUNCHER "scripts/alloctrace"
#define POSTPROC "postproc/alloctrace-postproc"

/* Runs a shell command line in a new temporary directory, with the build
 * tree's root as $R. */
static h_result in_tmp(const char *fmt, const char *arg)
{
    char *cmd = h_fmt(fmt, arg);
    h_result r = h_sh("cd '%s' && R='%s' && %s", h_tmpdir(), h_root(), cmd);
    free(cmd);
    return r;
}

static void every_help_starts_with_the_same_usage_form(void **state)
{
    (void)state;
    const char *cmds[] = { LAUNCHER " --help", LAUNCHER " --check --help", POSTPROC " --help",
                           POSTPROC " --gate --help", "scripts/alloctrace-check --help" };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        h_result r = h_sh("%s/%s", h_root(), cmds[i]);
        assert_int_equal(r.status, 0);
        if (strncmp(r.out, "Usage: ", 7) != 0)
            fail_msg("%s: help starts with %.30s", cmds[i], r.out);
        assert_string_equal(r.err, "");
        h_result_free(&r);
    }
}

static void version_works_in_every_mode(void **state)
{
    (void)state;
    const char *cmds[][2] = {
        { LAUNCHER " --version", "alloctrace" }, { LAUNCHER " -V", "alloctrace" },
        { LAUNCHER " --check --version", "alloctrace" }, { LAUNCHER " --check -V", "alloctrace" },
        { POSTPROC " --version", "alloctrace-postproc" },
        { POSTPROC " --gate --version", "alloctrace-postproc" },
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        h_result r = h_sh("%s/%s", h_root(), cmds[i][0]);
        assert_int_equal(r.status, 0);
        char *want = h_fmt("%s %s\n", cmds[i][1], AT_VERSION);
        assert_string_equal(r.out, want);
        free(want);
        h_result_free(&r);
    }
}

static void check_errors_start_with_alloctrace(void **state)
{
    (void)state;
    /* The script's own error, and one found by the post-processor's gate. */
    h_result a = in_tmp("$R/" LAUNCHER " --check --no-such-option -- true%s", "");
    assert_int_equal(a.status, 2);
    assert_string_equal(a.err, "alloctrace: unknown option '--no-such-option' (see --help)\n");
    h_result_free(&a);
    h_result b = in_tmp("echo 'functions contains [ main' > bad.supp && "
                        "$R/" LAUNCHER " --check --suppressions bad.supp -- true%s", "");
    assert_int_equal(b.status, 2);
    assert_string_equal(b.err, "alloctrace: bad.supp:1:26: missing ']' to close the list opened at column 20\n");
    h_result_free(&b);
    h_cleanup();
}

/* The gate's values and files are checked before the program runs: a
 * test suite that takes an hour does not run for nothing. */
static void check_refuses_bad_values_before_the_program(void **state)
{
    (void)state;
    const char *cases[][2] = {
        { "--suppressions no.supp", "alloctrace: no.supp: No such file or directory\n" },
        { "--baseline no.base", "alloctrace: no.base: No such file or directory\n" },
        { "--json no/dir/r.json", "alloctrace: --json no/dir/r.json: cannot be written: No such file or directory\n" },
        { "--junit no/dir/r.xml", "alloctrace: --junit no/dir/r.xml: cannot be written: No such file or directory\n" },
        { "--depth 300", "alloctrace: --depth 300: expected a number from 0 to 256\n" },
        { "--process '('", "alloctrace: --process: bad regular expression '('\n" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        h_result r = in_tmp("$R/" LAUNCHER " --check %s -- touch ran; echo $?; ls", cases[i][0]);
        assert_string_equal(r.out, "2\n"); /* and no file "ran" */
        assert_string_equal(r.err, cases[i][1]);
        h_result_free(&r);
    }
    h_cleanup();
}

static void launcher_bundles_short_options(void **state)
{
    (void)state;
    /* -qd3 is -q -d 3; -ot.txt is -o t.txt. */
    h_result r = in_tmp("$R/" LAUNCHER " -qd3 -ot.txt -- $R/build/tests/programs/tracer_calls >/dev/null"
                        " && zstd -dcqf t.txt | grep -c 'backtrace depth=3'%s", "");   /* plain or zstd */
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "1\n");
    assert_string_equal(r.err, ""); /* -q took effect */
    h_result_free(&r);
    h_result bad = in_tmp("$R/" LAUNCHER " -qx -- true%s", "");
    assert_int_equal(bad.status, 2);
    assert_string_equal(bad.err, "alloctrace: unknown option -x (see --help)\n");
    h_result_free(&bad);
    h_cleanup();
}

static void postproc_bundles_short_options(void **state)
{
    (void)state;
    h_result r = in_tmp("$R/" LAUNCHER " -q -o t.txt -- $R/build/tests/programs/tracer_leaks >/dev/null && "
                        "$R/" POSTPROC " -lcq t.txt > bundled && $R/" POSTPROC " -l -c -q t.txt > apart"
                        " && cmp bundled apart && grep -c '^# allocation summary' bundled%s", "");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "2\n");
    h_result_free(&r);
    h_cleanup();
}

static void bad_toggle_signal_stops_before_the_program(void **state)
{
    (void)state;
    h_result r = in_tmp("$R/" LAUNCHER " --toggle-signal FOO -- touch ran; echo $?; ls%s", "");
    assert_string_equal(r.out, "2\n"); /* and no file "ran" */
    assert_string_equal(r.err, "alloctrace: --toggle-signal FOO: expected a signal such as USR2, "
                               "SIGUSR1, RTMIN+3 or a number\n");
    h_result_free(&r);
    /* What the tracer accepts, the launcher accepts. */
    h_result ok = in_tmp("$R/" LAUNCHER " -q --toggle-signal sigusr2 -o a.txt -- true && "
                         "$R/" LAUNCHER " -q --toggle-signal RTMIN+3 -o b.txt -- true && ls%s", "");
    assert_int_equal(ok.status, 0);
    assert_string_equal(ok.out, "a.txt\nb.txt\n");
    h_result_free(&ok);
    h_cleanup();
}

static void output_in_a_missing_directory_stops_before_the_program(void **state)
{
    (void)state;
    h_result r = in_tmp("$R/" LAUNCHER " -o no/such/t.txt -- touch ran; echo $?; ls%s", "");
    assert_string_equal(r.out, "2\n");
    assert_string_equal(r.err, "alloctrace: -o no/such/t.txt: directory no/such does not exist\n");
    h_result_free(&r);
    h_cleanup();
}

static void existing_output_is_refused_with_a_hint(void **state)
{
    (void)state;
    h_result r = in_tmp("echo old > t.txt && $R/" LAUNCHER " -o t.txt -- touch ran; echo $?; ls; cat t.txt%s",
                        "");
    assert_string_equal(r.out, "2\nt.txt\nold\n");
    assert_string_equal(r.err, "alloctrace: -o t.txt: file exists; alloctrace never overwrites a "
                               "trace (add --force, or use %p for the pid)\n");
    h_result_free(&r);
    h_cleanup();
}

static void force_overwrites_an_existing_output(void **state)
{
    (void)state;
    h_result r = in_tmp("echo old > t.txt && $R/" LAUNCHER " -q --force -o t.txt -- true && "
                        "zstd -dcqf t.txt | grep -c '^old$'; zstd -dcqf t.txt | grep -c '^version=2.0'%s",
                        "");
    assert_string_equal(r.out, "0\n1\n");
    h_result_free(&r);
    h_cleanup();
}

static void filter_error_names_its_column(void **state)
{
    (void)state;
    h_result r = in_tmp("$R/" POSTPROC " --filter 'size >= 4k && functions contains [ f' /dev/null%s", "");
    assert_int_equal(r.status, 2);
    assert_string_equal(r.err, "alloctrace-postproc: --filter: column 37: missing ']' to close the list "
                               "opened at column 34\n");
    h_result_free(&r);
    h_cleanup();
}

/* README.md: 0 ok, 1 a file could not be read or written, 2 usage error,
 * an input that is no trace at all, or a --strict error. */
static void postproc_exit_statuses_follow_the_readme(void **state)
{
    (void)state;
    const struct { const char *cmd; int status; const char *err; } cases[] = {
        { "printf 'version=2.0, arch=x86_64, \\n' | $R/" POSTPROC " -l >/dev/null", 0, "" },
        { "$R/" POSTPROC " -l /dev/null", 2, "^/dev/null:1: error: not a trace: the input is empty" },
        { "$R/" POSTPROC " /no/such/trace", 1, "^alloctrace-postproc: /no/such/trace: No such file" },
        { "$R/" POSTPROC " -o /no/such/dir/out /dev/null", 1, "^alloctrace-postproc: /no/such/dir/out: " },
        { "$R/" POSTPROC " --no-such-option", 2, "^alloctrace-postproc: bad option '--no-such-option'" },
        { "echo 'x(' | $R/" POSTPROC " --strict", 2, "^<stdin>:1: error: " },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        h_result r = in_tmp("%s", cases[i].cmd);
        if (r.status != cases[i].status)
            fail_msg("%s: status %d, expected %d (%s)", cases[i].cmd, r.status, cases[i].status, r.err);
        if (*cases[i].err)
            assert_int_equal(h_count_lines(r.err, cases[i].err), 1);
        else
            assert_string_equal(r.err, "");
        h_result_free(&r);
    }
    h_cleanup();
}

/* README.md: the program's own status, 2 when alloctrace refuses to start. */
static void launcher_exit_statuses_follow_the_readme(void **state)
{
    (void)state;
    const struct { const char *cmd; int status; } cases[] = {
        { "$R/" LAUNCHER " -q -o a.txt -- true", 0 },
        { "$R/" LAUNCHER " -q -o b.txt -- sh -c 'exit 7'", 7 },
        { "$R/" LAUNCHER " -q -o c.txt -- no-such-program-here", 2 },
        { "$R/" LAUNCHER " --depth 300 -- true", 2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        h_result r = in_tmp("%s", cases[i].cmd);
        if (r.status != cases[i].status)
            fail_msg("%s: status %d, expected %d (%s)", cases[i].cmd, r.status, cases[i].status, r.err);
        h_result_free(&r);
    }
    h_cleanup();
}

/* A trace of a few MB, read on a terminal (script(1) gives the command a
 * pty), shows "N of M MB read, R MB/s" on stderr; without a terminal, or
 * with -q, nothing. */
static void progress_shows_on_a_terminal_only(void **state)
{
    (void)state;
    if (access("/usr/bin/script", X_OK) != 0)
        skip();
    /* 10 MB: the header, then one malloc after another. */
    const char *make = "printf 'version=2.0, arch=x86_64, process=big, pid=1\\n' > big.txt && "
                       "awk 'BEGIN { for (i = 1; i <= 400000; i++) printf \"%d. malloc(16) = 0x%x\\n\\n\", "
                       "i, 4096 + 16 * i }' >> big.txt && ";
    h_result tty = in_tmp("%s script -qec \"$R/" POSTPROC " -o /dev/null big.txt\" /dev/null", make);
    assert_int_equal(tty.status, 0);
    assert_int_equal(h_count_lines(tty.out, "alloctrace-postproc: [0-9.]+ of 1[0-9]\\.[0-9] MB read, "
                                            "[0-9.]+ MB/s, done in [0-9.]+ s"), 1);
    h_result_free(&tty);
    h_result quiet = in_tmp("%s script -qec \"$R/" POSTPROC " -q -o /dev/null big.txt\" /dev/null", make);
    assert_int_equal(quiet.status, 0);
    assert_string_equal(quiet.out, "");
    h_result_free(&quiet);
    h_result pipe = in_tmp("%s $R/" POSTPROC " -o /dev/null big.txt", make);
    assert_int_equal(pipe.status, 0);
    assert_string_equal(pipe.err, "");
    h_result_free(&pipe);
    h_cleanup();
}

/* Without INPUT on a terminal the post-processor says so instead of
 * waiting for a trace to be typed (script(1) gives it a terminal). */
static void postproc_without_input_on_a_terminal_says_so(void **state)
{
    (void)state;
    if (access("/usr/bin/script", X_OK) != 0)
        skip();
    h_result r = in_tmp("script -qec \"$R/" POSTPROC " -l\" /dev/null%s", "");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.out, "alloctrace-postproc: no INPUT given and standard input is a terminal "
                                  "(see --help)"));
    h_result_free(&r);
    h_cleanup();
}

/* The launcher's closing line gives a command that runs where the user is:
 * here, not installed, the build tree's post-processor. */
static void analyse_command_runs_as_printed(void **state)
{
    (void)state;
    h_result r = in_tmp("$R/" LAUNCHER " -o t.txt -- $R/build/tests/programs/tracer_leaks 2>&1 >/dev/null | "
                        "sed -n 's/^alloctrace: analyse it with: //p' > cmd && sh cmd%s", "");
    assert_int_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.out, "^# allocation summary: "), 2);
    h_result_free(&r);
    h_cleanup();
}

/* Past 1 GB in full mode, the closing line's size says GB and one more
 * line suggests leaks mode. The program (sh) makes its own trace sparse
 * and large, so no gigabyte is written. */
static void huge_trace_suggests_leaks_mode(void **state)
{
    (void)state;
    h_result r = in_tmp("$R/" LAUNCHER " -o big.txt -- sh -c 'truncate -s 1100M \"$0\"' big.txt%s", "");
    assert_int_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: trace: big\\.txt \\(1\\.[0-9] GB( zstd)?, [0-9]+ events\\)$"), 1);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: the trace is over 1 GB; for leaks only, -m leaks writes "
                                          "just the blocks alive at exit$"), 1);
    h_result_free(&r);
    h_result small = in_tmp("$R/" LAUNCHER " -o small.txt -- true%s", "");
    assert_int_equal(h_count_lines(small.err, "over 1 GB"), 0);
    h_result_free(&small);
    h_cleanup();
}

/* The default trace name goes in the working directory: a read-only one
 * is refused before the program runs (exit 2, one line), as -o is, where
 * the program used to run untraced with exit 0. Run as an unprivileged
 * user (root writes anywhere), so skipped unless root with setpriv and
 * a tree that user can read. */
static void default_trace_name_in_a_read_only_directory_is_refused(void **state)
{
    (void)state;
    if (!h_nobody_runs_the_tree())
        skip();
    char *dir = h_tmpdir();
    char *ro = h_fmt("%s/ro", dir);
    h_result r = h_sh("mkdir '%s' && chmod 755 '%s' && chmod 555 '%s' && cd '%s' && "
                      "setpriv --reuid=65534 --regid=65534 --clear-groups '%s/scripts/alloctrace' -- "
                      "sh -c 'echo ran'", ro, dir, ro, ro, h_root());
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");   /* the program never ran */
    char *want = h_fmt("alloctrace: the working directory %s is not writable, so the trace cannot "
                       "be written there: use -o FILE\n", ro);
    assert_string_equal(r.err, want);
    free(want);
    h_result_free(&r);
    free(ro);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_help_starts_with_the_same_usage_form),
        cmocka_unit_test(version_works_in_every_mode),
        cmocka_unit_test(check_errors_start_with_alloctrace),
        cmocka_unit_test(check_refuses_bad_values_before_the_program),
        cmocka_unit_test(launcher_bundles_short_options),
        cmocka_unit_test(postproc_bundles_short_options),
        cmocka_unit_test(bad_toggle_signal_stops_before_the_program),
        cmocka_unit_test(output_in_a_missing_directory_stops_before_the_program),
        cmocka_unit_test(existing_output_is_refused_with_a_hint),
        cmocka_unit_test(force_overwrites_an_existing_output),
        cmocka_unit_test(filter_error_names_its_column),
        cmocka_unit_test(postproc_exit_statuses_follow_the_readme),
        cmocka_unit_test(default_trace_name_in_a_read_only_directory_is_refused),
        cmocka_unit_test(launcher_exit_statuses_follow_the_readme),
        cmocka_unit_test(progress_shows_on_a_terminal_only),
        cmocka_unit_test(postproc_without_input_on_a_terminal_says_so),
        cmocka_unit_test(analyse_command_runs_as_printed),
        cmocka_unit_test(huge_trace_suggests_leaks_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
