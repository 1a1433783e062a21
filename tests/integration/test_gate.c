/*
 * tests/integration/test_gate.c: `alloctrace-check` end to end: the real
 * tracer in leaks mode, the real post-processor's gate, the gate_* test
 * programs. The report goes to stderr; exit statuses are the gate's.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG(name) h_path("build/tests/programs/" name)

/* Runs scripts/alloctrace-check with the given arguments (NULL-terminated)
 * and extra environment. */
static h_result check_env(const char *const env[], const char *first, ...)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = h_path("scripts/alloctrace-check");
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && n < 63; a = va_arg(ap, const char *))
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    h_result r = h_run(argv, env, NULL);
    free((char *)argv[0]);
    return r;
}
#define check(...) check_env(NULL, __VA_ARGS__, NULL)

static char *write_tmp(const char *name, const char *text)
{
    char *path = h_fmt("%s/%s", h_tmpdir(), name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void leaky_program_fails_with_each_group_and_summary(void **state)
{
    (void)state;
    h_result r = check("--", PROG("gate_leaky"), "buf=3", "name");
    assert_int_equal(r.status, 1);
    char *src = h_path("tests/programs/gate_leaky.c");
    char *want = h_fmt("Leak of 1536 byte(s) in 3 block(s) in make_buffer (gate_leaky.c:15), allocated from: [definitely lost]\n"
                       "    #0 make_buffer at %s:15\n"
                       "    #1 main at %s:35\n", src, src);
    h_has(r.err, want);
    free(want);
    /* Named by the first frame that is not strdup, the allocation wrapper. */
    h_has(r.err, "Leak of 24 byte(s) in 1 block(s) in dup_name (gate_leaky.c:20), allocated from: [definitely lost]\n"
               "    #0 __strdup at ");
    want = h_fmt("    #1 dup_name at %s:20\n", src);
    h_has(r.err, want);
    free(want);
    /* Largest first. */
    assert_true(strstr(r.err, "1536 byte(s)") < strstr(r.err, "24 byte(s)"));
    h_has(r.err, "SUMMARY: alloctrace: 1560 byte(s) leaked in 4 allocation(s).\n");
    free(src);
    h_result_free(&r);
}

static void clean_program_passes(void **state)
{
    (void)state;
    h_result r = check("--", PROG("gate_clean"));
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "clean\n");
    h_has(r.err, "no leaks left after suppressions\n");
    h_has(r.err, "SUMMARY: alloctrace: 0 byte(s) leaked in 0 allocation(s).\n");
    h_result_free(&r);
}

static void leak_in_shared_library_names_library_source(void **state)
{
    (void)state;
    h_result r = check("--", PROG("gate_uselib"));
    assert_int_equal(r.status, 1);
    char *lib = h_path("tests/programs/gate_lib.c"), *app = h_path("tests/programs/gate_uselib.c");
    char *want = h_fmt("Leak of 40 byte(s) in 1 block(s) in lib_alloc (gate_lib.c:9), allocated from: [definitely lost]\n"
                       "    #0 lib_alloc at %s:9\n"
                       "    #1 gate_lib_leak at %s:14\n"
                       "    #2 main at %s:6\n", lib, lib, app);
    h_has(r.err, want);
    free(want);
    free(lib);
    free(app);
    h_result_free(&r);
}

static void program_killed_by_sigsegv_is_untrusted(void **state)
{
    (void)state;
    h_result r = check("--", PROG("gate_segv"));
    assert_int_equal(r.status, 3);
    h_has(r.err, "alloctrace: the program was killed by signal 11 (Segmentation fault)\n");
    h_has(r.err, "nothing trustworthy to judge");
    /* Its 64-byte block was never judged: no leak line may say otherwise. */
    h_has(r.err, "alloctrace: not judged: the trace was cut (killed by signal 11 (SIGSEGV))\n");
    assert_int_equal(h_count_lines(r.err, "^Leak of"), 0);
    h_has(r.err, "SUMMARY: alloctrace: 0 byte(s) leaked in 0 allocation(s).\n");
    h_result_free(&r);
}

static void static_program_without_trace_is_untrusted(void **state)
{
    (void)state;
    h_result r = check("--", PROG("gate_static"));
    assert_int_equal(r.status, 3);
    h_has(r.err, "is statically linked: the tracer cannot be preloaded into it\n");
    assert_int_equal(h_count_lines(r.err, "^alloctrace: nothing trustworthy to judge: .*gate_static is "
                                          "statically linked"), 1);
    h_result_free(&r);
}

static void suppression_hides_exactly_one_of_two_groups(void **state)
{
    (void)state;
    char *supp = write_tmp("mine.supp", "# the name is ours to keep\n"
                                        "keep-name: functions contains [ ... dup_name __strdup ]\n");
    h_result r = check("--suppressions", supp, "--", PROG("gate_leaky"), "buf=3", "name");
    assert_int_equal(r.status, 1);
    h_has(r.err, "Leak of 1536 byte(s) in 3 block(s)");
    h_lacks(r.err, "dup_name");
    h_has(r.err, "Suppressions used:\n");
    h_has(r.err, "  keep-name: 1 leak(s), 24 byte(s)\n");
    h_has(r.err, "SUMMARY: alloctrace: 1536 byte(s) leaked in 3 allocation(s).\n");
    h_result_free(&r);
    free(supp);
}

static void suppressions_from_environment_are_loaded(void **state)
{
    (void)state;
    char *supp = write_tmp("env.supp", "all-buffers: functions contains [ ... make_buffer ]\n");
    char *var = h_fmt("ALLOCTRACE_SUPPRESSIONS=%s", supp);
    const char *env[] = { var, NULL };
    h_result r = check_env(env, "--", PROG("gate_leaky"), "buf=2", NULL);
    assert_int_equal(r.status, 0);
    h_has(r.err, "  all-buffers: 2 leak(s), 1024 byte(s)\n");
    h_result_free(&r);
    free(var);
    free(supp);
}

static void unused_suppression_is_listed_and_fails_when_asked(void **state)
{
    (void)state;
    char *supp = write_tmp("unused.supp", "functions contains [ ... make_buffer ]\n"
                                          "functions contains [ ... no_such_function ]\n");
    h_result r = check("--suppressions", supp, "--", PROG("gate_leaky"), "buf=1");
    assert_int_equal(r.status, 0);
    char *want = h_fmt("Unused suppressions:\n  %s:2\n", supp);
    h_has(r.err, want);
    h_result_free(&r);
    r = check("--fail-on-unused-suppressions", "--suppressions", supp, "--", PROG("gate_leaky"),
              "buf=1");
    assert_int_equal(r.status, 1);
    h_has(r.err, want);
    h_result_free(&r);
    free(want);
    free(supp);
}

static void broken_suppression_file_exits_2_with_line_and_column(void **state)
{
    (void)state;
    char *supp = write_tmp("broken.supp", "functions contains [ ... main ]\n"
                                          "callstack contains [ ... x.c : [20, 10] ]\n");
    h_result r = check("--suppressions", supp, "--", PROG("gate_leaky"), "buf=1");
    assert_int_equal(r.status, 2);
    /* The post-processor's message, under the name the user typed. */
    char *want = h_fmt("alloctrace-check: %s:2:32: inverted line range", supp);
    assert_int_equal(strncmp(r.err, want, strlen(want)), 0);
    free(want);
    h_result_free(&r);
    free(supp);
}

static void baseline_gates_only_new_and_grown_groups(void **state)
{
    (void)state;
    char *base = h_fmt("%s/leaks.baseline", h_tmpdir());
    h_result r = check("--baseline", base, "--update-baseline", "--", PROG("gate_leaky"), "buf=2",
                       "name");
    assert_int_equal(r.status, 0);
    h_has(r.err, "Leak of 1024 byte(s) in 2 block(s) in make_buffer (gate_leaky.c:15), allocated from: [definitely lost] [in baseline]\n");
    h_has(r.err, "SUMMARY: alloctrace: 0 byte(s) leaked in 0 allocation(s).\n"
               "alloctrace: baseline ");
    h_has(r.err, "baseline updated: 2 leak group(s)");
    h_result_free(&r);
    char *text = h_read_file(base, NULL);
    assert_non_null(text);
    h_has(text, "gate_leaky\t1024\t2\tmain@gate_leaky.c -> make_buffer@gate_leaky.c\n");
    free(text);

    /* The same leaks pass; one more buffer and a new site fail. */
    r = check("--baseline", base, "--", PROG("gate_leaky"), "buf=2", "name");
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    r = check("--baseline", base, "--", PROG("gate_leaky"), "buf=3", "name", "extra");
    assert_int_equal(r.status, 1);
    h_has(r.err, "Leak of 1536 byte(s) in 3 block(s) in make_buffer (gate_leaky.c:15), allocated from: [definitely lost] "
               "[grown: baseline 1024 byte(s) in 2 block(s)]\n");
    h_has(r.err, "Leak of 64 byte(s) in 1 block(s) in extra_site (gate_leaky.c:25), allocated from: [definitely lost] [new]\n");
    h_has(r.err, "Leak of 24 byte(s) in 1 block(s) in dup_name (gate_leaky.c:20), allocated from: [definitely lost] [in baseline]\n");
    h_has(r.err, "alloctrace: 2 leak group(s) new or grown against the baseline fail the gate\n");
    h_has(r.err, "SUMMARY: alloctrace: 1600 byte(s) leaked in 4 allocation(s).\n");
    h_result_free(&r);
    free(base);
}

static void updating_the_baseline_keeps_the_program_status(void **state)
{
    (void)state;
    char *base = h_fmt("%s/b.baseline", h_tmpdir());
    h_result r = check("--baseline", base, "--update-baseline", "--",
                       PROG("gate_leaky"), "buf=1", "exit=4");
    assert_int_equal(r.status, 4);
    h_has(r.err, "exiting with the program's own status 4 (--ignore-program-status to exit 0)\n");
    h_result_free(&r);
    char *text = h_read_file(base, NULL);
    assert_non_null(text);
    h_has(text, "gate_leaky\t512\t1\tmain@gate_leaky.c -> make_buffer@gate_leaky.c\n");
    free(text);
    free(base);
}

static void json_result_checked_field_by_field(void **state)
{
    (void)state;
    char *json = h_fmt("%s/r.json", h_tmpdir());
    h_result r = check("--json", json, "--", PROG("gate_leaky"), "buf=1", "exit=4");
    assert_int_equal(r.status, 1);
    h_result_free(&r);
    r = h_sh("python3 -c 'import json,sys\n"
             "d=json.load(open(sys.argv[1]))\n"
             "print(d[\"schema\"], d[\"verdict\"], d[\"exit_code\"], d[\"program\"][\"exit_status\"])\n"
             "print(d[\"summary\"][\"bytes\"], d[\"summary\"][\"blocks\"], d[\"summary\"][\"groups\"])\n"
             "p=d[\"processes\"][0]\n"
             "print(p[\"process\"].endswith(\"/gate_leaky\"), p[\"pid\"] > 0, p[\"problem\"])\n"
             "g=p[\"groups\"][0]\n"
             "print(g[\"bytes\"], g[\"blocks\"], g[\"gating\"])\n"
             "f=g[\"stack\"][0]\n"
             "print(f[\"function\"], f[\"file\"].endswith(\"tests/programs/gate_leaky.c\"), f[\"line\"], "
             "f[\"inlined\"], f[\"address\"].startswith(\"0x\"))\n"
             "print([s[\"label\"] for s in d[\"suppressions\"] if s[\"used\"]])' '%s'",
             json);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "alloctrace-gate/1 leaks 1 4\n"
                               "512 1 1\n"
                               "True True None\n"
                               "512 1 True\n"
                               "make_buffer True 15 False True\n"
                               "[]\n");
    h_result_free(&r);
    free(json);
}

