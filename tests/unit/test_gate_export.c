/*
 * tests/unit/test_gate_export.c: the JSON and JUnit results, parsed back
 * by real parsers (python3's json and xml.etree) and checked field by
 * field, with names that need escaping.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <unistd.h>

#include "test_gate_util.h"

typedef struct fixture {
    at_stack_table *t;
    at_gate *g;
    fake_supps supps;
    char dir[64];
    char path[128];
} fixture;

static const char *const QUOTE[] = { "say\"hi\"<&>() at /src/we\"ird/q.c:3",
                                     "main() at /src/m.c:9", NULL };
static const char *const OTHER[] = { "other() at /src/o.c:1", NULL };

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/test_gate_export.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->t = at_stacks_new();
    f->supps = (fake_supps){ .names = { "other", "never" }, .labels = { "my.supp:2", "my.supp:5" },
                             .count = 2 };
    at_gate_matcher m = fake_matcher(&f->supps, 0);
    at_gate_options opt;
    at_gate_options_init(&opt);
    opt.program_status = 0;
    f->g = at_gate_new(&opt, &m, NULL);
    at_gate_proc *p = at_gate_add_process(f->g, "/tmp/a.txt", "./q<1>", 77);
    at_gate_block b[] = { { stack_of(f->t, 0x400100, QUOTE), 24, AT_LEAK_UNKNOWN }, { stack_of(f->t, 0x400100, QUOTE), 24, AT_LEAK_UNKNOWN },
                          { stack_of(f->t, 0x500, OTHER), 5, AT_LEAK_UNKNOWN } };
    at_gate_add_leaks(f->g, p, b, 3, NULL, f->t);
    at_gate_proc *bad = at_gate_add_process(f->g, "/tmp/b.txt", "./child", 78);
    at_gate_set_problem(f->g, bad, "/tmp/b.txt: truncated trace");
    at_gate_finish(f->g);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    unlink(f->path);
    rmdir(f->dir);
    at_gate_free(f->g);
    at_stacks_free(f->t);
    free(f);
    return 0;
}

/* Runs a python3 program on the file; returns its output. */
static char *python(const char *program, const char *path)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 -c '%s' '%s'", program, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    static char out[8192];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    return out;
}

static void json_fields_parse_back(void **state)
{
    fixture *f = *state;
    snprintf(f->path, sizeof f->path, "%s/r.json", f->dir);
    assert_int_equal(at_gate_write_json(f->g, f->path), 0);
    const char *prog =
        "import json,sys\n"
        "d=json.load(open(sys.argv[1]))\n"
        "print(d[\"schema\"], d[\"verdict\"], d[\"exit_code\"], d[\"reason\"])\n"
        "print(d[\"program\"], d[\"baseline\"])\n"
        "s=d[\"summary\"]\n"
        "k=s.pop(\"leak_kinds\")\n"
        "print(s)\n"
        "print(k[\"unknown\"], k[\"definite\"][\"fails\"], k[\"possible\"][\"fails\"])\n"
        "p=d[\"processes\"][0]\n"
        "print(p[\"leak_kinds\"][\"unknown\"])\n"
        "print(p[\"process\"], p[\"pid\"], p[\"trace\"], p[\"problem\"], p[\"bytes\"], p[\"blocks\"])\n"
        "g=p[\"groups\"][0]\n"
        "print(g[\"bytes\"], g[\"blocks\"], g[\"kind\"], g[\"gating\"], g[\"baseline\"], g[\"key\"])\n"
        "print(g[\"stack\"][0])\n"
        "print(g[\"stack\"][1][\"function\"], g[\"stack\"][1][\"line\"])\n"
        "print(d[\"processes\"][1][\"problem\"], d[\"processes\"][1][\"groups\"])\n"
        "print(d[\"suppressions\"])\n";
    const char *want =
        "alloctrace-gate/1 untrusted 3 /tmp/b.txt: truncated trace\n"
        "{'exit_status': 0, 'signal': None} None\n"
        "{'bytes': 48, 'blocks': 2, 'groups': 1, 'suppressed_bytes': 5, 'suppressed_blocks': 1}\n"
        "{'bytes': 48, 'blocks': 2, 'fails': True} True False\n"
        "{'bytes': 48, 'blocks': 2, 'fails': True}\n"
        "./q<1> 77 /tmp/a.txt None 48 2\n"
        "48 2 None True None main@m.c -> say\"hi\"<&>()@q.c\n"
        "{'address': '0x400100', 'function': 'say\"hi\"<&>()', 'file': '/src/we\"ird/q.c', 'line': 3, "
        "'module': None, 'inlined': False}\n"
        "main 9\n"
        "/tmp/b.txt: truncated trace []\n"
        "[{'label': 'my.supp:2', 'default': False, 'used': True, 'blocks': 1, 'bytes': 5}, "
        "{'label': 'my.supp:5', 'default': False, 'used': False, 'blocks': 0, 'bytes': 0}]\n";
    assert_string_equal(python(prog, f->path), want);
}

