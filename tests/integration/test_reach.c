/*
 * tests/integration/test_reach.c: memcheck's leak kinds at exit, end to
 * end: the tracer's scan (preload/leaks/reach.c) on the reach_* programs, the
 * kind lines in the trace and through the post-processor, the gate's
 * default kinds, --leak-kinds and LEAK SUMMARY. Where valgrind is
 * installed, the bytes and blocks of every kind are compared with its own
 * LEAK SUMMARY for the same program and arguments.
 */
#include "harness.h"
#include "test_tracer_trace.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG(name) h_path("build/tests/programs/" name)

static const char *const kinds[] = { "definitely lost", "indirectly lost", "possibly lost",
                                     "still reachable" };

typedef struct summary {
    unsigned long long bytes[4], blocks[4];
} summary;

/* "definitely lost: 1,234 bytes in 5 blocks" for each kind, in the gate's
 * report or valgrind's (whose lines start with ==PID==). */
static summary parse_summary(const char *text)
{
    summary s;
    const char *from = strstr(text, "LEAK SUMMARY:");
    if (!from)
        fail_msg("no LEAK SUMMARY in:\n%s", text);
    for (int k = 0; k < 4; k++) {
        char *key = h_fmt("%s: ", kinds[k]);
        const char *p = strstr(from, key);
        if (!p)
            fail_msg("no '%s' line in:\n%s", kinds[k], text);
        p += strlen(key);
        char digits[2][32] = { "", "" };
        for (int f = 0; f < 2; f++) {
            size_t n = 0;
            while (*p == ' ' || (*p >= 'a' && *p <= 'z'))
                p++;
            for (; (*p >= '0' && *p <= '9') || *p == ','; p++)
                if (*p != ',' && n < 31)
                    digits[f][n++] = *p;
        }
        s.bytes[k] = strtoull(digits[0], NULL, 10);
        s.blocks[k] = strtoull(digits[1], NULL, 10);
        free(key);
    }
    return s;
}

static h_result gate(const char *first, ...)
{
    const char *argv[32];
    int n = 0;
    argv[n++] = h_path("scripts/alloctrace-check");
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && n < 31; a = va_arg(ap, const char *))
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    return h_run(argv, NULL, NULL);
}

static void expect(const summary *s, const unsigned long long want[4][2])
{
    for (int k = 0; k < 4; k++)
        if (s->bytes[k] != want[k][0] || s->blocks[k] != want[k][1])
            fail_msg("%s: %llu bytes in %llu blocks, expected %llu in %llu", kinds[k], s->bytes[k],
                     s->blocks[k], want[k][0], want[k][1]);
}

static bool have_valgrind(void)
{
    if (access("/usr/bin/valgrind", X_OK) == 0)
        return true;
    print_message("valgrind is not installed: the comparison with it is skipped\n");
    return false;
}

/* valgrind --leak-check=full --show-leak-kinds=all on argv[]: its summary. */
static summary valgrind_summary(const char *const *args)
{
    char *cmd = h_fmt("valgrind --leak-check=full --show-leak-kinds=all");
    for (; *args; args++) {
        char *next = h_fmt("%s '%s'", cmd, *args);
        free(cmd);
        cmd = next;
    }
    h_result r = h_sh("%s", cmd);
    summary s = parse_summary(r.err);
    h_result_free(&r);
    free(cmd);
    return s;
}

/* The first n kinds of both summaries are equal. */
static void same_kinds(const summary *ours, const summary *v, int n)
{
    for (int k = 0; k < n; k++)
        if (ours->bytes[k] != v->bytes[k] || ours->blocks[k] != v->blocks[k])
            fail_msg("%s: alloctrace %llu bytes in %llu blocks, valgrind %llu in %llu", kinds[k],
                     ours->bytes[k], ours->blocks[k], v->bytes[k], v->blocks[k]);
}

/* The gate on args (the program, then its arguments), which must exit
 * with `status`. */
static h_result gate_on(const char *const *args, int status)
{
    const char *argv[16] = { h_path("scripts/alloctrace-check"), "--" };
    int n = 2;
    for (const char *const *a = args; *a && n < 15; a++)
        argv[n++] = *a;
    argv[n] = NULL;
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, status);
    return r;
}