static void junit_result_checked_field_by_field(void **state)
{
    (void)state;
    char *xml = h_fmt("%s/r.xml", h_tmpdir());
    h_result r = check("--junit", xml, "--follow-children", "--", PROG("gate_spawn"),
                       PROG("gate_leaky"), "buf=1");
    assert_int_equal(r.status, 1);
    h_result_free(&r);
    r = h_sh("python3 -c 'import sys,xml.etree.ElementTree as E\n"
             "r=E.parse(sys.argv[1]).getroot()\n"
             "print(r.tag, r.get(\"tests\"), r.get(\"failures\"), r.get(\"errors\"))\n"
             "for c in r.iter(\"testcase\"):\n"
             "  print(c.get(\"name\").split(\" \")[0].split(\"/\")[-1], c.get(\"classname\"))\n"
             "  for f in c.findall(\"failure\"):\n"
             "    print(\" \", f.get(\"type\"), f.get(\"message\"), f.text.split(\"\\n\")[0].split(\"/\")[-1])' '%s'",
             xml);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "testsuites 2 2 0\n"
                               "gate_spawn alloctrace.leaks\n"
                               "  leak 32 byte(s) in 1 block(s) leaked in main (gate_spawn.c:11) (definitely lost) gate_spawn.c:11\n"
                               "gate_leaky alloctrace.leaks\n"
                               "  leak 512 byte(s) in 1 block(s) leaked in make_buffer (gate_leaky.c:15) (definitely lost) gate_leaky.c:15\n");
    h_result_free(&r);
    free(xml);
}

