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

/* Lexes the call line line[0..len) (no line end); false if malformed.
 * The general way: every form the format allows, a byte at a time; the
 * reference the fast way (below) must agree with. */
static inline bool at_lex_call_general(const char *line, size_t len, at_lexed_call *c)
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

/* ---- the tracer's own form, a word at a time ---------------------------
 * Nearly every call line is "INDEX. [HH:MM:SS.ffffff] NAME(SIZE) = 0xID"
 * or "INDEX. NAME(0xID)" (the time only on some lines). Read a byte at a
 * time, with a reverse search for ") = 0x", that was a fifth of the
 * post-processor's samples on a 2M-call trace. Here the line is read
 * forward and its numbers 8 bytes at a time (SWAR: a digit's test and
 * value for all 8 bytes of a word with a few integer operations, no
 * branch a byte). It takes only lines of exactly that form whose fields
 * fit (index and size under 8 digits, ID at most 16 hex digits, no
 * context), and for each it must give what the general way gives: it
 * reads a line forward from the name's first '(', so it takes a line only
 * when what follows that '(' holds no other '(' and no other ") = 0x",
 * where the general way's reverse search would stop at the same places.
 * Anything else goes the general way, which decides. It never reads
 * outside line[0..len). */

#define AT_LEX_ONES 0x0101010101010101ull
#define AT_LEX_HIGH 0x8080808080808080ull
#define AT_LEX_ZEROS 0x3030303030303030ull /* "00000000" */

static inline uint64_t lex_load8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w; /* little-endian: the first byte is the lowest */
}

/* 0x80 in each byte of w that is at least c (c <= 0x80): a byte with its
 * top bit set cannot borrow from the next one. */
static inline uint64_t lex_ge(uint64_t w, unsigned c)
{
    return ((w | AT_LEX_HIGH) - c * AT_LEX_ONES) & AT_LEX_HIGH;
}

/* 0x80 in each byte of w that is '0'..'9'. */
static inline uint64_t lex_digit_bytes(uint64_t w)
{
    return lex_ge(w, '0') & ~lex_ge(w, '9' + 1) & ~w & AT_LEX_HIGH;
}

/* How many of w's first bytes are digits (8: all). */
static inline unsigned lex_digit_run(uint64_t w)
{
    uint64_t not_digit = ~lex_digit_bytes(w) & AT_LEX_HIGH;
    return not_digit ? (unsigned)__builtin_ctzll(not_digit) / 8 : 8;
}

/* The value of 8 decimal digits (w & 0x0f.. of them, the first byte the
 * most significant): pairs, then fours, then the eight. */
static inline uint64_t lex_dec8_value(uint64_t d)
{
    d = d * 10 + (d >> 8); /* bytes 0, 2, 4, 6: two digits each */
    return (((d & 0x000000ff000000ffull) * (100 + (1000000ull << 32))) +
            (((d >> 16) & 0x000000ff000000ffull) * (1 + (10000ull << 32)))) >>
           32;
}

/* The value of w's first k digits (1 <= k <= 8). */
static inline uint64_t lex_dec_first(uint64_t w, unsigned k)
{
    return lex_dec8_value((w & 0x0f0f0f0f0f0f0f0full) << (8 * (8 - k)));
}

/* w with its first 8 - k bytes made '0' (k of 1..8 kept). */
static inline uint64_t lex_keep_last(uint64_t w, size_t k)
{
    if (k >= 8)
        return w;
    uint64_t keep = ~0ull << (8 * (8 - k));
    return (w & keep) | (AT_LEX_ZEROS & ~keep);
}

/* 8 hex digits (either case, the first byte the most significant); false
 * if a byte is no hex digit. */
