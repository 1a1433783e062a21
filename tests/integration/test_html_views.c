/* tests/integration/test_html_views.c: the HTML report's views (issue 26)
 * drawn by headless chromium from a hand-made trace whose numbers this
 * file computes by replaying the same calls: Bottom-up, Top-down, Callers
 * and callees of the whole run, a range of the chart (#range=A-B) and a
 * moment (#moment=K). Without chromium the tests are skipped, saying so.
 *
 * The calls, one every 10 us: main -> load -> read_file / parse, and
 * main -> run -> parse / compute. The series has 81 intervals of 1 us, so
 * tick interval K is [K, K + 1) us. */
#include "harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


typedef struct call {
    unsigned t;          /* us from the first call */
    bool alloc;
    unsigned size, id;
    const char *path[3]; /* callers, outermost first, then the allocating function */
} call;

static const call calls[] = {
    { 0, true, 100, 1, { "main", "load", "read_file" } },
    { 10, true, 40, 2, { "main", "load", "parse" } },
    { 20, false, 0, 2, { 0 } },
    { 30, true, 300, 3, { "main", "run", "parse" } },
    { 40, true, 50, 4, { "main", "run", "compute" } },
    { 50, false, 0, 1, { 0 } },
    { 60, true, 70, 5, { "main", "run", "parse" } },
    { 70, false, 0, 3, { 0 } },
    { 80, true, 20, 6, { "main", "load", "read_file" } },
};
#define NCALLS (sizeof calls / sizeof *calls)

static char *dir;

/* The trace text of calls: resolved frames, innermost first. `extra`
 * goes into the header (a sampling interval, say). */
static char *trace_text(const char *extra)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    fprintf(f, "version=2.0, arch=x86_64, process=./hand, pid=1, %s\n"
               "<1> : memory (memory allocation in bytes)\n", extra);
    for (size_t i = 0; i < NCALLS; i++) {
        const call *c = &calls[i];
        fprintf(f, "%zu. [10:00:00.%06u] ", i + 1, c->t);
        if (!c->alloc) {
            fprintf(f, "free(0x%x)\n\n", c->id);
            continue;
        }
        fprintf(f, "malloc(%u) = 0x%x\n", c->size, c->id);
        for (int k = 2; k >= 0; k--)
            fprintf(f, "\t0x%x %s() at %s.c:%d\n", 0x1000 + 0x100 * k + (unsigned)i, c->path[k],
                    c->path[k], 10 + k);
        fputc('\n', f);
    }
    fclose(f);
    return s;
}

/* ---- the replay ---------------------------------------------------------- */

/* Whether block `id`, allocated by call a, is live just before time t. */
static bool live_at(size_t a, unsigned t)
{
    if (calls[a].t >= t)
        return false;
    for (size_t i = a + 1; i < NCALLS; i++)
        if (!calls[i].alloc && calls[i].id == calls[a].id && calls[i].t < t)
            return false;
    return true;
}

static bool through(const call *c, const char *fn)
{
    for (int k = 0; k < 3; k++)
        if (c->alloc && strcmp(c->path[k], fn) == 0)
            return true;
    return false;
}

/* Bytes live before time t of the allocations through fn (NULL: all). */
static unsigned live_bytes(unsigned t, const char *fn)
{
    unsigned sum = 0;
    for (size_t i = 0; i < NCALLS; i++)
        if (calls[i].alloc && (!fn || through(&calls[i], fn)) && live_at(i, t))
            sum += calls[i].size;
    return sum;
}

/* Allocations through fn (NULL: all) with t0 <= t < t1: count, bytes. */
static unsigned allocated(unsigned t0, unsigned t1, const char *fn, unsigned *count)
{
    unsigned sum = 0;
    *count = 0;
    for (size_t i = 0; i < NCALLS; i++)
        if (calls[i].alloc && calls[i].t >= t0 && calls[i].t < t1 &&
            (!fn || through(&calls[i], fn))) {
            sum += calls[i].size;
            (*count)++;
        }
    return sum;
}

/* ---- the page -------------------------------------------------------------- */

static char *page_path, *sampled_page_path;

