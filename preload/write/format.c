/*
 * preload/write/format.c: the text the tracer writes - record bodies, the header
 * and the numbers in them - formatted without printf, which is slow and
 * may allocate. Nothing here locks or keeps state; writer.c decides where
 * the text goes.
 */
#include <string.h>
#include <time.h>

#include <emmintrin.h>   /* SSE2: part of x86-64 itself */

#include "tracer.h"

const char *const at_fn_names[] = {
    [AT_MALLOC] = AT_FN_MALLOC, [AT_CALLOC] = AT_FN_CALLOC, [AT_REALLOC] = AT_FN_REALLOC,
    [AT_REALLOCARRAY] = AT_FN_REALLOCARRAY, [AT_FREE] = AT_FN_FREE,
    [AT_POSIX_MEMALIGN] = AT_FN_POSIX_MEMALIGN, [AT_ALIGNED_ALLOC] = AT_FN_ALIGNED_ALLOC,
    [AT_MEMALIGN] = AT_FN_MEMALIGN, [AT_VALLOC] = AT_FN_VALLOC, [AT_PVALLOC] = AT_FN_PVALLOC,
};

static const unsigned char fn_lens[] = {
    [AT_MALLOC] = 6, [AT_CALLOC] = 6, [AT_REALLOC] = 7, [AT_REALLOCARRAY] = 12, [AT_FREE] = 4,
    [AT_POSIX_MEMALIGN] = 14, [AT_ALIGNED_ALLOC] = 13, [AT_MEMALIGN] = 8, [AT_VALLOC] = 6,
    [AT_PVALLOC] = 7,
};

/* ---- numbers ------------------------------------------------------------ */

static const char digits2[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* The number of decimal digits of v: log2 from the leading zeros, times
 * log10(2) (1233 / 4096), corrected by one comparison. */
static unsigned dec_digits(uint64_t v)
{
    static const uint64_t pow10[20] = {
        0, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
        10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
        100000000000000ull, 1000000000000000ull, 10000000000000000ull,
        100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
    };
    unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233 >> 12;
    return t + (v >= pow10[t]);
}

/*
 * Decimal, written from its last digit back, two at a time, straight into
 * p: the digit count comes first, so no scratch copy. Indices and sizes
 * are on every call line the writer thread formats; 32-bit steps while
 * the value fits (index and size nearly always do).
 */
size_t at_fmt_dec(char *p, uint64_t v)
{
    unsigned n = dec_digits(v);
    char *e = p + n;
    while (v > UINT32_MAX) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        e -= 2;
        memcpy(e, digits2 + r * 2, 2);
    }
    uint32_t w = (uint32_t)v;
    while (w >= 100) {
        unsigned r = w % 100;
        w /= 100;
        e -= 2;
        memcpy(e, digits2 + r * 2, 2);
    }
    if (w >= 10)
        memcpy(e - 2, digits2 + w * 2, 2);
    else
        e[-1] = (char)('0' + w);
    return n;
}

/*
 * Lower-case hex without leading zeros, all 16 digits at once: shifting
 * the value up by its leading zero digits puts the digits it has first,
 * the 16 bytes are turned into characters side by side, and all 16 are
 * stored. So p must have room for 16 bytes whatever the value; the ones
 * after the returned end are scratch for the caller to overwrite. A
 * record's frames are most of its text, and this is 3x faster than two
 * digits per step from a table.
 */
static inline char *put_hex16(char *p, uint64_t v)
{
    unsigned n = v ? (unsigned)(64 - __builtin_clzll(v) + 3) / 4 : 1;
    uint64_t first = __builtin_bswap64(v << (4 * (16 - n)));   /* top byte first */
    __m128i bytes = _mm_cvtsi64_si128((long long)first);
    __m128i low4 = _mm_set1_epi8(0x0f);
    __m128i lo = _mm_and_si128(bytes, low4);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
    __m128i nibbles = _mm_unpacklo_epi8(hi, lo);               /* high nibble first */
    __m128i letters = _mm_cmpgt_epi8(nibbles, _mm_set1_epi8(9));
    __m128i text = _mm_add_epi8(nibbles, _mm_set1_epi8('0'));
    text = _mm_add_epi8(text, _mm_and_si128(letters, _mm_set1_epi8('a' - '0' - 10)));
    _mm_storeu_si128((__m128i *)(void *)p, text);
    return p + n;
}

