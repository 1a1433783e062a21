/* tests/unit/test_lex.c: a call line's fields (postproc/read/lex.h). The
 * tracer's own form is read a word at a time (lex_call_fast); every other
 * form, and every line that way does not take, is read the general way
 * (at_lex_call_general). Each test checks the exact fields, and that the
 * fast way either gives what the general way gives or leaves the line to
 * it. Every line is lexed from a heap copy of exactly its length, so that
 * ASan reports a read past the line's end. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"

typedef enum { GENERAL, FAST } way;

static bool same_fields(const at_lexed_call *a, const at_lexed_call *b)
{
    return a->index == b->index && a->time_us == b->time_us && a->size == b->size &&
           a->id == b->id && a->context == b->context && a->name_off == b->name_off &&
           a->name_len == b->name_len && a->has_time == b->has_time && a->is_alloc == b->is_alloc;
}

/* Lexes s (n bytes) all three ways from an exact copy; the fast way, if it
 * takes the line, must agree with the general way. Returns at_lex_call's
 * answer; *taken_fast tells which way read it. */
static bool lex_n(const char *s, size_t n, at_lexed_call *out, bool *taken_fast)
{
    char *line = malloc(n ? n : 1);
    memcpy(line, s, n);
    at_lexed_call fast, general, both;
    bool f = lex_call_fast(line, n, &fast);
    bool g = at_lex_call_general(line, n, &general);
    bool b = at_lex_call(line, n, &both);
    free(line);
    if (b != g || (f && (!g || !same_fields(&fast, &general))) || (b && !same_fields(&both, &general)))
        fail_msg("the ways disagree on \"%.*s\" (%zu bytes): fast %d, general %d", (int)n, s, n,
                 f, g);
    if (taken_fast)
        *taken_fast = f;
    *out = general;
    return b;
}

static bool lex(const char *s, at_lexed_call *out, way *w)
{
    bool f;
    bool ok = lex_n(s, strlen(s), out, &f);
    if (w)
        *w = f ? FAST : GENERAL;
    return ok;
}

static void name_is(const char *line, const at_lexed_call *c, const char *name)
{
    assert_int_equal(c->name_len, strlen(name));
    assert_memory_equal(line + c->name_off, name, c->name_len);
}

static void tracer_allocation_with_time_read_fast(void **state)
{
    (void)state;
    const char *s = "2002380. [05:17:16.776181] calloc(3768) = 0x558dcdfd2be0";
    at_lexed_call c;
    way w;
    assert_true(lex(s, &c, &w));
    assert_int_equal(w, FAST);
    assert_int_equal(c.index, 2002380);
    assert_true(c.has_time);
    assert_int_equal(c.time_us, ((5ull * 60 + 17) * 60 + 16) * 1000000 + 776181);
    assert_true(c.is_alloc);
    assert_int_equal(c.size, 3768);
    assert_int_equal(c.id, 0x558dcdfd2be0ull);
    assert_int_equal(c.context, 0);
    name_is(s, &c, "calloc");
}

static void tracer_release_without_time_read_fast(void **state)
{
    (void)state;
    const char *s = "7. free(0x7f710d4b924a)";
    at_lexed_call c;
    way w;
    assert_true(lex(s, &c, &w));
    assert_int_equal(w, FAST);
    assert_int_equal(c.index, 7);
    assert_false(c.has_time);
    assert_int_equal(c.time_us, 0);
    assert_false(c.is_alloc);
    assert_int_equal(c.size, 0);
    assert_int_equal(c.id, 0x7f710d4b924aull);
    name_is(s, &c, "free");
}

static void allocation_without_time_read_fast(void **state)
{
    (void)state;
    const char *s = "1234567. posix_memalign(0) = 0xABCDEF0123456789";
    at_lexed_call c;
    way w;
    assert_true(lex(s, &c, &w));
    assert_int_equal(w, FAST);
    assert_int_equal(c.index, 1234567);
    assert_int_equal(c.size, 0);
    assert_int_equal(c.id, 0xabcdef0123456789ull);
    name_is(s, &c, "posix_memalign");
}

/* Every hex digit in every place of a 16-digit ID, both cases. */
static void every_hex_digit_in_every_place(void **state)
{
    (void)state;
    const char *digits = "0123456789abcdefABCDEF";
    for (int pos = 0; pos < 16; pos++)
        for (const char *d = digits; *d; d++) {
            char id[17] = "1111111111111111";
            id[pos] = *d;
            char s[96];
            snprintf(s, sizeof s, "12. malloc(1) = 0x%s", id);
            at_lexed_call c;
            way w;
            assert_true(lex(s, &c, &w));
            assert_int_equal(w, FAST);
            assert_int_equal(c.id, strtoull(id, NULL, 16));
            snprintf(s, sizeof s, "12. free(0x%s)", id);
            assert_true(lex(s, &c, &w));
            assert_int_equal(w, FAST);
            assert_int_equal(c.id, strtoull(id, NULL, 16));
        }
}

