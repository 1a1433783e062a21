/* tests/unit/test_select.c: the selection options (postproc/select.c):
 * context and resource masks, index files, --call-address. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "pp_run.h"

#define HDR "version=2.0, \n<1> : memory (memory allocation in bytes)\n<2> : fd (file descriptors)\n"

static const char calls[] = HDR
    ": /usr/lib/libfoo.so => 0x7f0000-0x7f9000\n"
    "1. malloc<memory>(10) = 0x10\n\t0x7f0100\n\n"
    "2. @1 malloc<memory>(20) = 0x20\n\t0x500\n\n"
    "3. @2 open<fd>(1) = 0x3\n\t0x7f0200\n\t0x600\n\n"
    "4. @3 malloc<memory>(40) = 0x40\n\t0x700\n\n";

/* The indices of the calls in out, as "1 3 " etc. */
static char *indices(const char *out)
{
    static char buf[256];
    buf[0] = '\0';
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        unsigned long i;
        char dot;
        if (*p >= '0' && *p <= '9' && sscanf(p, "%lu%c", &i, &dot) == 2 && dot == '.')
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%lu ", i);
    }
    return buf;
}

static void expect(const at_select_opts *sel, const char *want)
{
    pp_opts o = { .select = sel };
    pp_result r = pp_run(calls, &o);
    assert_int_equal(r.warnings, 0);
    assert_string_equal(indices(r.out), want);
    pp_free(&r);
}

static void context_mask_keeps_calls_in_any_of_its_contexts(void **state)
{
    (void)state;
    at_select_opts s;
    at_select_init(&s);
    s.use_context = true;
    s.context_mask = 2;
    expect(&s, "3 4 ");
}

static void context_mask_zero_keeps_calls_without_context(void **state)
{
    (void)state;
    at_select_opts s;
    at_select_init(&s);
    s.use_context = true;
    s.context_mask = 0;
    expect(&s, "1 ");
}

static void resource_mask_keeps_those_types(void **state)
{
    (void)state;
    at_select_opts s;
    at_select_init(&s);
    s.use_resource = true;
    s.resource_mask = 2;
    expect(&s, "3 ");
}

static char *write_tmp(const char *text)
{
    static char path[64];
    strcpy(path, "/tmp/pp-sel-XXXXXX");
    int fd = mkstemp(path);
    assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void include_file_with_ranges_and_comments(void **state)
{
    (void)state;
    at_select_opts s;
    at_select_init(&s);
    s.include_file = write_tmp("# wanted\n1,\n3-4 # the fd and one more\n");
    expect(&s, "1 3 4 ");
    unlink(s.include_file);
}

static void exclude_file_drops_listed_calls(void **state)
{
    (void)state;
    at_select_opts s;
    at_select_init(&s);
    s.exclude_file = write_tmp("2 4\n");
    expect(&s, "1 3 ");
    unlink(s.exclude_file);
}

static void bad_index_file_is_an_error_with_its_line(void **state)
{
    (void)state;
    at_index_set set;
    at_diag d;
    char *msgs = NULL;
    size_t len;
    at_diag_init(&d, "x");
    d.out = open_memstream(&msgs, &len);
    const char *text = "1\n2\n5-3\n";
    assert_int_equal(at_index_set_parse(&set, text, strlen(text), "idx.txt", &d), -1);
    fclose(d.out);
    assert_string_equal(msgs, "idx.txt:3: not an index or range A-B: '5-3'\n");
    assert_int_equal(d.status, AT_EXIT_USAGE);
    free(msgs);
}

static void index_set_merges_overlapping_ranges(void **state)
{
    (void)state;
    at_index_set set;
    at_diag d;
    at_diag_init(&d, "x");
    const char *text = "10-20 15-30 31 100";
    assert_int_equal(at_index_set_parse(&set, text, strlen(text), "i", &d), 0);
    assert_int_equal(set.n, 2);
    assert_true(at_index_set_has(&set, 10));
    assert_true(at_index_set_has(&set, 31));
    assert_false(at_index_set_has(&set, 32));
    assert_true(at_index_set_has(&set, 100));
    assert_false(at_index_set_has(&set, 9));
    at_index_set_free(&set);
}

static void call_address_is_relative_to_the_module_base(void **state)
{
    (void)state;
    at_select_opts s;
    at_select_init(&s);
    assert_int_equal(at_select_parse_address(&s, "libfoo.so:0x200+0x10"), 0);
    expect(&s, "3 ");
    free(s.address_module);
}

static void call_address_without_module_is_absolute(void **state)
{
    (void)state;
    at_select_opts s;
    at_select_init(&s);
    assert_int_equal(at_select_parse_address(&s, ":0x500+0x201"), 0);
    expect(&s, "2 3 4 ");
    free(s.address_module);
}

static void call_address_spec_errors(void **state)
{
    (void)state;
    at_select_opts s;
    at_select_init(&s);
    assert_int_equal(at_select_parse_address(&s, "libfoo.so"), -1);
    assert_int_equal(at_select_parse_address(&s, "libfoo.so:0x10"), -1);
    assert_int_equal(at_select_parse_address(&s, "libfoo.so:0x10+"), -1);
    assert_int_equal(at_select_parse_address(&s, "libfoo.so:zz+4"), -1);
    assert_int_equal(at_select_parse_address(&s, "libfoo.so:1+0"), -1);
    assert_false(s.use_address);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(context_mask_keeps_calls_in_any_of_its_contexts),
        cmocka_unit_test(context_mask_zero_keeps_calls_without_context),
        cmocka_unit_test(resource_mask_keeps_those_types),
        cmocka_unit_test(include_file_with_ranges_and_comments),
        cmocka_unit_test(exclude_file_drops_listed_calls),
        cmocka_unit_test(bad_index_file_is_an_error_with_its_line),
        cmocka_unit_test(index_set_merges_overlapping_ranges),
        cmocka_unit_test(call_address_is_relative_to_the_module_base),
        cmocka_unit_test(call_address_without_module_is_absolute),
        cmocka_unit_test(call_address_spec_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
