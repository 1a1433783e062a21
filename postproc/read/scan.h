/*
 * postproc/read/scan.h: lines lexed ahead of the reader, on the
 * decompression thread (scan.c).
 *
 * The reader asks, at each line start of the stream, whether the scanner
 * has lexed what begins there: a call line (its fields, and where it ends)
 * or a frame list (where it and its blank line end, and its number:
 * equal lists, equal numbers). An
 * answer is a pure function of the bytes from that offset on, computed
 * with the reader's own functions (lex.h), so using it or not gives the
 * same records; a line the scanner did not lex (it straddles two of the
 * thread's buffers, it is malformed, the input is plain text) has no
 * answer and is read as before.
 */
#ifndef AT_SCAN_H
#define AT_SCAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "input.h"
#include "lex.h"

typedef enum { AT_HINT_CALL = 1, AT_HINT_LIST = 2 } at_hint_kind;

/* What the scanner found at a line start (56 bytes). */
typedef struct at_hint {
    uint64_t off;  /* the stream offset of the line's first byte */
    uint64_t index, time_us, size, id; /* CALL; LIST: its number in size */
    uint32_t len;  /* CALL: the line's bytes before its '\n'; LIST: the
                      list's bytes up to and with its last frame's '\n' */
    uint32_t next; /* LIST: from off to the end of its blank line. CALL: the context */
    uint16_t name_off, name_len; /* CALL */
    uint8_t kind;  /* at_hint_kind */
    uint8_t flags; /* CALL: 1 has_time, 2 is_alloc */
} at_hint;

/* The ring of hints: written by the decompression thread, read in order
 * by the reader's (scan.c says why and how). */
#define AT_SCAN_RING (1u << 15)

typedef struct at_scan {
    at_hint *ring;            /* AT_SCAN_RING hints */
    _Atomic uint64_t written; /* hints published (release, per buffer) */
    _Atomic uint64_t passed;  /* hints the reader is done with */
    int mode;      /* 0: calls while the reader is behind, 1: always, 2: never */
    _Atomic bool running; /* the thread has scanned a buffer */
    /* the thread's */
    struct scan_list *lists; /* the frame lists seen, by their bytes */
    size_t nlists, lists_used;
    bool mid_line; /* the last buffer ended inside a line */
    bool prev_tab; /* the last whole line began with a TAB */
    bool cur_tab;  /* the line cut by the last buffer's end does */
    /* the reader's */
    uint64_t next, known; /* the next hint to look at; hints known written */
} at_scan;

/* By default nothing is scanned ahead on fewer than three CPUs (scan.c
 * says why); else lists always and calls while the reader is behind.
 * ALLOCTRACE_PP_SCAN=auto asks for the latter on any machine, always
 * lexes every buffer's calls too, never nothing (the tests, measuring). */
at_scan *at_scan_new(void);
void at_scan_free(at_scan *s);

/* Has the decompression thread of `in` (if it gets one) lex its buffers. */
void at_scan_attach(at_scan *s, at_input *in);

/* What the thread does with each buffer (at_scan_attach hooks it there;
 * the fuzz target calls it directly): the stream's bytes in order, off
 * the offset of data[0]; busy: make hints (else only follow the lines). */
void at_scan_buffer(at_scan *s, const char *data, size_t len, uint64_t off, bool busy);

/* Whether a thread scans the input: then every frame list not cut by a
 * buffer's end comes with a hint (numbered, see scan.c). */
static inline bool at_scan_running(at_scan *s)
{
    return atomic_load_explicit(&s->running, memory_order_relaxed);
}

/* The hint for the line starting at stream offset off, or NULL. Offsets
 * asked must not decrease: hints before off are passed for good. */
static inline const at_hint *at_scan_at(at_scan *s, uint64_t off)
{
    for (;;) {
        if (s->next == s->known) {
            s->known = atomic_load_explicit(&s->written, memory_order_acquire);
            if (s->next == s->known)
                return NULL;
        }
        const at_hint *h = &s->ring[s->next & (AT_SCAN_RING - 1)];
        if (h->off > off)
            return NULL;
        if (h->off == off)
            return h;
        s->next++;
        atomic_store_explicit(&s->passed, s->next, memory_order_release);
    }
}

/* A CALL hint's fields as at_lex_call gives them. */
static inline void at_scan_call(const at_hint *h, at_lexed_call *c)
{
    *c = (at_lexed_call){ .index = h->index, .time_us = h->time_us, .size = h->size,
                          .id = h->id, .context = h->next, .name_off = h->name_off,
                          .name_len = h->name_len, .has_time = (h->flags & 1) != 0,
                          .is_alloc = (h->flags & 2) != 0 };
}

#endif