/* IDs, indices and sizes of every length the fast way reads, and the
 * longer ones it leaves to the general way. */
static void every_field_length(void **state)
{
    (void)state;
    for (int n = 1; n <= 19; n++) {
        char num[20];
        for (int i = 0; i < n; i++)
            num[i] = (char)('1' + (i * 7) % 9);
        num[n] = '\0';
        char s[128];
        at_lexed_call c;
        way w;
        snprintf(s, sizeof s, "%s. malloc(5) = 0x10", num);
        assert_true(lex(s, &c, &w));
        assert_int_equal(c.index, strtoull(num, NULL, 10));
        assert_int_equal(w, n < 8 ? FAST : GENERAL);
        snprintf(s, sizeof s, "3. malloc(%s) = 0x10", num);
        assert_true(lex(s, &c, &w));
        assert_int_equal(c.size, strtoull(num, NULL, 10));
        assert_int_equal(w, n < 8 ? FAST : GENERAL);
        if (n <= 16) {
            snprintf(s, sizeof s, "3. malloc(5) = 0x%s", num);
            assert_true(lex(s, &c, &w));
            assert_int_equal(c.id, strtoull(num, NULL, 16));
            assert_int_equal(w, n >= 2 ? FAST : GENERAL); /* ") = 0x" is read with 2 more bytes */
            snprintf(s, sizeof s, "3. free(0x%s)", num);
            assert_true(lex(s, &c, &w));
            assert_int_equal(c.id, strtoull(num, NULL, 16));
            assert_int_equal(w, n >= 6 ? FAST : GENERAL); /* a line of 16 bytes and more */
        }
    }
    /* 20 hex digits with leading zeros: the general way takes them */
    at_lexed_call c;
    way w;
    assert_true(lex("3. malloc(5) = 0x0000123456789abcdef0", &c, &w));
    assert_int_equal(w, GENERAL);
    assert_int_equal(c.id, 0x123456789abcdef0ull);
}

/* Forms only the general way reads: the same fields as always. */
static void other_forms_read_the_general_way(void **state)
{
    (void)state;
    at_lexed_call c;
    way w;
    assert_true(lex("5. @3 [00:00:01.000002] malloc(8) = 0x10", &c, &w));
    assert_int_equal(w, GENERAL);
    assert_int_equal(c.context, 3);
    assert_int_equal(c.time_us, 1000002);

    assert_true(lex("5. [1:2:3.004] malloc(8) = 0x10", &c, &w));
    assert_int_equal(w, GENERAL);
    assert_int_equal(c.time_us, ((1ull * 60 + 2) * 60 + 3) * 1000000 + 4000);

    const char *s = "5. operator new(unsigned long)(24) = 0x10";
    assert_true(lex(s, &c, &w));
    assert_int_equal(w, GENERAL);
    name_is(s, &c, "operator new(unsigned long)");
    assert_int_equal(c.size, 24);

    s = "6. operator delete(void*)(0x10)";
    assert_true(lex(s, &c, &w));
    assert_int_equal(w, GENERAL);
    name_is(s, &c, "operator delete(void*)");

    s = "6. alloc<gpu>(16) = 0x10"; /* a NAME<TYPE>: the reader splits it */
    assert_true(lex(s, &c, &w));
    assert_int_equal(w, FAST);
    name_is(s, &c, "alloc<gpu>");

    assert_true(lex("9. f(1) = 0x2", &c, &w)); /* under 16 bytes */
    assert_int_equal(w, GENERAL);
    assert_int_equal(c.id, 2);
}

/* What the general way refuses stays refused, whichever way looks first. */
static void malformed_lines_refused(void **state)
{
    (void)state;
    static const char *bad[] = {
        "12. malloc(24) = 0x",
        "12. malloc(24) = 0x12g4",
        "12. malloc(24) = 0X1234",
        "12. malloc(24) =  0x1234",
        "12. malloc(24)= 0x1234",
        "12. malloc(2a4) = 0x1234",
        "12. malloc() = 0x12345678",
        "12. (24) = 0x123456789abc",
        "12. free(0x)",
        "12. free(0x12345678abcdefg)",
        "12. free(12345678abcdef)",
        "12. free 0x12345678abcdef)",
        "12 . malloc(24) = 0x123456789",
        "12.malloc(24) = 0x123456789abc",
        "x12. malloc(24) = 0x123456789",
        "12. [05:60:16.776181] malloc(24) = 0x1234",
        "12. [05:17:61.776181] malloc(24) = 0x1234",
        "12. [05:17:16.77618x] malloc(24) = 0x1234",
        "12. [05:17:16.776181]malloc(24) = 0x1234",
        "12. [05-17-16.776181] malloc(24) = 0x1234",
        "12. [05:17:16.776181 malloc(24) = 0x1234",
        "12. malloc(24) = 0x11112222333344445",
        "12. free(0x11112222333344445)",
        "99999999999999999999. malloc(1) = 0x1234",
        "12. malloc(99999999999999999999) = 0x1234",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        at_lexed_call c;
        if (lex(bad[i], &c, NULL))
            fail_msg("taken: %s", bad[i]);
    }
    /* a NUL in the name */
    at_lexed_call c;
    assert_false(lex_n("12. mal\0oc(24) = 0x123456789", 28, &c, NULL));
    assert_false(lex_n("12. fr\0e(0x123456789abc)", 24, &c, NULL));
}

