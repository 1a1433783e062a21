/* tests/unit/test_snapshot.c: snapshots in the post-processor, under ASan
 * and UBSan: `--snapshot N` (read/snapmark.c) cuts a full trace at its
 * mark, and `--diff` of two snapshots (analyze/diff.c) compares them block
 * by block. Traces are written here, so every number is known. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "leaks.h"
#include "outputs.h"
#include "reader.h"
#include "snapmark.h"
#include "writer.h"

#define HDR "version=2.0, arch=x86_64, process=./t, pid=7, \n"
#define LHDR "version=2.0, arch=x86_64, process=./t, pid=7, filter=leaks, \n"
#define GROW "\t0xa1 grow() at g.c:1\n\t0xf0 main() at m.c:9\n\n"
#define LEAK "\t0xb1 leak() at l.c:2\n\t0xf1 main() at m.c:10\n\n"

static bool has(const char *text, const char *needle)
{
    if (strstr(text, needle))
        return true;
    fprintf(stderr, "missing:\n%s\n--- in ---\n%s\n", needle, text);
    return false;
}

/* The trace through snapmark -> leaks -> writer, as --snapshot N runs. */
static char *cut_at(const char *in, const char *n, int *status, char **msgs)
{
    size_t mlen, olen;
    char *out = NULL;
    FILE *mf = open_memstream(msgs, &mlen);
    FILE *of = tmpfile();
    at_diag d;
    at_diag_init(&d, "t.trace");
    d.out = mf;
    at_trace *t = at_trace_new();
    at_stage *w = at_writer_new(fileno(of), t, &d);
    at_stage *l = at_leaks_new(w, t);
    at_stage *m = at_snapmark_new(l, t, &d, n);
    assert_int_equal(at_read_mem(in, strlen(in), t, m, &d), 0);
    at_stage_finish(m);
    *status = d.failed ? d.status : 0;
    at_snapmark_free(m);
    at_leaks_free(l);
    at_writer_free(w);
    at_trace_free(t);
    fflush(of);
    olen = (size_t)ftell(of);
    out = calloc(1, olen + 1);
    rewind(of);
    assert_int_equal(fread(out, 1, olen, of), olen);
    fclose(of);
    fclose(mf);
    return out;
}

static const char full_trace[] = HDR
    "1. [10:00:00.000001] malloc(10) = 0x10\n" GROW
    "2. [10:00:00.000002] malloc(20) = 0x20\n" LEAK
    "## snapshot: 1 first\n"
    "3. [10:00:00.000003] free(0x10)\n\n"
    "4. [10:00:00.000004] malloc(30) = 0x30\n" GROW
    "## snapshot: 2\n"
    "5. [10:00:00.000005] malloc(40) = 0x40\n" GROW;

static void snapshot_n_keeps_the_blocks_live_at_its_mark(void **state)
{
    (void)state;
    int status;
    char *msgs;
    char *out = cut_at(full_trace, "2", &status, &msgs);
    assert_int_equal(status, 0);
    assert_true(has(out, "filter=leaks"));
    assert_true(has(out, "2. [10:00:00.000002] malloc(20) = 0x20\n"));
    assert_true(has(out, "4. [10:00:00.000004] malloc(30) = 0x30\n"));
    assert_null(strstr(out, "malloc(10)"));   /* freed before the mark */
    assert_null(strstr(out, "malloc(40)"));   /* made after it */
    assert_true(has(out, "## snapshot: 2\n"));
    assert_null(strstr(out, "## snapshot: 1"));   /* another snapshot's mark */
    free(out);
    free(msgs);
}

static void snapshot_n_missing_names_the_marks_there_are(void **state)
{
    (void)state;
    int status;
    char *msgs;
    char *out = cut_at(full_trace, "3", &status, &msgs);
    assert_int_equal(status, 1);
    assert_true(has(msgs, "t.trace: no snapshot 3 in this trace (its snapshots: 1, 2)"));
    free(out);
    free(msgs);
}

/* Where the collecting stage passes records: nowhere (the analysis in
 * alloctrace-postproc). */
static void sink_put(at_stage *self, const at_record *r)
{
    (void)self;
    (void)r;
}

static void sink_finish(at_stage *self)
{
    (void)self;
}

