/*
 * postproc/read/input.c: plain and zstd-compressed traces in (input.h).
 *
 * Decisions:
 * - The kind of input is decided by its first bytes, not by its name: a
 *   trace renamed, piped through stdin or written without a suffix is
 *   read the same way. zstd frames (and zstd's skippable frames, which
 *   may come first) are decompressed; gzip, xz, bzip2 and lz4 are named
 *   in one error, since reading them as text would print a warning for
 *   every "line" of compressed bytes; everything else is handed to the
 *   reader as text, which judges whether it is a trace.
 * - zstd through its streaming API (ZSTD_decompressStream): memory is the
 *   128 KiB input buffer, the caller's output buffer and the frame's
 *   window, which is capped at 2^27 bytes (zstd's own default limit,
 *   set here explicitly), so a trace of any size decompresses in bounded
 *   memory. Concatenated frames (one per writer flush) are one stream.
 *   A frame asking for a larger window (zstd --long=28 and up on a big
 *   file) is one error saying so.
 * - A stream that ends inside a frame is a trace whose writer was killed:
 *   one warning, and the text decoded so far is read (the reader drops
 *   its cut last record as it does for a plain trace). Corrupt data is an
 *   input error: with --strict it stops the run (exit 2); without, one
 *   warning, and the trace is read up to there.
 * - Asked to (at_input_ahead, as the command-line reader does), zstd is
 *   decompressed on a thread of its own, a ring of NZBUF buffers of ZBUF
 *   bytes ahead of the reader: decompression was 11-15% of the CPU time of
 *   `-r --format report` on 2M-call traces, all of it on the reader's
 *   thread, the busier of the two. The thread never reports anything: a
 *   buffer carries the event that ended the stream after its bytes (the
 *   end, a read error, corrupt data) and the reader's thread reports it
 *   when it gets there, so messages come in the same order, with the same
 *   text, as without the thread. The memory is a constant (1 MiB); the
 *   bytes are copied once more, into the reader's buffer (a few ms on
 *   100 MB). If the thread cannot be started the input is decompressed on
 *   the reader's thread, as without at_input_ahead.
 * - A hook (at_input_scan_ahead) runs on the thread on each buffer before
 *   it is handed on, told whether the reader is behind (half the ring or
 *   more filled): the reader's lexing done ahead there (scan.c). Input
 *   knows nothing of lines; the hook's results go their own way.
 */
#include "input.h"
#include "xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#define RAW_BUF (128u << 10)
#define ZSTD_WINDOW_LOG_MAX 27

#define ZBUF (256u << 10)
#define NZBUF 4

typedef enum { IN_UNKNOWN, IN_PLAIN, IN_ZSTD, IN_FAILED } in_kind;

/* What ends a zstd stream: reported by the reader's thread (report_end). */
typedef enum { END_NONE, END_EOF, END_READ_ERROR, END_CORRUPT } end_kind;

typedef struct stream_end {
    end_kind kind;
    bool frame_open;   /* END_EOF: inside a frame (the trace was cut short) */
    int err;           /* END_READ_ERROR: errno */
    size_t code;       /* END_CORRUPT: zstd's error code */
    uint64_t consumed; /* END_CORRUPT: file bytes the decoder had used */
} stream_end;

/* A buffer of the decompression thread: its bytes, then (if not END_NONE)
 * the end of the stream. */
typedef struct zbuf {
    char *data;
    size_t len;
    stream_end end;
    uint64_t file_pos; /* file bytes read when it was filled (progress) */
} zbuf;

/* The decompression thread and its ring (see the top). The thread fills
 * ring[fill], ring[fill + 1], ...; the reader's thread takes ring[head]. */
typedef struct ahead {
    pthread_t tid;
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    zbuf ring[NZBUF];
    size_t full;      /* buffers filled, not yet taken back by the reader */
    bool quit;        /* the reader stops early: the thread ends */
    /* the thread's */
    size_t fill;
    uint64_t out_off; /* stream bytes handed out before ring[fill] */
    /* the reader's */
    size_t head, pos; /* ring[head].data[pos..len) is next */
    bool holding;     /* the reader has ring[head] (full > 0) */
    bool finished;    /* the stream's end was reported */
    uint64_t file_pos;
} ahead;

