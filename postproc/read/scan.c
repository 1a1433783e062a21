/*
 * postproc/read/scan.c: lines lexed ahead of the reader, on the
 * decompression thread (scan.h).
 *
 * Why: on 2M-call traces the reader's thread was the busiest of the
 * three (55-67% of the CPU samples of -r --format report: finding line
 * ends, lexing call lines, finding and hashing frame lists), while the
 * decompression thread had 13-20% and the analyzer's the rest. The
 * lexing needs no reader state, so the decompression thread does it on
 * each buffer it has filled, before handing it on, and the reader takes
 * the results with the bytes.
 *
 * Decisions:
 * - Hints, not a second reader: the reader still walks every line, counts
 *   line numbers, keeps its state machine, interns and reports; a hint
 *   only saves it the memchr, the lexing or the frame list's search and
 *   hash at one line start. A hint is a pure function of the bytes from
 *   its offset on (lex.h's functions), and the reader uses one only at
 *   the exact stream offset it was made for, so the records, warnings and
 *   line numbers are the same with or without hints (a malformed line
 *   has none and is read, and reported, by the reader as before).
 * - The scanner knows no state but whether it is at a line start and
 *   whether the last line began with a TAB (a frame list is hinted at its
 *   first line). A line that straddles two of the thread's buffers, or a
 *   frame list whose blank line is not in the buffer, gets no hint.
 * - Frame lists are numbered: the scanner keeps each distinct list's bytes
 *   (hash, then memcmp) and gives equal bytes the same number, so the
 *   reader finds a list's stack in an array by that number instead of
 *   probing its own table of lists and comparing 1-2 KB (a tenth of a
 *   compiler's trace's reading). With the thread running the reader keeps
 *   no table of list bytes of its own (a list cut by a buffer's end is
 *   read line by line), so the bytes are kept once, as before.
 * - Call lines are lexed only while the reader's thread is behind (half
 *   the ring of decompressed buffers or more waits for it): on a trace of
 *   small stacks (perl) the decompression thread lexing every line became
 *   the busiest of the three, and the reader waited for it.
 * - Not at all when the process may run on fewer than three CPUs
 *   (sched_getaffinity): the decompression, the reader and the analyzer
 *   are three busy threads already. On the 2-core development machine the
 *   read-ahead moved the reader's work as designed (its thread's share of
 *   a cc1plus run 67% -> 50%) but cost 10-20% more CPU in all, and wall
 *   time with a core mostly free came out the same or worse than without
 *   it (cc1plus 690-740 against 630-660 ms, perl 310-330 against 310-320,
 *   python3 420-490 against 380-490; clang 820-850 against 780-890); on
 *   one core (taskset) 3-9% worse. ALLOCTRACE_PP_SCAN=auto asks for the
 *   read-ahead (calls while the reader is behind) whatever the CPUs.
 * - The hints go through a ring of AT_SCAN_RING (32768, 1.8 MB) in one
 *   direction, without a lock: the thread writes a buffer's hints, then
 *   publishes their count (a release store) before it hands the buffer
 *   on, so the reader, which asks only about bytes it has, finds every
 *   hint of them written (an acquire load when it has read all it knew
 *   of). The reader says how far it has passed; when the ring is full the
 *   thread makes no more hints until there is room (nothing waits, and a
 *   line without a hint is only read the slower way). A first version
 *   gave each buffer its own array, copied for the reader as it took the
 *   buffer: the copy and the appends cost a third of what the hints
 *   saved.
 */
#include "scan.h"
#include "xalloc.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* The thread's writing of one buffer's hints: from `first`, at most
 * `room` of them. */
typedef struct writing {
    at_scan *s;
    uint64_t first, n, room;
} writing;

static at_hint *slot(writing *w)
{
    return w->n < w->room ? &w->s->ring[(w->first + w->n) & (AT_SCAN_RING - 1)] : NULL;
}

static void hint_call(writing *w, const char *p, size_t len, uint64_t off)
{
    at_hint *h = slot(w);
    size_t l = len && p[len - 1] == '\r' ? len - 1 : len; /* as the reader strips it */
    at_lexed_call c;
    if (!h || len >= UINT16_MAX || !at_lex_call(p, l, &c))
        return;
    h->off = off;
    h->index = c.index;
    h->time_us = c.time_us;
    h->size = c.size;
    h->id = c.id;
    h->len = (uint32_t)len;
    h->next = c.context;
    h->name_off = (uint16_t)c.name_off;
    h->name_len = (uint16_t)c.name_len;
    h->kind = AT_HINT_CALL;
    h->flags = (uint8_t)((c.has_time ? 1 : 0) | (c.is_alloc ? 2 : 0));
    w->n++;
}

/* A frame list seen: its bytes (a copy) and its number. */
typedef struct scan_list {
    uint64_t hash;
    size_t len;
    char *text; /* NULL: an empty slot */
    uint64_t id;
} scan_list;