/* The same, its summary. */
static summary gate_summary(const char *const *args, int status)
{
    h_result r = gate_on(args, status);
    summary s = parse_summary(r.err);
    h_result_free(&r);
    return s;
}

/* The gate on args exits with `status` and `want` as its summary, and
 * valgrind, where installed, says the same. Returns the report. */
static char *judged_as(const char *const *args, int status, const unsigned long long want[4][2])
{
    h_result r = gate_on(args, status);
    summary s = parse_summary(r.err);
    expect(&s, want);
    if (have_valgrind()) {
        summary v = valgrind_summary(args);
        same_kinds(&s, &v, 4);
    }
    free(r.out);
    return r.err;
}

/* 100 reachable from a global; 40 lost; a lost 16-byte node holding the
 * only pointer to 200 (indirect); 64 pointed into only (possible); a lost
 * cycle of two 48s (one definite, one indirect); a lost list of 5 nodes
 * of 32 (one definite, four indirect). */
static void each_kind_counted_as_memcheck_counts_it(void **state)
{
    (void)state;
    char *prog = PROG("reach_kinds");
    const char *args[] = { prog, "reachable", "definite", "indirect", "possible", "cycle",
                           "chain=5", NULL };
    const unsigned long long want[4][2] = { { 40 + 16 + 48 + 32, 4 }, { 200 + 48 + 4 * 32, 6 },
                                            { 64, 1 }, { 100, 1 } };
    free(judged_as(args, 1, want));
    free(prog);
}

/* Blocks pointing into themselves (the scan skips those words): one kept
 * by a global still reachable, one a global points into possibly lost
 * (its pointer to its own start makes it no more), one no root reaches
 * definitely lost, and the block only it points to indirectly lost. */
static void blocks_pointing_into_themselves_as_valgrind(void **state)
{
    (void)state;
    char *prog = PROG("reach_kinds");
    const char *args[] = { prog, "self", NULL };
    const unsigned long long want[4][2] = { { 72, 1 }, { 24, 1 }, { 80, 1 }, { 96, 1 } };
    free(judged_as(args, 1, want));
    free(prog);
}

/* 20,000 small blocks side by side, found through the scan's smallest
 * grains (one block starts in each): 5,000 of each kind, as valgrind. */
static void dense_small_blocks_as_valgrind(void **state)
{
    (void)state;
    char *prog = PROG("reach_kinds");
    const char *args[] = { prog, "dense=20000", NULL };
    const unsigned long long want[4][2] = { { 5000 * 48, 5000 }, { 5000 * 64, 5000 },
                                            { 5000 * 32, 5000 }, { 5000 * 16, 5000 } };
    free(judged_as(args, 1, want));
    free(prog);
}

/* Three trees of 40,000 nodes (reach_kinds' trees=N): one kept, one
 * pointed into, one lost, marked down from their roots after the roots'
 * scan. threads: ALLOCTRACE_EXIT_THREADS, "1" for the exit's helpers,
 * whose marking thread then shares that work (reach.c's mark_shared),
 * "0" for one thread. The kinds are valgrind's either way. */
static void trees_judged_with_exit_threads(const char *threads)
{
    char *prog = PROG("reach_kinds");
    const char *args[] = { prog, "trees=40000", NULL };
    const unsigned long long want[4][2] = { { 32, 1 }, { 39999ull * 32, 39999 },
                                            { 40000ull * 32, 40000 }, { 40000ull * 32, 40000 } };
    setenv("ALLOCTRACE_EXIT_THREADS", threads, 1);
    free(judged_as(args, 1, want));
    unsetenv("ALLOCTRACE_EXIT_THREADS");
    free(prog);
}

static void trees_marked_on_two_threads_as_valgrind(void **state)
{
    (void)state;
    trees_judged_with_exit_threads("1");
}

static void trees_marked_on_one_thread_as_valgrind(void **state)
{
    (void)state;
    trees_judged_with_exit_threads("0");
}

/* valgrind: "76 (32 direct, 44 indirect) bytes in 1 blocks are definitely
 * lost"; a new[] array pointed to after its count and an object pointed
 * to at its second base are still reachable (memcheck's heuristics); the
 * same new[] with no pointer is lost. */
