/* tests/unit/test_flame.c: flame graph frames (flame.c): inlined repeats,
 * short names, the tree, and the folded and SVG outputs built on them, on
 * stacks made here with known addresses and costs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "flame.h"

typedef struct fr {
    uint64_t addr;
    const char *text;
} fr;

/* A stack from (address, text) pairs, innermost first. */
static const at_stack *stack_of(at_stack_table *t, const fr *frames, uint32_t n)
{
    at_frame f[16];
    for (uint32_t i = 0; i < n; i++)
        f[i] = (at_frame){ frames[i].addr, frames[i].text };
    return at_stacks_intern(t, f, n);
}

static char *folded(const at_profile *p, bool short_names)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(at_export_folded(f, p, AT_COST_BYTES, short_names), 0);
    fclose(f);
    return text;
}

static char *svg(const at_profile *p, const at_export_meta *m, at_cost cost)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(at_export_flamegraph(f, p, m, cost, false), 0);
    fclose(f);
    return text;
}

static char *folded_of(const fr *frames, uint32_t n, bool short_names)
{
    at_stack_table *t = at_stacks_new();
    at_sample s = { stack_of(t, frames, n), "malloc", 8, 1 };
    at_profile *p = at_profile_build(&s, 1, NULL, t);
    char *text = folded(p, short_names);
    at_profile_free(p);
    at_stacks_free(t);
    return text;
}

static void folded_drops_an_inlined_frame_repeating_its_caller(void **state)
{
    (void)state;
    /* libc's _IO_doallocbuf, as libdw gives it: inlined into itself */
    const fr frames[] = { { 0x30, "_IO_file_doallocate() at ./libio/filedoalloc.c:101" },
                          { 0x20, "_IO_doallocbuf() at ./libio/genops.c:347 [inlined]" },
                          { 0x20, "_IO_doallocbuf() at ./libio/genops.c:342" },
                          { 0x10, "main() at /src/m.c:4" } };
    char *text = folded_of(frames, 4, false);
    assert_string_equal(text, "main;_IO_doallocbuf;_IO_file_doallocate;malloc 8\n");
    free(text);
}

static void folded_keeps_recursion_through_one_call_site(void **state)
{
    (void)state;
    /* one return address twice without [inlined]: walk called walk */
    const fr frames[] = { { 0x40, "walk() at /src/tree.c:10" },
                          { 0x44, "walk() at /src/tree.c:20" },
                          { 0x44, "walk() at /src/tree.c:20" },
                          { 0x10, "main() at /src/m.c:4" } };
    char *text = folded_of(frames, 4, false);
    assert_string_equal(text, "main;walk;walk;walk;malloc 8\n");
    free(text);
}

static void folded_keeps_an_inlined_frame_of_another_function(void **state)
{
    (void)state;
    const fr frames[] = { { 0x50, "probe() at /src/p.h:27" },
                          { 0x60, "inline_leaf() at /src/app.c:21 [inlined]" },
                          { 0x60, "inline_mid() at /src/app.c:27 [inlined]" },
                          { 0x60, "outer_caller() at /src/app.c:34" },
                          { 0x10, "main() at /src/m.c:4" } };
    char *text = folded_of(frames, 5, false);
    assert_string_equal(text, "main;outer_caller;inline_mid;inline_leaf;probe;malloc 8\n");
    free(text);
}

static void short_names_cut_template_arguments(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        { "std::vector<int, std::allocator<int> >::push_back(int const&)",
          "std::vector<>::push_back(int const&)" },
        { "std::_Function_handler<void (), main::{lambda()#1}>::_M_invoke(std::_Any_data const&)",
          "std::_Function_handler<>::_M_invoke(std::_Any_data const&)" },
        { "std::vector<int>::operator=(std::vector<int>&&)", "std::vector<>::operator=(std::vector<>&&)" },
        { "std::ostream::operator<<(int)", "std::ostream::operator<<(int)" },
        { "Foo<int>::operator<(Foo<int> const&) const", "Foo<>::operator<(Foo<> const&) const" },
        { "bool operator< <int>(Foo<int> const&)", "bool operator< <>(Foo<> const&)" },
        { "it::operator->() const", "it::operator->() const" },
        { "a::operator>>=(int)", "a::operator>>=(int)" },
        { "x::operator<=>(x const&)", "x::operator<=>(x const&)" },
        { "plain_c_function", "plain_c_function" },
        { "broken<name", "broken<name" },
        { "broken>name<x>", "broken>name<x>" },
        { "", "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *s = at_short_name(cases[i][0]);
        assert_string_equal(s, cases[i][1]);
        free(s);
    }
}

