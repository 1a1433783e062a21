/* tests/unit/test_export.c: the cost graph and the Callgrind, webgrind
 * and folded exports, on samples built here with known stacks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "maps.h"
#include "stack.h"
#include "webgrind_reader.h"

/* A stack from resolved frame texts, innermost first (NULL: unresolved);
 * addresses are 0x1000, 0x1010, ... unless given. */
static const at_stack *stack_of(at_stack_table *t, const char *const *texts, uint32_t n)
{
    at_frame frames[16];
    for (uint32_t i = 0; i < n; i++)
        frames[i] = (at_frame){ 0x1000 + 0x10 * i, texts[i] };
    return at_stacks_intern(t, frames, n);
}

typedef char *(*export_fn)(const at_profile *p, const at_export_meta *m);

static char *callgrind_text(const at_profile *p, const at_export_meta *m)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(at_export_callgrind(f, p, m), 0);
    fclose(f);
    return text;
}

static unsigned char *webgrind_bytes(const at_profile *p, const at_export_meta *m, size_t *len)
{
    char *data = NULL;
    FILE *f = open_memstream(&data, len);
    assert_int_equal(at_export_webgrind(f, p, m), 0);
    fclose(f);
    return (unsigned char *)data;
}

static char *folded_text(const at_profile *p, at_cost cost)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(at_export_folded(f, p, cost, false), 0);
    fclose(f);
    return text;
}

/* The webgrind file must be what webgrind's algorithm makes of the
 * Callgrind file, byte for byte, and structurally sound. */
static wg_file *check_webgrind(const at_profile *p, const at_export_meta *m)
{
    char *cg = callgrind_text(p, m);
    size_t len = 0, elen = 0;
    unsigned char *bin = webgrind_bytes(p, m, &len);
    unsigned char *expected = wg_expected(cg, &elen);
    assert_int_equal(len, elen);
    assert_memory_equal(bin, expected, len);
    wg_file *w = wg_parse(bin, len);
    assert_non_null(w);
    assert_int_equal(w->version, 7);
    free(expected);
    free(bin);
    free(cg);
    return w;
}

static const at_export_meta leak_meta = { "./server", "4242", "./server --port 8080", true, 0 };
static const at_export_meta alloc_meta = { "/usr/bin/app", "17", NULL, false, 0 };

#define HEADER(what, verb, pid, cmd)                                                                \
    "# callgrind format\nversion: 1\ncreator: alloctrace " AT_VERSION "\npid: " pid "\ncmd: " cmd \
    "\npositions: line\nevent: " what "Bytes : bytes " verb "\nevent: " what "Blocks : blocks " verb \
    "\nevents: " what "Bytes " what "Blocks\n"

static const char *const config_stack[] = {
    "xstrdup() at /home/u/app/src/config.c:12",
    "parse_config() at /home/u/app/src/config.c:88",
    "main() at /home/u/app/src/main.c:5",
};

static at_profile *three_leaks(at_stack_table *t)
{
    const at_stack *s = stack_of(t, config_stack, 3);
    at_sample samples[3] = { { s, "malloc", 512, 1 }, { s, "malloc", 512, 1 }, { s, "malloc", 512, 1 } };
    return at_profile_build(samples, 3, NULL, t);
}