size_t at_fmt_hex(char *p, uint64_t v)
{
    char tmp[16];
    size_t n = (size_t)(put_hex16(tmp, v) - tmp);
    memcpy(p, tmp, n);
    return n;
}

static char *put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}
#define PUTS(p, lit) put((p), (lit), sizeof(lit) - 1)

static char *put2(char *p, unsigned v)
{
    p[0] = digits2[v * 2];
    p[1] = digits2[v * 2 + 1];
    return p + 2;
}

/* "HH:MM:SS", as both a record's time and the header's timestamp have it. */
static char *put_hms(char *p, unsigned h, unsigned m, unsigned sec)
{
    p = put2(p, h);
    *p++ = ':';
    p = put2(p, m);
    *p++ = ':';
    return put2(p, sec);
}

/* ---- records ------------------------------------------------------------ */

/* A frame list, "\t0x..." a line, and the blank line that ends it. */
static char *put_frames(char *p, void *const *frames, int n)
{
    for (int i = 0; i < n; i++) {
        p = PUTS(p, "\t0x");
        p = put_hex16(p, (uintptr_t)frames[i]);
        *p++ = '\n';
    }
    *p++ = '\n';
    return p;
}

/* "[HH:MM:SS.uuuuuu] " of a local time of day in microseconds. The
 * "[HH:MM:SS." of the second before is kept in `tc` (when given): the
 * writer thread's calls come thousands to a second, and the divisions
 * for the hours, minutes and seconds are then one comparison. */
static char *put_time(char *p, uint64_t time_us, struct at_time_text *tc)
{
    uint64_t sec = time_us / 1000000;
    unsigned us = (unsigned)(time_us - sec * 1000000);
    if (!tc || tc->sec != sec + 1) {
        char *s = tc ? tc->text : p;
        uint64_t day = sec % 86400;
        s[0] = '[';
        put_hms(s + 1, (unsigned)(day / 3600), (unsigned)(day / 60 % 60), (unsigned)(day % 60));
        s[9] = '.';
        if (tc)
            tc->sec = sec + 1;
    }
    if (tc)
        memcpy(p, tc->text, 10);
    p += 10;
    p = put2(p, us / 10000);
    p = put2(p, us / 100 % 100);
    p = put2(p, us % 100);
    return PUTS(p, "] ");
}

size_t at_format_call(char *buf, const struct at_event *e, struct at_time_text *tc)
{
    char *p = buf;
    if (e->ctx) {
        *p++ = '@';
        p = put_hex16(p, e->ctx);
        *p++ = ' ';
    }
    if (at_cfg.timestamps && !e->no_time)
        p = put_time(p, e->time_us, tc);
    p = put(p, at_fn_names[e->fn], fn_lens[e->fn]);
    if (e->release) {
        p = PUTS(p, "(0x");
        p = put_hex16(p, e->id);
        p = PUTS(p, ")\n");
    } else {
        *p++ = '(';
        p += at_fmt_dec(p, e->size);
        p = PUTS(p, ") = 0x");
        p = put_hex16(p, e->id);
        *p++ = '\n';
    }
    if (e->alignment) {
        p = PUTS(p, "\t$alignment = ");
        p += at_fmt_dec(p, e->alignment);
        *p++ = '\n';
    }
    return (size_t)(put_frames(p, (void *const *)e->frames, e->nframes) - buf);
}

size_t at_format_body(char *buf, const struct at_event *e)
{
    return at_format_call(buf, e, NULL);
}

char *at_format_group_tail(char *p, void *const *frames, int n, uint64_t count, uint64_t bytes)
{
    p = PUTS(p, AT_ALLOC_SUMMARY);
    p += at_fmt_dec(p, count);
    p = PUTS(p, " block(s) with total size ");
    p += at_fmt_dec(p, bytes);
    *p++ = '\n';
    return put_frames(p, frames, n);
}

/* ---- the header ----------------------------------------------------------- */

/* Header values never hold ',' or a newline. */
static char *put_value(char *p, char *end, const char *s)
{
    for (; *s && p < end; s++)
        *p++ = (*s == ',' || *s == '\n') ? '_' : *s;
    return p;
}

/* Everything after the process name: pid, filter, depth, origin and the
 * registry line. A name too long for the buffer is cut to leave this. */
#define HEADER_TAIL_MAX 320   /* with a child's ppid and fork index, a sampling interval, the time key */

