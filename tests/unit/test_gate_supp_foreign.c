/*
 * tests/unit/test_gate_supp_foreign.c: valgrind and LeakSanitizer
 * suppression files behind the gate: told apart by content, translated
 * with their tool's meaning (valgrind's innermost-first prefix from the
 * allocation function, mangled names, glibc's __ names, obj: lines; LSan's
 * function-or-file-or-module search), counted as one entry each, and
 * their errors naming file, line and construct.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "gate_supp.h"
#include "gate_supp_foreign.h"
#include "test_gate_util.h"

/* Stacks as the tracer and resolver leave them, innermost first. */
static const char *const BUF[] = { "make_buffer() at /src/app/leaky.c:15",
                                   "main() at /src/app/leaky.c:35", NULL };
static const char *const NAME[] = { "__strdup() at ./string/strdup.c:42",
                                    "dup_name() at /src/app/leaky.c:20",
                                    "main() at /src/app/leaky.c:37", NULL };
static const char *const CXX[] = { "operator new(unsigned long) from /usr/lib/libstdc++.so.6",
                                   "ns::Foo<int, char>::make() const at /src/app/foo.cc:3",
                                   "main() at /src/app/leaky.c:31", NULL };
static const char *const LIB[] = { "0x1234 from /usr/lib/libfoo.so.1",
                                   "init_foo() at /src/lib/foo.c:9",
                                   "main() at /src/app/leaky.c:40", NULL };

typedef supp_fixture fixture;

/* Judges BUF (2 x 100, definite), NAME (24, definite), CXX (48, of unknown
 * kind: a trace without kinds) and LIB (8, indirect) against the
 * suppression file `text`; NULL when the file is rejected (its error in
 * *err when err is not NULL). */
static at_gate *judge_with(fixture *f, const char *text, at_gate_supp **s, char **err)
{
    write_text_file(f->path, text);
    *s = at_gate_supp_new();
    char errpath[160];
    snprintf(errpath, sizeof errpath, "%s/err.txt", f->dir);
    fflush(stderr);
    int saved = dup(2);
    assert_non_null(freopen(errpath, "w", stderr));
    int rc = at_gate_supp_add_file(*s, f->path, false);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *in = fopen(errpath, "r");
    char line[1024] = "";
    if (in) {
        if (!fgets(line, sizeof line, in))
            line[0] = '\0';
        fclose(in);
    }
    unlink(errpath);
    if (err)
        *err = strdup(line);
    if (rc != 0)
        return NULL;
    at_gate_options opt;
    at_gate_options_init(&opt);
    at_gate_matcher m = at_gate_supp_matcher(*s);
    at_gate *g = at_gate_new(&opt, &m, NULL);
    at_gate_proc *p = at_gate_add_process(g, "t.txt", "./leaky", 1);
    at_gate_block b[] = { { stack_of(f->t, 0x10, BUF), 100, AT_LEAK_DEFINITE },
                          { stack_of(f->t, 0x10, BUF), 100, AT_LEAK_DEFINITE },
                          { stack_of(f->t, 0x20, NAME), 24, AT_LEAK_DEFINITE },
                          { stack_of(f->t, 0x30, CXX), 48, AT_LEAK_UNKNOWN },
                          { stack_of(f->t, 0x40, LIB), 8, AT_LEAK_INDIRECT } };
    at_gate_add_leaks(g, p, b, 5, NULL, f->t);
    at_gate_finish(g);
    return g;
}

static uint64_t bytes_left(const at_gate *g) { return g->procs[0].bytes; }

static void formats_are_told_apart_by_content(void **state)
{
    (void)state;
    const char *vg = "# mine\n\n{\n   x\n   Memcheck:Leak\n   fun:malloc\n}\n";
    const char *lsan = "# lsan\nleak:libfoo.so\n\nleak:^xstrdup$\n";
    const char *filters = "functions contains [ ... main ]\n";
    const char *named = "leak: functions contains [ ... main ]\n";
    assert_int_equal(at_supp_detect(vg, strlen(vg)), AT_SUPP_VALGRIND);
    assert_int_equal(at_supp_detect(lsan, strlen(lsan)), AT_SUPP_LSAN);
    assert_int_equal(at_supp_detect(filters, strlen(filters)), AT_SUPP_FILTERS);
    assert_int_equal(at_supp_detect(named, strlen(named)), AT_SUPP_FILTERS);
    assert_int_equal(at_supp_detect("", 0), AT_SUPP_FILTERS);
}

