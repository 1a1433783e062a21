/* tests/unit/test_leaks.c: the leaks filter (postproc/leaks.c): pairing by
 * (type, id) in index order, id reuse, realloc, refcounts, unmatched and
 * NULL frees, record placement, and selection after pairing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "pp_run.h"

#define HDR "version=2.0, arch=x86_64, \n<1> : memory (memory allocation in bytes)\n"
#define SUMMARY(n, s) "# Resource - memory (memory allocation in bytes):\n" \
                      "# " #n " block(s) leaked with total size of " #s " bytes\n"

static void run_leaks(const char *in, const char *want)
{
    pp_opts o = { .leaks = true };
    pp_result r = pp_run(in, &o);
    assert_int_equal(r.warnings, 0);
    assert_string_equal(r.out, want);
    pp_free(&r);
}

static void freed_block_disappears_and_leak_stays(void **state)
{
    (void)state;
    run_leaks(HDR "1. malloc(10) = 0x10\n\t0x1\n\n"
                  "2. malloc(20) = 0x20\n\t0x2\n\n"
                  "3. free(0x10)\n\t0x3\n\n",
              "version=2.0, arch=x86_64, filter=leaks, \n"
              "<1> : memory (memory allocation in bytes)\n"
              "2. malloc(20) = 0x20\n\t0x2\n\n" SUMMARY(1, 20));
}

static void reused_id_pairs_in_index_order(void **state)
{
    (void)state;
    /* 0x10 is freed, handed out again and leaked the second time */
    run_leaks(HDR "1. malloc(10) = 0x10\n\n"
                  "2. free(0x10)\n\n"
                  "3. malloc(30) = 0x10\n\n",
              "version=2.0, arch=x86_64, filter=leaks, \n"
              "<1> : memory (memory allocation in bytes)\n"
              "3. malloc(30) = 0x10\n\n" SUMMARY(1, 30));
}

static void realloc_release_then_allocation_pairs(void **state)
{
    (void)state;
    run_leaks(HDR "1. malloc(10) = 0x10\n\n"
                  "2. realloc(0x10)\n\n"
                  "3. realloc(100) = 0x80\n\n"
                  "4. realloc(0x80)\n\n"
                  "5. realloc(200) = 0x80\n\n",
              "version=2.0, arch=x86_64, filter=leaks, \n"
              "<1> : memory (memory allocation in bytes)\n"
              "5. realloc(200) = 0x80\n\n" SUMMARY(1, 200));
}

static void unmatched_and_null_frees_vanish(void **state)
{
    (void)state;
    run_leaks(HDR "1. free(0x0)\n\n"
                  "2. free(0x999)\n\n"
                  "3. malloc(7) = 0x10\n\n"
                  "4. free(0x10)\n\n"
                  "5. free(0x10)\n\n",
              "version=2.0, arch=x86_64, filter=leaks, \n"
              "<1> : memory (memory allocation in bytes)\n" SUMMARY(0, 0));
}

static void refcounted_resource_is_freed_when_references_end(void **state)
{
    (void)state;
    const char *in = "version=2.0, \n"
                     "<1> : memory (memory allocation in bytes)\n"
                     "<2> : gobject (GObject instances) [refcount]\n"
                     "1. g_object_new<gobject>(1) = 0x10\n\n"
                     "2. g_object_ref<gobject>(1) = 0x10\n\n"
                     "3. g_object_unref<gobject>(0x10)\n\n"
                     "4. g_object_new<gobject>(1) = 0x20\n\n"
                     "5. g_object_ref<gobject>(1) = 0x20\n\n"
                     "6. g_object_unref<gobject>(0x20)\n\n"
                     "7. g_object_unref<gobject>(0x20)\n\n"
                     "8. malloc<memory>(5) = 0x10\n\n";
    run_leaks(in, "version=2.0, filter=leaks, \n"
                  "<1> : memory (memory allocation in bytes)\n"
                  "<2> : gobject (GObject instances) [refcount]\n"
                  "1. g_object_new<gobject>(1) = 0x10\n\n"
                  "8. malloc<memory>(5) = 0x10\n\n"
                  "# Resource - memory (memory allocation in bytes):\n"
                  "# 1 block(s) leaked with total size of 5 bytes\n"
                  "# Resource - gobject (GObject instances):\n"
                  "# 1 block(s) leaked with total size of 1 bytes\n");
}

static void same_id_of_another_type_is_another_block(void **state)
{
    (void)state;
    const char *in = "version=2.0, \n"
                     "<1> : memory (memory allocation in bytes)\n"
                     "<2> : fd (file descriptors)\n"
                     "1. malloc<memory>(5) = 0x3\n\n"
                     "2. open<fd>(1) = 0x3\n\n"
                     "3. close<fd>(0x3)\n\n";
    run_leaks(in, "version=2.0, filter=leaks, \n"
                  "<1> : memory (memory allocation in bytes)\n"
                  "<2> : fd (file descriptors)\n"
                  "1. malloc<memory>(5) = 0x3\n\n"
                  "# Resource - memory (memory allocation in bytes):\n"
                  "# 1 block(s) leaked with total size of 5 bytes\n"
                  "# Resource - fd (file descriptors):\n"
                  "# 0 block(s) leaked with total size of 0 bytes\n");
}

