/*
 * tests/unit/test_tracer_chunk.c: a buffer's stream of binary records and
 * text entries into the compressed form (preload/write/chunk.c), alone: calls of
 * one backtrace listed together in the order of their first calls, every
 * group closed before a text entry, arguments and contexts on the call
 * lines, a long group split under ~3 KiB, pieces of whole units.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tracer.h"

struct at_config at_cfg;

/* What at_chunk_text handed out: the text, and each piece's length. */
static char got[8 << 20];
static size_t got_len, pieces, longest_piece;

static void collect(const char *p, size_t n)
{
    assert_true(got_len + n < sizeof got);
    memcpy(got + got_len, p, n);
    got_len += n;
    pieces++;
    if (n > longest_piece)
        longest_piece = n;
    assert_true(n > 0 && p[n - 1] == '\n');   /* whole lines */
}

/* A stream under construction: 8-byte aligned, as writer.c makes it. */
static _Alignas(16) char stream[1 << 20];
static size_t stream_len;

static void reset(void)
{
    stream_len = got_len = pieces = longest_piece = 0;
    memset(got, 0, sizeof got);
}

static void put_call_at(uint64_t index, enum at_fn fn, int release, uint64_t size, uint64_t id,
                        uint32_t ctx, const struct at_stack *st, uint64_t stamp)
{
    struct at_rec r = {
        .head = AT_REC_CALL | (uint64_t)release << AT_REC_RELEASE_SHIFT |
                (uint64_t)fn << AT_REC_FN_SHIFT | index << AT_REC_INDEX_SHIFT,
        .ctx = ctx, .size = size, .id = id, .stamp = stamp, .stack = st,
    };
    memcpy(stream + stream_len, &r, sizeof r);
    stream_len += sizeof r;
}

static void put_call(uint64_t index, enum at_fn fn, int release, uint64_t size, uint64_t id,
                     uint32_t ctx, const struct at_stack *st)
{
    put_call_at(index, fn, release, size, id, ctx, st, 0);
}

static void put_text(const char *s)
{
    size_t n = strlen(s);
    uint64_t head = AT_REC_TEXT | (uint64_t)n << AT_REC_INDEX_SHIFT;
    memcpy(stream + stream_len, &head, 8);
    memcpy(stream + stream_len + 8, s, n);
    stream_len += 8 + ((n + 7) & ~(size_t)7);
}

/* Room for an interned backtrace of two frames, as sites.c makes them
 * (16-byte aligned). */
struct stack2 {
    _Alignas(16) unsigned char bytes[sizeof(struct at_stack) + 2 * sizeof(void *)];
};

static const struct at_stack *stack_at(struct stack2 *room, uintptr_t f0, uintptr_t f1,
                                       uint64_t alignment)
{
    struct at_stack *st = (struct at_stack *)(void *)room->bytes;
    memset(room, 0, sizeof *room);
    st->n = 2;
    st->alignment = alignment;
    st->frames[0] = (void *)f0;
    st->frames[1] = (void *)f1;
    return st;
}

/* A new stream whose first site is 0x111, 0x222 with `alignment`. */
static const struct at_stack *start(struct stack2 *room, uint64_t alignment)
{
    reset();
    return stack_at(room, 0x111, 0x222, alignment);
}

static void format_with(const struct at_stamp_conv *conv)
{
    struct at_chunk *k = at_chunk_new();
    assert_non_null(k);
    at_chunk_text(k, stream, stream_len, collect, conv);
}

/* Stamps that are times already (no invariant TSC). */
static void format(void)
{
    struct at_stamp_conv as_is = { .tsc = 0 };
    format_with(&as_is);
}

static void calls_of_one_backtrace_come_together_in_order_of_their_first(void **state)
{
    (void)state;
    struct stack2 ra, rb;
    const struct at_stack *a = start(&ra, 0), *b = stack_at(&rb, 0x333, 0x444, 0);
    put_call(1, AT_MALLOC, 0, 10, 0xa, 0, a);
    put_call(2, AT_CALLOC, 0, 20, 0xb, 0, b);
    put_call(3, AT_FREE, 1, 0, 0xa, 0, NULL);
    put_call(4, AT_MALLOC, 0, 30, 0xc, 0, a);
    put_call(5, AT_FREE, 1, 0, 0xb, 0, NULL);
    format();
    assert_string_equal(got, "1. malloc(10) = 0xa\n"
                             "4. malloc(30) = 0xc\n"
                             "# allocation summary: 2 block(s) with total size 40\n"
                             "\t0x111\n\t0x222\n\n"
                             "2. calloc(20) = 0xb\n"
                             "# allocation summary: 1 block(s) with total size 20\n"
                             "\t0x333\n\t0x444\n\n"
                             "3. free(0xa)\n"
                             "5. free(0xb)\n"
                             "# allocation summary: 2 block(s) with total size 0\n\n"
                             "# chunk end: 5\n");
    assert_int_equal(pieces, 1);
}