static inline bool lex_hex8(uint64_t w, uint64_t *out)
{
    uint64_t lower = w | 0x2020202020202020ull;
    uint64_t letter = lex_ge(lower, 'a') & ~lex_ge(lower, 'f' + 1) & ~w & AT_LEX_HIGH;
    if ((lex_digit_bytes(w) | letter) != AT_LEX_HIGH)
        return false;
    uint64_t v = __builtin_bswap64((w & 0x0f0f0f0f0f0f0f0full) + (letter >> 7) * 9);
    v = (v | (v >> 4)) & 0x00ff00ff00ff00ffull;
    v = (v | (v >> 8)) & 0x0000ffff0000ffffull;
    *out = (v | (v >> 16)) & 0xffffffffull;
    return true;
}

/* The n (1..16) hex digits that end at e; the 16 bytes before e must be
 * readable (lex_call_fast checks). */
#ifdef __SSE2__
static inline bool lex_hex_before(const char *e, size_t n, uint64_t *out)
{
    /* the 16 bytes before e, those before the digits made '0' */
    static const char keep[32] = { [16] = -1, -1, -1, -1, -1, -1, -1, -1,
                                   -1, -1, -1, -1, -1, -1, -1, -1 };
    const __m128i zeros = _mm_set1_epi8('0');
    __m128i m = _mm_loadu_si128((const __m128i *)(keep + n));
    __m128i v = _mm_loadu_si128((const __m128i *)(e - 16));
    v = _mm_or_si128(_mm_and_si128(m, v), _mm_andnot_si128(m, zeros));
    /* signed compares: a byte from 0x80 up is below '0' */
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                  _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
    __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)),
                                   _mm_cmplt_epi8(lower, _mm_set1_epi8('f' + 1)));
    if (_mm_movemask_epi8(_mm_or_si128(digit, letter)) != 0xffff)
        return false;
    __m128i nib = _mm_add_epi8(_mm_and_si128(v, _mm_set1_epi8(0x0f)),
                               _mm_and_si128(letter, _mm_set1_epi8(9)));
    /* each 16-bit lane: its first digit times 16 plus its second */
    __m128i pair = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(nib, _mm_set1_epi16(0x00ff)), 4),
                                _mm_srli_epi16(nib, 8));
    uint64_t be = (uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(pair, pair));
    *out = __builtin_bswap64(be); /* the first pair is the most significant */
    return true;
}
#else
static inline bool lex_hex_before(const char *e, size_t n, uint64_t *out)
{
    uint64_t lo, hi = 0;
    if (!lex_hex8(lex_keep_last(lex_load8(e - 8), n), &lo))
        return false;
    if (n > 8 && !lex_hex8(lex_keep_last(lex_load8(e - 16), n - 8), &hi))
        return false;
    *out = hi << 32 | lo;
    return true;
}
#endif

/* A frame line of the form "\t0x" HEX "\n" alone at q (the tracer's
 * unresolved frames), all of it between lo and end: the number of hex
 * digits, the address in *addr; 0 for a line of any other form. What
 * at_lex_hex reads up to the line end, 16 digits at once where the 16
 * bytes before the line end and after the "0x" lie between lo and end
 * (a new frame list of a compiler's trace is 40-120 such lines; a table
 * lookup a digit was most of reading them). */
static inline size_t at_lex_plain_frame(const char *lo, const char *q, const char *end,
                                        uint64_t *addr)
{
    if (end - q < 4 || q[0] != '\t' || q[1] != '0' || q[2] != 'x')
        return 0;
    const char *h = q + 3;
#ifdef __SSE2__
    if (end - h >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)h);
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')));
        size_t n = m ? (size_t)__builtin_ctz(m) : 0;
        if (n && h + n - 16 >= lo)
            return lex_hex_before(h + n, n, addr) ? n : 0;
    }
#endif
    size_t n = at_lex_hex(h, end, addr);
    return n && h + n < end && h[n] == '\n' ? n : 0;
}

