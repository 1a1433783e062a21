/* tests/integration/test_visual.c: the pictures, --format flamegraph and
 * --format html, of a real traced program (tests/programs/postproc_sites,
 * whose sites and sizes are known), checked as files and, when chromium
 * is installed, as a browser renders them: the script runs, the frames,
 * tables and chart are in the DOM. The view in the address
 * (#cost=...&search=...&zoom=...) drives the interaction, since --dump-dom
 * cannot click. Without chromium those tests are skipped, saying so. */
#include "harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static char *trace_dir;
static char *trace_path;

/* postproc_sites traced once for every test (it is deterministic). */
static int trace_sites(void **state)
{
    (void)state;
    trace_dir = h_tmpdir();
    trace_path = h_fmt("%s/sites.trace", trace_dir);
    char *exe = h_path("build/tests/programs/postproc_sites");
    const char *argv[] = { exe, NULL };
    h_result r = h_trace(trace_path, argv, NULL);
    free(exe);
    int status = r.status;
    h_result_free(&r);
    return status;
}

static int cleanup(void **state)
{
    free(trace_path);
    return h_teardown(state); /* frees trace_dir too */
}

/* alloctrace-postproc -r --format FORMAT [EXTRA] -o OUT TRACE; returns OUT's text. */
static char *render(const char *format, const char *extra, const char *input, const char *out)
{
    char *exe = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { exe, "-r", "--format", format, "-o", out, input, extra, NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    h_result_free(&r);
    free(exe);
    char *text = h_read_file(out, NULL);
    assert_non_null(text);
    return text;
}

/* A program of tests/programs traced into the test directory. */
static char *trace_program(const char *name)
{
    char *path = h_fmt("%s/%s.trace", trace_dir, name);
    char *rel = h_fmt("build/tests/programs/%s", name);
    char *exe = h_path(rel);
    const char *argv[] = { exe, NULL };
    h_result r = h_trace(path, argv, NULL);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    free(exe);
    free(rel);
    return path;
}

/* The DOM after the page's scripts ran, from headless chromium. */
static char *dom_of(const char *path, const char *view)
{
    return h_chromium_dom(trace_dir, path, view);
}

/* The sites trace drawn as FORMAT into the test directory's NAME, loaded
 * in chromium at the view (NULL: none); the test is skipped without it. */
static char *rendered(const char *format, const char *name, const char *view)
{
    if (!h_have_chromium())
        skip();
    char *out = h_fmt("%s/%s", trace_dir, name);
    free(render(format, NULL, trace_path, out));
    char *dom = dom_of(out, view);
    free(out);
    return dom;
}

/* A drawn flame graph frame of the HTML report: <div class="fr ...">NAME</div>. */
static bool has_frame(const char *dom, const char *name)
{
    char *needle = h_fmt("\">%s</div>", name);
    bool found = false;
    for (const char *p = strstr(dom, needle); p && !found; p = strstr(p + 1, needle)) {
        const char *open = p;
        while (open > dom && *open != '<')
            open--;
        found = strncmp(open, "<div class=\"fr", 14) == 0;
    }
    free(needle);
    return found;
}

/* Every string of the NULL-terminated list is in text (or none is). */
static void has_all(const char *text, const char *const *needles, bool present)
{
    for (; *needles; needles++)
        if ((strstr(text, *needles) != NULL) != present)
            fail_msg("%s \"%s\"", present ? "missing" : "unexpected", *needles);
}

static void flamegraph_svg_draws_every_site_with_its_bytes(void **state)
{
    (void)state;
    char *out = h_fmt("%s/sites.svg", trace_dir);
    char *svg = render("flamegraph", NULL, trace_path, out);
    /* 50 x 64 + 8 + 4080 (the realloc chain) + 300 + 2000 + 200 = 9788 bytes */
    static const char *const titles[] = {
        "<title>all (9,788 bytes, 100.00%)</title>",
        "<title>main (9,788 bytes, 100.00%)</title>",
        "<title>churn (7,288 bytes, 74.46%)</title>",
        "<title>short_lived (3,200 bytes, 32.69%)</title>",
        "<title>leak_big (2,000 bytes, 20.43%)</title>",
        "<title>leak_three (300 bytes, 3.06%)</title>",
        "<title>leak_pair (200 bytes, 2.04%)</title>",
        "<title>realloc (4,080 bytes, 41.68%)</title>",
        NULL,
    };
    has_all(svg, titles, true);
    if (access("/usr/bin/xmllint", X_OK) == 0) {
        h_result r = h_sh("xmllint --noout '%s'", out);
        assert_int_equal(r.status, 0);
        assert_string_equal(r.err, "");
        h_result_free(&r);
    } else {
        fprintf(stderr, "xmllint is not installed: the SVG is not checked as XML\n");
    }
    free(svg);
    free(out);
}

static void flamegraph_svg_counts_blocks_with_cost_blocks(void **state)
{
    (void)state;
    char *out = h_fmt("%s/blocks.svg", trace_dir);
    char *svg = render("flamegraph", "--cost=blocks", trace_path, out);
    /* 65 allocations: 50 + 1 + 8 reallocs + 3 + 1 + 2 */
    assert_non_null(strstr(svg, "<title>all (65 blocks, 100.00%)</title>"));
    assert_non_null(strstr(svg, "<title>short_lived (50 blocks, 76.92%)</title>"));
    assert_non_null(strstr(svg, "<title>leak_pair (2 blocks, 3.08%)</title>"));
    free(svg);
    free(out);
}

static void flamegraph_svg_runs_its_script_in_chromium(void **state)
{
    (void)state;
    char *dom = rendered("flamegraph", "sites.svg", NULL);
    assert_non_null(strstr(dom, "data-ready=\"1\""));
    assert_non_null(strstr(dom, "<title>leak_big (2,000 bytes, 20.43%)</title>"));
    free(dom);
}

static void folded_keeps_the_inlined_calls_of_a_real_program(void **state)
{
    (void)state;
    char *trace = trace_program("resolve_app_O2");
    char *out = h_fmt("%s/inline.folded", trace_dir);
    char *folded = render("folded", NULL, trace, out);
    /* inline_mid and inline_leaf share outer_caller's address (-O2) */
    assert_non_null(strstr(folded, ";main;outer_caller;inline_mid;inline_leaf;resolve_probe;malloc 24\n"));
    free(folded);
    free(out);
    free(trace);
}

static void short_names_cut_the_template_arguments_of_a_real_program(void **state)
{
    (void)state;
    char *trace = trace_program("resolve_cxx");
    char *out = h_fmt("%s/cxx.folded", trace_dir);
    char *full = render("folded", NULL, trace, out);
    /* resolve_probe is static in C++: no linkage name from gcc, named from
     * its parameter types as its mangled symbol would be (resolve_names.c) */
    assert_non_null(strstr(full, ";main;double* shapes::make_array<double>(unsigned long);"
                                 "resolve_probe(char const*, unsigned long);malloc 32\n"));
    char *shorter = render("folded", "--short-names", trace, out);
    assert_non_null(strstr(shorter, ";main;double* shapes::make_array<>(unsigned long);"
                                    "resolve_probe(char const*, unsigned long);malloc 32\n"));
    /* no template arguments: the same name */
    assert_non_null(strstr(shorter, ";main;shapes::Pool::grab(int) const;"
                                    "resolve_probe(char const*, unsigned long);malloc 8\n"));
    assert_null(strstr(shorter, "<double>"));
    char *svg_out = h_fmt("%s/cxx.svg", trace_dir);
    char *svg = render("flamegraph", "--short-names", trace, svg_out);
    assert_non_null(strstr(svg, "<title>double* shapes::make_array&lt;&gt;(unsigned long) (32 bytes, "));
    free(svg);
    free(svg_out);
    free(shorter);
    free(full);
    free(out);
    free(trace);
}

static void html_top_limits_each_table(void **state)
{
    (void)state;
    char *out = h_fmt("%s/top.html", trace_dir);
    char *html = render("html", "--top=2", trace_path, out);
    /* six sites allocate; two per table, leak_big's the largest leak */
    assert_non_null(strstr(html, "\"top\":{\"calls\":[0,1],"));
    const char *leaked = strstr(html, "\"leaked\":[");
    assert_non_null(leaked);
    assert_int_equal(strncmp(leaked, "\"leaked\":[", 10), 0);
    const char *end = strchr(leaked, ']');
    size_t commas = 0;
    for (const char *p = leaked; p < end; p++)
        commas += *p == ',';
    assert_int_equal(commas, 1);
    free(html);
    free(out);
}

/* Frame NAME of the SVG in the DOM: its <g> up to the end of the group. */
static const char *svg_frame(const char *dom, const char *name)
{
    char *title = h_fmt("<title>%s (", name);
    const char *t = strstr(dom, title);
    free(title);
    if (!t)
        return NULL;
    while (t > dom && strncmp(t, "<g ", 3) != 0)
        t--;
    return t;
}

static bool svg_frame_has(const char *dom, const char *name, const char *what)
{
    const char *g = svg_frame(dom, name);
    assert_non_null(g);
    const char *end = strstr(g, "</g>");
    const char *hit = strstr(g, what);
    return hit && hit < end;
}

static void flamegraph_svg_zooms_and_searches_in_chromium(void **state)
{
    (void)state;
    /* zoomed into churn (74.46% of the bytes): it spans the width, leak_big
     * is hidden, main (a caller) is faded */
    char *dom = rendered("flamegraph", "zoom.svg", "#zoom=churn");
    assert_true(svg_frame_has(dom, "churn", "x=\"10.00\" y=\""));
    assert_true(svg_frame_has(dom, "churn", "width=\"1180.00\""));
    assert_true(svg_frame_has(dom, "leak_big", "class=\"f hide\""));
    assert_true(svg_frame_has(dom, "main", "class=\"f fade\""));
    assert_false(svg_frame_has(dom, "short_lived", "hide"));
    assert_non_null(strstr(dom, "id=\"unzoom\" class=\"b\""));
    free(dom);
    /* the three leak sites: (300 + 2000 + 200) / 9788 */
    dom = rendered("flamegraph", "search.svg", "#search=%5Eleak_");
    assert_non_null(strstr(dom, "id=\"matched\" x=\"1190\" y=\""));
    assert_non_null(strstr(dom, ">Matched: 25.5%</text>"));
    assert_true(svg_frame_has(dom, "leak_big", "fill=\"rgb(230,0,230)\""));
    assert_false(svg_frame_has(dom, "churn", "fill=\"rgb(230,0,230)\""));
    free(dom);
}

static void html_is_one_file_that_fetches_nothing(void **state)
{
    (void)state;
    char *out = h_fmt("%s/self.html", trace_dir);
    char *html = render("html", NULL, trace_path, out);
    static const char *const fetching[] = { "src=", "href=", "@import", "url(", "fetch(",
                                            "XMLHttpRequest", NULL };
    has_all(html, fetching, false);
    /* the only address is the SVG namespace the script creates elements in */
    for (const char *p = strstr(html, "http"); p; p = strstr(p + 1, "http"))
        assert_int_equal(strncmp(p, "http://www.w3.org/2000/svg", 26), 0);
    /* the numbers are the analysis' */
    assert_non_null(strstr(html, "\"summary\":{\"allocations\":65,\"releases\":59,"
                                 "\"allocated_bytes\":9788,"));
    assert_non_null(strstr(html, "\"leaked_bytes\":2500,\"leaked_blocks\":6,"));
    assert_non_null(strstr(html, "\"peak\":{\"bytes\":2500,\"blocks\":6,"));
    free(html);
    free(out);
}

static void html_renders_summary_chart_flame_graph_and_tables_in_chromium(void **state)
{
    (void)state;
    char *dom = rendered("html", "report.html", NULL);
    assert_non_null(strstr(dom, "data-ready=\"1\""));
    /* summary */
    assert_non_null(strstr(dom, "<dt>Allocations</dt><dd>65</dd>"));
    assert_non_null(strstr(dom, "<dt>Leaked</dt><dd>2.44 KiB in 6 blocks</dd>"));
    assert_non_null(strstr(dom, "<dt>Peak heap</dt><dd>2.44 KiB in 6 blocks</dd>"));
    /* the chart: a line of at least two points and the peak marked */
    const char *line = strstr(dom, "id=\"live-line\"");
    assert_non_null(line);
    const char *d = strstr(dom, "class=\"live\" id=\"live-line\"");
    assert_non_null(d);
    assert_non_null(strstr(dom, "peak 2.44 KiB"));
    assert_non_null(strstr(dom, "<path d=\"M"));
    /* the flame graph, by allocated bytes */
    assert_true(has_frame(dom, "main"));
    assert_true(has_frame(dom, "churn"));
    assert_true(has_frame(dom, "short_lived"));
    assert_true(has_frame(dom, "leak_big"));
    assert_true(has_frame(dom, "leak_three"));
    assert_true(has_frame(dom, "leak_pair"));
    assert_true(has_frame(dom, "calloc"));
    /* the leaks table: leak_big first, at its line */
    const char *leaked = strstr(dom, "id=\"top-leaked\"");
    assert_non_null(leaked);
    const char *first = strstr(leaked, "<summary>");
    assert_non_null(first);
    /* named past the allocator, by function and line */
    assert_non_null(strstr(first, "leak_big (postproc_sites.c:26)"));
    assert_true(strstr(first, "leak_big (postproc_sites.c:26)") < strstr(first, "</summary>"));
    assert_non_null(strstr(leaked, "postproc_sites.c:26"));
    free(dom);
}

static void html_cost_zoom_and_search_change_the_flame_graph(void **state)
{
    (void)state;
    /* by leaked bytes, the freed sites have no width */
    char *dom = rendered("html", "view.html", "#cost=leaked");
    char *out = h_fmt("%s/view.html", trace_dir);
    assert_true(has_frame(dom, "leak_big"));
    assert_true(has_frame(dom, "leak_pair"));
    assert_false(has_frame(dom, "churn"));
    assert_false(has_frame(dom, "short_lived"));
    assert_non_null(strstr(dom, "<option value=\"4\" selected=\"\">leaked bytes</option>"));
    free(dom);
    /* zoomed into churn: its callees, not the leaks */
    dom = dom_of(out, "#cost=calls&zoom=churn");
    assert_true(has_frame(dom, "churn"));
    assert_true(has_frame(dom, "short_lived"));
    assert_true(has_frame(dom, "main")); /* a caller, faded */
    assert_false(has_frame(dom, "leak_big"));
    assert_non_null(strstr(dom, "class=\"fr faded\""));
    free(dom);
    /* searching: (300 + 2000 + 200) / 9788 of the bytes */
    dom = dom_of(out, "#search=%5Eleak_");
    assert_non_null(strstr(dom, "id=\"matched\">matched 25.5% of allocated bytes</span>"));
    assert_non_null(strstr(dom, "class=\"fr hit\""));
    free(dom);
    free(out);
}

static void html_of_a_leaks_only_trace_says_it_has_no_time_series(void **state)
{
    (void)state;
    char *leaks = h_fmt("%s/leaks.trace", trace_dir);
    char *exe = h_path("postproc/alloctrace-postproc");
    const char *argv[] = { exe, "-l", "-o", leaks, trace_path, NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    free(exe);
    char *out = h_fmt("%s/leaks.html", trace_dir);
    char *html = render("html", NULL, leaks, out);
    assert_non_null(strstr(html, "\"leaks_only\":true"));
    assert_non_null(strstr(html, "\"points\":[]"));
    free(html);
    if (h_have_chromium()) {
        char *dom = dom_of(out, NULL);
        assert_non_null(strstr(dom, "id=\"no-series\">No time series: a leaks-only trace has no "
                                    "order in time.</p>"));
        assert_true(has_frame(dom, "leak_big"));
        assert_non_null(strstr(dom, "<option value=\"4\" selected=\"\">leaked bytes</option>"));
        free(dom);
    }
    free(out);
    free(leaks);
}

/* An awk program that puts folded lines in one form: the frames from
 * main inwards (lines not through main, the dynamic loader's initialisers,
 * are left out), the last DROP frames dropped, equal stacks summed, zero
 * counts left out, "STACK COUNT" sorted. */
#define NORMALISE                                                                                  \
    "awk -v drop=%d '{ n = $NF; sub(/ [0-9]+$/, \"\"); k = split($0, f, \";\"); s = \"\"; on = 0; " \
    "for (i = 1; i <= k - drop; i++) { if (f[i] == \"main\") on = 1; "                              \
    "if (on) s = s (s == \"\" ? \"\" : \";\") f[i] } if (s != \"\" && n > 0) sum[s] += n } "        \
    "END { for (s in sum) print s, sum[s] }' | LC_ALL=C sort"

/* Our folded stacks and heaptrack_print's (-F) of one program, with the
 * cost given to each, in that one form: ours without the allocation
 * function, heaptrack's without its " (file.c)" after each frame. */
static void folded_like_heaptrack(const char *program, const char *our_opts, const char *ht_cost)
{
    char *rel = h_fmt("build/tests/programs/%s", program);
    char *exe = h_path(rel);
    char *pp = h_path("postproc/alloctrace-postproc");
    char *trace = h_fmt("%s/%s.ht-cmp.trace", trace_dir, program);
    const char *argv[] = { exe, NULL };
    h_result r = h_trace(trace, argv, NULL);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    h_result ours = h_sh("'%s' %s '%s' | " NORMALISE, pp, our_opts, trace, 1);
    h_result theirs = h_sh("cd '%s' && heaptrack -o '%s/hp-%s' '%s' >/dev/null 2>&1 && "
                           "heaptrack_print '%s/hp-%s.zst' -F '%s/hp-%s.folded' "
                           "--flamegraph-cost-type %s >/dev/null 2>&1 && "
                           "sed 's/ ([^;]*)//g; s/; \\([0-9]*\\)$/ \\1/' '%s/hp-%s.folded' | " NORMALISE,
                           trace_dir, trace_dir, ht_cost, exe, trace_dir, ht_cost, trace_dir, ht_cost,
                           ht_cost, trace_dir, ht_cost, 0);
    assert_int_equal(ours.status, 0);
    assert_int_equal(theirs.status, 0);
    assert_true(strlen(ours.out) > 0);
    assert_string_equal(ours.out, theirs.out);
    h_result_free(&ours);
    h_result_free(&theirs);
    free(trace);
    free(pp);
    free(exe);
    free(rel);
}

static bool have_heaptrack(void)
{
    if (access("/usr/bin/heaptrack", X_OK) == 0 && access("/usr/bin/heaptrack_print", X_OK) == 0)
        return true;
    fprintf(stderr, "skipped: heaptrack is not installed\n");
    return false;
}

/* heaptrack_print -F on the same program: the same stacks, the same
 * numbers of allocations (postproc_sites: 50 short-lived, 9 in churn's
 * realloc chain, 3 + 1 + 2 leaks). */
static void folded_allocations_agree_with_heaptrack(void **state)
{
    (void)state;
    if (!have_heaptrack())
        skip();
    folded_like_heaptrack("postproc_sites", "-r --format folded --cost blocks", "allocations");
}

/* ... and the same leaked bytes per stack (300, 2000, 200). */
static void folded_leaks_agree_with_heaptrack(void **state)
{
    (void)state;
    if (!have_heaptrack())
        skip();
    folded_like_heaptrack("postproc_sites", "-l -r --format folded", "leaked");
}

/* Two allocations and a release, no times: 100 + 50 bytes at calls 4
 * and 5, the first freed at call 6. */
static const char untimed_trace[] =
    "version=2.0, arch=x86_64, timestamp=2026.11.22 10:43:07, process=/usr/bin/app, pid=7, "
    "origin=alloctrace 0.1.0, \n"
    "<1> : memory (memory allocation in bytes)\n"
    "4. malloc(100) = 0x1000\n\t0x401000 parse() at /src/p.c:3\n\t0x402000 main() at /src/m.c:9\n\n"
    "5. malloc(50) = 0x2000\n\t0x403000 load() at /src/l.c:7\n\t0x402010 main() at /src/m.c:10\n\n"
    "6. free(0x1000)\n\n";

static char *written(const char *name, const char *text)
{
    char *path = h_fmt("%s/%s", trace_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* text written as NAME.trace and drawn as NAME.html: the page's text, and
 * in *dom what chromium makes of it (NULL without chromium). */
static char *html_of(const char *name, const char *text, char **dom)
{
    char *file = h_fmt("%s.trace", name);
    char *in = written(file, text);
    char *out = h_fmt("%s/%s.html", trace_dir, name);
    char *html = render("html", NULL, in, out);
    *dom = h_have_chromium() ? dom_of(out, NULL) : NULL;
    free(out);
    free(in);
    free(file);
    return html;
}

static void html_without_times_draws_memory_by_call_index(void **state)
{
    (void)state;
    char *dom;
    char *html = html_of("untimed", untimed_trace, &dom);
    assert_non_null(strstr(html, "\"series\":{\"by_time\":false,\"width\":1,"
                                 "\"points\":[0,100,100,1,100,0,0,1,150,150,1,50,0,0,2,50,150,0,0,1,0]}"));
    free(html);
    if (dom) {
        /* the axis names calls 4 to 7 (the end of the last interval) */
        assert_non_null(strstr(dom, "text-anchor=\"start\">call 4</text>"));
        /* round ticks: every call, one unit */
        assert_non_null(strstr(dom, "text-anchor=\"middle\">call 5</text>"));
        assert_non_null(strstr(dom, "text-anchor=\"middle\">call 7</text>"));
        assert_non_null(strstr(dom, "peak 150 B"));
        assert_non_null(strstr(dom, "<dt>Duration</dt><dd>no timestamps</dd>"));
        assert_true(has_frame(dom, "parse"));
        free(dom);
    }
}

static void html_of_an_empty_trace_says_it_has_no_allocations(void **state)
{
    (void)state;
    char *dom;
    char *html = html_of("empty", "version=2.0, arch=x86_64, timestamp=2026.11.22 10:43:07, "
                                  "process=/usr/bin/app, pid=7, origin=alloctrace 0.1.0, \n", &dom);
    assert_non_null(strstr(html, "\"summary\":{\"allocations\":0,"));
    free(html);
    if (dom) {
        assert_non_null(strstr(dom, "data-ready=\"1\""));
        assert_non_null(strstr(dom, "id=\"no-series\">No time series: the trace has no allocations.</p>"));
        assert_null(strstr(dom, "class=\"fr"));
        free(dom);
    }
}

/* Two contexts, a call outside them, and a function name that would end
 * the page's script if it were not escaped. */
static const char context_trace[] =
    "version=2.0, arch=x86_64, timestamp=2026.11.22 10:43:07, process=/usr/bin/app, pid=7, "
    "origin=alloctrace 0.1.0, \n"
    "<1> : memory (memory allocation in bytes)\n"
    "@ 1 : parse\n"
    "@ 2 : render\n"
    "1. @1 malloc(100) = 0x1000\n\t0x401000 tokenize() at /src/p.c:3\n\n"
    "2. @2 malloc(50) = 0x2000\n\t0x403000 evil</script><b>x() at /src/e.c:7\n\n"
    "3. calloc(7) = 0x3000\n\t0x404000 main() at /src/m.c:2\n\n";

static void html_shows_contexts_sizes_and_escaped_names_in_chromium(void **state)
{
    (void)state;
    char *dom;
    char *html = html_of("contexts", context_trace, &dom);
    assert_null(strstr(html, "evil</script>"));
    assert_non_null(strstr(html, "evil\\u003c/script>\\u003cb>x"));
    free(html);
    if (dom) {
        assert_non_null(strstr(dom, "data-ready=\"1\""));
        assert_true(has_frame(dom, "tokenize"));
        assert_true(has_frame(dom, "evil&lt;/script&gt;&lt;b&gt;x()"));
        /* per context: calls, allocated, peak, temporary, leaked */
        assert_non_null(strstr(dom, "<td>parse (0x1)</td><td class=\"n\">1</td><td class=\"n\">100 B</td>"));
        assert_non_null(strstr(dom, "<td>render (0x2)</td><td class=\"n\">1</td><td class=\"n\">50 B</td>"));
        assert_non_null(strstr(dom, "<td>outside any context</td><td class=\"n\">1</td><td class=\"n\">7 B</td>"));
        /* sizes: 7 in [4, 8), 50 in [32, 64), 100 in [64, 128) */
        assert_non_null(strstr(dom, "<td>4 B to 7 B</td><td class=\"n\">1</td>"));
        assert_non_null(strstr(dom, "<td>32 B to 63 B</td><td class=\"n\">1</td>"));
        assert_non_null(strstr(dom, "<td>64 B to 127 B</td><td class=\"n\">1</td>"));
        free(dom);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flamegraph_svg_draws_every_site_with_its_bytes),
        cmocka_unit_test(flamegraph_svg_counts_blocks_with_cost_blocks),
        cmocka_unit_test(flamegraph_svg_runs_its_script_in_chromium),
        cmocka_unit_test(flamegraph_svg_zooms_and_searches_in_chromium),
        cmocka_unit_test(folded_keeps_the_inlined_calls_of_a_real_program),
        cmocka_unit_test(short_names_cut_the_template_arguments_of_a_real_program),
        cmocka_unit_test(html_top_limits_each_table),
        cmocka_unit_test(folded_allocations_agree_with_heaptrack),
        cmocka_unit_test(folded_leaks_agree_with_heaptrack),
        cmocka_unit_test(html_is_one_file_that_fetches_nothing),
        cmocka_unit_test(html_renders_summary_chart_flame_graph_and_tables_in_chromium),
        cmocka_unit_test(html_cost_zoom_and_search_change_the_flame_graph),
        cmocka_unit_test(html_of_a_leaks_only_trace_says_it_has_no_time_series),
        cmocka_unit_test(html_without_times_draws_memory_by_call_index),
        cmocka_unit_test(html_of_an_empty_trace_says_it_has_no_allocations),
        cmocka_unit_test(html_shows_contexts_sizes_and_escaped_names_in_chromium),
    };
    return cmocka_run_group_tests(tests, trace_sites, cleanup);
}
