/* tests/unit/test_analyze.c: the one-pass analyses (postproc/analyze/) on
 * hand-made traces whose every number is worked out by hand in the test:
 * peak and its per-site contributions (at the very start, at the very end,
 * moved by a realloc), temporaries by heaptrack's rule, unknown releases,
 * the size histogram, contexts, the time series (by index, by time across
 * midnight, bounded), an empty trace, a leaks-only trace, and the same
 * numbers whether the calls come in order or grouped (-c, compressed input).
 * The report and the stats are checked on the same runs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "outputs.h"
#include "compress.h"
#include "leaks.h"
#include "reader.h"
#include "writer.h"

#define HDR "version=2.0, arch=x86_64, process=./t, pid=7, \n"
#define A "\t0xa1 a() at a.c:1\n\t0xf0 main() at m.c:9\n\n"
#define B "\t0xb1 b() at b.c:2\n\t0xf1 main() at m.c:10\n\n"
#define C "\t0xc1 c() at c.c:3\n\t0xf2 main() at m.c:11\n\n"

typedef struct run {
    at_trace *t;
    at_stage *an_stage, *compress, *leaks;
    const at_analysis *an;
    char *report, *stats;
    int rc;
    uint64_t warnings;
} run;

static int capture(void *arg, const at_analysis *an, at_trace *t)
{
    run *r = arg;
    r->an = an;
    size_t len;
    FILE *f = open_memstream(&r->report, &len);
    at_an_write_report(f, an, t, 3);
    fclose(f);
    f = open_memstream(&r->stats, &len);
    at_an_write_stats(f, an, t, 3);
    fclose(f);
    return 0;
}

/* in -> [leaks] -> [compress, grouping] -> analysis */
static run *analyse(const char *in, bool leaks, bool grouped)
{
    run *r = calloc(1, sizeof *r);
    at_diag d;
    at_diag_init(&d, "t.trace");
    d.out = stderr;
    r->t = at_trace_new();
    at_stage *head = r->an_stage = at_analyze_stage_new(r->t, &d, capture, r);
    if (grouped)
        head = r->compress = at_compress_new(head, r->t, &d, true, AT_SORT_NONE, 0);
    if (leaks)
        head = r->leaks = at_leaks_new(head, r->t);
    r->rc = at_read_mem(in, strlen(in), r->t, head, &d);
    assert_int_equal(r->rc, 0);
    at_stage_finish(head);
    r->warnings = d.warnings;
    assert_non_null(r->an);
    return r;
}

static void done(run *r)
{
    at_leaks_free(r->leaks);
    at_compress_free(r->compress);
    at_analyze_stage_free(r->an_stage);
    at_trace_free(r->t);
    free(r->report);
    free(r->stats);
    free(r);
}

/* The trace text with -c: what a compressed input file holds. */
static char *compressed(const char *in)
{
    at_diag d;
    at_diag_init(&d, "t.trace");
    at_trace *t = at_trace_new();
    FILE *f = tmpfile();
    at_stage *w = at_writer_new(fileno(f), t, &d);
    at_stage *c = at_compress_new(w, t, &d, true, AT_SORT_NONE, 0);
    assert_int_equal(at_read_mem(in, strlen(in), t, c, &d), 0);
    at_stage_finish(c);
    off_t len = lseek(fileno(f), 0, SEEK_END);
    char *s = calloc(1, (size_t)len + 1);
    assert_int_equal(pread(fileno(f), s, (size_t)len, 0), len);
    fclose(f);
    at_compress_free(c);
    at_writer_free(w);
    at_trace_free(t);
    return s;
}

static const at_an_site *site_of(const run *r, const char *fn_addr_text)
{
    for (size_t i = 0; i < r->an->nsites; i++) {
        const at_stack *s = r->an->sites[i].stack;
        if (s->nframes && s->frames[0].text && strstr(s->frames[0].text, fn_addr_text))
            return &r->an->sites[i];
    }
    fail_msg("no site %s", fn_addr_text);
    return NULL;
}

static bool has(const char *text, const char *part)
{
    if (!strstr(text, part))
        print_error("missing \"%s\" in:\n%s\n", part, text);
    return strstr(text, part) != NULL;
}