/* valgrind's --log-file=NAME.%p: a valgrind log per process, named by its
 * pid, each with its own loss records. */
static void log_file_with_pid_gives_a_valgrind_log_per_process(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *log = h_fmt("--log-file=%s/vg.%%p.log", dir);
    h_result r = check("--follow-children", log, "--", PROG("gate_spawn"), PROG("gate_leaky"), "name");
    assert_int_equal(r.status, 1);
    h_result_free(&r);
    r = h_sh("cd '%s' && for f in vg.*.log; do p=${f#vg.}; p=${p%%.log}; "
             "grep -c \"^==$p== .* bytes in 1 blocks are definitely lost in loss record 1 of 1$\" $f; done",
             dir);
    assert_string_equal(r.out, "1\n1\n");
    h_result_free(&r);
    free(log);
}

/* valgrind's --errors-for-leak-kinds is --leak-kinds: a possibly lost
 * block passes by default and fails with valgrind's own default kinds. */
static void valgrind_errors_for_leak_kinds_picks_the_failing_kinds(void **state)
{
    (void)state;
    h_result r = check("--", PROG("reach_kinds"), "possible");
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    r = check("--errors-for-leak-kinds=definite,possible", "--", PROG("reach_kinds"), "possible");
    assert_int_equal(r.status, 1);
    h_has(r.err, "allocated from: [possibly lost]\n");
    h_result_free(&r);
}

static void follow_children_judges_and_names_each_process(void **state)
{
    (void)state;
    h_result r = check("--follow-children", "--", PROG("gate_spawn"), PROG("gate_leaky"), "name");
    assert_int_equal(r.status, 1);
    assert_int_equal(h_count_lines(r.err, "^== process .*gate_spawn \\(pid [0-9]+\\)$"), 1);
    assert_int_equal(h_count_lines(r.err, "^== process .*gate_leaky \\(pid [0-9]+\\)$"), 1);
    /* The traces are temporary files, deleted when done: not named. */
    assert_int_equal(h_count_lines(r.err, "trace "), 0);
    h_has(r.err, "SUMMARY: alloctrace: 56 byte(s) leaked in 2 allocation(s).\n");
    h_result_free(&r);
    /* Without it, the program its forked child execs is not judged. */
    r = check("--", PROG("gate_spawn"), PROG("gate_leaky"), "name");
    assert_int_equal(h_count_lines(r.err, "^== process "), 1);
    h_has(r.err, "SUMMARY: alloctrace: 32 byte(s) leaked in 1 allocation(s).\n");
    h_result_free(&r);
}

/* A wrapper that execs the test (`sh -c 'exec ./t'`, `exec "$@"`,
 * libtool's scripts): the program it became is judged, and named. */