static void folded_short_names_cut_the_arguments_of_every_frame(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const fr a[] = { { 0x20, "std::vector<int, std::allocator<int> >::push_back(int const&) at /usr/include/c++/12/bits/stl_vector.h:1281" },
                     { 0x10, "main() at /src/m.cc:4" } };
    const fr b[] = { { 0x30, "std::vector<long, std::allocator<long> >::push_back(long const&) at /usr/include/c++/12/bits/stl_vector.h:1281" },
                     { 0x14, "main() at /src/m.cc:5" } };
    at_sample s[] = { { stack_of(t, a, 2), "operator new", 4, 1 },
                      { stack_of(t, b, 2), "operator new", 8, 1 } };
    at_profile *p = at_profile_build(s, 2, NULL, t);
    char *full = folded(p, false), *shorter = folded(p, true);
    assert_string_equal(full,
                        "main;std::vector<int, std::allocator<int> >::push_back(int const&);operator new 4\n"
                        "main;std::vector<long, std::allocator<long> >::push_back(long const&);operator new 8\n");
    /* the argument lists still differ: two lines */
    assert_string_equal(shorter, "main;std::vector<>::push_back(int const&);operator new 4\n"
                                 "main;std::vector<>::push_back(long const&);operator new 8\n");
    free(full);
    free(shorter);
    at_profile_free(p);
    at_stacks_free(t);
}

static void costs_in_order(void *ctx, size_t path, uint64_t *cost)
{
    const uint64_t(*c)[2] = ctx;
    cost[0] = c[path][0];
    cost[1] = c[path][1];
}

static const char *name_of(const at_flame *f, uint32_t node)
{
    return f->names[f->nodes[node].name];
}

static void tree_merges_prefixes_sums_costs_and_orders_children_by_name(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const fr zeta[] = { { 0x20, "zeta() at /s.c:1" }, { 0x10, "main() at /m.c:1" } };
    const fr alpha[] = { { 0x30, "alpha() at /s.c:9" }, { 0x10, "main() at /m.c:1" } };
    const fr alpha2[] = { { 0x34, "alpha() at /s.c:10" }, { 0x14, "main() at /m.c:2" } };
    at_sample s[] = { { stack_of(t, zeta, 2), "malloc", 10, 1 },
                      { stack_of(t, alpha, 2), "malloc", 20, 1 },
                      { stack_of(t, alpha2, 2), "calloc", 40, 1 } };
    at_profile *p = at_profile_build(s, 3, NULL, t);
    assert_int_equal(p->npaths, 3);
    const uint64_t costs[3][2] = { { 10, 1 }, { 20, 2 }, { 40, 4 } };
    at_flame *f = at_flame_build(p, false, 2, costs_in_order, (void *)costs);
    /* all, main, zeta, malloc, alpha, malloc, calloc */
    assert_int_equal(f->nnodes, 7);
    assert_string_equal(name_of(f, 0), "all");
    assert_int_equal(f->nodes[0].cost[0], 70);
    assert_int_equal(f->nodes[0].cost[1], 7);
    uint32_t main_ = f->nodes[0].first_child;
    assert_string_equal(name_of(f, main_), "main");
    assert_int_equal(f->nodes[main_].next_sibling, AT_PROFILE_NONE);
    assert_int_equal(f->nodes[main_].cost[0], 70);
    uint32_t first = f->nodes[main_].first_child, second = f->nodes[first].next_sibling;
    assert_string_equal(name_of(f, first), "alpha");
    assert_int_equal(f->nodes[first].cost[0], 60);
    assert_int_equal(f->nodes[first].cost[1], 6);
    assert_int_equal(f->nodes[first].depth, 2);
    assert_string_equal(name_of(f, second), "zeta");
    assert_int_equal(f->nodes[second].cost[0], 10);
    uint32_t leaf = f->nodes[first].first_child;
    assert_string_equal(name_of(f, leaf), "calloc");
    assert_true(f->allocator[f->nodes[leaf].name]);
    assert_false(f->allocator[f->nodes[first].name]);
    assert_string_equal(name_of(f, f->nodes[leaf].next_sibling), "malloc");
    assert_int_equal(f->max_depth, 3);
    at_flame_free(f);
    at_profile_free(p);
    at_stacks_free(t);
}