struct at_input {
    at_diag *d;
    int fd;             /* -1: memory */
    const char *mem;    /* memory input */
    size_t mem_len, mem_pos;
    in_kind kind;
    char *raw;          /* bytes read but not used yet: raw[rpos..rlen) */
    size_t rpos, rlen;
    bool eof;           /* the file has no more bytes */
    uint64_t consumed;  /* file bytes the decoder used so far (for messages) */
    uint64_t file_pos;  /* file bytes read so far (for progress) */
    int read_errno;     /* the last raw_read's error */
    ZSTD_DCtx *zd;
    bool frame_open;    /* zstd: the last call ended inside a frame */
    bool want_ahead;    /* at_input_ahead: zstd on a thread of its own */
    ahead *ahead;       /* that thread, once started */
    at_input_scan_fn *scan; /* work on the thread's buffers, or NULL */
    void *scan_arg;
    int wake;           /* with the thread on a descriptor: an eventfd that
                           ends its wait for input (ahead_stop); else -1 */
};

static at_input *input_new(at_diag *d)
{
    at_input *in = at_xcalloc(1, sizeof *in);
    in->d = d;
    in->fd = -1;
    in->wake = -1;
    in->raw = at_xmalloc(RAW_BUF);
    return in;
}

at_input *at_input_fd(int fd, at_diag *d)
{
    at_input *in = input_new(d);
    in->fd = fd;
    return in;
}

at_input *at_input_mem(const char *data, size_t len, at_diag *d)
{
    at_input *in = input_new(d);
    in->mem = data;
    in->mem_len = len;
    return in;
}

static void ahead_stop(at_input *in);

void at_input_ahead(at_input *in)
{
    in->want_ahead = true;
}

void at_input_scan_ahead(at_input *in, at_input_scan_fn *fn, void *arg)
{
    in->scan = fn;
    in->scan_arg = arg;
}

void at_input_free(at_input *in)
{
    if (!in)
        return;
    ahead_stop(in);
    ZSTD_freeDCtx(in->zd);
    free(in->raw);
    free(in);
}

/* ---- raw bytes ---------------------------------------------------------- */

/* On the decompression thread: waits until the file has input (or its
 * end, or an error for read to report) or the reader stops (false). A
 * regular file always has. */
static bool input_or_stop(at_input *in)
{
    struct pollfd p[2] = { { .fd = in->fd, .events = POLLIN }, { .fd = in->wake, .events = POLLIN } };
    while (poll(p, 2, -1) < 0)
        if (errno != EINTR)
            return true; /* let read() say what is wrong */
    return !p[1].revents;
}

/* Up to cap bytes of the file itself; 0 at its end, -1 on an I/O error
 * (its errno in read_errno, reported by the caller: read_failed). */
static ssize_t raw_read(at_input *in, char *buf, size_t cap)
{
    if (in->fd < 0) {
        size_t n = in->mem_len - in->mem_pos;
        if (n > cap)
            n = cap;
        memcpy(buf, in->mem + in->mem_pos, n);
        in->mem_pos += n;
        in->file_pos += n;
        return (ssize_t)n;
    }
    for (;;) {
        if (in->wake >= 0 && !input_or_stop(in))
            return 0; /* the reader stopped: no more input wanted */
        ssize_t got = read(in->fd, buf, cap);
        if (got >= 0 || errno != EINTR) {
            if (got < 0)
                in->read_errno = errno;
            else
                in->file_pos += (uint64_t)got;
            return got;
        }
    }
}

static ssize_t read_failed(at_input *in, int err)
{
    at_diag_error(in->d, AT_EXIT_FAIL, "%s: read error: %s", in->d->file, strerror(err));
    return -1;
}

uint64_t at_input_file_bytes(const at_input *in)
{
    return in->ahead ? in->ahead->file_pos : in->file_pos;
}