static void junit_has_a_case_per_process_and_a_failure_per_group(void **state)
{
    fixture *f = *state;
    snprintf(f->path, sizeof f->path, "%s/r.xml", f->dir);
    assert_int_equal(at_gate_write_junit(f->g, f->path), 0);
    const char *prog =
        "import sys,xml.etree.ElementTree as E\n"
        "r=E.parse(sys.argv[1]).getroot()\n"
        "print(r.tag, r.get(\"tests\"), r.get(\"failures\"), r.get(\"errors\"))\n"
        "for c in r.iter(\"testcase\"):\n"
        "  print(\"case\", c.get(\"classname\"), c.get(\"name\"), c.get(\"file\"))\n"
        "  for x in c:\n"
        "    print(\" \", x.tag, x.get(\"type\"), x.get(\"message\"), repr(x.text))\n";
    const char *want =
        "testsuites 2 1 1\n"
        "case alloctrace.leaks ./q<1> /tmp/a.txt\n"
        "  failure leak 48 byte(s) in 2 block(s) leaked in say\"hi\"<&>() (q.c:3) "
        "'#0 say\"hi\"<&>() at /src/we\"ird/q.c:3\\n#1 main at /src/m.c:9\\n'\n"
        "  system-out None None 'pid 77; 5 byte(s) in 1 block(s) suppressed'\n"
        "case alloctrace.leaks ./child /tmp/b.txt\n"
        "  error untrusted /tmp/b.txt: truncated trace None\n"
        "  system-out None None 'pid 78; 0 byte(s) in 0 block(s) suppressed'\n";
    assert_string_equal(python(prog, f->path), want);
}

/* Names are bytes: invalid UTF-8 and control characters must not break
 * either document; valid UTF-8 passes unchanged. */
static void names_that_are_not_utf8_still_give_valid_documents(void **state)
{
    fixture *f = *state;
    const char *const odd[] = { "caf\xc3\xa9\xff\x01() at /src/bad\xfe.c:3", NULL };
    at_gate_options opt;
    at_gate_options_init(&opt);
    at_gate *g = at_gate_new(&opt, NULL, NULL);
    at_gate_proc *p = at_gate_add_process(g, "/tmp/x\xff.txt", "./\xc0prog", 5);
    at_gate_block b = { stack_of(f->t, 0x10, odd), 3, AT_LEAK_UNKNOWN };
    at_gate_add_leaks(g, p, &b, 1, NULL, f->t);
    at_gate_finish(g);
    snprintf(f->path, sizeof f->path, "%s/r.json", f->dir);
    assert_int_equal(at_gate_write_json(g, f->path), 0);
    const char *prog = "import json,sys\n"
                       "d=json.load(open(sys.argv[1], encoding=\"utf-8\"))\n"
                       "p=d[\"processes\"][0]\n"
                       "print(ascii(p[\"process\"]), ascii(p[\"trace\"]))\n"
                       "print(ascii(p[\"groups\"][0][\"stack\"][0][\"function\"]))\n";
    assert_string_equal(python(prog, f->path), "'./\\xc0prog' '/tmp/x\\xff.txt'\n"
                                                "'caf\\xe9\\xff\\x01()'\n");
    unlink(f->path);
    snprintf(f->path, sizeof f->path, "%s/r.xml", f->dir);
    assert_int_equal(at_gate_write_junit(g, f->path), 0);
    const char *xprog = "import sys,xml.etree.ElementTree as E\n"
                        "r=E.parse(sys.argv[1]).getroot()\n"
                        "c=next(r.iter(\"testcase\"))\n"
                        "print(ascii(c.get(\"name\")), ascii(c.find(\"failure\").get(\"message\")))\n";
    assert_string_equal(python(xprog, f->path),
                        "'./?prog' '3 byte(s) in 1 block(s) leaked in caf\\xe9?" "?() (bad?.c:3)'\n");
    at_gate_free(g);
}