static void svg_frames_have_titles_widths_and_escaped_names(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const fr a[] = { { 0x20, "helper<int>() at /s.cc:1" }, { 0x10, "main() at /m.c:1" } };
    const fr b[] = { { 0x30, "other() at /s.cc:9" }, { 0x10, "main() at /m.c:1" } };
    at_sample s[] = { { stack_of(t, a, 2), "malloc", 100, 1 }, { stack_of(t, b, 2), "malloc", 50, 3 } };
    at_profile *p = at_profile_build(s, 2, NULL, t);
    at_export_meta m = { "/usr/bin/app", "17", NULL, false, 0 };
    char *text = svg(p, &m, AT_COST_BYTES);
    assert_non_null(strstr(text, ">Allocations of /usr/bin/app (bytes)</text>"));
    /* 150 bytes over 1180 pixels from x=10; frames 16 pixels high, the
     * root at the bottom: height 3 * 12 + 12 + 2 * 12 + 10 + 4 * 16 = 146,
     * the root at 146 - 34 - 16 = 96 */
    assert_non_null(strstr(text, "height=\"146\""));
    assert_non_null(strstr(text, "<title>all (150 bytes, 100.00%)</title><rect x=\"10.00\" y=\"96\" "
                                 "width=\"1180.00\""));
    assert_non_null(strstr(text, "<title>main (150 bytes, 100.00%)</title><rect x=\"10.00\" y=\"80\" "
                                 "width=\"1180.00\""));
    assert_non_null(strstr(text, "<title>helper&lt;int&gt;() (100 bytes, 66.67%)</title><rect x=\"10.00\" "
                                 "y=\"64\" width=\"786.67\""));
    assert_non_null(strstr(text, "<title>other (50 bytes, 33.33%)</title><rect x=\"796.67\" y=\"64\" "
                                 "width=\"393.33\""));
    assert_non_null(strstr(text, ">helper&lt;int&gt;()</text>"));
    assert_non_null(strstr(text, "<script type=\"text/ecmascript\"><![CDATA[\n// postproc/export/assets/flamegraph.js"));
    assert_non_null(strstr(text, "]]></script>\n</svg>\n"));
    free(text);
    text = svg(p, NULL, AT_COST_BLOCKS);
    assert_non_null(strstr(text, ">Allocations (blocks)</text>"));
    assert_non_null(strstr(text, "<title>other (3 blocks, 75.00%)</title>"));
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

static void svg_leaves_out_frames_narrower_than_a_tenth_of_a_pixel(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    const fr big[] = { { 0x20, "big() at /s.c:1" } };
    const fr tiny[] = { { 0x30, "tiny() at /s.c:2" } };
    const fr thin[] = { { 0x40, "thin() at /s.c:3" } };
    /* 0.1 pixel is 1/11800 of the width: 100 of 1,000,000 bytes is 0.118 */
    at_sample s[] = { { stack_of(t, big, 1), "malloc", 999850, 1 },
                      { stack_of(t, thin, 1), "malloc", 100, 1 },
                      { stack_of(t, tiny, 1), "malloc", 50, 1 } };
    at_profile *p = at_profile_build(s, 3, NULL, t);
    char *text = svg(p, NULL, AT_COST_BYTES);
    const char *thin_frame = strstr(text, "<title>thin (100 bytes, 0.01%)</title>");
    assert_non_null(thin_frame);
    assert_null(strstr(text, "<title>tiny"));
    /* too narrow for a label: drawn with an empty text */
    const char *end = strstr(thin_frame, "</g>");
    assert_non_null(end);
    assert_true(strstr(thin_frame, "\"></text></g>") == end - strlen("\"></text>"));
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

static void svg_of_nothing_has_no_frames(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_profile *p = at_profile_build(NULL, 0, NULL, t);
    at_export_meta m = { "./server", "4242", NULL, true, 0 };
    char *text = svg(p, &m, AT_COST_BYTES);
    assert_non_null(strstr(text, ">Leaks of ./server (bytes)</text>"));
    assert_null(strstr(text, "<g class=\"f\">"));
    assert_non_null(strstr(text, "</svg>\n"));
    free(text);
    at_profile_free(p);
    at_stacks_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(folded_drops_an_inlined_frame_repeating_its_caller),
        cmocka_unit_test(folded_keeps_recursion_through_one_call_site),
        cmocka_unit_test(folded_keeps_an_inlined_frame_of_another_function),
        cmocka_unit_test(short_names_cut_template_arguments),
        cmocka_unit_test(folded_short_names_cut_the_arguments_of_every_frame),
        cmocka_unit_test(tree_merges_prefixes_sums_costs_and_orders_children_by_name),
        cmocka_unit_test(svg_frames_have_titles_widths_and_escaped_names),
        cmocka_unit_test(svg_leaves_out_frames_narrower_than_a_tenth_of_a_pixel),
        cmocka_unit_test(svg_of_nothing_has_no_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