/* Moves what is left of raw to its start and reads more after it, until
 * it holds at least `want` bytes or the file ends. -1 on an I/O error. */
static int raw_fill(at_input *in, size_t want)
{
    if (in->rpos) {
        memmove(in->raw, in->raw + in->rpos, in->rlen - in->rpos);
        in->rlen -= in->rpos;
        in->rpos = 0;
    }
    while (in->rlen < want && !in->eof) {
        ssize_t got = raw_read(in, in->raw + in->rlen, RAW_BUF - in->rlen);
        if (got < 0)
            return -1;
        if (got == 0)
            in->eof = true;
        in->rlen += (size_t)got;
    }
    return 0;
}

/* ---- what the input is -------------------------------------------------- */

static bool has_magic(const at_input *in, const char *magic, size_t n)
{
    return in->rlen >= n && memcmp(in->raw, magic, n) == 0;
}

/* The name of a compressed format that is not read, or NULL. */
static const char *unsupported_compression(const at_input *in)
{
    if (has_magic(in, "\x1f\x8b", 2))
        return "gzip";
    if (has_magic(in, "\xfd" "7zXZ\0", 6))
        return "xz";
    if (has_magic(in, "BZh", 3) && in->rlen >= 4 && in->raw[3] >= '1' && in->raw[3] <= '9')
        return "bzip2";
    if (has_magic(in, "\x04\x22\x4d\x18", 4))
        return "lz4";
    return NULL;
}

/* A zstd frame (28 b5 2f fd) or a skippable frame (5? 2a 4d 18). */
static bool is_zstd(const at_input *in)
{
    return has_magic(in, "\x28\xb5\x2f\xfd", 4) ||
           (in->rlen >= 4 && ((unsigned char)in->raw[0] & 0xf0) == 0x50 &&
            memcmp(in->raw + 1, "\x2a\x4d\x18", 3) == 0);
}

static int detect(at_input *in)
{
    if (raw_fill(in, 6) < 0)
        return (int)read_failed(in, in->read_errno);
    const char *fmt = unsupported_compression(in);
    if (fmt) {
        at_diag_error(in->d, AT_EXIT_USAGE,
                      "%s: %s-compressed input, not a trace: decompress it first "
                      "(alloctrace-postproc reads plain and zstd-compressed traces)",
                      in->d->file, fmt);
        return -1;
    }
    if (!is_zstd(in)) {
        in->kind = IN_PLAIN;
        return 0;
    }
    in->zd = ZSTD_createDCtx();
    if (!in->zd)
        at_oom();
    ZSTD_DCtx_setParameter(in->zd, ZSTD_d_windowLogMax, ZSTD_WINDOW_LOG_MAX);
    in->kind = IN_ZSTD;
    return 0;
}

/* ---- reading ------------------------------------------------------------ */

static ssize_t plain_read(at_input *in, char *buf, size_t cap)
{
    if (in->rpos < in->rlen) { /* the bytes detect() looked at */
        size_t n = in->rlen - in->rpos;
        if (n > cap)
            n = cap;
        memcpy(buf, in->raw + in->rpos, n);
        in->rpos += n;
        return (ssize_t)n;
    }
    if (in->eof)
        return 0;
    ssize_t got = raw_read(in, buf, cap);
    return got < 0 ? read_failed(in, in->read_errno) : got;
}

/* Corrupt zstd data: an input error (see the opening comment). A frame
 * whose window is over the cap is no corruption but a file this reader
 * will not take the memory for: one error, as for gzip. */
static ssize_t zstd_corrupt(at_input *in, size_t code, uint64_t consumed)
{
    if (ZSTD_getErrorCode(code) == ZSTD_error_frameParameter_windowTooLarge) {
        at_diag_error(in->d, AT_EXIT_USAGE,
                      "%s: a zstd frame needs a window over %u MiB (compressed with --long?); "
                      "recompress it with a window of at most 2^%d (zstd --long=%d)",
                      in->d->file, (1u << ZSTD_WINDOW_LOG_MAX) >> 20, ZSTD_WINDOW_LOG_MAX,
                      ZSTD_WINDOW_LOG_MAX);
        in->kind = IN_FAILED;
        return -1;
    }
    bool stop = at_diag_input(in->d, 0, "%s: corrupt zstd data near byte %llu of the file (%s)%s",
                              in->d->file, (unsigned long long)consumed,
                              ZSTD_getErrorName(code), in->d->strict ? "" : "; read up to there");
    in->kind = IN_FAILED;
    return stop ? -1 : 0;
}

