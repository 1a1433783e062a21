/*
 * tests/unit/test_tracer_format.c: the tracer's text (preload/write/format.c),
 * alone: every hex length against printf, record bodies byte for byte,
 * a header whose process name does not fit, and where a cut may fall.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "tracer.h"

struct at_config at_cfg;

static void at_fmt_hex_matches_printf_at_every_length(void **state)
{
    (void)state;
    for (int bits = 0; bits <= 64; bits++) {
        uint64_t values[] = { bits ? 1ull << (bits - 1) : 0, bits ? ~0ull >> (64 - bits) : 0,
                              0x0123456789abcdefull >> (64 - (bits ? bits : 1)) };
        for (size_t k = 0; k < sizeof values / sizeof *values; k++) {
            char want[32], got[32];
            memset(got, '#', sizeof got);
            snprintf(want, sizeof want, "%" PRIx64, values[k]);
            size_t n = at_fmt_hex(got, values[k]);
            assert_int_equal(n, strlen(want));
            assert_memory_equal(got, want, n);
            assert_int_equal(got[n], '#');   /* nothing written past the digits */
        }
    }
}

static void check_dec(uint64_t v)
{
    char want[32], got[32];
    snprintf(want, sizeof want, "%" PRIu64, v);
    memset(got, '#', sizeof got);
    size_t n = at_fmt_dec(got, v);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(got, want, n);
    assert_int_equal(got[n], '#');   /* nothing written past the digits */
}

/* The digit count is computed before the digits: every boundary of it
 * (10^k - 1, 10^k), every power of two (where the estimate from the
 * leading zeros steps), and both sides of the 32-bit fast path. */
static void at_fmt_dec_matches_printf_at_every_length(void **state)
{
    (void)state;
    check_dec(0);
    check_dec(UINT64_MAX);
    check_dec(UINT32_MAX);
    check_dec((uint64_t)UINT32_MAX + 1);
    uint64_t p10 = 1;
    for (int k = 0; k < 20; k++, p10 *= 10) {
        check_dec(p10 - 1);
        check_dec(p10);
        check_dec(p10 + 1);
    }
    for (int b = 0; b < 64; b++) {
        check_dec((uint64_t)1 << b);
        check_dec(((uint64_t)1 << b) - 1);
    }
}

/* Formats `e` into a buffer of exactly the room tracer.h promises, with
 * a guard after it that must stay untouched. */
static void check_body(const struct at_event *e, const char *want)
{
    size_t room = AT_HEAD_MAX + AT_FRAME_TEXT * (size_t)e->nframes + 2;
    char *buf = malloc(room + 16);
    memset(buf, '#', room + 16);
    size_t n = at_format_body(buf, e);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(buf, want, n);
    for (size_t i = room; i < room + 16; i++)
        assert_int_equal(buf[i], '#');
    free(buf);
}

static void an_allocation_body_has_time_context_alignment_and_frames(void **state)
{
    (void)state;
    at_cfg.timestamps = 1;
    void *frames[] = { (void *)0x401000, (void *)0x7fffffffffffffffull, (void *)0x1 };
    struct at_event e = {
        .fn = AT_POSIX_MEMALIGN, .size = 4096, .id = 0x55d0c3a11000, .alignment = 64,
        .ctx = 0x1f, .time_us = (10 * 3600 + 43 * 60 + 7) * 1000000ull + 120544,
        .frames = frames, .nframes = 3,
    };
    check_body(&e, "@1f [10:43:07.120544] posix_memalign(4096) = 0x55d0c3a11000\n"
                   "\t$alignment = 64\n"
                   "\t0x401000\n\t0x7fffffffffffffff\n\t0x1\n\n");
}

static void a_release_body_without_time_or_frames(void **state)
{
    (void)state;
    at_cfg.timestamps = 0;
    struct at_event e = { .fn = AT_FREE, .release = 1, .id = 0x55d0c3a0e2a0 };
    check_body(&e, "free(0x55d0c3a0e2a0)\n\n");
}