/* "[HH:MM:SS.ffffff] " at p (end - p >= 18), as lex_fixed_time reads it. */
static inline bool lex_time_words(const char *p, uint64_t *us)
{
    const uint64_t colons = 0x0000ff0000ff0000ull, want = 0x00003a00003a0000ull;
    uint64_t hms = lex_load8(p + 1), frac = lex_load8(p + 9);
    if ((hms & colons) != want || (frac & 0xff000000000000ffull) != 0x5d0000000000002eull ||
        p[17] != ' ')
        return false;
    hms = (hms & ~colons) | (AT_LEX_ZEROS & colons);
    frac = ((frac >> 8) << 16) | 0x3030; /* "00ffffff" */
    if ((lex_digit_bytes(hms) & lex_digit_bytes(frac)) != AT_LEX_HIGH)
        return false;
    uint64_t d = hms & 0x0f0f0f0f0f0f0f0full;
    d = d * 10 + (d >> 8); /* bytes 0, 3, 6: hours, minutes, seconds */
    uint64_t h = d & 0xff, m = (d >> 24) & 0xff, s = (d >> 48) & 0xff;
    if (m > 59 || s > 60)
        return false;
    *us = ((h * 60 + m) * 60 + s) * 1000000 + lex_dec8_value(frac & 0x0f0f0f0f0f0f0f0full);
    return true;
}

/* The first '(' at or after p, or NULL if a NUL or the end comes first. */
static inline const char *lex_open_paren(const char *p, const char *end)
{
#ifdef __SSE2__
    const __m128i open = _mm_set1_epi8('('), zero = _mm_setzero_si128();
    for (; end - p >= 16; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(v, open), _mm_cmpeq_epi8(v, zero)));
        if (m) {
            p += __builtin_ctz(m);
            return *p == '(' ? p : NULL;
        }
    }
#endif
    for (; p < end; p++)
        if (*p == '(' || *p == '\0')
            return *p == '(' ? p : NULL;
    return NULL;
}

/* The tracer's form only; false: not that form (or not read here), for the
 * general way to decide. */
static inline bool lex_call_fast(const char *line, size_t len, at_lexed_call *c)
{
    const char *end = line + len;
    if (len < 16)
        return false;
    unsigned k = lex_digit_run(lex_load8(line));
    if (k == 0 || k == 8 || line[k] != '.' || line[k + 1] != ' ')
        return false;
    uint64_t index = lex_dec_first(lex_load8(line), k), time_us = 0, size = 0, id;
    const char *p = line + k + 2;
    if (*p == '@')
        return false; /* a context */
    bool has_time = *p == '[';
    if (has_time) {
        if (end - p < 18 || !lex_time_words(p, &time_us))
            return false;
        p += 18;
    }
    const char *lp = lex_open_paren(p, end);
    if (!lp || lp == p || end - lp < 4)
        return false;
    bool is_alloc = end[-1] != ')';
    const char *hex;
    if (is_alloc) {
        /* (SIZE) = 0xID */
        if (end - (lp + 1) < 8)
            return false;
        uint64_t w = lex_load8(lp + 1);
        unsigned n = lex_digit_run(w);
        /* ") = 0x" and at least two more bytes: one word compared */
        if (n == 0 || n == 8 || end - (lp + 1 + n) < 8 ||
            (lex_load8(lp + 1 + n) & 0xffffffffffffull) != 0x7830203d2029ull)
            return false;
        size = lex_dec_first(w, n);
        hex = lp + 1 + n + 6;
        if (end - hex > 16 || len < 16 || !lex_hex_before(end, (size_t)(end - hex), &id))
            return false;
    } else {
        /* (0xID) */
        if (lp[1] != '0' || lp[2] != 'x')
            return false;
        hex = lp + 3;
        if (end - 1 - hex < 1 || end - 1 - hex > 16 || len < 17 ||
            !lex_hex_before(end - 1, (size_t)(end - 1 - hex), &id))
            return false;
    }
    *c = (at_lexed_call){ .index = index, .time_us = time_us, .size = size, .id = id,
                          .name_off = (size_t)(p - line), .name_len = (size_t)(lp - p),
                          .has_time = has_time, .is_alloc = is_alloc };
    return true;
}

/* Lexes the call line line[0..len) (no line end); false if malformed. */
static inline bool at_lex_call(const char *line, size_t len, at_lexed_call *c)
{
    return lex_call_fast(line, len, c) || at_lex_call_general(line, len, c);
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
