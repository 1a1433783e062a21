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
 */
#include "input.h"
#include "xalloc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#define RAW_BUF (128u << 10)
#define ZSTD_WINDOW_LOG_MAX 27

typedef enum { IN_UNKNOWN, IN_PLAIN, IN_ZSTD, IN_FAILED } in_kind;

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
    ZSTD_DCtx *zd;
    bool frame_open;    /* zstd: the last call ended inside a frame */
};

static at_input *input_new(at_diag *d)
{
    at_input *in = at_xcalloc(1, sizeof *in);
    in->d = d;
    in->fd = -1;
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

void at_input_free(at_input *in)
{
    if (!in)
        return;
    ZSTD_freeDCtx(in->zd);
    free(in->raw);
    free(in);
}

/* ---- raw bytes ---------------------------------------------------------- */

/* Up to cap bytes of the file itself; 0 at its end, -1 on an I/O error. */
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
        ssize_t got = read(in->fd, buf, cap);
        if (got >= 0 || errno != EINTR) {
            if (got < 0)
                at_diag_error(in->d, AT_EXIT_FAIL, "%s: read error: %s", in->d->file,
                              strerror(errno));
            else
                in->file_pos += (uint64_t)got;
            return got;
        }
    }
}

uint64_t at_input_file_bytes(const at_input *in)
{
    return in->file_pos;
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
        return -1;
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
    return in->eof ? 0 : raw_read(in, buf, cap);
}

/* Corrupt zstd data: an input error (see the opening comment). A frame
 * whose window is over the cap is no corruption but a file this reader
 * will not take the memory for: one error, as for gzip. */
static ssize_t zstd_corrupt(at_input *in, size_t code)
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
                              in->d->file, (unsigned long long)in->consumed,
                              ZSTD_getErrorName(code), in->d->strict ? "" : "; read up to there");
    in->kind = IN_FAILED;
    return stop ? -1 : 0;
}

static ssize_t zstd_read(at_input *in, char *buf, size_t cap)
{
    ZSTD_outBuffer out = { buf, cap, 0 };
    for (;;) {
        if (in->rpos == in->rlen && !in->eof && raw_fill(in, 1) < 0)
            return -1;
        ZSTD_inBuffer src = { in->raw, in->rlen, in->rpos };
        size_t out_before = out.pos;
        size_t ret = ZSTD_decompressStream(in->zd, &out, &src);
        bool moved = src.pos != in->rpos || out.pos != out_before;
        in->consumed += src.pos - in->rpos;
        in->rpos = src.pos;
        if (ZSTD_isError(ret))
            return zstd_corrupt(in, ret);
        /* a call that moved nothing only says what a next frame needs */
        if (moved)
            in->frame_open = ret != 0;
        if (out.pos > 0)
            return (ssize_t)out.pos;
        if (in->eof && in->rpos == in->rlen)
            break;
    }
    if (in->frame_open) {
        at_diag_warn(in->d, "%s: the zstd stream ends inside a frame (the trace was cut short); "
                            "read up to there", in->d->file);
        in->frame_open = false;
    }
    return 0;
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
        return zstd_read(in, buf, cap);
    default:
        return 0;
    }
}
