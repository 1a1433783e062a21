/*
 * tests/fuzz/fuzz_scan.c: libFuzzer target for the scanner that lexes
 * ahead of the reader (postproc/read/scan.c). The first two bytes pick
 * where the input is cut into the thread's buffers (up to three pieces,
 * each lexed or only followed); then every hint made must be what the
 * reader's own lexing gives at that offset of the whole input (a hint is
 * a pure function of the bytes from its offset on; the reader trusts it),
 * and sit at a line start; frame lists get the same number exactly when
 * their bytes are equal. Any difference aborts; so do crashes and
 * sanitizer reports.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"
#include "scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *in, size_t len, const at_hint *h)
{
    if (h->off >= len || (h->off && in[h->off - 1] != '\n'))
        abort();
    const char *p = in + h->off, *end = in + len;
    if (h->kind == AT_HINT_CALL) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl || (size_t)(nl - p) != h->len)
            abort();
        size_t l = h->len && p[h->len - 1] == '\r' ? h->len - 1 : h->len;
        at_lexed_call want, got;
        if (!at_lex_call(p, l, &want))
            abort();
        at_scan_call(h, &got);
        if (want.index != got.index || want.time_us != got.time_us || want.size != got.size ||
            want.id != got.id || want.context != got.context || want.name_off != got.name_off ||
            want.name_len != got.name_len || want.has_time != got.has_time ||
            want.is_alloc != got.is_alloc)
            abort();
    } else if (h->kind == AT_HINT_LIST) {
        const char *stop, *next = at_lex_blank_line(p, end, &stop);
        if (!next || (size_t)(next - p) != h->next || (size_t)(stop + 1 - p) != h->len)
            abort();
    } else {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned pick = data[0] | (unsigned)data[1] << 8;
    const char *in = (const char *)data + 2;
    size_t len = size - 2;
    size_t cut1 = len ? (pick & 0xff) % (len + 1) : 0;
    size_t cut2 = cut1 + (len - cut1 ? (pick >> 8) % (len - cut1 + 1) : 0);
    size_t at[4] = { 0, cut1, cut2, len };
    at_scan *s = at_scan_new();
    for (int i = 0; i < 3; i++)
        at_scan_buffer(s, in + at[i], at[i + 1] - at[i], at[i], (pick >> (13 + i)) & 1 || i == 0);
    uint64_t n = atomic_load(&s->written);
    for (uint64_t i = 0; i < n; i++)
        check(in, len, &s->ring[i & (AT_SCAN_RING - 1)]);
    /* lists: the same number exactly for the same bytes */
    for (uint64_t i = 0; i < n && i < 512; i++)
        for (uint64_t j = i + 1; j < n && j < 512; j++) {
            const at_hint *a = &s->ring[i], *b = &s->ring[j];
            if (a->kind != AT_HINT_LIST || b->kind != AT_HINT_LIST)
                continue;
            bool same = a->len == b->len && memcmp(in + a->off, in + b->off, a->len) == 0;
            if (same != (a->size == b->size))
                abort();
        }
    at_scan_free(s);
    return 0;
}