/* Lines of the tracer's form with one byte changed to each of a set of
 * bytes, and cut at every length: the fast way never disagrees with the
 * general way, nor reads past the line (ASan). */
static void mutations_agree(void **state)
{
    (void)state;
    static const char *lines[] = {
        "2002380. [05:17:16.776181] calloc(3768) = 0x558dcdfd2be0",
        "41. free(0x7f710d4b924a)",
        "1. [23:59:60.999999] realloc(1234567) = 0xffffffffffffffff",
        "8. malloc(0) = 0x0000000000000001",
    };
    static const char subst[] = { '0', '9', 'a', 'f', 'A', 'F', 'g', 'G', ':', '.', ']', '[',
                                  '(', ')', ' ', '=', 'x', '\0', '/', '@', (char)0x80,
                                  (char)0xb5, (char)0xff, '\r' };
    for (size_t l = 0; l < sizeof lines / sizeof *lines; l++) {
        size_t n = strlen(lines[l]);
        char buf[128];
        for (size_t cut = 0; cut <= n; cut++) {
            at_lexed_call c;
            lex_n(lines[l], cut, &c, NULL);
        }
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < sizeof subst; k++) {
                memcpy(buf, lines[l], n);
                buf[i] = subst[k];
                at_lexed_call c;
                lex_n(buf, n, &c, NULL);
            }
    }
}

/* A frame line "\t0x" HEX "\n" read 16 digits at once (at_lex_plain_frame)
 * gives what at_lex_hex gives up to the line end: every length of hex, every
 * digit replaced by every other byte, the line cut at every length, the
 * lower bound anywhere before it. */
static size_t scalar_frame(const char *q, const char *end, uint64_t *a)
{
    if (end - q < 4 || q[0] != '\t' || q[1] != '0' || q[2] != 'x')
        return 0;
    size_t n = at_lex_hex(q + 3, end, a);
    return n && q + 3 + n < end && q[3 + n] == '\n' ? n : 0;
}

static void plain_frames_agree_with_the_scalar_way(void **state)
{
    (void)state;
    const char hex[] = "0123456789abcdefABCDEF0123";
    const char others[] = { 'g', 'G', 'x', ' ', '\r', '\t', '\0', '/', ':', '@', '`', (char)0x80,
                            (char)0xff, '\n' };
    for (size_t digits = 0; digits <= 20; digits++) {
        for (size_t bad = 0; bad <= digits; bad++) {
            for (size_t o = 0; o < sizeof others; o++) {
                char text[64];
                size_t pre = 20; /* room before the line, for the lower bound */
                memset(text, '\t', pre);
                memcpy(text + pre, "\t0x", 3);
                memcpy(text + pre + 3, hex, digits);
                text[pre + 3 + digits] = '\n';
                if (bad < digits)
                    text[pre + 3 + bad] = others[o];
                size_t len = pre + 3 + digits + 1;
                for (size_t cut = pre; cut <= len; cut += (cut < len - 2 ? 3 : 1)) {
                    char *heap = malloc(cut);
                    memcpy(heap, text, cut);
                    for (size_t lo = 0; lo <= pre; lo += 5) {
                        uint64_t a = 1, b = 2;
                        size_t n = at_lex_plain_frame(heap + lo, heap + pre, heap + cut, &a);
                        size_t m = scalar_frame(heap + pre, heap + cut, &b);
                        assert_int_equal(n, m);
                        if (n)
                            assert_int_equal(a, b);
                    }
                    free(heap);
                }
                if (bad == digits)
                    break; /* nothing replaced: once is enough */
            }
        }
    }
    uint64_t a;
    const char line[] = "\t0x7f12345678ab\n\n";
    assert_int_equal(at_lex_plain_frame(line, line, line + sizeof line - 1, &a), 12);
    assert_int_equal(a, 0x7f12345678abull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tracer_allocation_with_time_read_fast),
        cmocka_unit_test(tracer_release_without_time_read_fast),
        cmocka_unit_test(allocation_without_time_read_fast),
        cmocka_unit_test(every_hex_digit_in_every_place),
        cmocka_unit_test(every_field_length),
        cmocka_unit_test(other_forms_read_the_general_way),
        cmocka_unit_test(malformed_lines_refused),
        cmocka_unit_test(mutations_agree),
        cmocka_unit_test(plain_frames_agree_with_the_scalar_way),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