/* live: 100 | 0 | 10 | 30 | 20 | 0. The peak is the first call's 100. */
static const char peak_first[] = HDR
    "1. [10:00:00.000000] malloc(100) = 0x1\n" A
    "2. [10:00:00.000010] free(0x1)\n\n"
    "3. [10:00:00.000020] malloc(10) = 0x2\n" B
    "4. [10:00:00.000030] malloc(20) = 0x3\n" C
    "5. [10:00:00.000040] free(0x2)\n\n"
    "6. [10:00:00.000050] free(0x3)\n\n";

static void peak_at_the_very_start_counts_only_the_first_block(void **state)
{
    (void)state;
    run *r = analyse(peak_first, false, false);
    const at_analysis *an = r->an;
    assert_int_equal(an->peak.bytes, 100);
    assert_int_equal(an->peak.blocks, 1);
    assert_int_equal(an->peak.index, 1);
    assert_true(an->peak.has_time);
    assert_int_equal(an->peak.time_us, 0);
    assert_int_equal(site_of(r, "a()")->cost.peak, 100);
    assert_int_equal(site_of(r, "a()")->cost.peak_blocks, 1);
    assert_int_equal(site_of(r, "b()")->cost.peak, 0);
    assert_int_equal(site_of(r, "c()")->cost.peak, 0);
    /* 1->2 is temporary; 4->5 frees another block than the last one */
    assert_int_equal(an->summary.temporary, 1);
    assert_int_equal(site_of(r, "a()")->cost.temporary, 1);
    assert_int_equal(an->summary.allocations, 3);
    assert_int_equal(an->summary.releases, 3);
    assert_int_equal(an->summary.allocated_bytes, 130);
    assert_int_equal(an->summary.leaked_bytes, 0);
    assert_int_equal(an->summary.duration_us, 50);
    assert_true(has(r->report, "peak heap:    100 B (100 bytes) in 1 blocks, at allocation 1 of 3 "
                               "(call 1 of the trace, releases counted), "
                               "0.000000 s into the run\n"));
    assert_true(has(r->stats, "\"peak\": {\"bytes\": 100, \"blocks\": 1, \"index\": 1, "
                              "\"allocation\": 1, \"time_us\": 0}"));
    done(r);
}

/* live: 10 | 30 | 20 | 60. The last call makes the peak; nothing is freed
 * after it, so the contributions are what leaks. */
static const char peak_last[] = HDR
    "1. malloc(10) = 0x1\n" A
    "2. malloc(20) = 0x2\n" B
    "3. free(0x1)\n\n"
    "4. malloc(40) = 0x3\n" A;

static void peak_at_the_very_end_is_what_is_live_at_the_end(void **state)
{
    (void)state;
    run *r = analyse(peak_last, false, false);
    const at_analysis *an = r->an;
    assert_int_equal(an->peak.bytes, 60);
    assert_int_equal(an->peak.blocks, 2);
    assert_int_equal(an->peak.index, 4);
    assert_false(an->peak.has_time);
    const at_an_site *a = site_of(r, "a()"), *b = site_of(r, "b()");
    assert_int_equal(a->cost.peak, 40);
    assert_int_equal(a->cost.peak_blocks, 1);
    assert_int_equal(b->cost.peak, 20);
    assert_int_equal(a->cost.leaked, 40);
    assert_int_equal(b->cost.leaked, 20);
    assert_int_equal(a->cost.calls, 2);
    assert_int_equal(a->cost.bytes, 50);
    assert_int_equal(an->summary.leaked_bytes, 60);
    assert_int_equal(an->summary.leaked_blocks, 2);
    assert_int_equal(an->summary.temporary, 0);
    assert_true(has(r->report, "peak heap:    60 B (60 bytes) in 2 blocks, at allocation 3 of 3 "
                               "(call 4 of the trace, releases counted)\n"));
    assert_true(has(r->report, "leaked:       60 B (60 bytes) in 2 blocks\n"));
    assert_true(has(r->report, "top 2 sites by memory at the peak (of 2 sites):\n"
                               "   1. 40 B (40 bytes, 66.7% of the peak) in 1 blocks by malloc in a (a.c:1)\n"
                               "        a at a.c:1\n        main at m.c:9\n"
                               "   2. 20 B (20 bytes, 33.3% of the peak) in 1 blocks by malloc in b (b.c:2)\n"));
    assert_true(has(r->stats, "\"leaked_bytes\": 60, \"leaked_blocks\": 2, "));
    assert_true(has(r->stats, "\"peak\": {\"bytes\": 60, \"blocks\": 2, \"index\": 4, "
                              "\"allocation\": 3, \"time_us\": null}"));
    done(r);
}