static void exec_wrapper_is_judged_as_the_program_it_execs(void **state)
{
    (void)state;
    char *cmd = h_fmt("exec '%s' name", PROG("gate_leaky"));
    h_result r = check("--", "sh", "-c", cmd);
    assert_int_equal(r.status, 1);
    assert_int_equal(h_count_lines(r.err, "^== process sh \\(pid [0-9]+\\)$"), 1);
    assert_int_equal(h_count_lines(r.err, "^exec'd .*gate_leaky: not judged itself; the program it "
                                          "became is judged below$"), 1);
    assert_int_equal(h_count_lines(r.err, "^== process .*gate_leaky \\(pid [0-9]+\\)$"), 1);
    h_has(r.err, "Leak of 24 byte(s) in 1 block(s) in dup_name (gate_leaky.c:20), allocated from: [definitely lost]\n");
    h_has(r.err, "SUMMARY: alloctrace: 24 byte(s) leaked in 1 allocation(s).\n");
    h_result_free(&r);
    free(cmd);
    /* A clean program behind the wrapper passes. */
    cmd = h_fmt("exec '%s'", PROG("gate_clean"));
    r = check("--", "sh", "-c", cmd);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "clean\n");
    h_result_free(&r);
    free(cmd);
    /* With --no-follow-children too: the exec chain is the program. */
    cmd = h_fmt("exec '%s' name", PROG("gate_leaky"));
    r = check("--no-follow-children", "--", "sh", "-c", cmd);
    assert_int_equal(r.status, 1);
    h_result_free(&r);
    free(cmd);
}

/* The program the wrapper execs leaves no trace (static): that process
 * could not be judged, 3, and the report says which program it was. */
static void exec_wrapper_of_an_untraceable_program_is_untrusted(void **state)
{
    (void)state;
    char *cmd = h_fmt("exec '%s'", PROG("gate_static"));
    h_result r = check("--", "sh", "-c", cmd);
    assert_int_equal(r.status, 3);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: not judged: it exec'd .*gate_static, which "
                                          "left no trace \\(a static or setuid program\\?\\)$"), 1);
    h_result_free(&r);
    free(cmd);
}

/* memcheck follows fork: a forked child's leak fails by default, and
 * --no-follow-children leaves the child alone. */
static void forked_child_leak_fails_unless_no_follow_children(void **state)
{
    (void)state;
    h_result r = check("--", PROG("gate_fork"));
    assert_int_equal(r.status, 1);
    assert_int_equal(h_count_lines(r.err, "^== process .*gate_fork \\(pid [0-9]+\\)$"), 2);
    h_has(r.err, "Leak of 40 byte(s) in 1 block(s) in child_work (gate_fork.c:18), allocated from: [definitely lost]\n");
    h_has(r.err, "SUMMARY: alloctrace: 40 byte(s) leaked in 1 allocation(s).\n");
    h_result_free(&r);
    r = check("--no-follow-children", "--", PROG("gate_fork"));
    assert_int_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.err, "^== process "), 1);
    h_has(r.err, "SUMMARY: alloctrace: 0 byte(s) leaked in 0 allocation(s).\n");
    h_result_free(&r);
}

/* A child its program stops with SIGTERM (a pool terminating a worker)
 * never exited: not judged, and no reason for 3. A child that crashes is
 * a process the gate could not judge: 3. */
static void stopped_child_is_not_judged_and_crashed_child_is_untrusted(void **state)
{
    (void)state;
    h_result r = check("--", PROG("gate_fork"), "term");
    assert_int_equal(r.status, 0);
    h_has(r.err, "not judged: killed by signal 15 (SIGTERM) before it exited; its program stopped it "
                 "(a pool's worker?)\n");
    assert_int_equal(h_count_lines(r.err, "^Leak of"), 0);
    h_result_free(&r);
    r = check("--", PROG("gate_fork"), "segv");
    assert_int_equal(r.status, 3);
    h_has(r.err, "alloctrace: not judged: the trace was cut (killed by signal 11 (SIGSEGV))\n");
    assert_int_equal(h_count_lines(r.err, "^Leak of"), 0);
    h_result_free(&r);
}

/* As memcheck without --trace-children: the programs a forked child execs
 * (the tools a test or a script runs) are not judged by default;
 * --follow-children judges them. */
static void programs_children_exec_are_judged_only_with_follow_children(void **state)
{
    (void)state;
    char *cmd = h_fmt("'%s' name; exit 0", PROG("gate_leaky"));
    h_result r = check("--", "sh", "-c", cmd);
    assert_int_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.err, "^== process .*gate_leaky"), 0);
    h_result_free(&r);
    r = check("--follow-children", "--", "sh", "-c", cmd);
    assert_int_equal(r.status, 1);
    h_has(r.err, "Leak of 24 byte(s) in 1 block(s) in dup_name (gate_leaky.c:20)");
    h_result_free(&r);
    free(cmd);
}

/* A library's destructors (a C destructor, a C++ static object's) free
 * its blocks after the tracer's own destructor has run: the scan waits for
 * the end of exit, so nothing is still reachable, as valgrind says. */
