/* tests/unit/test_compress.c: grouping by backtrace, group order and the
 * depth cut (postproc/compress.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "pp_run.h"

#define HDR "version=2.0, \n"

/* Stack A (0x1 0x2) gets calls 1 and 3 (10 + 30 bytes), stack B (0x1 0x3)
 * gets 2 (100 bytes), stack C (0x9) gets 4 and 5 and 6 (1 byte each). */
static const char three_stacks[] = HDR
    "1. malloc(10) = 0x10\n\t0x1\n\t0x2\n\n"
    "2. malloc(100) = 0x20\n\t0x1\n\t0x3\n\n"
    "3. malloc(30) = 0x30\n\t0x1\n\t0x2\n\n"
    "4. malloc(1) = 0x40\n\t0x9\n\n"
    "5. malloc(1) = 0x50\n\t0x9\n\n"
    "6. malloc(1) = 0x60\n\t0x9\n\n";

#define GROUP_A "1. malloc(10) = 0x10\n3. malloc(30) = 0x30\n" \
                "# allocation summary: 2 block(s) with total size 40\n\t0x1\n\t0x2\n\n"
#define GROUP_B "2. malloc(100) = 0x20\n" \
                "# allocation summary: 1 block(s) with total size 100\n\t0x1\n\t0x3\n\n"
#define GROUP_C "4. malloc(1) = 0x40\n5. malloc(1) = 0x50\n6. malloc(1) = 0x60\n" \
                "# allocation summary: 3 block(s) with total size 3\n\t0x9\n\n"

static void check(at_sort sort, unsigned depth, const char *in, const char *want)
{
    pp_opts o = { .compress = true, .sort = sort, .depth = depth };
    pp_result r = pp_run(in, &o);
    assert_int_equal(r.warnings, 0);
    assert_string_equal(r.out, want);
    pp_free(&r);
}

static void equal_backtraces_group_in_first_index_order(void **state)
{
    (void)state;
    check(AT_SORT_NONE, 0, three_stacks,
          "version=2.0, filter=compress, \n" GROUP_A GROUP_B GROUP_C);
}

static void sort_by_size_largest_first(void **state)
{
    (void)state;
    check(AT_SORT_SIZE, 0, three_stacks,
          "version=2.0, filter=compress, \n" GROUP_B GROUP_A GROUP_C);
}

static void sort_by_size_ascending(void **state)
{
    (void)state;
    check(AT_SORT_SIZE_ASC, 0, three_stacks,
          "version=2.0, filter=compress, \n" GROUP_C GROUP_A GROUP_B);
}

static void sort_by_count_ties_by_first_index(void **state)
{
    (void)state;
    check(AT_SORT_COUNT, 0, three_stacks,
          "version=2.0, filter=compress, \n" GROUP_C GROUP_A GROUP_B);
}

static void sort_by_count_ascending(void **state)
{
    (void)state;
    check(AT_SORT_COUNT_ASC, 0, three_stacks,
          "version=2.0, filter=compress, \n" GROUP_B GROUP_A GROUP_C);
}

static void depth_cut_merges_groups_that_become_equal(void **state)
{
    (void)state;
    check(AT_SORT_NONE, 1, three_stacks,
          "version=2.0, filter=compress, backtrace depth=1, \n"
          "1. malloc(10) = 0x10\n2. malloc(100) = 0x20\n3. malloc(30) = 0x30\n"
          "# allocation summary: 3 block(s) with total size 140\n\t0x1\n\n" GROUP_C);
}

static void depth_cut_alone_cuts_each_call(void **state)
{
    (void)state;
    pp_opts o = { .depth = 1 };
    pp_result r = pp_run("version=2.0, backtrace depth=32, \n"
                         "1. malloc(10) = 0x10\n\t0x1 f() at a.c:1\n\t0x2\n\n", &o);
    assert_string_equal(r.out, "version=2.0, backtrace depth=1, \n"
                               "1. malloc(10) = 0x10\n\t0x1 f() at a.c:1\n\n");
    pp_free(&r);
}

static void resolved_text_is_part_of_the_backtrace(void **state)
{
    (void)state;
    check(AT_SORT_NONE, 0,
          HDR "1. malloc(1) = 0x1\n\t0x5 f() at a.c:1\n\n2. malloc(2) = 0x2\n\t0x5\n\n",
          "version=2.0, filter=compress, \n"
          "1. malloc(1) = 0x1\n# allocation summary: 1 block(s) with total size 1\n"
          "\t0x5 f() at a.c:1\n\n"
          "2. malloc(2) = 0x2\n# allocation summary: 1 block(s) with total size 2\n\t0x5\n\n");
}