/* live: 100 | 150 | 100 | 0 | 300 | 0: the realloc's new block makes the
 * peak, the block it replaced holds nothing then. */
static const char realloc_peak[] = HDR
    "1. malloc(100) = 0x1\n" A
    "2. malloc(50) = 0x2\n" B
    "3. free(0x2)\n\n"
    "4. realloc(0x1)\n" C
    "5. realloc(300) = 0x5\n" C
    "6. free(0x5)\n\n";

static void a_realloc_moves_the_peak_to_its_new_block(void **state)
{
    (void)state;
    run *r = analyse(realloc_peak, false, false);
    const at_analysis *an = r->an;
    assert_int_equal(an->peak.bytes, 300);
    assert_int_equal(an->peak.blocks, 1);
    assert_int_equal(an->peak.index, 5);
    assert_int_equal(site_of(r, "c()")->cost.peak, 300);
    assert_int_equal(site_of(r, "a()")->cost.peak, 0);
    assert_int_equal(site_of(r, "b()")->cost.peak, 0);
    /* 2->3 and 5->6 are temporary; 4 comes after a release */
    assert_int_equal(an->summary.temporary, 2);
    assert_int_equal(site_of(r, "b()")->cost.temporary, 1);
    assert_int_equal(site_of(r, "c()")->cost.temporary, 1);
    assert_int_equal(site_of(r, "a()")->cost.temporary, 0);
    assert_int_equal(an->summary.allocations, 3);
    assert_int_equal(an->summary.releases, 3);
    assert_int_equal(an->summary.allocated_bytes, 450);
    assert_true(has(r->stats, "\"temporary_allocations\": 2, "));
    done(r);
}

static void a_free_of_an_unknown_id_is_counted_and_changes_nothing_live(void **state)
{
    (void)state;
    run *r = analyse(HDR "1. free(0x99)\n\n"
                         "2. malloc(10) = 0x1\n" A
                         "3. free(0x1)\n\n",
                     false, false);
    const at_analysis *an = r->an;
    assert_int_equal(an->summary.unknown_releases, 1);
    assert_int_equal(an->summary.releases, 2);
    assert_int_equal(an->summary.leaked_bytes, 0);
    assert_int_equal(an->peak.bytes, 10);
    assert_int_equal(an->peak.index, 2);
    assert_int_equal(an->summary.temporary, 1);
    assert_true(has(r->report, "releases:     2 calls (1 of blocks not allocated in the trace)\n"));
    assert_true(has(r->stats, "\"unknown_releases\": 1, "));
    done(r);
}

/* heaptrack's rule: any release in between, even of an unknown block, makes
 * the allocation not temporary. */
static void a_release_in_between_makes_an_allocation_not_temporary(void **state)
{
    (void)state;
    run *r = analyse(HDR "1. malloc(10) = 0x1\n" A
                         "2. free(0x99)\n\n"
                         "3. free(0x1)\n\n",
                     false, false);
    assert_int_equal(r->an->summary.temporary, 0);
    done(r);
}

static void an_empty_trace_has_no_peak_and_no_series(void **state)
{
    (void)state;
    run *r = analyse(HDR, false, false);
    const at_analysis *an = r->an;
    assert_int_equal(an->summary.allocations, 0);
    assert_int_equal(an->peak.index, 0);
    assert_int_equal(an->series.n, 0);
    assert_int_equal(an->nsites, 0);
    assert_true(has(r->report, "allocations:  0 calls, 0 B (0 bytes)\n"
                               "releases:     0 calls\n"
                               "peak heap:    none (nothing was allocated)\n"
                               "leaked:       0 B (0 bytes) in 0 blocks\n"));
    assert_true(has(r->report, "memory over time: none, the trace has no calls\n"));
    assert_true(has(r->report, "top 0 sites by calls (of 0 sites):\n   (none)\n"));
    assert_true(has(r->stats, "\"peak\": null, "));
    assert_true(has(r->stats, "\"series\": null, "));
    done(r);
}