static void blocks_a_library_destructor_frees_are_not_reachable(void **state)
{
    (void)state;
    h_result r = check("--leak-kinds", "definite,indirect,possible,reachable", "--",
                       PROG("gate_usedtor"));
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "2\n");
    h_has(r.err, "   still reachable: 0 bytes in 0 blocks\n");
    assert_int_equal(h_count_lines(r.err, "^Leak of"), 0);
    h_result_free(&r);
    if (!h_have("valgrind"))
        return;
    r = h_sh("valgrind --leak-check=full --show-leak-kinds=all '%s' 2>&1 >/dev/null",
             PROG("gate_usedtor"));
    assert_int_equal(r.status, 0);
    h_has(r.out, "All heap blocks were freed -- no leaks are possible");
    h_result_free(&r);
}

/* The LEAK SUMMARY's lines of a report (a new string). */
static char *leak_summary(const char *report)
{
    const char *from = strstr(report, "LEAK SUMMARY:\n");
    const char *to = from ? strstr(from, "SUMMARY: alloctrace:") : NULL;
    assert_non_null(to);
    return h_fmt("%.*s", (int)(to - from), from);
}

/* Threads of a pool still waiting at exit: 20 runs give the same kinds
 * (a thread caught running had its dead frames scanned, and glibc's NSS
 * blocks came out possibly lost now and then). */
static void pool_threads_running_at_exit_give_the_same_kinds_every_run(void **state)
{
    (void)state;
    char *first = NULL;
    for (int i = 0; i < 20; i++) {
        h_result r = check("--", PROG("gate_pool"));
        assert_int_equal(r.status, 0);
        char *kinds = leak_summary(r.err);
        if (!first)
            first = kinds;
        else if (strcmp(first, kinds) != 0)
            fail_msg("run %d:\n%s\nrun 1:\n%s", i + 1, kinds, first);
        else
            free(kinds);
        h_result_free(&r);
    }
    h_has(first, "     possibly lost: 0 bytes in 0 blocks\n");
    free(first);
}

static void process_regex_judges_only_matching_programs(void **state)
{
    (void)state;
    h_result r = check("--follow-children", "--process", "gate_leaky$", "--", PROG("gate_spawn"),
                       PROG("gate_leaky"), "buf=1");
    assert_int_equal(r.status, 1);
    assert_int_equal(h_count_lines(r.err, "^== process "), 1);
    h_has(r.err, "alloctrace: 1 other process(es) not judged (--process)\n");
    h_has(r.err, "SUMMARY: alloctrace: 512 byte(s) leaked in 1 allocation(s).\n");
    h_result_free(&r);
    r = check("--process", "no_such_program", "--", PROG("gate_clean"));
    assert_int_equal(r.status, 3);
    h_has(r.err, "no traced process was one to judge");
    h_result_free(&r);
}

/* The stdout buffer is glibc's (valgrind's freeres frees it): no failure,
 * no suppression needed, counted apart in the LEAK SUMMARY. With every
 * kind failing it fails, unless reachable.supp is given. */
static void empty_c_program_passes_without_suppressions(void **state)
{
    (void)state;
    h_result r = check("--no-default-suppressions", "--", PROG("gate_empty"));
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "hello from C\n");
    h_has(r.err, "LEAK SUMMARY:\n"
               "   definitely lost: 0 bytes in 0 blocks\n"
               "   indirectly lost: 0 bytes in 0 blocks\n"
               "     possibly lost: 0 bytes in 0 blocks\n"
               "   still reachable: 0 bytes in 0 blocks\n"
               "     libc's caches: 4,096 bytes in 1 blocks\n"
               "        suppressed: 0 bytes in 0 blocks\n"
               "SUMMARY: alloctrace: 0 byte(s) leaked in 0 allocation(s).\n");
    h_lacks(r.err, "Suppressions used");
    h_result_free(&r);
    r = check("--leak-kinds=all", "--", PROG("gate_empty"));
    assert_int_equal(r.status, 1);
    h_has(r.err, "Leak of 4096 byte(s) in 1 block(s) in _IO_file_doallocate (filedoalloc.c:101), "
               "allocated from: [libc's caches]\n");
    h_has(r.err, "SUMMARY: alloctrace: 4096 byte(s) leaked in 1 allocation(s).\n");
    h_result_free(&r);
    char *supp = h_path("share/alloctrace/reachable.supp");
    r = check("--leak-kinds=all", "--suppressions", supp, "--", PROG("gate_empty"));
    assert_int_equal(r.status, 0);
    h_has(r.err, "  glibc-stdio-buffer: 1 leak(s), 4096 byte(s)\n");
    h_result_free(&r);
    free(supp);
}

static void default_suppressions_pass_empty_cxx_iostream_program(void **state)
{
    (void)state;
    h_result r = check("--", PROG("gate_empty_cxx"));
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "hello from C++\n");
    h_has(r.err, "SUMMARY: alloctrace: 0 byte(s) leaked in 0 allocation(s).\n");
    h_result_free(&r);
}

/* As valgrind: a clean run exits with the program's own status. */
static void program_status_passes_through_when_no_leak_fails(void **state)
{
    (void)state;
    h_result r = check("--", PROG("gate_leaky"), "exit=5");
    assert_int_equal(r.status, 5);
    h_has(r.err, "alloctrace: the program exited with status 5\n");
    h_has(r.err, "SUMMARY: alloctrace: 0 byte(s) leaked in 0 allocation(s).\n");
    h_result_free(&r);
    /* automake's "skipped" and "hard error" stay what they are. */
    r = check("--", PROG("gate_leaky"), "exit=77");
    assert_int_equal(r.status, 77);
    h_result_free(&r);
    /* An exit status above 128 from a whole trace is not a signal. */
    r = check("--", PROG("gate_leaky"), "exit=139");
    assert_int_equal(r.status, 139);
    h_has(r.err, "the program exited with status 139\n");
    h_result_free(&r);
}