/* The number of the list p[0..len): the same for the same bytes, the next
 * one for bytes never seen. */
static uint64_t list_number(at_scan *s, const char *p, size_t len)
{
    uint64_t h = at_lex_list_hash(p, len);
    if ((s->lists_used + 1) * 2 > s->nlists) {
        size_t n = s->nlists ? s->nlists * 2 : 4096;
        scan_list *t = at_xcalloc(n, sizeof *t);
        for (size_t i = 0; i < s->nlists; i++) {
            if (!s->lists[i].text)
                continue;
            size_t j = (size_t)s->lists[i].hash & (n - 1);
            while (t[j].text)
                j = (j + 1) & (n - 1);
            t[j] = s->lists[i];
        }
        free(s->lists);
        s->lists = t;
        s->nlists = n;
    }
    size_t i = (size_t)h & (s->nlists - 1);
    for (; s->lists[i].text; i = (i + 1) & (s->nlists - 1))
        if (s->lists[i].hash == h && s->lists[i].len == len && memcmp(s->lists[i].text, p, len) == 0)
            return s->lists[i].id;
    char *copy = at_xmalloc(len);
    memcpy(copy, p, len);
    s->lists[i] = (scan_list){ h, len, copy, s->lists_used };
    return s->lists_used++;
}

/* A frame list from p: its end and its number; NULL when its blank line
 * is not in this buffer. */
static const char *hint_list(writing *w, const char *p, const char *end, uint64_t off)
{
    const char *stop, *next = at_lex_blank_line(p, end, &stop);
    if (!next || next - p > UINT32_MAX)
        return next;
    size_t len = (size_t)(stop + 1 - p);
    uint64_t id = list_number(w->s, p, len); /* numbered even when no hint fits */
    at_hint *h = slot(w);
    if (!h)
        return next;
    h->off = off;
    h->size = id;
    h->len = (uint32_t)len;
    h->next = (uint32_t)(next - p);
    h->kind = AT_HINT_LIST;
    w->n++;
    return next;
}

/* On the decompression thread: the hints of one buffer, published
 * before the buffer is handed on: its frame lists always, its call lines
 * when the reader is behind. */
void at_scan_buffer(at_scan *s, const char *data, size_t len, uint64_t off, bool busy)
{
    bool calls = s->mode == 1 || (busy && s->mode == 0);
    if (s->mode == 2)
        return;
    atomic_store_explicit(&s->running, true, memory_order_relaxed);
    uint64_t first = atomic_load_explicit(&s->written, memory_order_relaxed);
    uint64_t passed = atomic_load_explicit(&s->passed, memory_order_acquire);
    writing w = { s, first, 0, AT_SCAN_RING - (first - passed) };
    const char *p = data, *end = data + len;
    if (s->mid_line) {
        const char *nl = memchr(p, '\n', len);
        if (!nl)
            return;
        s->prev_tab = s->cur_tab;
        s->mid_line = false;
        p = nl + 1;
    }
    while (p < end) {
        char c = *p;
        if (c == '\t' && !s->prev_tab && end - p > 3 && p[1] == '0' && p[2] == 'x') {
            const char *next = hint_list(&w, p, end, off + (uint64_t)(p - data));
            if (next) {
                p = next;
                s->prev_tab = false;
                continue;
            }
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            s->mid_line = true;
            s->cur_tab = c == '\t';
            break;
        }
        if (calls && c >= '0' && c <= '9')
            hint_call(&w, p, (size_t)(nl - p), off + (uint64_t)(p - data));
        s->prev_tab = c == '\t';
        p = nl + 1;
    }
    atomic_store_explicit(&s->written, first + w.n, memory_order_release);
}

at_scan *at_scan_new(void)
{
    at_scan *s = at_xcalloc(1, sizeof *s);
    s->ring = at_xmalloc(AT_SCAN_RING * sizeof *s->ring);
    const char *m = getenv("ALLOCTRACE_PP_SCAN");
    s->mode = m && strcmp(m, "always") == 0 ? 1 : m && strcmp(m, "never") == 0 ? 2 : 0;
    /* Fewer than three CPUs to run on: with the analyzer's thread there
     * are three busy threads, and on two cores the read-ahead cost more
     * (its handing over, 10-20% more CPU) than it saved (see the top). */
    cpu_set_t cpus;
    if (!m && (sched_getaffinity(0, sizeof cpus, &cpus) != 0 || CPU_COUNT(&cpus) < 3))
        s->mode = 2;
    return s;
}

void at_scan_free(at_scan *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nlists; i++)
        free(s->lists[i].text);
    free(s->lists);
    free(s->ring);
    free(s);
}

static void scan(void *arg, const char *data, size_t len, uint64_t off, bool busy)
{
    at_scan_buffer(arg, data, len, off, busy);
}

void at_scan_attach(at_scan *s, at_input *in)
{
    at_input_scan_ahead(in, scan, s);
}