static const char leaks_only[] = "version=2.0, arch=x86_64, process=./t, pid=7, filter=leaks, \n"
    "2. malloc(20) = 0x20\n" A
    "5. malloc(30) = 0x30\n" A
    "9. calloc(8) = 0x40\n" B
    "# Resource - memory (memory allocation in bytes):\n"
    "# 3 block(s) leaked with total size of 58 bytes\n";

static void a_leaks_only_trace_says_it_has_no_peak_nor_series(void **state)
{
    (void)state;
    run *r = analyse(leaks_only, false, false);
    const at_analysis *an = r->an;
    assert_true(an->summary.leaks_only);
    assert_int_equal(an->summary.leaked_bytes, 58);
    assert_int_equal(an->summary.leaked_blocks, 3);
    assert_int_equal(an->summary.allocations, 3);
    assert_int_equal(an->series.n, 0);
    assert_int_equal(an->peak.bytes, 0);
    assert_int_equal(site_of(r, "a()")->cost.leaked, 50);
    assert_int_equal(site_of(r, "a()")->cost.leaked_blocks, 2);
    assert_true(has(r->report, "peak heap:    not in this trace (it holds leaks only)\n"));
    assert_true(has(r->report, "memory over time: none, a leaks-only trace keeps no order in "
                               "time\n"));
    assert_true(has(r->report, "top 2 sites by leaked bytes (of 2 sites):\n"
                               "   1. 50 B (50 bytes) in 2 blocks by malloc in a (a.c:1)\n"));
    assert_null(strstr(r->report, "by memory at the peak"));
    assert_true(has(r->stats, "\"releases\": null, "));
    assert_true(has(r->stats, "\"leaks_only\": true, "));
    assert_true(has(r->stats, "\"peak\": null, "));
    assert_true(has(r->stats, "\"series\": null, "));
    done(r);
}

/* -l in the same run gives the leaks-only analysis of what is left. */
static void leak_filtering_first_analyses_the_leaks(void **state)
{
    (void)state;
    run *r = analyse(peak_last, true, false);
    assert_true(r->an->summary.leaks_only);
    assert_int_equal(r->an->summary.leaked_bytes, 60);
    assert_int_equal(r->an->summary.allocations, 2);
    done(r);
}

/* Both blocks of a group are freed from another stack: grouped by stack,
 * the releases come before their allocations. The numbers must not care. */
static const char crossing[] = HDR
    "1. [10:00:00.000000] malloc(16) = 0x1\n" A
    "2. [10:00:00.000100] malloc(32) = 0x2\n" B
    "3. [10:00:00.000200] free(0x1)\n" C
    "4. [10:00:00.000300] malloc(16) = 0x3\n" A
    "5. [10:00:00.000400] free(0x3)\n" C
    "6. [10:00:00.000500] free(0x2)\n" C;

static void grouped_calls_give_the_numbers_of_the_plain_trace(void **state)
{
    (void)state;
    run *plain = analyse(crossing, false, false);
    assert_int_equal(plain->an->summary.leaked_blocks, 0);
    assert_int_equal(plain->an->peak.bytes, 48);
    assert_int_equal(plain->an->peak.index, 2);
    assert_int_equal(plain->an->summary.temporary, 1);
    run *grouped = analyse(crossing, false, true);
    assert_string_equal(grouped->stats, plain->stats);
    assert_string_equal(grouped->report, plain->report);
    char *c = compressed(crossing);
    assert_non_null(strstr(c, "filter=compress"));
    run *from_file = analyse(c, false, false);
    assert_string_equal(from_file->stats, plain->stats);
    assert_string_equal(from_file->report, plain->report);
    assert_true(has(plain->report, "leaked:       0 B (0 bytes) in 0 blocks\n"));
    free(c);
    done(from_file);
    done(grouped);
    done(plain);
}

