/*
 * tests/fuzz/fuzz_lex.c: libFuzzer target for a call line's lexing
 * (postproc/read/lex.h). Each line of the input is lexed from a heap copy
 * of exactly its length (ASan: no read past it) the fast way, the general
 * way and through at_lex_call: the fast way may leave a line to the
 * general way but never take one the general way refuses nor give other
 * fields, and at_lex_call answers as the general way does. The whole
 * input, from a heap copy of exactly its size, is also read as frame lines
 * from every offset (at_lex_plain_frame against at_lex_hex up to the line
 * end), with every lower bound from the start to that offset. Any
 * difference aborts; so do crashes and sanitizer reports.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const at_lexed_call *a, const at_lexed_call *b)
{
    return a->index == b->index && a->time_us == b->time_us && a->size == b->size &&
           a->id == b->id && a->context == b->context && a->name_off == b->name_off &&
           a->name_len == b->name_len && a->has_time == b->has_time && a->is_alloc == b->is_alloc;
}

static void one(const char *s, size_t n)
{
    char *line = malloc(n ? n : 1);
    memcpy(line, s, n);
    at_lexed_call f, g, b;
    bool fok = lex_call_fast(line, n, &f);
    bool gok = at_lex_call_general(line, n, &g);
    bool bok = at_lex_call(line, n, &b);
    if (bok != gok || (fok && (!gok || !same(&f, &g))) || (bok && !same(&b, &g)))
        abort();
    free(line);
}

/* at_lex_plain_frame at q, its lower bound lo, against the scalar way. */
static void plain_frame(const char *lo, const char *q, const char *end)
{
    uint64_t a = 0, b = 0;
    size_t n = at_lex_plain_frame(lo, q, end, &a), m = 0;
    if (end - q >= 4 && q[0] == '\t' && q[1] == '0' && q[2] == 'x') {
        m = at_lex_hex(q + 3, end, &b);
        if (!(m && q + 3 + m < end && q[3 + m] == '\n'))
            m = 0;
    }
    if (n != m || (n && a != b))
        abort();
}

static void plain_frames(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    for (size_t i = 0; i < size && i < 64; i++)
        for (size_t lo = 0; lo <= i; lo += 1 + (i - lo) / 8)
            plain_frame(buf + lo, buf + i, buf + size);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    plain_frames(data, size);
    {
    const char *p = (const char *)data, *end = p + size;
    while (p <= end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        one(p, n);
        if (!nl)
            break;
        p = nl + 1;
    }
    }
    return 0;
}