static size_t format_header(char *h, size_t cap, const struct tm *tm, const char *process,
                            pid_t pid, pid_t ppid, uint64_t fork_index, int sparse_times)
{
    char *p = h;
    p = PUTS(p, AT_HDR_VERSION "=" AT_PROTOCOL_VERSION ", " AT_HDR_ARCH "=x86_64, "
                AT_HDR_TIMESTAMP "=");
    p += at_fmt_dec(p, (uint64_t)tm->tm_year + 1900);
    *p++ = '.';
    p = put2(p, (unsigned)tm->tm_mon + 1);
    *p++ = '.';
    p = put2(p, (unsigned)tm->tm_mday);
    *p++ = ' ';
    p = put_hms(p, (unsigned)tm->tm_hour, (unsigned)tm->tm_min, (unsigned)tm->tm_sec);
    p = PUTS(p, ", " AT_HDR_PROCESS "=");
    p = put_value(p, h + cap - HEADER_TAIL_MAX, process);
    p = PUTS(p, ", " AT_HDR_PID "=");
    p += at_fmt_dec(p, (uint64_t)pid);
    p = PUTS(p, ", ");
    /* Both modes write the compressed form: leaks mode at exit, full mode
     * chunk by chunk (chunk.c). */
    if (at_cfg.leaks_mode)
        p = PUTS(p, AT_HDR_FILTER "=" AT_FILTER_LEAKS "|" AT_FILTER_COMPRESS ", ");
    else
        p = PUTS(p, AT_HDR_FILTER "=" AT_FILTER_COMPRESS ", ");
    p = PUTS(p, AT_HDR_DEPTH "=");
    p += at_fmt_dec(p, (uint64_t)at_cfg.depth);
    if (at_cfg.sample) {
        p = PUTS(p, ", " AT_HDR_SAMPLE "=");
        p += at_fmt_dec(p, at_cfg.sample);
    }
    p = PUTS(p, ", " AT_HDR_ORIGIN "=" AT_ORIGIN_NAME " " AT_VERSION ", ");
    if (sparse_times)
        p = PUTS(p, AT_HDR_TIME "=" AT_TIME_ON_CHANGE ", ");
    if (ppid > 0) {
        p = PUTS(p, AT_HDR_PPID "=");
        p += at_fmt_dec(p, (uint64_t)ppid);
        p = PUTS(p, ", ");
        if (!at_cfg.leaks_mode) {
            p = PUTS(p, AT_HDR_FORK_INDEX "=");
            p += at_fmt_dec(p, fork_index);
            p = PUTS(p, ", ");
        }
    }
    p = PUTS(p, "\n");
    p = PUTS(p, "<1> : " AT_RES_MEMORY_NAME " (" AT_RES_MEMORY_DESC ")\n");
    return (size_t)(p - h);
}

/* A snapshot's header: its live blocks have every time (live.c). */
size_t at_format_header(char *h, size_t cap, const struct tm *tm, const char *process, pid_t pid)
{
    return format_header(h, cap, tm, process, pid, 0, 0, 0);
}

/* A trace's header: full mode's calls, and the blocks of leaks mode's
 * report at exit, have a time when its millisecond moves on (chunk.c,
 * leakreport.c), and "time=on change" says so. */
size_t at_format_header_child(char *h, size_t cap, const struct tm *tm, const char *process,
                              pid_t pid, pid_t ppid, uint64_t fork_index)
{
    return format_header(h, cap, tm, process, pid, ppid, fork_index,
                         at_cfg.timestamps == AT_TIMES_ON_CHANGE);
}

/* Whether the line ending at p[j-1] opens or continues a call group:
 * a call line or an argument line. (Only in the compressed form, which
 * leaks mode writes at exit, is it followed by more than frames.) */
static int in_group(const char *p, size_t j)
{
    size_t l = j - 1;
    while (l > 0 && p[l - 1] != '\n')
        l--;
    return (p[l] >= '0' && p[l] <= '9') || (p[l] == '\t' && p[l + 1] == '$');
}

/* A unit ends at a line start that is not a frame or an argument line
 * (TAB) or the blank line that closes a record, nor the next call line
 * or summary line of a compressed group. */
size_t at_unit_boundary(const char *p, size_t k, size_t n)
{
    for (size_t j = k; j > 0; j--)
        if (p[j - 1] == '\n' && (j == n || (p[j] != '\t' && p[j] != '\n' && !in_group(p, j))))
            return j;
    return 0;
}