static void sizes_fall_in_power_of_two_classes_and_the_most_frequent_are_kept(void **state)
{
    (void)state;
    run *r = analyse(HDR "1. malloc(0) = 0x1\n" A "2. malloc(1) = 0x2\n" A
                         "3. malloc(2) = 0x3\n" A "4. malloc(3) = 0x4\n" A
                         "5. malloc(4) = 0x5\n" A "6. malloc(1024) = 0x6\n" A
                         "7. malloc(1024) = 0x7\n" A,
                     false, false);
    const at_an_histogram *h = &r->an->histogram;
    assert_int_equal(h->count[0], 1);
    assert_int_equal(h->count[1], 1);
    assert_int_equal(h->count[2], 2);
    assert_int_equal(h->bytes[2], 5);
    assert_int_equal(h->count[3], 1);
    assert_int_equal(h->count[11], 2);
    assert_int_equal(h->bytes[11], 2048);
    assert_int_equal(h->distinct, 6);
    assert_int_equal(h->ntop, 6);
    uint64_t want[][2] = { { 1024, 2 }, { 0, 1 }, { 1, 1 }, { 2, 1 }, { 3, 1 }, { 4, 1 } };
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(h->top[i].size, want[i][0]);
        assert_int_equal(h->top[i].count, want[i][1]);
    }
    assert_int_equal(at_an_size_class(4096), 13);
    assert_int_equal(at_an_class_min(13), 4096);
    assert_true(has(r->stats, "{\"min\": 2, \"max\": 3, \"count\": 2, \"bytes\": 5}"));
    assert_true(has(r->report, "most frequent sizes (of 6 distinct): 1024 B x 2, 0 B x 1,"));
    done(r);
}

static void contexts_total_their_own_calls_and_a_call_counts_in_each_of_its_contexts(void **state)
{
    (void)state;
    run *r = analyse(HDR "@ 1 : parse\n@ 2 : eval\n"
                         "1. @1 malloc(10) = 0x1\n" A
                         "2. @2 malloc(20) = 0x2\n" B
                         "3. @3 malloc(40) = 0x3\n" C
                         "4. malloc(80) = 0x4\n" A
                         "5. @2 free(0x1)\n\n",
                     false, false);
    const at_analysis *an = r->an;
    assert_int_equal(an->ncontexts, 3);
    assert_int_equal(an->contexts[0].bit, AT_AN_NO_CONTEXT);
    assert_int_equal(an->contexts[0].cost.calls, 1);
    assert_int_equal(an->contexts[0].cost.bytes, 80);
    assert_int_equal(an->contexts[1].bit, 1);
    assert_string_equal(an->contexts[1].name, "parse");
    assert_int_equal(an->contexts[1].cost.calls, 2);
    assert_int_equal(an->contexts[1].cost.bytes, 50);
    assert_int_equal(an->contexts[1].cost.peak, 50); /* peak at call 4: 150 */
    assert_int_equal(an->contexts[1].cost.leaked, 40);
    assert_int_equal(an->contexts[1].releases, 0);
    assert_int_equal(an->contexts[2].bit, 2);
    assert_int_equal(an->contexts[2].cost.calls, 2);
    assert_int_equal(an->contexts[2].cost.bytes, 60);
    assert_int_equal(an->contexts[2].cost.leaked, 60);
    assert_int_equal(an->contexts[2].releases, 1);
    assert_true(has(r->report, "per context:\n"));
    assert_true(has(r->stats, "{\"bit\": 1, \"name\": \"parse\", \"releases\": 0, \"calls\": 2, "
                              "\"bytes\": 50, \"peak\": 50, "));
    done(r);
}

/* 600 calls, malloc/free pairs of 8 bytes: by index, 600 / 256 intervals
 * need a width of 4 (two doublings), so 150 intervals of 2 pairs each. */