/* gen-suppressions' own output for the three C leaks: each takes its
 * group, through strdup's alias, and is counted once. */
static void valgrind_generated_suppressions_take_their_groups(void **state)
{
    fixture *f = *state;
    at_gate_supp *s;
    at_gate *g = judge_with(f,
                            "{\n   <insert_a_suppression_name_here>\n   Memcheck:Leak\n"
                            "   match-leak-kinds: definite\n   fun:malloc\n   fun:strdup\n"
                            "   fun:dup_name\n   fun:main\n}\n"
                            "{\n   buffers\n   Memcheck:Leak\n   fun:malloc\n   fun:make_buffer\n"
                            "   fun:main\n}\n",
                            &s, NULL);
    assert_non_null(g);
    assert_int_equal(g->nsupps, 2);
    assert_int_equal(g->supps[0].blocks, 1);
    assert_int_equal(g->supps[0].bytes, 24);
    assert_int_equal(g->supps[1].blocks, 2);
    assert_int_equal(g->supps[1].bytes, 200);
    char want[200];
    snprintf(want, sizeof want, "%s:1", f->path);
    assert_string_equal(g->supps[0].label, want);
    assert_string_equal(g->supps[1].label, "buffers");
    assert_int_equal(bytes_left(g), 56); /* CXX and LIB */
    at_gate_free(g);
    at_gate_supp_free(s);
}

/* valgrind matches a prefix: a suppression naming fewer callers still
 * takes the stack; one naming a caller that is not next does not. */
static void valgrind_matches_a_prefix_from_the_allocation_function(void **state)
{
    fixture *f = *state;
    at_gate_supp *s;
    at_gate *g = judge_with(f,
                            "{\n a\n Memcheck:Leak\n fun:malloc\n fun:make_buffer\n}\n"
                            "{\n b\n Memcheck:Leak\n fun:malloc\n fun:main\n}\n"
                            "{\n c\n Memcheck:Leak\n fun:*alloc\n ...\n fun:main\n}\n",
                            &s, NULL);
    assert_non_null(g);
    assert_int_equal(g->supps[0].bytes, 200);
    assert_int_equal(g->supps[1].bytes, 0); /* main is not make_buffer's place */
    assert_int_equal(g->supps[2].bytes, 32); /* NAME and LIB; not CXX: operator new is no *alloc */
    at_gate_free(g);
    at_gate_supp_free(s);
}

/* valgrind writes some names with their symbol version; the resolver never. */
static void valgrind_symbol_versions_are_optional(void **state)
{
    fixture *f = *state;
    at_gate_supp *s;
    at_gate *g = judge_with(f, "{\n v\n Memcheck:Leak\n fun:malloc\n fun:make_buffer@@APP_1.0\n}\n",
                            &s, NULL);
    assert_non_null(g);
    assert_int_equal(g->supps[0].bytes, 200);
    at_gate_free(g);
    at_gate_supp_free(s);
}

static void valgrind_mangled_names_and_operator_new(void **state)
{
    fixture *f = *state;
    at_gate_supp *s;
    at_gate *g = judge_with(f,
                            "{\n cxx\n Memcheck:Leak\n fun:_Znwm\n fun:_ZNK2ns3FooIicE4makeEv\n"
                            " fun:main\n}\n"
                            "{\n c-only\n Memcheck:Leak\n fun:malloc\n fun:_ZNK2ns3FooIicE4makeEv\n}\n",
                            &s, NULL);
    assert_non_null(g);
    assert_int_equal(g->supps[0].bytes, 48);
    assert_int_equal(g->supps[1].bytes, 0); /* made by operator new, not malloc */
    at_gate_free(g);
    at_gate_supp_free(s);
}

/* match-leak-kinds: a suppression takes leaks of its kinds only; a block
 * of unknown kind counts as definite; without the line, every kind. */