static void cxx_string_and_heuristics_as_valgrind(void **state)
{
    (void)state;
    char *prog = PROG("reach_cxx");
    const char *args[] = { prog, "string", "newarray", "multi", "lostarr", NULL };
    const unsigned long long want[4][2] = { { 32 + 32, 2 }, { 44, 1 }, { 0, 0 }, { 48 + 40, 2 } };
    char *report = judged_as(args, 1, want);
    assert_non_null(strstr(report, "Leak of 44 byte(s) in 1 block(s) in make_string (reach_cxx.cc:37), "
                                   "allocated from: [indirectly lost]\n"));
    free(report);
    free(prog);
}

/* Pointers megabytes into a block, in another 64 KiB region than its
 * start (the scan drops a word whose region holds no block before any
 * lookup): 4 MiB pointed into only is possibly lost; 4 MiB pointed to
 * from a global, and the 4 MiB it points to from 3 MiB in, are still
 * reachable. valgrind says the same. */
static void pointers_far_into_large_blocks_as_valgrind(void **state)
{
    (void)state;
    char *prog = PROG("reach_kinds");
    const char *args[] = { prog, "far", NULL };
    const unsigned long long want[4][2] = { { 0, 0 }, { 0, 0 }, { 4u << 20, 1 }, { 8u << 20, 2 } };
    free(judged_as(args, 0, want));
    free(prog);
}

/* 100 blocks of 5 MiB, each in a shadow leaf of its own: the scan leaves
 * out more ranges than the 64 it once had room for (the later ones were
 * dropped, and the tracer's tables scanned as roots). Half kept, half
 * lost. valgrind counts the same 50 still reachable and 50 lost, a few of
 * which it calls possibly lost under its own allocator's placement. */
static void a_hundred_shadow_leaves_as_valgrind(void **state)
{
    (void)state;
    char *prog = PROG("reach_kinds");
    const char *args[] = { prog, "leaves=100", NULL };
    summary s = gate_summary(args, 1);
    const unsigned long long want[4][2] = { { 50ull * (5u << 20), 50 }, { 0, 0 }, { 0, 0 },
                                            { 50ull * (5u << 20), 50 } };
    expect(&s, want);
    if (have_valgrind()) {
        summary v = valgrind_summary(args);
        assert_int_equal(v.blocks[3], s.blocks[3]);
        assert_int_equal(v.bytes[3], s.bytes[3]);
        assert_int_equal(v.blocks[0] + v.blocks[2], s.blocks[0]);
        assert_int_equal(v.bytes[0] + v.bytes[2], s.bytes[0]);
    }
    free(prog);
}

/* A block whose only pointer is on the stack of a thread blocked at exit
 * is still reachable: thread stacks are roots. */
static void pointer_on_a_running_threads_stack_reaches(void **state)
{
    (void)state;
    char *prog = PROG("reach_kinds");
    h_result r = gate("--", prog, "thread", NULL);
    assert_int_equal(r.status, 0);
    summary s = parse_summary(r.err);
    assert_int_equal(s.bytes[3], 72);
    assert_int_equal(s.blocks[3], 1);
    assert_int_equal(s.blocks[0] + s.blocks[1], 0);
    h_result_free(&r);
    free(prog);
}

/* A thread calls exit while main waits for it: main's live frame (above
 * its stack pointer, blocked in pthread_join) holds 56 bytes; the 40 the
 * exiting thread dropped are lost. valgrind says the same. */
static void exit_from_a_thread_scans_the_waiting_main_stack(void **state)
{
    (void)state;
    char *prog = PROG("reach_kinds");
    const char *args[] = { prog, "exitthread", NULL };
    summary s = gate_summary(args, 1);
    assert_int_equal(s.bytes[0], 40);
    assert_int_equal(s.blocks[0], 1);
    assert_int_equal(s.bytes[3], 56);
    assert_int_equal(s.blocks[3], 1);
    if (have_valgrind()) {
        summary v = valgrind_summary(args);
        same_kinds(&s, &v, 2);   /* possibly lost: the thread's DTV, suppressed by default here */
        assert_int_equal(v.bytes[3], s.bytes[3]);
        assert_int_equal(v.blocks[3], s.blocks[3]);
    }
    free(prog);
}

/* A thread that ended left its block's only pointer in the dead frames
 * of its stack, which glibc keeps for the next thread: lost, as valgrind
 * says (only the stack's TLS and thread control block are roots). */