static void the_series_stays_bounded_and_keeps_every_call(void **state)
{
    (void)state;
    size_t cap = 64 * 600 + sizeof HDR, len = 0;
    char *in = malloc(cap);
    len += (size_t)sprintf(in, HDR);
    for (int i = 0; i < 300; i++)
        len += (size_t)sprintf(in + len, "%d. malloc(8) = 0x%x\n" A "%d. free(0x%x)\n\n",
                               2 * i + 1, i + 1, 2 * i + 2, i + 1);
    run *r = analyse(in, false, false);
    const at_an_series *s = &r->an->series;
    assert_false(s->by_time);
    assert_int_equal(s->width, 4);
    assert_int_equal(s->n, 150);
    uint64_t allocs = 0, releases = 0;
    for (size_t i = 0; i < s->n; i++) {
        assert_int_equal(s->points[i].start, 4 * i);
        assert_int_equal(s->points[i].max_live_bytes, 8);
        assert_int_equal(s->points[i].live_bytes, 0);
        allocs += s->points[i].allocations;
        releases += s->points[i].releases;
    }
    assert_int_equal(allocs, 300);
    assert_int_equal(releases, 300);
    assert_int_equal(r->an->summary.temporary, 300);
    assert_true(has(r->report, "memory over time (by call index, rows of 40 calls):\n"));
    done(r);
    free(in);
}

static void times_across_midnight_keep_counting_forward(void **state)
{
    (void)state;
    run *r = analyse(HDR "1. [23:59:59.999000] malloc(10) = 0x1\n" A
                         "2. [00:00:00.001000] malloc(20) = 0x2\n" A,
                     false, false);
    assert_true(r->an->series.by_time);
    assert_int_equal(r->an->summary.duration_us, 2000);
    assert_int_equal(r->an->peak.time_us, 2000);
    assert_int_equal(r->an->series.n, 2000 / r->an->series.width + 1);
    assert_int_equal(r->an->series.points[r->an->series.n - 1].live_bytes, 30);
    done(r);
}

static void sites_rank_by_each_cost_largest_first(void **state)
{
    (void)state;
    run *r = analyse(HDR "1. malloc(100) = 0x1\n" A
                         "2. malloc(1) = 0x2\n" B "3. free(0x2)\n\n"
                         "4. malloc(1) = 0x3\n" B "5. free(0x3)\n\n"
                         "6. malloc(1) = 0x4\n" B,
                     false, false);
    const at_an_site *top[3];
    assert_int_equal(at_an_rank(r->an, AT_AN_CALLS, top, 3), 2);
    assert_ptr_equal(top[0], site_of(r, "b()"));
    assert_int_equal(at_an_rank(r->an, AT_AN_BYTES, top, 1), 1);
    assert_ptr_equal(top[0], site_of(r, "a()"));
    assert_int_equal(at_an_rank(r->an, AT_AN_TEMPORARY, top, 3), 1);
    assert_ptr_equal(top[0], site_of(r, "b()"));
    assert_int_equal(at_an_rank(r->an, AT_AN_LEAKED, top, 3), 2);
    assert_ptr_equal(top[0], site_of(r, "a()"));
    assert_int_equal(top[1]->cost.leaked, 1);
    done(r);
}

static void the_report_names_module_only_and_unresolved_frames(void **state)
{
    (void)state;
    run *r = analyse(HDR "1. malloc(8) = 0x1\n\t0x1000 helper() from /usr/lib/libx.so.1\n"
                         "\t0x1010\n\n",
                     false, false);
    /* "from MODULE", as the trace format and the gate say it; an address
     * where no name is known. */
    assert_true(has(r->report, "   1. 8 B (8 bytes) in 1 blocks by malloc in helper (libx.so.1)\n"
                               "        helper from /usr/lib/libx.so.1\n"
                               "        0x1010\n"));
    assert_true(has(r->stats, "\"frames\": [{\"address\": \"0x1000\", \"function\": \"helper\", "
                              "\"file\": null, \"line\": null, \"module\": \"/usr/lib/libx.so.1\", "
                              "\"place\": \"libx.so.1@0x1000\"}, "));
    done(r);
}

/* Two builds: other addresses, lines and directories, the same functions
 * and file names. a() grew by 50 bytes in one more call and leaks them;
 * b() is gone; c() is new. */