static void valgrind_match_leak_kinds_take_those_kinds_only(void **state)
{
    fixture *f = *state;
    at_gate_supp *s;
    at_gate *g = judge_with(f,
                            "{\n ind\n Memcheck:Leak\n match-leak-kinds: indirect\n fun:malloc\n"
                            " ...\n fun:main\n}\n"
                            "{\n reach\n Memcheck:Leak\n match-leak-kinds: reachable,possible\n"
                            " fun:*\n ...\n fun:main\n}\n"
                            "{\n def\n Memcheck:Leak\n match-leak-kinds: definite\n fun:*\n ...\n"
                            " fun:main\n}\n",
                            &s, NULL);
    assert_non_null(g);
    assert_int_equal(g->supps[0].bytes, 8);              /* LIB, the indirect one */
    assert_int_equal(g->supps[1].bytes, 0);              /* nothing possible or reachable */
    assert_int_equal(g->supps[2].bytes, 200 + 24 + 48); /* definite, and CXX of unknown kind */
    assert_int_equal(bytes_left(g), 0);
    at_gate_free(g);
    at_gate_supp_free(s);
}

static void valgrind_obj_lines_match_the_module(void **state)
{
    fixture *f = *state;
    at_gate_supp *s;
    at_gate *g = judge_with(f,
                            "{\n lib\n Memcheck:Leak\n fun:malloc\n obj:/usr/lib/libfoo.so*\n"
                            " fun:init_foo\n}\n"
                            "{\n other\n Memcheck:Leak\n fun:malloc\n obj:*/libbar.so*\n}\n",
                            &s, NULL);
    assert_non_null(g);
    assert_int_equal(g->supps[0].bytes, 8);
    assert_int_equal(g->supps[1].bytes, 0);
    at_gate_free(g);
    at_gate_supp_free(s);
}

/* Other tools' and other errors' suppressions are read and skipped. */
static void valgrind_non_leak_suppressions_are_skipped(void **state)
{
    fixture *f = *state;
    at_gate_supp *s;
    at_gate *g = judge_with(f,
                            "{\n cond\n Memcheck:Cond\n fun:make_buffer\n}\n"
                            "{\n param\n Memcheck:Param\n write(buf)\n fun:write\n}\n"
                            "{\n race\n Helgrind:Race\n fun:*\n}\n",
                            &s, NULL);
    assert_non_null(g);
    assert_int_equal(g->nsupps, 0);
    assert_int_equal(bytes_left(g), 280);
    at_gate_free(g);
    at_gate_supp_free(s);
}