static void compressed_output_reads_back_to_the_same(void **state)
{
    (void)state;
    pp_opts o = { .compress = true, .sort = AT_SORT_SIZE };
    pp_result r = pp_run(three_stacks, &o);
    pp_result again = pp_run(r.out, &o);
    assert_string_equal(again.out, r.out);
    pp_free(&r);
    pp_free(&again);
}

static void leaks_then_compress_groups_only_leaks(void **state)
{
    (void)state;
    pp_opts o = { .leaks = true, .compress = true };
    pp_result r = pp_run(HDR "<1> : memory (memory allocation in bytes)\n"
                             "1. malloc(10) = 0x10\n\t0x1\n\n"
                             "2. malloc(20) = 0x20\n\t0x1\n\n"
                             "3. free(0x10)\n\t0x7\n\n"
                             "4. malloc(5) = 0x30\n\t0x1\n\n", &o);
    assert_string_equal(r.out, "version=2.0, filter=leaks|compress, \n"
                               "<1> : memory (memory allocation in bytes)\n"
                               "2. malloc(20) = 0x20\n4. malloc(5) = 0x30\n"
                               "# allocation summary: 2 block(s) with total size 25\n\t0x1\n\n"
                               "# Resource - memory (memory allocation in bytes):\n"
                               "# 2 block(s) leaked with total size of 25 bytes\n");
    pp_free(&r);
}

static void large_groups_spill_and_come_back_in_order(void **state)
{
    (void)state;
    /* 3000 calls over two stacks, every third with an argument: each group
     * outgrows its in-memory buffer many times over */
    size_t cap = 1 << 20, len = 0, alen = 0, blen = 0;
    char *in = malloc(cap), *a = malloc(cap), *b = malloc(cap);
    len += (size_t)snprintf(in, cap, HDR);
    uint64_t asize = 0, bsize = 0;
    unsigned na = 0, nb = 0;
    for (unsigned i = 1; i <= 3000; i++) {
        char call[128];
        int n = snprintf(call, sizeof call, "%u. malloc(%u) = 0x%x\n%s", i, i, i * 16,
                         i % 3 ? "" : "\t$note = the third one\n");
        len += (size_t)snprintf(in + len, cap - len, "%s\t0x%s\n\n", call, i % 2 ? "a" : "b");
        if (i % 2) {
            memcpy(a + alen, call, (size_t)n);
            alen += (size_t)n;
            asize += i;
            na++;
        } else {
            memcpy(b + blen, call, (size_t)n);
            blen += (size_t)n;
            bsize += i;
            nb++;
        }
    }
    a[alen] = b[blen] = '\0';
    size_t wcap = 2 << 20;
    char *want = malloc(wcap);
    snprintf(want, wcap,
             "version=2.0, filter=compress, \n"
             "%s# allocation summary: %u block(s) with total size %llu\n\t0xa\n\n"
             "%s# allocation summary: %u block(s) with total size %llu\n\t0xb\n\n",
             a, na, (unsigned long long)asize, b, nb, (unsigned long long)bsize);
    pp_opts o = { .compress = true };
    pp_result r = pp_run(in, &o);
    assert_int_equal(r.warnings, 0);
    assert_string_equal(r.out, want);
    pp_free(&r);
    free(in);
    free(a);
    free(b);
    free(want);
}

static void sort_names_parse(void **state)
{
    (void)state;
    at_sort s;
    assert_int_equal(at_sort_parse("size", &s), 0);
    assert_int_equal(s, AT_SORT_SIZE);
    assert_int_equal(at_sort_parse("count-asc", &s), 0);
    assert_int_equal(s, AT_SORT_COUNT_ASC);
    assert_int_equal(at_sort_parse("Size", &s), -1);
    assert_int_equal(at_sort_parse("", &s), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(equal_backtraces_group_in_first_index_order),
        cmocka_unit_test(sort_by_size_largest_first),
        cmocka_unit_test(sort_by_size_ascending),
        cmocka_unit_test(sort_by_count_ties_by_first_index),
        cmocka_unit_test(sort_by_count_ascending),
        cmocka_unit_test(depth_cut_merges_groups_that_become_equal),
        cmocka_unit_test(depth_cut_alone_cuts_each_call),
        cmocka_unit_test(resolved_text_is_part_of_the_backtrace),
        cmocka_unit_test(compressed_output_reads_back_to_the_same),
        cmocka_unit_test(leaks_then_compress_groups_only_leaks),
        cmocka_unit_test(large_groups_spill_and_come_back_in_order),
        cmocka_unit_test(sort_names_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