/* A map line (or any text entry) closes every open group: it must come
 * after the calls made before it and before those made after it. */
static void a_text_entry_closes_the_groups_before_it(void **state)
{
    (void)state;
    struct stack2 ra;
    const struct at_stack *a = start(&ra, 0);
    put_call(1, AT_MALLOC, 0, 10, 0xa, 0, a);
    put_text(": /lib/x.so => 0x1000-0x2000\n## build-id: /lib/x.so => 00ff\n");
    put_call(2, AT_MALLOC, 0, 20, 0xb, 0, a);
    format();
    assert_string_equal(got, "1. malloc(10) = 0xa\n"
                             "# allocation summary: 1 block(s) with total size 10\n"
                             "\t0x111\n\t0x222\n\n"
                             ": /lib/x.so => 0x1000-0x2000\n"
                             "## build-id: /lib/x.so => 00ff\n"
                             "2. malloc(20) = 0xb\n"
                             "# allocation summary: 1 block(s) with total size 20\n"
                             "\t0x111\n\t0x222\n\n"
                             "# chunk end: 2\n");
}

/* The alignment is the interned site's; contexts are the call's own. */
static void alignment_and_contexts_are_on_each_call(void **state)
{
    (void)state;
    struct stack2 ra;
    const struct at_stack *a = start(&ra, 64);
    put_call(7, AT_POSIX_MEMALIGN, 0, 128, 0x40, 0x3, a);
    put_call(8, AT_POSIX_MEMALIGN, 0, 256, 0x80, 0, a);
    put_call(9, AT_FREE, 1, 0, 0x40, 0x2, NULL);
    format();
    assert_string_equal(got, "7. @3 posix_memalign(128) = 0x40\n"
                             "\t$alignment = 64\n"
                             "8. posix_memalign(256) = 0x80\n"
                             "\t$alignment = 64\n"
                             "# allocation summary: 2 block(s) with total size 384\n"
                             "\t0x111\n\t0x222\n\n"
                             "9. @2 free(0x40)\n"
                             "# allocation summary: 1 block(s) with total size 0\n\n"
                             "# chunk end: 9\n");
}

/* 2000 calls of one site: several groups of at most ~3 KiB each (a cut
 * on a full disk finds a boundary in the last 4 KiB), every call once,
 * in index order within the site. */
static void a_long_group_is_split_under_4_kib(void **state)
{
    (void)state;
    struct stack2 ra;
    const struct at_stack *a = start(&ra, 0);
    for (uint64_t i = 1; i <= 2000; i++)
        put_call(i, AT_MALLOC, 0, i, 0x1000 + i, 0, a);
    format();
    size_t groups = 0, start = 0;
    uint64_t next = 1;
    for (size_t i = 0; i < got_len; i++) {
        if (got[i] != '\n')
            continue;
        if (i > 0 && got[i - 1] == '\n') {
            assert_true(i + 1 - start <= 4096);
            groups++;
            start = i + 1;
        } else {
            size_t line = i;
            while (line > 0 && got[line - 1] != '\n')
                line--;
            if (got[line] >= '0' && got[line] <= '9')
                assert_int_equal(strtoull(got + line, NULL, 10), next++);
        }
    }
    assert_int_equal(next, 2001);
    assert_true(groups > 10);
    assert_string_equal(got + start, "# chunk end: 2000\n");   /* whole groups, then the mark */
}

/* A chunk's text longer than a piece goes out in several, each under
 * AT_TEXT_PIECE and ending between units. */
static void a_chunk_of_many_sites_goes_out_in_pieces(void **state)
{
    (void)state;
    reset();
    enum { N = 20000 };
    struct stack2 *st = calloc(N, sizeof *st);
    for (uint64_t i = 0; i < N; i++)
        put_call(i + 1, AT_MALLOC, 0, 100, 0x10000 + i, 0,
                 stack_at(&st[i], 0x1000 + i, 0x2000 + i, 0));
    format();
    assert_true(pieces > 1);
    assert_true(longest_piece <= AT_TEXT_PIECE);
    size_t calls = 0;
    for (size_t i = 0; i < got_len; i++)
        calls += (i == 0 || got[i - 1] == '\n') && got[i] >= '0' && got[i] <= '9';
    assert_int_equal(calls, N);
    free(st);
}