static void ignore_program_status_exits_0_when_clean(void **state)
{
    (void)state;
    h_result r = check("--ignore-program-status", "--", PROG("gate_leaky"), "exit=5");
    assert_int_equal(r.status, 0);
    h_has(r.err, "alloctrace: the program exited with status 5\n");
    h_result_free(&r);
    /* The default back, the old option's name. */
    r = check("--ignore-program-status", "--fail-on-program-error", "--", PROG("gate_leaky"), "exit=5");
    assert_int_equal(r.status, 5);
    h_result_free(&r);
}

static void leaks_win_over_the_program_status(void **state)
{
    (void)state;
    h_result r = check("--", PROG("gate_leaky"), "buf=1", "exit=5");
    assert_int_equal(r.status, 1);
    h_has(r.err, "alloctrace: 1 leak group(s) fail the gate\n");
    h_result_free(&r);
    r = check("--leak-exitcode", "42", "--", PROG("gate_leaky"), "buf=1", "exit=5");
    assert_int_equal(r.status, 42);
    h_result_free(&r);
}

static void leak_exitcode_and_max_groups(void **state)
{
    (void)state;
    h_result r = check("--leak-exitcode", "42", "--max-groups", "1", "--", PROG("gate_leaky"),
                       "buf=1", "name", "extra");
    assert_int_equal(r.status, 42);
    h_has(r.err, "2 more group(s) not shown (88 byte(s) in 2 block(s))\n");
    assert_int_equal(h_count_lines(r.err, "^Leak of "), 1);
    h_result_free(&r);
}

static void generated_suppressions_silence_the_run_when_fed_back(void **state)
{
    (void)state;
    h_result r = check("--gen-suppressions", "--", PROG("gate_leaky"), "buf=1", "name");
    assert_int_equal(r.status, 1);
    char *l1 = h_find_line(r.err, "^gate_leaky-leak-1: functions contains \\[ \\.\\.\\. ");
    char *l2 = h_find_line(r.err, "^gate_leaky-leak-2: ");
    assert_non_null(l1);
    assert_non_null(l2);
    h_result_free(&r);
    char *text = h_fmt("%s\n%s\n", l1, l2);
    char *supp = write_tmp("gen.supp", text);
    r = check("--fail-on-unused-suppressions", "--suppressions", supp, "--", PROG("gate_leaky"),
              "buf=1", "name");
    assert_int_equal(r.status, 0);
    h_has(r.err, "  gate_leaky-leak-1: 1 leak(s), 512 byte(s)\n");
    h_has(r.err, "  gate_leaky-leak-2: 1 leak(s), 24 byte(s)\n");
    h_result_free(&r);
    free(text);
    free(supp);
    free(l1);
    free(l2);
}

static void launcher_check_mode_is_the_gate(void **state)
{
    (void)state;
    char *launcher = h_path("scripts/alloctrace"), *prog = PROG("gate_leaky");
    const char *argv[] = { launcher, "--check", "--", prog, "buf=2", NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 1);
    h_has(r.err, "SUMMARY: alloctrace: 1024 byte(s) leaked in 2 allocation(s).\n");
    h_result_free(&r);
    free(launcher);
    free(prog);
}

static void trace_dir_keeps_the_traces_and_must_be_empty(void **state)
{
    (void)state;
    char *dir = h_fmt("%s/traces", h_tmpdir());
    h_result r = check("--trace-dir", dir, "--", PROG("gate_leaky"), "buf=1");
    assert_int_equal(r.status, 1);
    h_result_free(&r);
    r = h_sh("ls '%s'", dir);
    assert_int_equal(h_count_lines(r.out, "^trace\\.[0-9]+\\.txt$"), 1);
    assert_int_equal(h_count_lines(r.out, "."), 1);
    h_result_free(&r);
    r = check("--trace-dir", dir, "--", PROG("gate_clean"));
    assert_int_equal(r.status, 2);
    h_has(r.err, "is not empty");
    h_result_free(&r);
    free(dir);
}

static void usage_errors_exit_2(void **state)
{
    (void)state;
    h_result r = check("--no-such-option", "--", PROG("gate_clean"));
    assert_int_equal(r.status, 2);
    h_has(r.err, "unknown option '--no-such-option'");
    h_result_free(&r);
    r = check("--max-groups", "many", "--", PROG("gate_clean"));
    assert_int_equal(r.status, 2);
    h_result_free(&r);
    r = check("--");
    assert_int_equal(r.status, 2);
    h_result_free(&r);
    r = check("--baseline", "/nonexistent/b.txt", "--", PROG("gate_clean"));
    assert_int_equal(r.status, 2);
    h_has(r.err, "/nonexistent/b.txt: No such file or directory\n");
    h_result_free(&r);
    r = check("--help");
    assert_int_equal(r.status, 0);
    h_has(r.out, "Usage: alloctrace --check [OPTIONS] -- PROGRAM [ARGS...]");
    h_result_free(&r);
}

/* Files left in dir, as one line each ("" when none). */
static char *listing(const char *dir)
{
    h_result r = h_sh("ls -A '%s'", dir);
    assert_int_equal(r.status, 0);
    char *out = strdup(r.out);
    h_result_free(&r);
    return out;
}