static void dead_threads_stack_is_no_root(void **state)
{
    (void)state;
    char *prog = PROG("reach_kinds");
    const char *args[] = { prog, "joined", NULL };
    const unsigned long long want[4][2] = { { 88, 1 }, { 0, 0 }, { 0, 0 }, { 0, 0 } };
    free(judged_as(args, 1, want));
    free(prog);
}

/* glibc's caches - stdout's buffer, locales, the time zone, an open
 * stream's buffer - are what valgrind's freeres frees before it looks:
 * "libc's caches" here, out of the four kinds; the FILE of the stream left
 * open stays still reachable, as in valgrind. */
static void libc_caches_counted_apart_as_valgrind_frees_them(void **state)
{
    (void)state;
    char *prog = PROG("reach_kinds");
    const char *args[] = { prog, "libc", NULL };
    /* Still reachable: the FILE, glibc's locked_FILE around it. */
    const unsigned long long want[4][2] = { { 0, 0 }, { 0, 0 }, { 0, 0 }, { sizeof(FILE) + 256, 1 } };
    char *report = judged_as(args, 0, want);
    assert_non_null(h_find_line(report, "^     libc's caches: [0-9,]+ bytes in [0-9]+ blocks$"));
    free(report);
    free(prog);
}

/* Under jemalloc the scan would take its metadata for the program's
 * pointers: no kinds, the reason in the trace (not on the program's
 * stderr), every block not classified (and failing, as before kinds). */
static void foreign_allocator_leaves_blocks_unclassified(void **state)
{
    (void)state;
    const char *jemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
    if (access(jemalloc, R_OK) != 0) {
        print_message("libjemalloc2 is not installed: skipped\n");
        skip();
    }
    char *prog = PROG("reach_kinds");
    char *env = h_fmt("LD_PRELOAD=%s", jemalloc);
    char *dir = h_tmpdir();
    const char *argv[] = { h_path("scripts/alloctrace-check"), "--trace-dir", dir, "--", prog,
                           "reachable", "definite", NULL };
    const char *envv[] = { env, NULL };
    h_result r = h_run(argv, envv, NULL);
    assert_int_equal(r.status, 1);
    assert_null(strstr(r.err, "alloctrace: the allocator"));
    h_result t = h_sh("cat '%s'/trace.*.txt", dir);
    assert_non_null(strstr(t.out, "\n## leak kinds not written: the allocator is not glibc's\n"));
    h_result_free(&t);
    /* The two blocks, and what jemalloc's libstdc++ allocates at start. */
    assert_non_null(h_find_line(r.err, "^    not classified: [0-9,]+ bytes in [0-9]+ blocks$"));
    assert_non_null(strstr(r.err, "   definitely lost: 0 bytes in 0 blocks\n"));
    assert_non_null(strstr(r.err, "Leak of 40 byte(s) in 1 block(s) in make_definite (reach_kinds.c:46), "
                                  "allocated from:\n"));
    h_result_free(&r);
    free(env);
    free(prog);
}

/* A real program next to valgrind, every kind: sort. */
static void sort_lost_blocks_as_valgrind(void **state)
{
    (void)state;
    if (!have_valgrind())
        skip();
    h_result r = gate("--", "sort", "/etc/passwd", NULL);
    summary s = parse_summary(r.err);
    h_result_free(&r);
    const char *args[] = { "sort", "/etc/passwd", NULL };
    summary v = valgrind_summary(args);
    same_kinds(&s, &v, 4);
}

/* The trace: a "## leak kind:" line before each block; the post-processor
 * keeps it, -c groups by kind as well as stack, --leak-kinds selects. */