static void a_diff_matches_sites_by_function_and_file_across_builds(void **state)
{
    (void)state;
    run *old = analyse(HDR "1. malloc(100) = 0x1\n\t0xa1 a() at /v1/a.c:1\n\t0xf0 main() at /v1/m.c:9\n\n"
                           "2. free(0x1)\n\n"
                           "3. malloc(7) = 0x2\n" B,
                       false, false);
    run *new = analyse(HDR "1. malloc(100) = 0x1\n\t0x5a1 a() at /v2/a.c:3\n\t0x5f0 main() at /v2/m.c:12\n\n"
                           "2. free(0x1)\n\n"
                           "3. malloc(50) = 0x2\n\t0x5a2 a() at /v2/a.c:4\n\t0x5f0 main() at /v2/m.c:13\n\n"
                           "4. malloc(9) = 0x3\n" C,
                       false, false);
    at_an_diff *d = at_an_diff_new();
    at_an_diff_add(d, 0, old->an, old->t);
    at_an_diff_add(d, 1, new->an, new->t);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(at_an_diff_write(f, d, "old.trace", "new.trace", 10), 0);
    fclose(f);
    assert_true(has(text, "  allocations                     2              3             +1 (+50.0%)\n"
                          "  allocated bytes               107            159            +52 (+48.6%)\n"
                          "  peak bytes                    100            100             +0 (+0.0%)\n"));
    assert_true(has(text, "sites that changed: 3 of 3 (1 grew, 0 shrank, 1 new, 1 gone); "
                          "top 3 by the largest change:\n"
                          "   1. bytes +50, calls +1, peak +0, leaked +50\n"
                          "        now 150 bytes in 2 calls, 100 at the peak, 50 leaked\n"
                          "        main@m.c -> a@a.c\n"
                          "   2. bytes +9, calls +1, peak +0, leaked +9 [new]\n"
                          "        now 9 bytes in 1 calls, 0 at the peak, 9 leaked\n"
                          "        main@m.c -> c@c.c\n"
                          "   3. bytes -7, calls -1, peak +0, leaked -7 [gone]\n"));
    assert_null(strstr(text, "note:"));
    free(text);
    at_an_diff_free(d);
    done(new);
    done(old);
}

/* A pseudo-random trace of 3000 calls over 16 stacks and 64 ids (reused,
 * released twice, released unknown), and the numbers recomputed the slow
 * way: a copy of every stack's live bytes at each new peak. */
#define RAND_STACKS 16
#define RAND_IDS 64

typedef struct slow {
    uint64_t live[RAND_STACKS], at_peak[RAND_STACKS], peak, peak_index, temporary[RAND_STACKS];
    uint64_t size_of[RAND_IDS + 1];
    int stack_of[RAND_IDS + 1]; /* -1: not live */
} slow;

static char *random_trace(slow *w)
{
    uint64_t x = 12345;
    char *text = malloc(3000 * 80 + 100);
    size_t len = (size_t)sprintf(text, HDR);
    memset(w, 0, sizeof *w);
    for (int i = 0; i <= RAND_IDS; i++)
        w->stack_of[i] = -1;
    int last_alloc = 0;
    for (int index = 1; index <= 3000; index++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int id = 1 + (int)((x >> 33) % RAND_IDS), st = (int)((x >> 20) % RAND_STACKS);
        uint64_t size = (x >> 40) % 5000;
        if ((x >> 60) < 9) { /* allocate */
            len += (size_t)sprintf(text + len, "%d. malloc(%llu) = 0x%x\n\t0x%x s%d() at s.c:%d\n\n",
                                   index, (unsigned long long)size, id, 0x100 + st, st, st);
            if (w->stack_of[id] >= 0) /* a lost release */
                w->live[w->stack_of[id]] -= w->size_of[id];
            w->stack_of[id] = st;
            w->size_of[id] = size;
            w->live[st] += size;
            uint64_t total = 0;
            for (int k = 0; k < RAND_STACKS; k++)
                total += w->live[k];
            if (total > w->peak) {
                w->peak = total;
                w->peak_index = (uint64_t)index;
                memcpy(w->at_peak, w->live, sizeof w->live);
            }
            last_alloc = id;
        } else { /* release, maybe of a block that is not live */
            len += (size_t)sprintf(text + len, "%d. free(0x%x)\n\n", index, id);
            if (w->stack_of[id] >= 0) {
                if (last_alloc == id)
                    w->temporary[w->stack_of[id]]++;
                w->live[w->stack_of[id]] -= w->size_of[id];
                w->stack_of[id] = -1;
            }
            last_alloc = 0;
        }
    }
    return text;
}

