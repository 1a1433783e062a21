/*
 * postproc/read/lex.h: the text format's pieces that need no reader state
 * (numbers, a call line's fields, a frame list's end and hash), shared by
 * the reader (reader.c) and the scanner that reads ahead of it on the
 * decompression thread (scan.c). Both must get the same answer from the
 * same bytes, so there is one copy, inline (they are the inner loops of
 * reading a trace).
 */
#ifndef AT_LEX_H
#define AT_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h> /* SSE2: part of x86-64 itself */
#endif

/* Hex digit value + 1, 0 for anything else: one load a digit. */
static const uint8_t at_lex_hex_digit[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
    ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* Hex digits at s (no prefix) up to end; returns the count (0: none, or
 * more than 16 significant digits). */
static inline size_t at_lex_hex(const char *s, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    size_t n = 0, max = (size_t)(end - s);
    unsigned h;
    while (n < max && (h = at_lex_hex_digit[(unsigned char)s[n]]) != 0) {
        if (v >> 60)
            return 0;
        v = (v << 4) | (uint64_t)(h - 1);
        n++;
    }
    *out = v;
    return n;
}

/* Decimal digits; 0 when the value overflows. The first 19 digits cannot
 * overflow, so only later ones pay the check (a division a digit was
 * a fifth of parsing a call). */
static inline size_t at_lex_dec(const char *s, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    size_t n = 0, max = (size_t)(end - s), fast = max < 19 ? max : 19;
    for (; n < fast && (unsigned)(s[n] - '0') < 10; n++)
        v = v * 10 + (uint64_t)(s[n] - '0');
    for (; n < max && s[n] >= '0' && s[n] <= '9'; n++) {
        uint64_t d = (uint64_t)(s[n] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *out = v;
    return n;
}

static inline bool at_lex_prefix(const char *s, size_t len, const char *p)
{
    size_t n = strlen(p);
    return len >= n && memcmp(s, p, n) == 0;
}

static inline const char *at_lex_last(const char *s, size_t len, const char *needle, size_t n)
{
    if (len < n)
        return NULL;
    for (size_t i = len - n + 1; i-- > 0;)
        if (s[i] == needle[0] && memcmp(s + i, needle, n) == 0)
            return s + i;
    return NULL;
}

/* "[HH:MM:SS.ffffff] ", the form the tracer writes, read at fixed places:
 * five at_lex_dec calls a call line were a fifth of parsing it. Anything
 * else (unpadded fields, 3 fraction digits) goes the general way, which
 * gives the same value for this form. */
static inline bool lex_fixed_time(const char *p, const char *end, uint64_t *us)
{
    static const unsigned char at[12] = { 1, 2, 4, 5, 7, 8, 10, 11, 12, 13, 14, 15 };
    if (end - p < 18 || p[3] != ':' || p[6] != ':' || p[9] != '.' || p[16] != ']' ||
        p[17] != ' ')
        return false;
    uint64_t d[12];
    for (int i = 0; i < 12; i++) {
        d[i] = (uint64_t)(unsigned char)(p[at[i]] - '0');
        if (d[i] > 9)
            return false;
    }
    uint64_t h = d[0] * 10 + d[1], m = d[2] * 10 + d[3], sec = d[4] * 10 + d[5];
    if (m > 59 || sec > 60)
        return false;
    uint64_t frac = 0;
    for (int i = 6; i < 12; i++)
        frac = frac * 10 + d[i];
    *us = ((h * 60 + m) * 60 + sec) * 1000000 + frac;
    return true;
}

/* A call line's fields, without what depends on the trace read so far
 * (the resource of a NAME<TYPE>, the interned name): the name's bytes are
 * line[name_off, name_off + name_len), <TYPE> included. */
typedef struct at_lexed_call {
    uint64_t index, time_us, size, id;
    uint32_t context;
    size_t name_off, name_len;
    bool has_time, is_alloc;
} at_lexed_call;

/* Lexes the call line line[0..len) (no line end); false if malformed. */
static inline bool at_lex_call(const char *line, size_t len, at_lexed_call *c)
{
    const char *p = line, *end = line + len;
    static const at_lexed_call none;
    *c = none; /* a copy, not memset: gcc made that a rep stos, a sixth of parsing a call */
    size_t n = at_lex_dec(p, end, &c->index);
    if (!n || !at_lex_prefix(p + n, (size_t)(end - p - n), ". "))
        return false;
    p += n + 2;
    if (p < end && *p == '@') {
        uint64_t ctx;
        n = at_lex_hex(p + 1, end, &ctx);
        if (!n || ctx > 0xffffffffu || p + 1 + n >= end || p[1 + n] != ' ')
            return false;
        c->context = (uint32_t)ctx;
        p += n + 2;
    }
    if (p < end && *p == '[' && lex_fixed_time(p, end, &c->time_us)) {
        c->has_time = true;
        p += 18;
    } else if (p < end && *p == '[') {
        uint64_t f[3], frac;
        const char *q = p + 1;
        for (int i = 0; i < 3; i++) {
            n = at_lex_dec(q, end, &f[i]);
            if (!n || n > 2 || q + n >= end || q[n] != (i < 2 ? ':' : '.'))
                return false;
            q += n + 1;
        }
        n = at_lex_dec(q, end, &frac);
        if ((n != 3 && n != 6) || q + n + 1 >= end || q[n] != ']' || q[n + 1] != ' ')
            return false;
        if (f[1] > 59 || f[2] > 60 || f[0] > 99)
            return false;
        if (n == 3)
            frac *= 1000;
        c->has_time = true;
        c->time_us = ((f[0] * 60 + f[1]) * 60 + f[2]) * 1000000 + frac;
        p = q + n + 2;
    }
    const char *name_end;
    if (end > p && end[-1] == ')') {
        /* release: NAME(0xID) */
        const char *lp = at_lex_last(p, (size_t)(end - p), "(", 1);
        if (!lp || !at_lex_prefix(lp + 1, (size_t)(end - lp - 1), "0x"))
            return false;
        n = at_lex_hex(lp + 3, end - 1, &c->id);
        if (!n || lp + 3 + n != end - 1)
            return false;
        c->is_alloc = false;
        name_end = lp;
    } else {
        /* allocation: NAME(SIZE) = 0xID */
        const char *eq = at_lex_last(p, (size_t)(end - p), ") = 0x", 6);
        if (!eq)
            return false;
        n = at_lex_hex(eq + 6, end, &c->id);
        if (!n || eq + 6 + n != end)
            return false;
        const char *lp = at_lex_last(p, (size_t)(eq - p), "(", 1);
        if (!lp)
            return false;
        n = at_lex_dec(lp + 1, eq, &c->size);
        if (!n || lp + 1 + n != eq)
            return false;
        c->is_alloc = true;
        name_end = lp;
    }
    if (name_end == p || memchr(p, '\0', (size_t)(name_end - p)))
        return false;
    c->name_off = (size_t)(p - line);
    c->name_len = (size_t)(name_end - p);
    return true;
}

/* Two independent lanes, 16 bytes a step: one lane's multiply chain was
 * the hash's whole cost on deep stacks (1-2 KB lists), a step waiting on
 * the step before. */
static inline uint64_t at_lex_list_hash(const char *p, size_t len)
{
    uint64_t a = 0x9e3779b97f4a7c15ull ^ len, b = 0x6a09e667f3bcc909ull;
    size_t i = 0;
    for (; i + 16 <= len; i += 16) {
        uint64_t w, v;
        memcpy(&w, p + i, 8);
        memcpy(&v, p + i + 8, 8);
        a = (a ^ w) * 0xff51afd7ed558ccdull;
        b = (b ^ v) * 0xc4ceb9fe1a85ec53ull;
        a ^= a >> 29;
        b ^= b >> 31;
    }
    uint64_t w = 0, v = 0;
    size_t rest = len - i;
    memcpy(&w, p + i, rest < 8 ? rest : 8);
    if (rest > 8)
        memcpy(&v, p + i + 8, rest - 8);
    uint64_t h = (a ^ w ^ (b * 0x9e3779b97f4a7c15ull) ^ (v << 1)) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 32);
}

/* The blank line that ends the frame list starting at p: *stop is set to
 * the line end before it, and the end of the blank line is returned (NULL
 * when it is not in the buffer yet). Both "\n\n" and "\r\n\r\n" end a
 * list; looking for "\n\n" alone would miss every CRLF list and scan to
 * the end of the buffer for each record. A list is 40-120 lines of ~20
 * bytes on a compiler's trace: a memchr a line was 6% of the run, so
 * (SSE2, part of x86-64) 16 bytes are tested at once for a line end
 * followed by another or by a CR, and only those candidates are checked. */
static inline const char *lex_blank_at(const char *nl, const char *end, const char **stop)
{
    if (nl + 1 >= end)
        return NULL;
    if (nl[1] == '\n') {
        *stop = nl;
        return nl + 2;
    }
    if (nl[1] == '\r' && nl + 2 < end && nl[2] == '\n') {
        *stop = nl;
        return nl + 3;
    }
    return NULL;
}

static inline const char *at_lex_blank_line(const char *p, const char *end, const char **stop)
{
    const char *nl = p;
#ifdef __SSE2__
    const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
    for (; end - nl >= 18; nl += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)nl);
        __m128i b = _mm_loadu_si128((const __m128i *)(nl + 1));
        __m128i hit = _mm_and_si128(_mm_cmpeq_epi8(a, lf),
                                    _mm_or_si128(_mm_cmpeq_epi8(b, lf), _mm_cmpeq_epi8(b, cr)));
        for (unsigned m = (unsigned)_mm_movemask_epi8(hit); m; m &= m - 1) {
            const char *r = lex_blank_at(nl + __builtin_ctz(m), end, stop);
            if (r)
                return r;
        }
    }
#endif
    for (;; nl++) {
        nl = memchr(nl, '\n', (size_t)(end - nl));
        if (!nl || nl + 1 >= end)
            return NULL;
        const char *r = lex_blank_at(nl, end, stop);
        if (r)
            return r;
        if (nl[1] == '\r' && nl + 2 >= end)
            return NULL;
    }
}

#endif