static void kind_lines_survive_postproc_and_group(void **state)
{
    (void)state;
    char *trace = h_fmt("%s/t.txt", h_tmpdir());
    char *prog = PROG("reach_kinds");
    const char *argv[] = { prog, "chain=3", "definite", NULL };
    const char *env[] = { "ALLOCTRACE_MODE=leaks", "ALLOCTRACE_TIMESTAMPS=0", NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    char *text = h_read_file(trace, NULL);
    assert_non_null(text);
    /* chain=3: three 32-byte nodes, the last made (the head) definite.
     * The trace is compressed: the line comes once a group (site, kind). */
    assert_int_equal(h_count_lines(text, "^## leak kind: indirect$"), 1);
    assert_int_equal(h_count_lines(text, "^## leak kind: definite$"), 2);
    assert_non_null(strstr(text, "## leak kind: indirect\n1. malloc(32) = 0x"));
    assert_non_null(h_find_line(text, "^2\\. malloc\\(32\\) = 0x"));
    assert_non_null(strstr(text, "## leak kind: definite\n3. malloc(32) = 0x"));
    free(text);

    char *pp = h_path("postproc/alloctrace-postproc");
    r = h_sh("'%s' '%s' | '%s' -c", pp, trace, pp);
    assert_int_equal(r.status, 0);
    /* One stack, two kinds: two groups, the kind line before each. */
    assert_non_null(strstr(r.out, "## leak kind: indirect\n1. malloc(32) = 0x"));
    assert_non_null(h_find_line(r.out, "^2\\. malloc\\(32\\) = 0x"));
    assert_int_equal(h_count_lines(r.out, "^# allocation summary: 2 block\\(s\\) with total size 64$"), 1);
    assert_int_equal(h_count_lines(r.out, "^# allocation summary: 1 block\\(s\\) with total size 32$"), 1);
    assert_int_equal(h_count_lines(r.out, "^## leak kind: "), 3);
    h_result_free(&r);

    r = h_sh("'%s' --leak-kinds=definite '%s'", pp, trace);
    assert_int_equal(r.status, 0);
    assert_int_equal(h_count_lines(r.out, "^[0-9]+\\. "), 2);
    assert_int_equal(h_count_lines(r.out, "^## leak kind: definite$"), 2);
    h_result_free(&r);
    r = h_sh("'%s' --leak-kinds=possibly '%s'", pp, trace);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--leak-kinds: unknown kind in 'possibly'"));
    h_result_free(&r);
    free(pp);
    free(prog);
    free(trace);
}

/* Many blocks of one site in a leaks trace: the frames once a group (by
 * site and kind, cut into pieces of a few KiB), not once a block; read
 * back, every block has its own index, size, kind and the site's frames. */
static void a_sites_blocks_share_its_frames_and_read_back_one_by_one(void **state)
{
    (void)state;
    char *trace = h_fmt("%s/t.txt", h_tmpdir());
    char *prog = PROG("reach_kinds");
    const char *argv[] = { prog, "sized=300", NULL };
    const char *env[] = { "ALLOCTRACE_MODE=leaks", "ALLOCTRACE_TIMESTAMPS=0", NULL };
    h_result r = h_trace(trace, argv, env);
    assert_int_equal(r.status, 0);
    h_result_free(&r);

    /* 150 reachable and 150 definite blocks: a few groups, one frame list each */
    struct t_trace t = t_load(trace);
    assert_true(t.compressed);
    assert_int_equal(t.n, 300);
    assert_true(t.groups >= 2 && t.groups <= 8);
    assert_int_equal(t.nframes, t.groups * (size_t)t.recs[0].nframes);
    for (size_t i = 0; i < t.n; i++) {
        assert_int_equal(t.recs[i].index, i + 1);
        assert_int_equal(t.recs[i].size, i + 1);
        assert_int_equal(t.recs[i].nframes, t.recs[0].nframes);
        assert_memory_equal(t_frames(&t, &t.recs[i]), t_frames(&t, &t.recs[0]),
                            (size_t)t.recs[0].nframes * sizeof(uint64_t));
    }
    assert_true(t.leak_summary);
    assert_int_equal(t.leak_blocks, 300);
    assert_int_equal(t.leak_bytes, 300 * 301 / 2);
    char *text = h_read_file(trace, NULL);
    assert_int_equal(h_count_lines(text, "^## leak kind: "), t.groups);
    free(text);

    /* plain again, in index order: each block its kind line, size, frames */
    char *pp = h_path("postproc/alloctrace-postproc");
    r = h_sh("'%s' '%s'", pp, trace);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_int_equal(h_count_lines(r.out, "^[0-9]+\\. malloc"), 300);
    assert_int_equal(h_count_lines(r.out, "^\t0x"), 300 * t.recs[0].nframes);
    for (int s = 1; s <= 300; s++) {
        char *want = h_fmt("## leak kind: %s\n%d. malloc(%d) = 0x",
                           s % 2 ? "definite" : "reachable", s, s);
        if (!strstr(r.out, want))
            fail_msg("no \"%s\" in the post-processor's output", want);
        free(want);
    }
    h_result_free(&r);
    t_free(&t);
    free(pp);
    free(prog);
    free(trace);
}

/* Only definite and indirect fail by default; --leak-kinds picks others;
 * the report ends with the LEAK SUMMARY, then the SUMMARY line counting
 * the failing kinds; JSON and JUnit carry the kind. */
static void gate_fails_on_the_chosen_kinds(void **state)
{
    (void)state;
    char *prog = PROG("reach_kinds");
    h_result r = gate("--", prog, "reachable", "possible", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "no leaks left after suppressions\n"));
    assert_non_null(strstr(r.err, "     possibly lost: 64 bytes in 1 blocks\n"
                                  "   still reachable: 100 bytes in 1 blocks\n"
                                  "        suppressed: 0 bytes in 0 blocks\n"
                                  "SUMMARY: alloctrace: 0 byte(s) leaked in 0 allocation(s).\n"));
    h_result_free(&r);

    r = gate("--leak-kinds=possible", "--", prog, "reachable", "possible", NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "Leak of 64 byte(s) in 1 block(s) in make_possible (reach_kinds.c:60), "
                                  "allocated from: [possibly lost]\n"));
    assert_null(strstr(r.err, "[still reachable]"));
    assert_non_null(strstr(r.err, "SUMMARY: alloctrace: 64 byte(s) leaked in 1 allocation(s).\n"));
    h_result_free(&r);

    char *json = h_fmt("%s/r.json", h_tmpdir()), *xml = h_fmt("%s/r.xml", h_tmpdir());
    r = gate("--leak-kinds", "all", "--json", json, "--junit", xml, "--", prog, "reachable",
             "definite", NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "SUMMARY: alloctrace: 140 byte(s) leaked in 2 allocation(s).\n"));
    h_result_free(&r);
    r = h_sh("python3 -c 'import json,sys\n"
             "d=json.load(open(sys.argv[1]))\n"
             "k=d[\"summary\"][\"leak_kinds\"]\n"
             "print(k[\"definite\"], k[\"reachable\"][\"blocks\"], k[\"possible\"][\"fails\"])\n"
             "print(sorted((g[\"kind\"], g[\"bytes\"]) for g in d[\"processes\"][0][\"groups\"]))' '%s'",
             json);
    assert_string_equal(r.out, "{'bytes': 40, 'blocks': 1, 'fails': True} 1 True\n"
                               "[('definite', 40), ('reachable', 100)]\n");
    h_result_free(&r);
    r = h_sh("grep -o 'message=\"[^\"]*\"' '%s'", xml);
    assert_non_null(strstr(r.out, "message=\"100 byte(s) in 1 block(s) leaked in make_reachable "
                                  "(reach_kinds.c:40) (still reachable)\""));
    assert_non_null(strstr(r.out, "message=\"40 byte(s) in 1 block(s) leaked in make_definite "
                                  "(reach_kinds.c:46) (definitely lost)\""));
    h_result_free(&r);
    r = gate("--leak-kinds=definite,bogus", "--", prog, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--leak-kinds: unknown kind in 'definite,bogus'"));
    h_result_free(&r);
    free(json);
    free(xml);
    free(prog);
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, h_teardown)
    const struct CMUnitTest tests[] = {
        T(each_kind_counted_as_memcheck_counts_it),
        T(blocks_pointing_into_themselves_as_valgrind),
        T(dense_small_blocks_as_valgrind),
        T(trees_marked_on_two_threads_as_valgrind),
        T(trees_marked_on_one_thread_as_valgrind),
        T(cxx_string_and_heuristics_as_valgrind),
        T(pointers_far_into_large_blocks_as_valgrind),
        T(a_hundred_shadow_leaves_as_valgrind),
        T(pointer_on_a_running_threads_stack_reaches),
        T(exit_from_a_thread_scans_the_waiting_main_stack),
        T(dead_threads_stack_is_no_root),
        T(libc_caches_counted_apart_as_valgrind_frees_them),
        T(foreign_allocator_leaves_blocks_unclassified),
        T(sort_lost_blocks_as_valgrind),
        T(kind_lines_survive_postproc_and_group),
        T(a_sites_blocks_share_its_frames_and_read_back_one_by_one),
        T(gate_fails_on_the_chosen_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