static void peak_contributions_equal_a_slow_recomputation(void **state)
{
    (void)state;
    slow w;
    char *text = random_trace(&w);
    run *r = analyse(text, false, false);
    assert_int_equal(r->an->peak.bytes, w.peak);
    assert_int_equal(r->an->peak.index, w.peak_index);
    uint64_t sum = 0;
    for (int k = 0; k < RAND_STACKS; k++) {
        char name[16];
        snprintf(name, sizeof name, "s%d()", k);
        const at_an_site *site = site_of(r, name);
        assert_int_equal(site->cost.peak, w.at_peak[k]);
        assert_int_equal(site->cost.leaked, w.live[k]);
        assert_int_equal(site->cost.temporary, w.temporary[k]);
        sum += site->cost.peak;
    }
    assert_int_equal(sum, w.peak);
    assert_true(r->an->summary.unknown_releases > 0);
    assert_true(r->an->summary.reused_ids > 0);
    run *g = analyse(text, false, true);
    assert_string_equal(g->stats, r->stats);
    done(g);
    done(r);
    free(text);
}

static void calls_of_other_resources_are_counted_and_left_out(void **state)
{
    (void)state;
    run *r = analyse(HDR "<1> : memory (memory allocation in bytes)\n<2> : fd (file descriptors)\n"
                         "1. malloc<memory>(10) = 0x1\n" A
                         "2. open<fd>(1) = 0x3\n" B
                         "3. close<fd>(0x3)\n\n"
                         "4. free<memory>(0x1)\n\n",
                     false, false);
    const at_analysis *an = r->an;
    assert_int_equal(an->summary.other_calls, 2);
    assert_int_equal(an->summary.allocations, 1);
    assert_int_equal(an->summary.releases, 1);
    assert_int_equal(an->nsites, 1);
    /* the fd calls in between do not count: 1 -> 4 is temporary */
    assert_int_equal(an->summary.temporary, 1);
    assert_true(has(r->report, "other resources: 2 calls, not analysed\n"));
    assert_true(has(r->stats, "\"other_resource_calls\": 2, "));
    done(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(peak_at_the_very_start_counts_only_the_first_block),
        cmocka_unit_test(peak_at_the_very_end_is_what_is_live_at_the_end),
        cmocka_unit_test(a_realloc_moves_the_peak_to_its_new_block),
        cmocka_unit_test(a_free_of_an_unknown_id_is_counted_and_changes_nothing_live),
        cmocka_unit_test(a_release_in_between_makes_an_allocation_not_temporary),
        cmocka_unit_test(an_empty_trace_has_no_peak_and_no_series),
        cmocka_unit_test(a_leaks_only_trace_says_it_has_no_peak_nor_series),
        cmocka_unit_test(leak_filtering_first_analyses_the_leaks),
        cmocka_unit_test(grouped_calls_give_the_numbers_of_the_plain_trace),
        cmocka_unit_test(sizes_fall_in_power_of_two_classes_and_the_most_frequent_are_kept),
        cmocka_unit_test(contexts_total_their_own_calls_and_a_call_counts_in_each_of_its_contexts),
        cmocka_unit_test(the_series_stays_bounded_and_keeps_every_call),
        cmocka_unit_test(times_across_midnight_keep_counting_forward),
        cmocka_unit_test(sites_rank_by_each_cost_largest_first),
        cmocka_unit_test(the_report_names_module_only_and_unresolved_frames),
        cmocka_unit_test(a_diff_matches_sites_by_function_and_file_across_builds),
        cmocka_unit_test(peak_contributions_equal_a_slow_recomputation),
        cmocka_unit_test(calls_of_other_resources_are_counted_and_left_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