/* Decompresses into buf[0..cap): the count (> 0), or 0 with the stream's
 * end in *end. Reports nothing (it runs on the decompression thread too). */
static size_t zstd_step(at_input *in, char *buf, size_t cap, stream_end *end)
{
    ZSTD_outBuffer out = { buf, cap, 0 };
    for (;;) {
        if (in->rpos == in->rlen && !in->eof && raw_fill(in, 1) < 0) {
            *end = (stream_end){ .kind = END_READ_ERROR, .err = in->read_errno };
            return 0;
        }
        ZSTD_inBuffer src = { in->raw, in->rlen, in->rpos };
        size_t out_before = out.pos;
        size_t ret = ZSTD_decompressStream(in->zd, &out, &src);
        bool moved = src.pos != in->rpos || out.pos != out_before;
        in->consumed += src.pos - in->rpos;
        in->rpos = src.pos;
        if (ZSTD_isError(ret)) {
            *end = (stream_end){ .kind = END_CORRUPT, .code = ret, .consumed = in->consumed };
            return 0;
        }
        /* a call that moved nothing only says what a next frame needs */
        if (moved)
            in->frame_open = ret != 0;
        if (out.pos > 0)
            return out.pos;
        if (in->eof && in->rpos == in->rlen)
            break;
    }
    *end = (stream_end){ .kind = END_EOF, .frame_open = in->frame_open };
    in->frame_open = false;
    return 0;
}

/* The end of a zstd stream, reported on the reader's thread: 0 (the end
 * of the input) or -1 (see at_input_read). */
static ssize_t report_end(at_input *in, const stream_end *end)
{
    switch (end->kind) {
    case END_READ_ERROR:
        return read_failed(in, end->err);
    case END_CORRUPT:
        return zstd_corrupt(in, end->code, end->consumed);
    default:
        if (end->frame_open)
            at_diag_warn(in->d, "%s: the zstd stream ends inside a frame (the trace was cut "
                                "short); read up to there", in->d->file);
        return 0;
    }
}

static ssize_t zstd_read(at_input *in, char *buf, size_t cap)
{
    stream_end end;
    size_t got = zstd_step(in, buf, cap, &end);
    return got ? (ssize_t)got : report_end(in, &end);
}

/* ---- the decompression thread ------------------------------------------- */

/* A buffer filled up to ZBUF bytes, up to the stream's end, or with what
 * the bytes read so far gave when more would have to be read: a pipe
 * from a program still running gives its text as it comes, as without
 * the thread (and a reader that stops early is not kept waiting). */
static void fill_buffer(at_input *in, zbuf *b)
{
    b->len = 0;
    b->end.kind = END_NONE;
    while (b->len < ZBUF && b->end.kind == END_NONE &&
           !(b->len && in->rpos == in->rlen && !in->eof))
        b->len += zstd_step(in, b->data + b->len, ZBUF - b->len, &b->end);
    b->file_pos = in->file_pos;
}

static void *decompress(void *arg)
{
    at_input *in = arg;
    ahead *q = in->ahead;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        while (q->full == NZBUF && !q->quit)
            pthread_cond_wait(&q->not_full, &q->lock);
        bool quit = q->quit, busy = q->full >= NZBUF / 2;
        pthread_mutex_unlock(&q->lock);
        if (quit)
            break;
        zbuf *b = &q->ring[q->fill];
        fill_buffer(in, b);
        if (in->scan)
            in->scan(in->scan_arg, b->data, b->len, q->out_off, busy);
        q->out_off += b->len;
        pthread_mutex_lock(&q->lock);
        q->full++;
        pthread_cond_signal(&q->not_empty);
        pthread_mutex_unlock(&q->lock);
        q->fill = (q->fill + 1) % NZBUF;
        if (b->end.kind != END_NONE)
            break;
    }
    return NULL;
}