/* The page of the calls, written to dir/NAME.html; 0 on success. */
static int write_one_page(const char *name, const char *extra, char **path)
{
    char *trace = h_fmt("%s/%s.trace", dir, name);
    char *text = trace_text(extra);
    FILE *f = fopen(trace, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    *path = h_fmt("%s/%s.html", dir, name);
    char *exe = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { exe, "--format", "html", "-o", *path, trace, NULL };
    h_result r = h_run(argv, NULL, NULL);
    int status = r.status;
    h_result_free(&r);
    free(exe);
    free(trace);
    return status;
}

static int write_page(void **state)
{
    (void)state;
    dir = h_tmpdir();
    return write_one_page("hand", "", &page_path) ||
           write_one_page("sampled", "sampling interval=4096, ", &sampled_page_path);
}

static int cleanup(void **state)
{
    free(page_path);
    free(sampled_page_path);
    return h_teardown(state);
}

static char *dom_of(const char *page, const char *view);

static char *dom(const char *view)
{
    return dom_of(page_path, view);
}

static char *dom_of(const char *page, const char *view)
{
    if (!h_have_chromium())
        skip();
    char *d = h_chromium_dom(dir, page, view);
    h_has(d, "data-ready=\"1\"");
    return d;
}

/* The row of function `name` in table `id`, at depth `depth`: its cells'
 * text joined by " | " (NULL when there is none). */
static char *row(const char *d, const char *id, int depth, const char *name)
{
    char *open = h_fmt("id=\"%s\"", id);
    const char *t = strstr(d, open);
    free(open);
    assert_non_null(t);
    const char *end = strstr(t, "</table>");
    char *want = h_fmt("data-depth=\"%d\"", depth);
    char *label = h_fmt("<span class=\"name\">%s</span>", name);
    char *out = NULL;
    for (const char *p = strstr(t, want); p && p < end && !out; p = strstr(p + 1, want)) {
        const char *close = strstr(p, "</tr>");
        const char *hit = strstr(p, label);
        if (!hit || hit > close)
            continue;
        /* the numbers: every <td class="n">...</td> of the row */
        size_t cap = 256, n = 0;
        out = calloc(1, cap);
        for (const char *c = strstr(hit, "<td class=\"n\">"); c && c < close;
             c = strstr(c + 1, "<td class=\"n\">")) {
            const char *v = c + strlen("<td class=\"n\">");
            const char *ve = strstr(v, "</td>");
            n += (size_t)snprintf(out + n, cap - n, "%s%.*s", n ? " | " : "", (int)(ve - v), v);
        }
    }
    free(want);
    free(label);
    return out;
}

static void check_row(const char *d, const char *id, int depth, const char *name, const char *want)
{
    char *got = row(d, id, depth, name);
    if (!got || strcmp(got, want) != 0)
        fprintf(stderr, "%s, %s at depth %d: got \"%s\", want \"%s\"\n", id, name, depth,
                got ? got : "(no row)", want);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* "300 B" for bytes, as the page writes them below 1 KiB. */
static char *b(unsigned v)
{
    return h_fmt("%u B", v);
}

static void bottom_up_sums_allocating_functions_and_opens_to_their_callers(void **state)
{
    (void)state;
    char *d = dom(NULL);
    /* columns: calls, allocated, at the peak (450 bytes live after the
     * 5th call), temporary (the 40 bytes freed right away), leaked */
    unsigned peak_parse = live_bytes(41, "parse"), n;
    unsigned bytes_parse = allocated(0, 100, "parse", &n);
    char *want = h_fmt("%u | %u B | %u B | 1 | %u B", n, bytes_parse, peak_parse,
                       live_bytes(100, "parse"));
    check_row(d, "bottom-up-table", 0, "parse", want);
    free(want);
    /* parse's callers: load (its 40 bytes) and run (300 + 70) */
    unsigned pl = 0, cl = 0, pr = 0, cr = 0;
    for (size_t i = 0; i < NCALLS; i++)
        if (through(&calls[i], "parse")) {
            if (through(&calls[i], "load"))
                pl += calls[i].size, cl++;
            else
                pr += calls[i].size, cr++;
        }
    char *wl = h_fmt("%u | %u B | 0 B | 1 | 0 B", cl, pl);
    check_row(d, "bottom-up-table", 1, "load", wl);
    char *wr = h_fmt("%u | %u B | %u B | 0 | %u B", cr, pr, peak_parse, live_bytes(100, "parse"));
    check_row(d, "bottom-up-table", 1, "run", wr);
    free(wl);
    free(wr);
    free(d);
}

static void top_down_is_the_call_tree_with_inclusive_costs(void **state)
{
    (void)state;
    char *d = dom(NULL);
    unsigned n, all = allocated(0, 100, NULL, &n);
    char *want = h_fmt("%u | %u B | %u B | 1 | %u B", n, all, live_bytes(41, NULL),
                       live_bytes(100, NULL));
    check_row(d, "top-down-table", 0, "main", want);
    free(want);
    unsigned nr, run = allocated(0, 100, "run", &nr);
    want = h_fmt("%u | %u B | %u B | 0 | %u B", nr, run, live_bytes(41, "run"), live_bytes(100, "run"));
    check_row(d, "top-down-table", 1, "run", want);
    free(want);
    unsigned nc, comp = allocated(0, 100, "compute", &nc);
    want = h_fmt("%u | %u B | %u B | 0 | %u B", nc, comp, live_bytes(41, "compute"),
                 live_bytes(100, "compute"));
    check_row(d, "top-down-table", 2, "compute", want);
    free(want);
    free(d);
}

static void callers_and_callees_of_a_function_given_in_the_address(void **state)
{
    (void)state;
    char *d = dom("#fn=parse");
    unsigned n, bytes = allocated(0, 100, "parse", &n);
    char *total = h_fmt("<p id=\"function-total\">parse: calls %u, allocated bytes %s, bytes at the "
                        "peak %s, temporary allocations 1, leaked bytes %s</p>",
                        n, b(bytes), b(live_bytes(41, "parse")), b(live_bytes(100, "parse")));
    h_has(d, total);
    free(total);
    check_row(d, "callers-table", 0, "load", "1 | 40 B | 0 B | 1 | 0 B");
    check_row(d, "callers-table", 0, "run", "2 | 370 B | 300 B | 0 | 70 B");
    check_row(d, "callees-table", 0, "malloc", "3 | 410 B | 300 B | 1 | 70 B");
    free(d);
}

static void a_range_of_the_chart_counts_what_happened_in_it(void **state)
{
    (void)state;
    /* tick intervals 25 to 65: [25 us, 66 us) */
    char *d = dom("#range=25-65");
    h_has(d, "Showing from 25 µs to 66 µs.");
    unsigned n, bytes = allocated(25, 66, NULL, &n);
    char *total = h_fmt("data-total=\"%u\"", bytes); /* the flame graph, by allocated bytes */
    h_has(d, total);
    free(total);
    /* calls, bytes and temporaries in the range; live at its end */
    unsigned np, bp = allocated(25, 66, "parse", &np);
    char *want = h_fmt("%u | %u B | %u B | 0", np, bp, live_bytes(66, "parse"));
    check_row(d, "bottom-up-table", 0, "parse", want);
    free(want);
    unsigned nr, br = allocated(25, 66, "read_file", &nr);
    assert_int_equal(nr, 0); /* read_file allocated nothing in the range: no row */
    (void)br;
    assert_null(row(d, "bottom-up-table", 0, "read_file"));
    want = h_fmt("%u | %u B | %u B | 0", n, bytes, live_bytes(66, NULL));
    check_row(d, "top-down-table", 0, "main", want);
    free(want);
    free(d);
}

static void a_moment_draws_what_was_live_then(void **state)
{
    (void)state;
    /* the end of tick interval 45: before 46 us */
    char *d = dom("#moment=45");
    h_has(d, "Showing live at 46 µs.");
    char *total = h_fmt("data-total=\"%u\"", live_bytes(46, NULL));
    h_has(d, total);
    free(total);
    const char *fns[] = { "read_file", "parse", "compute" };
    for (int i = 0; i < 3; i++) {
        char *want = h_fmt("%u B", live_bytes(46, fns[i]));
        check_row(d, "bottom-up-table", 0, fns[i], want);
        free(want);
    }
    char *want = h_fmt("%u B", live_bytes(46, "run"));
    check_row(d, "top-down-table", 1, "run", want);
    free(want);
    free(d);
}

/* A sample says nothing of temporaries (an allocation and its release
 * are picked apart): its summary says so instead of counting 0. */
static void a_sampled_trace_does_not_count_temporaries(void **state)
{
    (void)state;
    char *d = dom(NULL);
    h_has(d, "<dt>Temporary allocations</dt><dd>1 (");
    free(d);
    d = dom_of(sampled_page_path, NULL);
    h_has(d, "<dt>Temporary allocations</dt><dd>not estimated from a sample</dd>");
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bottom_up_sums_allocating_functions_and_opens_to_their_callers),
        cmocka_unit_test(top_down_is_the_call_tree_with_inclusive_costs),
        cmocka_unit_test(callers_and_callees_of_a_function_given_in_the_address),
        cmocka_unit_test(a_range_of_the_chart_counts_what_happened_in_it),
        cmocka_unit_test(a_moment_draws_what_was_live_then),
        cmocka_unit_test(a_sampled_trace_does_not_count_temporaries),
    };
    return cmocka_run_group_tests(tests, write_page, cleanup);
}