/* Two snapshots through the collecting stage, then the comparison. */
static char *snap_diff(const char *old, const char *new)
{
    at_snap_diff *sd = at_snap_diff_new();
    const char *in[2] = { old, new };
    for (int w = 0; w < 2; w++) {
        at_diag d;
        at_diag_init(&d, "t.trace");
        d.out = stderr;
        at_trace *t = at_trace_new();
        at_stage sink = { .put = sink_put, .finish = sink_finish };
        at_stage *s = at_snap_diff_stage_new(sd, w, t, &sink);
        assert_int_equal(at_read_mem(in[w], strlen(in[w]), t, s, &d), 0);
        at_stage_finish(s);
        at_snap_diff_stage_free(s);
        at_trace_free(t);
    }
    assert_true(at_snap_diff_ready(sd));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(at_snap_diff_write(f, sd, "s1", "s2", 10), 0);
    fclose(f);
    at_snap_diff_free(sd);
    return text;
}

static void diff_of_snapshots_counts_new_live_blocks_and_new_leaks_per_site(void **state)
{
    (void)state;
    char *text = snap_diff(
        LHDR "## snapshot: 1 a\n"
        "## leak kind: reachable\n1. [10:00:00.000001] malloc(100) = 0x100\n" GROW
        "## leak kind: definite\n2. [10:00:00.000002] malloc(7) = 0x200\n" LEAK
        "## leak kind: reachable\n3. [10:00:00.000003] malloc(100) = 0x300\n" GROW,
        LHDR "## snapshot: 2 b\n"
        /* 0x100: the same block, its time 2 us off (a new TSC rate) */
        "## leak kind: reachable\n1. [10:00:00.000003] malloc(100) = 0x100\n" GROW
        "## leak kind: definite\n2. [10:00:00.000002] malloc(7) = 0x200\n" LEAK
        /* 0x300 freed and its address given to a new block 5 s later */
        "## leak kind: reachable\n3. [10:00:05.000000] malloc(100) = 0x300\n" GROW
        "## leak kind: reachable\n4. [10:00:05.000001] malloc(100) = 0x400\n" GROW
        "## leak kind: definite\n5. [10:00:05.000002] malloc(9) = 0x500\n" LEAK);
    assert_true(has(text, "alloctrace snapshot diff: s1 (snapshot 1 a) -> s2 (snapshot 2 b)\n"
                          "  live: 3 blocks, 207 bytes -> 5 blocks, 316 bytes (+109 bytes)\n"
                          "  new and still live: 3 blocks, 209 bytes; freed since: 1 blocks, "
                          "100 bytes\n"));
    assert_true(has(text, "   1. +200 bytes in +2 blocks (now 300 bytes in 3 blocks)\n"
                          "        main@m.c -> grow@g.c\n"
                          "   2. +9 bytes in +1 blocks (now 16 bytes in 2 blocks)\n"
                          "        main@m.c -> leak@l.c\n"));
    assert_true(has(text, "  definitely lost  16 bytes in 2 blocks (+9 bytes in +1 new)\n"));
    assert_true(has(text, "sites with new leaks: 1; top 1:\n"
                          "   1. definitely lost +9 bytes in +1 new (now 2 blocks);\n"
                          "        main@m.c -> leak@l.c\n"));
    free(text);
}

static void a_block_that_turned_lost_is_a_new_leak(void **state)
{
    (void)state;
    char *text = snap_diff(
        LHDR "## snapshot: 1\n## leak kind: reachable\n1. [10:00:00.000001] malloc(64) = 0x100\n" GROW,
        LHDR "## snapshot: 2\n## leak kind: definite\n1. [10:00:00.000001] malloc(64) = 0x100\n" GROW);
    assert_true(has(text, "  new and still live: 0 blocks, 0 bytes; freed since: 0 blocks, 0 bytes\n"));
    assert_true(has(text, "  definitely lost  64 bytes in 1 blocks (+64 bytes in +1 new)\n"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(snapshot_n_keeps_the_blocks_live_at_its_mark),
        cmocka_unit_test(snapshot_n_missing_names_the_marks_there_are),
        cmocka_unit_test(diff_of_snapshots_counts_new_live_blocks_and_new_leaks_per_site),
        cmocka_unit_test(a_block_that_turned_lost_is_a_new_leak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