static void free_ring(ahead *q)
{
    for (int i = 0; i < NZBUF; i++)
        free(q->ring[i].data);
    free(q);
}

/* Starts the thread; false (and no thread) when it cannot be. */
static bool ahead_start(at_input *in)
{
    ahead *q = at_xcalloc(1, sizeof *q);
    for (int i = 0; i < NZBUF; i++)
        q->ring[i].data = at_xmalloc(ZBUF);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    q->file_pos = in->file_pos;
    in->ahead = q;
    in->wake = in->fd >= 0 ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
    if ((in->fd < 0 || in->wake >= 0) && pthread_create(&q->tid, NULL, decompress, in) == 0)
        return true;
    if (in->wake >= 0)
        close(in->wake);
    in->wake = -1;
    in->ahead = NULL;
    free_ring(q);
    return false;
}

/* Ends the thread. When the reader stops before the end of the stream (an
 * error, a trace that is not one) the thread may be waiting for input on
 * a pipe whose writer goes on (a program still running, a terminal): the
 * wake descriptor ends that wait (raw_read), or the run would wait for
 * the writer. After the stream's end the thread has returned already. */
static void ahead_stop(at_input *in)
{
    ahead *q = in->ahead;
    if (!q)
        return;
    pthread_mutex_lock(&q->lock);
    q->quit = true;
    pthread_cond_signal(&q->not_full);
    pthread_mutex_unlock(&q->lock);
    uint64_t one = 1;
    if (write(in->wake, &one, sizeof one) < 0) {
        /* an eventfd's counter cannot overflow at 1: nothing to do */
    }
    pthread_join(q->tid, NULL);
    close(in->wake);
    in->wake = -1;
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    free_ring(q);
    in->ahead = NULL;
}

/* zstd_read through the thread: the bytes of one buffer at most (the
 * reader's buffer then holds little more than that, as without the
 * thread: filling it whole touched 4 MiB more), waiting only when none
 * is ready; the stream's end reported once its buffer's bytes are taken. */
static ssize_t ahead_read(at_input *in, char *buf, size_t cap)
{
    ahead *q = in->ahead;
    if (q->finished)
        return 0;
    size_t n = 0;
    while (n < cap) {
        if (!q->holding) {
            pthread_mutex_lock(&q->lock);
            while (!q->full)
                pthread_cond_wait(&q->not_empty, &q->lock);
            pthread_mutex_unlock(&q->lock);
            q->holding = true;
            q->pos = 0;
        }
        zbuf *b = &q->ring[q->head];
        size_t k = b->len - q->pos < cap - n ? b->len - q->pos : cap - n;
        memcpy(buf + n, b->data + q->pos, k);
        n += k;
        q->pos += k;
        q->file_pos = b->file_pos;
        if (q->pos < b->len)
            break;
        if (b->end.kind != END_NONE) { /* every byte of the stream taken */
            if (n)
                break; /* the end at the next call, after these bytes */
            q->finished = true;
            return report_end(in, &b->end);
        }
        pthread_mutex_lock(&q->lock);
        q->head = (q->head + 1) % NZBUF;
        q->full--;
        pthread_cond_signal(&q->not_full);
        pthread_mutex_unlock(&q->lock);
        q->holding = false;
        if (n)
            break;
    }
    return (ssize_t)n;
}

ssize_t at_input_read(at_input *in, char *buf, size_t cap)
{
    if (in->kind == IN_UNKNOWN && detect(in) < 0) {
        in->kind = IN_FAILED;
        return -1;
    }
    switch (in->kind) {
    case IN_PLAIN:
        return plain_read(in, buf, cap);
    case IN_ZSTD:
        if (in->want_ahead) {
            in->want_ahead = false;
            ahead_start(in);
        }
        return in->ahead ? ahead_read(in, buf, cap) : zstd_read(in, buf, cap);
    default:
        return 0;
    }
}