static void callgrind_leaks_have_the_spec_layout(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_profile *p = three_leaks(t);
    char *text = callgrind_text(p, &leak_meta);
    assert_string_equal(text, HEADER("Leaked", "leaked", "4242", "./server --port 8080")
                        "\n"
                        "fl=(1) [allocator]\nfn=(1) malloc\n0 1536 3\n"
                        "\n"
                        "fl=(2) /home/u/app/src/config.c\nfn=(2) xstrdup\n12 0 0\n"
                        "cfl=(1)\ncfn=(1)\ncalls=3 0\n12 1536 3\n"
                        "\n"
                        "fl=(2)\nfn=(3) parse_config\n88 0 0\n"
                        "cfl=(2)\ncfn=(2)\ncalls=3 12\n88 1536 3\n"
                        "\n"
                        "fl=(3) /home/u/app/src/main.c\nfn=(4) main\n5 0 0\n"
                        "cfl=(2)\ncfn=(3)\ncalls=3 88\n5 1536 3\n"
                        "\nsummary: 1536 3\ntotals: 1536 3\n");
    assert_int_equal(at_profile_samples(p), 3);
    assert_int_equal(at_profile_bytes(p), 1536);
    assert_int_equal(at_profile_blocks(p), 3);
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

static void empty_profile_has_one_zero_function(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_profile *p = at_profile_build(NULL, 0, NULL, t);
    char *text = callgrind_text(p, &alloc_meta);
    assert_string_equal(text, HEADER("Alloc", "allocated", "17", "/usr/bin/app")
                        "\nfl=(1) [alloctrace]\nfn=(1) (no allocations)\n0 0 0\n"
                        "\nsummary: 0 0\ntotals: 0 0\n");
    wg_file *w = check_webgrind(p, &alloc_meta);
    assert_int_equal(w->nfuncs, 1);
    assert_string_equal(w->funcs[0].name, "(no allocations)");
    assert_int_equal(w->funcs[0].inclusive, 0);
    wg_free(w);
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

static void allocation_functions_are_separate_leaves(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const fr[] = { "load() at /src/io.c:40", "main() at /src/main.c:7" };
    const at_stack *s = stack_of(t, fr, 2);
    at_sample samples[] = { { s, "calloc", 100, 1 }, { s, "malloc", 10, 1 }, { s, "calloc", 300, 2 } };
    at_profile *p = at_profile_build(samples, 3, NULL, t);
    char *text = callgrind_text(p, &alloc_meta);
    assert_string_equal(text, HEADER("Alloc", "allocated", "17", "/usr/bin/app")
                        "\nfl=(1) [allocator]\nfn=(1) calloc\n0 400 3\n"
                        "\nfl=(1)\nfn=(2) malloc\n0 10 1\n"
                        "\nfl=(2) /src/io.c\nfn=(3) load\n40 0 0\n"
                        "cfl=(1)\ncfn=(1)\ncalls=3 0\n40 400 3\n"
                        "cfl=(1)\ncfn=(2)\ncalls=1 0\n40 10 1\n"
                        "\nfl=(3) /src/main.c\nfn=(4) main\n7 0 0\n"
                        "cfl=(2)\ncfn=(3)\ncalls=4 40\n7 410 4\n"
                        "\nsummary: 410 4\ntotals: 410 4\n");
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

static void names_colliding_across_files_get_the_file(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const a[] = { "helper() at /src/util.c:3", "main() at /src/main.c:10" };
    const char *const b[] = { "helper() at /lib/other.c:8", "main() at /src/main.c:11" };
    const char *const c[] = { "helper() at /alt/util.c:9", "main() at /src/main.c:12" };
    at_sample samples[] = { { stack_of(t, a, 2), "malloc", 1, 1 },
                            { stack_of(t, b, 2), "malloc", 2, 1 },
                            { stack_of(t, c, 2), "malloc", 4, 1 } };
    at_profile *p = at_profile_build(samples, 3, NULL, t);
    char *text = callgrind_text(p, &alloc_meta);
    assert_non_null(strstr(text, "fn=(2) helper [util.c]\n3 0 0\n"));
    assert_non_null(strstr(text, "fn=(3) helper [other.c]\n8 0 0\n"));
    assert_non_null(strstr(text, "fn=(4) helper [/alt/util.c]\n9 0 0\n"));
    assert_non_null(strstr(text, "fn=(5) main\n10 0 0\n"));
    wg_file *w = check_webgrind(p, &alloc_meta);
    assert_int_equal(w->nfuncs, 5);
    for (uint32_t i = 0; i < w->nfuncs; i++)
        for (uint32_t j = i + 1; j < w->nfuncs; j++)
            assert_string_not_equal(w->funcs[i].name, w->funcs[j].name);
    wg_free(w);
    char *folded = folded_text(p, AT_COST_BYTES);
    assert_string_equal(folded, "main;helper [util.c];malloc 1\nmain;helper [other.c];malloc 2\n"
                                "main;helper [/alt/util.c];malloc 4\n");
    free(folded);
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

static void unsafe_names_are_made_safe(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const fr[] = { "lambda(12)#1 at /src/a: b.c:4", "{main} at /src/m.c:2" };
    at_sample s = { stack_of(t, fr, 2), "malloc", 5, 1 };
    at_profile *p = at_profile_build(&s, 1, NULL, t);
    char *text = callgrind_text(p, &alloc_meta);
    assert_non_null(strstr(text, "fl=(2) /src/a_ b.c\nfn=(2) lambda[12]#1\n4 0 0\n"));
    assert_non_null(strstr(text, "fl=(3) /src/m.c\nfn=(3) {main} [m.c]\n2 0 0\n"));
    wg_free(check_webgrind(p, &alloc_meta));
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

/* Inclusive cost as callgrind_annotate --inclusive=yes computes it: the
 * calls into a function, or self plus calls out for a function never
 * called. Read back from our own Callgrind text. */
static uint64_t annotate_inclusive(const char *text, const char *fn_name)
{
    char def[256];
    snprintf(def, sizeof def, ") %s\n", fn_name);
    const char *d = strstr(text, def);
    assert_non_null(d);
    const char *open = d;
    while (*open != '(')
        open--;
    unsigned id = (unsigned)atoi(open + 1);
    char ref[64];
    snprintf(ref, sizeof ref, "cfn=(%u)", id);
    uint64_t in = 0;
    bool called = false;
    for (const char *p = strstr(text, ref); p; p = strstr(p + 1, ref)) {
        const char *cost = strchr(strchr(p, '\n') + 1, '\n') + 1;
        unsigned long long line, bytes;
        assert_int_equal(sscanf(cost, "%llu %llu", &line, &bytes), 2);
        in += bytes;
        called = true;
    }
    if (called)
        return in;
    snprintf(ref, sizeof ref, "fn=(%u)", id);
    const char *block = strstr(text, ref);
    uint64_t sum = 0;
    const char *end = strstr(block, "\n\n");
    for (const char *l = strchr(block, '\n') + 1; l && l < end; l = strchr(l, '\n') + 1) {
        unsigned long long line, bytes;
        if (l[0] >= '0' && l[0] <= '9' && sscanf(l, "%llu %llu", &line, &bytes) == 2)
            sum += bytes;
    }
    return sum;
}

static void recursion_counts_a_sample_once(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const fr[] = { "walk() at /src/tree.c:10", "walk() at /src/tree.c:20",
                               "walk() at /src/tree.c:20", "main() at /src/main.c:5" };
    const char *const direct[] = { "walk() at /src/tree.c:11", "main() at /src/main.c:6" };
    at_sample samples[] = { { stack_of(t, fr, 4), "malloc", 100, 1 },
                            { stack_of(t, direct, 2), "malloc", 1, 1 } };
    at_profile *p = at_profile_build(samples, 2, NULL, t);
    char *text = callgrind_text(p, &alloc_meta);
    assert_string_equal(text, HEADER("Alloc", "allocated", "17", "/usr/bin/app")
                        "\nfl=(1) [allocator]\nfn=(1) malloc\n0 101 2\n"
                        "\nfl=(2) /src/tree.c\nfn=(2) walk\n10 0 0\n"
                        "cfl=(1)\ncfn=(1)\ncalls=1 0\n10 100 1\n"
                        "cfl=(1)\ncfn=(1)\ncalls=1 0\n11 1 1\n"
                        "\nfl=(3) /src/main.c\nfn=(3) main\n5 0 0\n"
                        "cfl=(2)\ncfn=(2)\ncalls=1 10\n5 100 1\n"
                        "cfl=(2)\ncfn=(2)\ncalls=1 10\n6 1 1\n"
                        "\nsummary: 101 2\ntotals: 101 2\n");
    assert_int_equal(annotate_inclusive(text, "walk"), 101);
    assert_int_equal(annotate_inclusive(text, "main"), 101);
    assert_int_equal(annotate_inclusive(text, "malloc"), 101);
    wg_file *w = check_webgrind(p, &alloc_meta);
    for (uint32_t i = 0; i < w->nfuncs; i++)
        assert_true(w->funcs[i].inclusive <= 101);
    wg_free(w);
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

/* a -> b in one stack, b -> a in another: b is called by a before b's own
 * block can come, so it is declared first with a zero-cost block. */
static void call_cycles_across_stacks_declare_the_callee(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const s1[] = { "b() at /x.c:2", "a() at /x.c:1", "main() at /m.c:9" };
    const char *const s2[] = { "a() at /x.c:11", "b() at /x.c:12", "main() at /m.c:19" };
    at_sample samples[] = { { stack_of(t, s1, 3), "malloc", 8, 1 },
                            { stack_of(t, s2, 3), "calloc", 16, 1 } };
    at_profile *p = at_profile_build(samples, 2, NULL, t);
    char *text = callgrind_text(p, &alloc_meta);
    assert_string_equal(text, HEADER("Alloc", "allocated", "17", "/usr/bin/app")
                        "\nfl=(1) [allocator]\nfn=(1) malloc\n0 8 1\n"
                        "\nfl=(1)\nfn=(2) calloc\n0 16 1\n"
                        "\nfl=(2) /x.c\nfn=(3) b\n2 0 0\n"
                        "\nfl=(2)\nfn=(4) a\n1 0 0\n"
                        "cfl=(2)\ncfn=(3)\ncalls=1 2\n1 8 1\n"
                        "cfl=(1)\ncfn=(2)\ncalls=1 0\n11 16 1\n"
                        "\nfl=(2)\nfn=(3)\n2 0 0\n"
                        "cfl=(1)\ncfn=(1)\ncalls=1 0\n2 8 1\n"
                        "cfl=(2)\ncfn=(4)\ncalls=1 1\n12 16 1\n"
                        "\nfl=(3) /m.c\nfn=(5) main\n9 0 0\n"
                        "cfl=(2)\ncfn=(4)\ncalls=1 1\n9 8 1\n"
                        "cfl=(2)\ncfn=(3)\ncalls=1 2\n19 16 1\n"
                        "\nsummary: 24 2\ntotals: 24 2\n");
    assert_int_equal(annotate_inclusive(text, "a"), 24);
    assert_int_equal(annotate_inclusive(text, "b"), 24);
    wg_file *w = check_webgrind(p, &alloc_meta);
    assert_int_equal(w->nfuncs, 5);
    assert_string_equal(w->funcs[2].name, "b");
    assert_int_equal(w->funcs[2].invocations, 2); /* the declaration and the block */
    assert_int_equal(w->funcs[2].line, 2);
    assert_int_equal(w->funcs[2].ncalled_from, 2);
    assert_int_equal(w->funcs[2].nsub_calls, 2);
    wg_free(w);
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

static void truncated_stacks_get_a_synthetic_caller(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const full[] = { "parse() at /p.c:3", "main() at /m.c:1" };
    const char *const cut[] = { "parse() at /p.c:4" };
    at_sample samples[] = { { stack_of(t, full, 2), "malloc", 10, 1 },
                            { stack_of(t, cut, 1), "malloc", 5, 1 } };
    at_profile *p = at_profile_build(samples, 2, NULL, t);
    char *text = callgrind_text(p, &alloc_meta);
    assert_non_null(strstr(text, "fl=(4) [alloctrace]\nfn=(4) (truncated backtrace)\n0 0 0\n"
                                 "cfl=(2)\ncfn=(2)\ncalls=1 3\n0 5 1\n"));
    assert_int_equal(annotate_inclusive(text, "parse"), 15);
    wg_free(check_webgrind(p, &alloc_meta));
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

static void unresolved_frames_are_named_by_module_and_offset(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_maps *maps = at_maps_new();
    at_maps_add(maps, "/usr/lib/libx.so.1", 0x7000, 0x9000);
    at_frame fr[] = { { 0x7123, NULL }, { 0x7200, "run() from /usr/lib/libx.so.1" }, { 0x50, NULL } };
    at_sample s = { at_stacks_intern(t, fr, 3), "malloc", 64, 1 };
    at_profile *p = at_profile_build(&s, 1, maps, t);
    char *folded = folded_text(p, AT_COST_BLOCKS);
    assert_string_equal(folded, "0x50;run;libx.so.1+0x123;malloc 1\n");
    char *text = callgrind_text(p, &alloc_meta);
    assert_non_null(strstr(text, "fl=(2) [/usr/lib/libx.so.1]\nfn=(2) libx.so.1+0x123\n0 0 0\n"));
    assert_non_null(strstr(text, "fn=(3) run\n"));
    assert_non_null(strstr(text, "fl=(3) ??\nfn=(4) 0x50\n"));
    free(text);
    free(folded);
    at_profile_free(p);
    at_maps_free(maps);
    at_stacks_free(t);
}

static void costs_above_2_31_switch_to_kib(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const char *const fr[] = { "big() at /b.c:1", "main() at /m.c:2" };
    const at_stack *s = stack_of(t, fr, 2);
    at_sample samples[] = { { s, "malloc", 1ull << 31, 1 }, { s, "malloc", 1025, 1 } };
    at_profile *p = at_profile_build(samples, 2, NULL, t);
    char *text = callgrind_text(p, &leak_meta);
    /* 2 GiB is 2097152 KiB, 1025 bytes round up to 2 KiB */
    assert_non_null(strstr(text, "event: LeakedKiB : KiB leaked (each block rounded up)\n"
                                 "event: LeakedBlocks : blocks leaked\n"
                                 "events: LeakedKiB LeakedBlocks\n"));
    assert_non_null(strstr(text, "fn=(1) malloc\n0 2097154 2\n"));
    assert_non_null(strstr(text, "summary: 2097154 2\ntotals: 2097154 2\n"));
    wg_file *w = check_webgrind(p, &leak_meta);
    assert_int_equal(w->funcs[0].self, 2097154);
    assert_int_equal(w->funcs[2].inclusive, 2097154);
    assert_non_null(strstr(w->headers, "events: LeakedKiB LeakedBlocks\n"));
    wg_free(w);
    assert_int_equal(at_profile_bytes(p), (1ull << 31) + 1025);
    free(text);
    at_profile_free(p);

    /* just below the limit the unit stays bytes */
    at_sample small[] = { { s, "malloc", 0x7fffffff - 1, 1 } };
    p = at_profile_build(small, 1, NULL, t);
    text = callgrind_text(p, &leak_meta);
    assert_non_null(strstr(text, "events: LeakedBytes LeakedBlocks\n"));
    assert_non_null(strstr(text, "summary: 2147483646 1\n"));
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

static void webgrind_counts_records_and_numbers_by_first_block(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_profile *p = three_leaks(t);
    wg_file *w = check_webgrind(p, &leak_meta);
    assert_int_equal(w->nfuncs, 4);
    const char *names[] = { "malloc", "xstrdup", "parse_config", "main" };
    const uint32_t lines[] = { 0, 12, 88, 5 };
    for (uint32_t i = 0; i < 4; i++) {
        assert_string_equal(w->funcs[i].name, names[i]);
        assert_int_equal(w->funcs[i].line, lines[i]);
        assert_int_equal(w->funcs[i].invocations, 1);
        assert_int_equal(w->funcs[i].inclusive, 1536);
        assert_int_equal(w->funcs[i].self, i == 0 ? 1536 : 0);
        assert_int_equal(w->funcs[i].ncalled_from, i == 3 ? 0 : 1);
        assert_int_equal(w->funcs[i].nsub_calls, i == 0 ? 0 : 1);
    }
    assert_string_equal(w->funcs[1].file, "/home/u/app/src/config.c");
    /* main calls parse_config at line 5, once (one call record, calls=3) */
    assert_int_equal(w->funcs[2].called_from[0].nr, 3);
    assert_int_equal(w->funcs[2].called_from[0].line, 5);
    assert_int_equal(w->funcs[2].called_from[0].count, 1);
    assert_int_equal(w->funcs[2].called_from[0].cost, 1536);
    assert_int_equal(w->funcs[3].sub_calls[0].nr, 2);
    assert_string_equal(w->headers, "version: 1\ncreator: alloctrace " AT_VERSION "\npid: 4242\n"
                                    "cmd: ./server --port 8080\npositions: line\n"
                                    "event: LeakedBytes : bytes leaked\n"
                                    "event: LeakedBlocks : blocks leaked\n"
                                    "events: LeakedBytes LeakedBlocks\n"
                                    "summary: 1536 3\ntotals: 1536 3\n");
    wg_free(w);
    at_profile_free(p);
    at_stacks_free(t);
}

/* webgrind keys a caller by its number and line written one after the
 * other: function 1 at line 23 and function 12 at line 3 are one entry. */
static void webgrind_merges_callers_whose_keys_concatenate_equal(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fputs("events: B N\n\nfl=(1) a.c\nfn=(1) g\n0 10 1\n", f);
    for (int i = 1; i <= 12; i++) {
        fprintf(f, "fl=(1)\nfn=(%d) f%d\n%d 0 0\n", i + 1, i, i);
        if (i == 1 || i == 12)
            fprintf(f, "cfl=(1)\ncfn=(1)\ncalls=1 0\n%d %d 1\n", i == 1 ? 23 : 3, i);
    }
    fputs("summary: 13 2\n", f);
    fclose(f);
    unsigned char *bin = NULL;
    size_t blen = 0;
    uint64_t max = 0;
    char err[128];
    assert_int_equal(at_webgrind_preprocess(text, len, &bin, &blen, &max, err, sizeof err), 0);
    size_t elen = 0;
    unsigned char *expected = wg_expected(text, &elen);
    assert_int_equal(blen, elen);
    assert_memory_equal(bin, expected, blen);
    wg_file *w = wg_parse(bin, blen);
    assert_non_null(w);
    assert_int_equal(w->nfuncs, 13);
    assert_int_equal(w->funcs[0].ncalled_from, 1);
    assert_int_equal(w->funcs[0].called_from[0].nr, 1);
    assert_int_equal(w->funcs[0].called_from[0].line, 23);
    assert_int_equal(w->funcs[0].called_from[0].count, 2);
    assert_int_equal(w->funcs[0].called_from[0].cost, 13);
    assert_int_equal(max, 23);
    wg_free(w);
    free(expected);
    free(bin);
    free(text);
}

static void webgrind_preprocessing_rejects_what_it_cannot_read(void **state)
{
    (void)state;
    const char *bad[] = {
        "events: B\nfl=a.c\n12 3\n",                   /* fl= without fn= */
        "events: B\nfl=a.c\nfn=f\n1 2\ncfn=g\ncalls=1 0\n1 2\n", /* callee unknown */
        "events: B\ncfn=g\ncalls=1 0\n1 2\n",           /* call outside a block */
        "events: B\nfl=a.c\nfn={main}\n1 2\n",
        "events: B\nfl=a.c\nfn=f\nx\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        unsigned char *bin = NULL;
        size_t blen = 0;
        char err[128] = "";
        assert_int_equal(at_webgrind_preprocess(bad[i], strlen(bad[i]), &bin, &blen, NULL, err,
                                                sizeof err),
                         -1);
        assert_true(strncmp(err, "line ", 5) == 0);
    }
}

static void folded_lists_each_stack_outermost_first(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const at_stack *s = stack_of(t, config_stack, 3);
    const char *const other[] = { "xstrdup() at /home/u/app/src/config.c:13", config_stack[1],
                                  config_stack[2] };
    const at_stack *s2 = stack_of(t, other, 3);
    const char *const semi[] = { "ns::f(a;b) at /x.cc:1" };
    at_sample samples[] = { { s, "malloc", 512, 1 },   { s, "malloc", 1024, 2 },
                            { s2, "malloc", 7, 1 },    { s, "calloc", 30, 1 },
                            { stack_of(t, semi, 1), "malloc", 1, 1 } };
    at_profile *p = at_profile_build(samples, 5, NULL, t);
    char *bytes = folded_text(p, AT_COST_BYTES);
    char *blocks = folded_text(p, AT_COST_BLOCKS);
    /* s and s2 differ only in a line: one folded line */
    assert_string_equal(bytes, "main;parse_config;xstrdup;malloc 1543\n"
                               "main;parse_config;xstrdup;calloc 30\n"
                               "ns::f(a:b);malloc 1\n");
    assert_string_equal(blocks, "main;parse_config;xstrdup;malloc 4\n"
                                "main;parse_config;xstrdup;calloc 1\n"
                                "ns::f(a:b);malloc 1\n");
    free(bytes);
    free(blocks);
    at_profile_free(p);
    at_stacks_free(t);
}

static void default_names_are_safe_and_webgrind_lists_them(void **state)
{
    (void)state;
    char *cg = at_export_default_name(&leak_meta, false);
    char *wg = at_export_default_name(&leak_meta, true);
    assert_string_equal(cg, "cachegrind.out.server.4242");
    assert_string_equal(wg, "cachegrind.out.server.4242.webgrind");
    free(cg);
    free(wg);
    at_export_meta odd = { "/opt/my app/ser:ver", NULL, NULL, false, 0 };
    cg = at_export_default_name(&odd, false);
    assert_string_equal(cg, "cachegrind.out.ser_ver");
    free(cg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(callgrind_leaks_have_the_spec_layout),
        cmocka_unit_test(empty_profile_has_one_zero_function),
        cmocka_unit_test(allocation_functions_are_separate_leaves),
        cmocka_unit_test(names_colliding_across_files_get_the_file),
        cmocka_unit_test(unsafe_names_are_made_safe),
        cmocka_unit_test(recursion_counts_a_sample_once),
        cmocka_unit_test(call_cycles_across_stacks_declare_the_callee),
        cmocka_unit_test(truncated_stacks_get_a_synthetic_caller),
        cmocka_unit_test(unresolved_frames_are_named_by_module_and_offset),
        cmocka_unit_test(costs_above_2_31_switch_to_kib),
        cmocka_unit_test(webgrind_counts_records_and_numbers_by_first_block),
        cmocka_unit_test(webgrind_merges_callers_whose_keys_concatenate_equal),
        cmocka_unit_test(webgrind_preprocessing_rejects_what_it_cannot_read),
        cmocka_unit_test(folded_lists_each_stack_outermost_first),
        cmocka_unit_test(default_names_are_safe_and_webgrind_lists_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
