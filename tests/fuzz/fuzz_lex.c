/*
 * tests/fuzz/fuzz_lex.c: libFuzzer target for a call line's lexing
 * (postproc/read/lex.h). Each line of the input is lexed from a heap copy
 * of exactly its length (ASan: no read past it) the fast way, the general
 * way and through at_lex_call: the fast way may leave a line to the
 * general way but never take one the general way refuses nor give other
 * fields, and at_lex_call answers as the general way does. Any difference
 * aborts; so do crashes and sanitizer reports.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
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
    return 0;
}