/* TSC stamps: 2 ticks a nanosecond from a start-up pair at 10:00:00 UTC,
 * in a zone an hour east; a stamp before the pair is earlier. */
static void tsc_stamps_become_local_times_at_the_measured_rate(void **state)
{
    (void)state;
    struct stack2 ra;
    const struct at_stack *a = start(&ra, 0);
    at_cfg.timestamps = 1;
    uint64_t t0 = 1000000000;
    put_call_at(1, AT_MALLOC, 0, 8, 0xa, 0, a, t0 - 2000);       /* 1 us before */
    put_call_at(2, AT_MALLOC, 0, 8, 0xb, 0, a, t0 + 3000000);    /* 1.5 ms after */
    struct at_stamp_conv conv = {
        .tsc = 1, .tsc0 = t0, .ns0 = 10ull * 3600 * 1000000000, .rate_q32 = 1ull << 31,
        .gmtoff_us = 3600ll * 1000000,
    };
    format_with(&conv);
    at_cfg.timestamps = 0;
    assert_string_equal(got, "1. [10:59:59.999999] malloc(8) = 0xa\n"
                             "2. [11:00:00.001500] malloc(8) = 0xb\n"
                             "# allocation summary: 2 block(s) with total size 16\n"
                             "\t0x111\n\t0x222\n\n"
                             "# chunk end: 2\n");
}

/* One formatter keeps the text of the last second between calls and
 * chunks: a call in the same second, in the next, and in a later chunk
 * back in the second before (a chunk's better rate may step the time
 * back) each get their own hours, minutes and seconds. */
static void a_formatter_s_kept_second_follows_the_times_both_ways(void **state)
{
    (void)state;
    struct stack2 ra;
    const struct at_stack *a = start(&ra, 0);
    at_cfg.timestamps = 1;
    uint64_t s = 86400ull * 1000000 * 3 + 23ull * 3600 * 1000000 + 59ull * 60 * 1000000;
    put_call_at(1, AT_MALLOC, 0, 8, 0xa, 0, a, s + 58999999);   /* 23:59:58.999999 */
    put_call_at(2, AT_MALLOC, 0, 8, 0xb, 0, a, s + 58000001);   /* same second */
    put_call_at(3, AT_MALLOC, 0, 8, 0xc, 0, a, s + 59000000);   /* the next */
    put_call_at(4, AT_MALLOC, 0, 8, 0xd, 0, a, s + 60000000);   /* midnight */
    struct at_stamp_conv as_is = { .tsc = 0 };
    struct at_chunk *k = at_chunk_new();
    assert_non_null(k);
    at_chunk_text(k, stream, stream_len, collect, &as_is);
    stream_len = 0;
    put_call_at(5, AT_FREE, 1, 0, 0xd, 0, NULL, s + 58500000);  /* back: 23:59:58 */
    at_chunk_text(k, stream, stream_len, collect, &as_is);
    at_cfg.timestamps = 0;
    assert_string_equal(got, "1. [23:59:58.999999] malloc(8) = 0xa\n"
                             "2. [23:59:58.000001] malloc(8) = 0xb\n"
                             "3. [23:59:59.000000] malloc(8) = 0xc\n"
                             "4. [00:00:00.000000] malloc(8) = 0xd\n"
                             "# allocation summary: 4 block(s) with total size 32\n"
                             "\t0x111\n\t0x222\n\n"
                             "# chunk end: 4\n"
                             "5. [23:59:58.500000] free(0xd)\n"
                             "# allocation summary: 1 block(s) with total size 0\n\n"
                             "# chunk end: 5\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(calls_of_one_backtrace_come_together_in_order_of_their_first),
        cmocka_unit_test(a_text_entry_closes_the_groups_before_it),
        cmocka_unit_test(alignment_and_contexts_are_on_each_call),
        cmocka_unit_test(a_long_group_is_split_under_4_kib),
        cmocka_unit_test(a_chunk_of_many_sites_goes_out_in_pieces),
        cmocka_unit_test(tsc_stamps_become_local_times_at_the_measured_rate),
        cmocka_unit_test(a_formatter_s_kept_second_follows_the_times_both_ways),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