static void allocation_over_a_live_id_keeps_the_older_as_a_leak(void **state)
{
    (void)state;
    run_leaks(HDR "1. malloc(10) = 0x10\n\n"
                  "2. malloc(20) = 0x10\n\n"
                  "3. free(0x10)\n\n",
              "version=2.0, arch=x86_64, filter=leaks, \n"
              "<1> : memory (memory allocation in bytes)\n"
              "1. malloc(10) = 0x10\n\n" SUMMARY(1, 10));
}

static void comments_and_maps_stay_before_the_next_kept_call(void **state)
{
    (void)state;
    run_leaks(HDR ": /a => 0x1000-0x2000\n"
                  "1. malloc(10) = 0x10\n\n"
                  "## after one\n"
                  "2. malloc(20) = 0x20\n\n"
                  ": /b => 0x3000-0x4000\n"
                  "3. malloc(30) = 0x30\n\n"
                  "4. free(0x20)\n\n"
                  "## at the end\n",
              "version=2.0, arch=x86_64, filter=leaks, \n"
              "<1> : memory (memory allocation in bytes)\n"
              ": /a => 0x1000-0x2000\n"
              "1. malloc(10) = 0x10\n\n"
              "## after one\n"
              ": /b => 0x3000-0x4000\n"
              "3. malloc(30) = 0x30\n\n"
              "## at the end\n" SUMMARY(2, 40));
}

static void many_blocks_pair_through_table_growth(void **state)
{
    (void)state;
    /* 5000 allocations, every one but multiples of 1000 freed in reverse */
    size_t cap = 1 << 20, len = 0;
    char *in = malloc(cap);
    len += (size_t)snprintf(in + len, cap - len, HDR);
    unsigned idx = 1;
    for (unsigned i = 1; i <= 5000; i++)
        len += (size_t)snprintf(in + len, cap - len, "%u. malloc(%u) = 0x%x\n\n", idx++, i, i * 16);
    for (unsigned i = 5000; i >= 1; i--)
        if (i % 1000)
            len += (size_t)snprintf(in + len, cap - len, "%u. free(0x%x)\n\n", idx++, i * 16);
    pp_opts o = { .leaks = true };
    pp_result r = pp_run(in, &o);
    assert_string_equal(r.out, "version=2.0, arch=x86_64, filter=leaks, \n"
                               "<1> : memory (memory allocation in bytes)\n"
                               "1000. malloc(1000) = 0x3e80\n\n"
                               "2000. malloc(2000) = 0x7d00\n\n"
                               "3000. malloc(3000) = 0xbb80\n\n"
                               "4000. malloc(4000) = 0xfa00\n\n"
                               "5000. malloc(5000) = 0x13880\n\n" SUMMARY(5, 15000));
    pp_free(&r);
    free(in);
}

static void selecting_a_free_away_does_not_make_a_leak(void **state)
{
    (void)state;
    /* --exclude of the free's index: pairing happened before selection */
    at_select_opts sel;
    at_select_init(&sel);
    char path[] = "/tmp/pp-excl-XXXXXX";
    int fd = mkstemp(path);
    assert_int_equal(write(fd, "2\n", 2), 2);
    close(fd);
    sel.exclude_file = path;
    pp_opts o = { .leaks = true, .select = &sel };
    pp_result r = pp_run(HDR "1. malloc(10) = 0x10\n\n2. free(0x10)\n\n3. malloc(5) = 0x30\n\n", &o);
    assert_string_equal(r.out, "version=2.0, arch=x86_64, filter=leaks, \n"
                               "<1> : memory (memory allocation in bytes)\n"
                               "3. malloc(5) = 0x30\n\n" SUMMARY(1, 5));
    pp_free(&r);
    unlink(path);
}

static void compressed_leaks_input_is_paired_in_index_order(void **state)
{
    (void)state;
    /* groups are not in index order: the free (4) comes first in the file */
    pp_opts o = { .leaks = true };
    pp_result r = pp_run("version=2.0, filter=compress, \n"
                         "4. free(0x10)\n# allocation summary: 0 block(s) with total size 0\n\t0x2\n\n"
                         "1. malloc(10) = 0x10\n3. malloc(30) = 0x30\n"
                         "# allocation summary: 2 block(s) with total size 40\n\t0x1\n\n",
                         &o);
    assert_string_equal(r.out, "version=2.0, filter=leaks, \n3. malloc(30) = 0x30\n\t0x1\n\n");
    pp_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(freed_block_disappears_and_leak_stays),
        cmocka_unit_test(reused_id_pairs_in_index_order),
        cmocka_unit_test(realloc_release_then_allocation_pairs),
        cmocka_unit_test(unmatched_and_null_frees_vanish),
        cmocka_unit_test(refcounted_resource_is_freed_when_references_end),
        cmocka_unit_test(same_id_of_another_type_is_another_block),
        cmocka_unit_test(allocation_over_a_live_id_keeps_the_older_as_a_leak),
        cmocka_unit_test(comments_and_maps_stay_before_the_next_kept_call),
        cmocka_unit_test(many_blocks_pair_through_table_growth),
        cmocka_unit_test(selecting_a_free_away_does_not_make_a_leak),
        cmocka_unit_test(compressed_leaks_input_is_paired_in_index_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