static void a_body_of_the_deepest_stack_of_widest_frames_fits_its_room(void **state)
{
    (void)state;
    at_cfg.timestamps = 1;
    void *frames[AT_MAX_DEPTH];
    char want[AT_HEAD_MAX + AT_FRAME_TEXT * AT_MAX_DEPTH + 2], *w = want;
    w += sprintf(w, "[23:59:59.999999] reallocarray(18446744073709551615) = 0xffffffffffffffff\n"
                    "\t$alignment = 18446744073709551615\n");
    for (int i = 0; i < AT_MAX_DEPTH; i++) {
        frames[i] = (void *)(UINTPTR_MAX - (uintptr_t)i);
        w += sprintf(w, "\t0x%" PRIxPTR "\n", (uintptr_t)frames[i]);
    }
    strcpy(w, "\n");
    struct at_event e = {
        .fn = AT_REALLOCARRAY, .size = UINT64_MAX, .id = UINTPTR_MAX, .alignment = UINT64_MAX,
        .ctx = UINT32_MAX, .time_us = 86400ull * 1000000 - 1, .frames = frames,
        .nframes = AT_MAX_DEPTH,
    };
    char ctx[16];
    snprintf(ctx, sizeof ctx, "@%x ", UINT32_MAX);
    char *full = malloc(strlen(ctx) + strlen(want) + 1);
    strcpy(full, ctx);
    strcat(full, want);
    check_body(&e, full);
    free(full);
}

static void a_header_with_a_name_too_long_stays_in_its_buffer(void **state)
{
    (void)state;
    at_cfg.leaks_mode = 1;
    at_cfg.depth = 256;
    char name[9000];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    name[3] = ',';
    struct tm tm = { .tm_year = 126, .tm_mon = 10, .tm_mday = 22, .tm_hour = 9, .tm_min = 5 };
    size_t cap = 4096 + 512;
    char *h = malloc(cap + 64);
    memset(h, '#', cap + 64);
    size_t n = at_format_header(h, cap, &tm, name, 4194304);
    assert_true(n <= cap);
    for (size_t i = cap; i < cap + 64; i++)
        assert_int_equal(h[i], '#');
    h[n] = '\0';
    assert_non_null(strstr(h, "timestamp=2026.11.22 09:05:00, process=xxx_xxx"));
    const char *tail = ", pid=4194304, filter=leaks|compress, backtrace depth=256, origin=alloctrace ";
    assert_non_null(strstr(h, tail));
    assert_non_null(strstr(h, ", \n<1> : memory (memory allocation in bytes)\n"));
    assert_int_equal(h[n - 1], '\n');
    free(h);
}

/* Leaks mode's compressed groups are one unit: a cut (full disk) goes
 * before or after a group, never between its call lines, before its
 * summary line or into its frames. */
static void a_unit_boundary_never_falls_inside_a_compressed_group(void **state)
{
    (void)state;
    const char text[] = "## leak kind: definite\n"
                        "1. malloc(1) = 0x10\n"
                        "2. memalign(2) = 0x20\n"
                        "\t$alignment = 16\n"
                        "3. malloc(3) = 0x30\n"
                        "# allocation summary: 3 block(s) with total size 6\n"
                        "\t0x1\n"
                        "\n"
                        "4. malloc(4) = 0x40\n"
                        "\t0x1\n"
                        "\n";
    size_t n = sizeof text - 1;
    size_t first = (size_t)(strstr(text, "1. ") - text), fourth = (size_t)(strstr(text, "4. ") - text);
    for (size_t k = 0; k <= n; k++) {
        size_t want = k == n ? n : k >= fourth ? fourth : k >= first ? first : 0;
        assert_int_equal(at_unit_boundary(text, k, n), want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(at_fmt_hex_matches_printf_at_every_length),
        cmocka_unit_test(at_fmt_dec_matches_printf_at_every_length),
        cmocka_unit_test(an_allocation_body_has_time_context_alignment_and_frames),
        cmocka_unit_test(a_release_body_without_time_or_frames),
        cmocka_unit_test(a_body_of_the_deepest_stack_of_widest_frames_fits_its_room),
        cmocka_unit_test(a_header_with_a_name_too_long_stays_in_its_buffer),
        cmocka_unit_test(a_unit_boundary_never_falls_inside_a_compressed_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