static void valgrind_errors_name_file_line_and_construct(void **state)
{
    fixture *f = *state;
    const struct {
        const char *text, *line, *says;
    } cases[] = {
        { "{\n x\n Memcheck:Leak\n fun:malloc\n", ":1: ", "no closing '}'" },
        { "{\n x\n Memcheck:Leak\n fun:malloc\n fn:oops\n}\n", ":5: ", "'fn:oops': not a frame line" },
        { "{\n x\n Memcheck:Leak\n match-leak-kinds: definite,lost\n fun:malloc\n}\n", ":4: ",
          "'lost' is not a leak kind" },
        { "{\n x\n Memcheck:Leak\n fun:_Znwm\n fun:_ZN5boost*\n}\n", ":5: ",
          "fun:_ZN5boost*: a wildcard in a mangled C++ name" },
        { "{\n x\n Leak\n fun:malloc\n}\n", ":3: ", "'Leak': expected TOOL:KIND" },
        { "{\n x\n Memcheck:Leak\n}\n", ":1: ", "has no frame lines" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        at_gate_supp *s;
        char *err = NULL;
        at_gate *g = judge_with(f, cases[i].text, &s, &err);
        /* "alloctrace-postproc: FILE:LINE: ...": the name the user typed first */
        const char *prog = "alloctrace-postproc: ";
        if (g || !strstr(err, cases[i].line) || !strstr(err, cases[i].says) ||
            strncmp(err, prog, strlen(prog)) != 0 ||
            strncmp(err + strlen(prog), f->path, strlen(f->path)) != 0)
            fail_msg("case %zu: %s", i, err ? err : "(accepted)");
        assert_int_equal(at_gate_supp_matcher(s).count, 0);
        free(err);
        at_gate_supp_free(s);
    }
}

/* A first line naming no allocation function never matches in memcheck:
 * kept as an entry that takes nothing (listed as unused), said so. */
static void valgrind_first_line_not_an_allocator_never_matches(void **state)
{
    fixture *f = *state;
    const char *text = "{\n x\n Memcheck:Leak\n fun:make_buffer\n fun:main\n}\n";
    at_supp_list l;
    char *err = NULL;
    assert_int_equal(at_supp_read_valgrind("v.supp", text, strlen(text), &l, &err), 0);
    assert_int_equal(l.n, 1);
    assert_non_null(strstr(l.v[0].note, "never matches a leak"));
    at_supp_list_free(&l);
    at_gate_supp *s;
    at_gate *g = judge_with(f, text, &s, NULL);
    assert_int_equal(g->nsupps, 1);
    assert_int_equal(g->supps[0].blocks, 0);
    at_gate_free(g);
    at_gate_supp_free(s);
}

static void valgrind_translation_is_printed_as_a_filter_file(void **state)
{
    (void)state;
    const char *text = "{\n   buffers\n   Memcheck:Leak\n   match-leak-kinds: definite\n"
                       "   fun:malloc\n   fun:make_buffer\n   obj:/app/leaky\n   ...\n}\n";
    at_supp_list l;
    char *err = NULL;
    assert_int_equal(at_supp_read_valgrind("v.supp", text, strlen(text), &l, &err), 0);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    at_supp_list_print(f, &l);
    fclose(f);
    assert_string_equal(
        out, "# alloctrace filters translated from the valgrind suppressions of v.supp\n\n"
             "# v.supp:1: { buffers  Memcheck:Leak  match-leak-kinds: definite }\n"
             "# match-leak-kinds: definite: the gate applies it to leaks of those kinds only; the "
             "filters below alone take every kind\n"
             "buffers: functions contains [ ... ... #\"^\"# #\"^(?:__)?make_buffer$\"# ] && "
             "modules contains [ ... ... #\"^/app/leaky$\"# #\"^\"# ]\n");
    free(out);
    at_supp_list_free(&l);
    /* A first frame that could be operator new is told not to be. */
    text = "{\n   any\n   Memcheck:Leak\n   fun:malloc\n   ...\n   fun:main\n}\n";
    assert_int_equal(at_supp_read_valgrind("v.supp", text, strlen(text), &l, &err), 0);
    assert_int_equal(l.v[0].nfilters, 1);
    assert_string_equal(l.v[0].filters[0], "functions contains [ ... #\"^(?:__)?main$\"# ... ] && "
                                           "functions excludes [ ... #\"^operator new(?:\\[\\])?\\(\"# ]");
    at_supp_list_free(&l);
}

/* LSan: the pattern against function, file or module of any frame. */
static void lsan_pattern_matches_function_file_or_module(void **state)
{
    fixture *f = *state;
    at_gate_supp *s;
    at_gate *g = judge_with(f,
                            "# lsan\nleak:make_buf*\nleak:^dup_name$\nleak:foo.cc\n"
                            "leak:libfoo.so\nleak:^ake_buffer\ninterceptor_via_fun:x\n",
                            &s, NULL);
    assert_non_null(g);
    assert_int_equal(g->nsupps, 5);
    assert_int_equal(g->supps[0].bytes, 200); /* a function, '*' */
    assert_int_equal(g->supps[1].bytes, 24);  /* a function, anchored */
    assert_int_equal(g->supps[2].bytes, 48);  /* a file */
    assert_int_equal(g->supps[3].bytes, 8);   /* a module */
    assert_int_equal(g->supps[4].bytes, 0);   /* '^' anchors */
    char want[200];
    snprintf(want, sizeof want, "%s:2", f->path);
    assert_string_equal(g->supps[0].label, want);
    assert_int_equal(bytes_left(g), 0);
    at_gate_free(g);
    at_gate_supp_free(s);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, supp_setup, supp_teardown)
    const struct CMUnitTest tests[] = {
        T(formats_are_told_apart_by_content),
        T(valgrind_generated_suppressions_take_their_groups),
        T(valgrind_matches_a_prefix_from_the_allocation_function),
        T(valgrind_symbol_versions_are_optional),
        T(valgrind_mangled_names_and_operator_new),
        T(valgrind_match_leak_kinds_take_those_kinds_only),
        T(valgrind_obj_lines_match_the_module),
        T(valgrind_non_leak_suppressions_are_skipped),
        T(valgrind_errors_name_file_line_and_construct),
        T(valgrind_first_line_not_an_allocator_never_matches),
        T(valgrind_translation_is_printed_as_a_filter_file),
        T(lsan_pattern_matches_function_file_or_module),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