/* A bad configuration is found before the program starts: exit 2, one
 * line naming the file, and the program (here `touch MARKER`) never ran. */
static void configuration_errors_exit_2_before_the_program_runs(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *marker = h_fmt("%s/the-program-ran", dir);
    char *bad = write_tmp("typo.supp", "functions contains [ ... main\n");
    char *nobase = h_fmt("%s/missing.baseline", dir);
    char *nojson = h_fmt("%s/no/such/dir/r.json", dir);
    const struct {
        const char *opt, *value, *says;
    } cases[] = {
        { "--suppressions", bad, "typo.supp:1:" },
        { "--baseline", nobase, "missing.baseline: No such file or directory" },
        { "--json", nojson, "--json " },
        { "--junit", dir, "--junit " },
        { "--log-file", nojson, "--log-file " },
        { "--process", "(", "--process: bad regular expression" },
        { "--tool", "helgrind", "--tool=helgrind: the gate stands in for memcheck only" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        h_result r = check(cases[i].opt, cases[i].value, "--", "touch", marker);
        if (r.status != 2 || h_count_lines(r.err, ".") != 1 || !strstr(r.err, cases[i].says))
            fail_msg("%s %s: status %d, stderr:\n%s", cases[i].opt, cases[i].value, r.status, r.err);
        assert_int_equal(access(marker, F_OK), -1);
        h_result_free(&r);
    }
    /* A baseline to write where it cannot be. */
    h_result u = check("--baseline", nojson, "--update-baseline", "--", "touch", marker);
    assert_int_equal(u.status, 2);
    h_has(u.err, "--baseline ");
    assert_int_equal(access(marker, F_OK), -1);
    h_result_free(&u);
    /* The same options, right, and the program runs. */
    char *json = h_fmt("%s/r.json", dir);
    h_result r = check("--json", json, "--", "touch", marker);
    assert_int_equal(access(marker, F_OK), 0);
    assert_int_equal(access(json, F_OK), 0);
    h_result_free(&r);
    free(json);
    free(nojson);
    free(nobase);
    free(bad);
    free(marker);
}

/* The traces and the pid file go to $TMPDIR and are gone after every
 * verdict: leaks, none, a death by signal. */
static void gate_leaves_no_temporary_files(void **state)
{
    (void)state;
    char *tmp = h_tmpdir();
    char *env_tmp = h_fmt("TMPDIR=%s", tmp);
    const char *env[] = { env_tmp, NULL };
    const char *progs[] = { "gate_leaky", "gate_clean", "gate_segv" };
    const int want[] = { 1, 0, 3 };
    for (int i = 0; i < 3; i++) {
        char *rel = h_fmt("build/tests/programs/%s", progs[i]);
        char *prog = h_path(rel);
        free(rel);
        h_result r = check_env(env, "--", prog, i == 0 ? "buf=1" : NULL, NULL);
        assert_int_equal(r.status, want[i]);
        char *left = listing(tmp);
        assert_string_equal(left, "");
        free(left);
        free(prog);
        h_result_free(&r);
    }
    free(env_tmp);
}

/* An AddressSanitizer build (ASan's runtime must come first and replaces
 * malloc): no trace, and the gate says why, not "static or setuid?". */
static void asan_build_is_named_as_such(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    h_result c = h_sh("clang -g -fsanitize=address '%s' -o '%s/asan_leaky' 2>&1",
                      h_path("tests/programs/gate_leaky.c"), dir);
    if (c.status != 0) {
        print_message("skipped: clang cannot build with -fsanitize=address here (libclang-rt missing?)\n");
        h_result_free(&c);
        skip();
    }
    h_result_free(&c);
    char *prog = h_fmt("%s/asan_leaky", dir);
    h_result r = check("--", prog, "name");
    assert_int_equal(r.status, 3);
    assert_int_equal(h_count_lines(r.err, "^alloctrace-check: .*asan_leaky is built with AddressSanitizer, "
                                          "which replaces malloc: the tracer cannot run beside it"), 1);
    assert_int_equal(h_count_lines(r.err, "^alloctrace: nothing trustworthy to judge: .*asan_leaky is built "
                                          "with AddressSanitizer"), 1);
    h_lacks(r.err, "static or setuid");
    h_result_free(&r);
    free(prog);
}

/* heaptrack's preload beside the tracer, in both orders of LD_PRELOAD:
 * heaptrack's launcher puts its library first (its malloc then calls ours,
 * holding its lock, and the tracer's start used to dlopen through
 * heaptrack's hook, which waited on that lock forever); LD_PRELOAD given to
 * the gate puts it after the tracer. Both finish and judge the leak. */
static void heaptrack_beside_the_tracer_in_both_orders_finishes(void **state)
{
    (void)state;
    const char *ht = "/usr/lib/heaptrack/libheaptrack_preload.so";
    if (!h_have("heaptrack") || access(ht, R_OK) != 0)
        skip();
    char *dir = h_tmpdir(), *gate = h_path("scripts/alloctrace-check");
    h_result r = h_sh("cd '%s' && timeout -k 5 120 '%s' --follow-children --process 'gate_leaky$' -- "
                      "heaptrack '%s' name", dir, gate, PROG("gate_leaky"));
    assert_int_equal(r.status, 1);
    h_has(r.err, "Leak of 24 byte(s) in 1 block(s) in dup_name (gate_leaky.c:20), allocated from: [definitely lost]\n");
    h_result_free(&r);
    r = h_sh("cd '%s' && LD_PRELOAD=%s timeout -k 5 120 '%s' -- '%s' name", dir, ht, gate,
             PROG("gate_leaky"));
    assert_int_equal(r.status, 1);
    h_has(r.err, "Leak of 24 byte(s) in 1 block(s) in dup_name (gate_leaky.c:20), allocated from: [definitely lost]\n");
    h_result_free(&r);
    free(gate);
}

/* A gate killed by SIGTERM (a CI timeout) leaves no temporary trace, be
 * it signalled alone (its trap runs once the program has ended) or with
 * its process group (the program dies of it too). */
static void gate_killed_by_sigterm_removes_its_temporary_traces(void **state)
{
    (void)state;
    char *tmp = h_tmpdir();
    char *gate = h_path("scripts/alloctrace-check");
    h_result r = h_sh("export TMPDIR='%s'; '%s' -- sleep 1 & g=$!; sleep 0.4; "
                      "ls \"$TMPDIR\" | grep -c '^alloctrace-check\\.'; kill -TERM $g; wait $g; echo rc=$?",
                      tmp, gate);
    h_has(r.out, "rc=143\n");
    assert_true(strncmp(r.out, "0\n", 2) != 0);   /* the trace existed while it ran */
    char *left = listing(tmp);
    assert_string_equal(left, "");
    free(left);
    h_result_free(&r);
    /* timeout(1), as a CI job's: SIGTERM to its process group. */
    r = h_sh("export TMPDIR='%s'; timeout 0.5 '%s' -- sleep 5; echo rc=$?", tmp, gate);
    h_has(r.out, "rc=124\n");
    left = listing(tmp);
    assert_string_equal(left, "");
    free(left);
    h_result_free(&r);
    free(gate);
}

/* A name the gate would use that is already taken in $TMPDIR (here a
 * planted symbolic link, as from another user) is left alone: the gate
 * still judges, in a private directory, and removes only its own files. */
static void gate_never_reuses_a_taken_name(void **state)
{
    (void)state;
    char *tmp = h_tmpdir();
    char *gate = h_path("scripts/alloctrace-check");
    char *prog = PROG("gate_leaky");
    h_result r = h_sh("export TMPDIR='%s'; ln -s /nonexistent \"$TMPDIR/alloctrace-check.$$.pid\" && "
                      "exec '%s' -- '%s' buf=1", tmp, gate, prog);
    assert_int_equal(r.status, 1);
    h_has(r.err, "Leak of 512 byte(s) in 1 block(s) in make_buffer (gate_leaky.c:15), allocated from: [definitely lost]\n");
    char *left = listing(tmp);
    assert_non_null(strstr(left, ".pid\n"));       /* the link, untouched */
    assert_int_equal(strchr(left, '\n') - left + 1, (long)strlen(left));   /* and only it */
    free(left);
    free(prog);
    free(gate);
    h_result_free(&r);
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, h_teardown)
    const struct CMUnitTest tests[] = {
        T(leaky_program_fails_with_each_group_and_summary),
        T(clean_program_passes),
        T(leak_in_shared_library_names_library_source),
        T(program_killed_by_sigsegv_is_untrusted),
        T(static_program_without_trace_is_untrusted),
        T(suppression_hides_exactly_one_of_two_groups),
        T(suppressions_from_environment_are_loaded),
        T(unused_suppression_is_listed_and_fails_when_asked),
        T(broken_suppression_file_exits_2_with_line_and_column),
        T(baseline_gates_only_new_and_grown_groups),
        T(updating_the_baseline_keeps_the_program_status),
        T(json_result_checked_field_by_field),
        T(junit_result_checked_field_by_field),
        T(follow_children_judges_and_names_each_process),
        T(valgrind_errors_for_leak_kinds_picks_the_failing_kinds),
        T(log_file_with_pid_gives_a_valgrind_log_per_process),
        T(exec_wrapper_is_judged_as_the_program_it_execs),
        T(exec_wrapper_of_an_untraceable_program_is_untrusted),
        T(forked_child_leak_fails_unless_no_follow_children),
        T(stopped_child_is_not_judged_and_crashed_child_is_untrusted),
        T(programs_children_exec_are_judged_only_with_follow_children),
        T(blocks_a_library_destructor_frees_are_not_reachable),
        T(pool_threads_running_at_exit_give_the_same_kinds_every_run),
        T(process_regex_judges_only_matching_programs),
        T(empty_c_program_passes_without_suppressions),
        T(default_suppressions_pass_empty_cxx_iostream_program),
        T(program_status_passes_through_when_no_leak_fails),
        T(ignore_program_status_exits_0_when_clean),
        T(leaks_win_over_the_program_status),
        T(leak_exitcode_and_max_groups),
        T(generated_suppressions_silence_the_run_when_fed_back),
        T(trace_dir_keeps_the_traces_and_must_be_empty),
        T(launcher_check_mode_is_the_gate),
        T(usage_errors_exit_2),
        T(configuration_errors_exit_2_before_the_program_runs),
        T(gate_leaves_no_temporary_files),
        T(gate_never_reuses_a_taken_name),
        T(gate_killed_by_sigterm_removes_its_temporary_traces),
        T(asan_build_is_named_as_such),
        T(heaptrack_beside_the_tracer_in_both_orders_finishes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