/* --log-file: valgrind's log form, what ctest -T memcheck counts: a loss
 * record per failing group, under the process's pid. */
static void valgrind_log_has_a_loss_record_per_failing_group(void **state)
{
    fixture *f = *state;
    snprintf(f->path, sizeof f->path, "%s/MemoryChecker.1.log", f->dir);
    assert_int_equal(at_gate_write_valgrind_log(f->g, f->path), 0);
    FILE *in = fopen(f->path, "r");
    assert_non_null(in);
    char text[2048];
    size_t n = fread(text, 1, sizeof text - 1, in);
    text[n] = '\0';
    fclose(in);
    assert_string_equal(text,
                        "==77== 48 bytes in 2 blocks are definitely lost in loss record 1 of 1\n"
                        "==77==    at 0x400100: say\"hi\"<&>() (q.c:3)\n"
                        "==77==    by 0x400101: main (m.c:9)\n"
                        "==77== \n"
                        "==77== LEAK SUMMARY:\n"
                        "==77==    definitely lost: 48 bytes in 2 blocks\n"
                        "==77==    indirectly lost: 0 bytes in 0 blocks\n"
                        "==77==      possibly lost: 0 bytes in 0 blocks\n"
                        "==77==    still reachable: 0 bytes in 0 blocks\n"
                        "==77==         suppressed: 5 bytes in 1 blocks\n"
                        "==77== \n"
                        "==77== ERROR SUMMARY: 1 errors from 1 contexts\n"
                        "==78== alloctrace: not judged: /tmp/b.txt: truncated trace\n"
                        "==78== \n"
                        "==78== ERROR SUMMARY: 0 errors from 0 contexts\n"
                        "==0== alloctrace: nothing trustworthy to judge: /tmp/b.txt: truncated trace\n");
}

/* ctest counts no "indirectly lost" record; the gate fails on indirect
 * groups, so each is written as a counted record that says what it is. */
static void valgrind_log_counts_an_indirect_group(void **state)
{
    fixture *f = *state;
    at_gate_options opt;
    at_gate_options_init(&opt);
    at_gate *g = at_gate_new(&opt, NULL, NULL);
    at_gate_proc *p = at_gate_add_process(g, NULL, "./s", 5);
    at_gate_block b[] = { { stack_of(f->t, 0x900, OTHER), 1234, AT_LEAK_INDIRECT },
                          { stack_of(f->t, 0x400100, QUOTE), 32, AT_LEAK_POSSIBLE } };
    at_gate_add_leaks(g, p, b, 2, NULL, f->t);
    at_gate_finish(g);
    snprintf(f->path, sizeof f->path, "%s/MemoryChecker.2.log", f->dir);
    assert_int_equal(at_gate_write_valgrind_log(g, f->path), 0);
    FILE *in = fopen(f->path, "r");
    char text[2048];
    size_t n = fread(text, 1, sizeof text - 1, in);
    text[n] = '\0';
    fclose(in);
    assert_non_null(strstr(text, "==5== 1,234 bytes in 1 blocks are definitely lost in loss record 1 of 1\n"
                                 "==5==    (indirectly lost: reached only through lost blocks; the gate "
                                 "fails on it)\n"
                                 "==5==    at 0x900: other (o.c:1)\n"));
    assert_non_null(strstr(text, "==5==    indirectly lost: 1,234 bytes in 1 blocks\n"
                                 "==5==      possibly lost: 32 bytes in 1 blocks\n"));
    at_gate_free(g);
}

static void unwritable_result_file_fails_with_errno(void **state)
{
    fixture *f = *state;
    assert_int_equal(at_gate_write_json(f->g, "/nonexistent/dir/r.json"), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(at_gate_write_junit(f->g, "/nonexistent/dir/r.xml"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(json_fields_parse_back, setup, teardown),
        cmocka_unit_test_setup_teardown(junit_has_a_case_per_process_and_a_failure_per_group, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(names_that_are_not_utf8_still_give_valid_documents, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(valgrind_log_has_a_loss_record_per_failing_group, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(valgrind_log_counts_an_indirect_group, setup, teardown),
        cmocka_unit_test_setup_teardown(unwritable_result_file_fails_with_errno, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
