/*
 * postproc/writer.c: the trace text format out (writer.h).
 *
 * Output goes through one 1 MiB buffer and write(2); numbers are formatted
 * by hand (no printf per field), because writing a multi-gigabyte trace
 * back must not cost more than reading it. Text from the input (comments,
 * names, frame texts) is copied as bytes, never used as a format.
 */
#include "leakkind.h"
#include "writer.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <alloctrace/format.h>

#define OUT_BUF (1u << 20)

typedef struct writer {
    at_stage stage;
    int fd;
    at_trace *t;
    at_diag *d;
    bool broken;
    char *buf;
    size_t len;
    uint64_t group_blocks, group_size; /* of the pieces of a group so far */
    uint8_t group_kind;                /* leak kind line written in this group */
    uint64_t leak_count[AT_MAX_RESOURCES];
    uint64_t leak_size[AT_MAX_RESOURCES];
} writer;

static void flush(writer *w)
{
    size_t off = 0;
    while (off < w->len && !w->broken) {
        ssize_t n = write(w->fd, w->buf + off, w->len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            at_diag_error(w->d, AT_EXIT_FAIL, "write error: %s", strerror(errno));
            w->broken = true;
            break;
        }
        off += (size_t)n;
    }
    w->len = 0;
}

static void out(writer *w, const char *s, size_t n)
{
    if (w->len + n > OUT_BUF) {
        flush(w);
        if (n > OUT_BUF) {
            size_t off = 0;
            while (off < n && !w->broken) {
                ssize_t k = write(w->fd, s + off, n - off);
                if (k < 0 && errno == EINTR)
                    continue;
                if (k < 0) {
                    at_diag_error(w->d, AT_EXIT_FAIL, "write error: %s", strerror(errno));
                    w->broken = true;
                    break;
                }
                off += (size_t)k;
            }
            return;
        }
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void outs(writer *w, const char *s)
{
    out(w, s, strlen(s));
}

static void outc(writer *w, char c)
{
    if (w->len == OUT_BUF)
        flush(w);
    w->buf[w->len++] = c;
}

static void out_dec(writer *w, uint64_t v)
{
    char tmp[24];
    int i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    out(w, tmp + i, sizeof tmp - (size_t)i);
}

static void out_hex(writer *w, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[16];
    int i = sizeof tmp;
    do {
        tmp[--i] = digits[v & 15];
        v >>= 4;
    } while (v);
    out(w, tmp + i, sizeof tmp - (size_t)i);
}

static void out_2(writer *w, unsigned v)
{
    outc(w, (char)('0' + v / 10 % 10));
    outc(w, (char)('0' + v % 10));
}

/* A header value: ',' and newlines would break the line; they become '_'. */
static void out_value(writer *w, const char *v)
{
    for (; *v; v++)
        outc(w, (*v == ',' || *v == '\n' || *v == '\r') ? '_' : *v);
}

static void field(writer *w, const char *key, const char *value)
{
    if (!value)
        return;
    outs(w, key);
    outc(w, '=');
    out_value(w, value);
    outs(w, AT_HDR_FIELD_END);
}

static void write_header(writer *w, const at_header *h)
{
    if (!h->present && !h->filter && !h->filter_other)
        return;
    field(w, AT_HDR_VERSION, h->version);
    field(w, AT_HDR_ARCH, h->arch);
    field(w, AT_HDR_TIMESTAMP, h->timestamp);
    field(w, AT_HDR_PROCESS, h->process);
    field(w, AT_HDR_PID, h->pid);
    if (h->filter || h->filter_other) {
        static const struct {
            unsigned bit;
            const char *name;
        } f[] = { { AT_F_LEAKS, AT_FILTER_LEAKS },
                  { AT_F_COMPRESS, AT_FILTER_COMPRESS },
                  { AT_F_RESOLVE, AT_FILTER_RESOLVE } };
        bool first = true;
        outs(w, AT_HDR_FILTER "=");
        for (size_t i = 0; i < 3; i++) {
            if (!(h->filter & f[i].bit))
                continue;
            if (!first)
                outc(w, '|');
            outs(w, f[i].name);
            first = false;
        }
        if (h->filter_other) {
            if (!first)
                outc(w, '|');
            out_value(w, h->filter_other);
        }
        outs(w, AT_HDR_FIELD_END);
    }
    field(w, AT_HDR_DEPTH, h->depth);
    field(w, AT_HDR_SAMPLE, h->sample);
    field(w, AT_HDR_ORIGIN, h->origin);
    for (size_t i = 0; i < h->nunknown; i++)
        field(w, h->unknown[i].key, h->unknown[i].value);
    outc(w, '\n');
}

static int res_slot(const at_trace *t, uint32_t bit)
{
    for (uint32_t i = 0; i < t->nresources; i++)
        if (t->resources[i].bit == bit)
            return (int)i;
    return -1;
}

static void call_line(writer *w, const at_call *c)
{
    out_dec(w, c->index);
    outs(w, ". ");
    if (c->context) {
        outc(w, '@');
        out_hex(w, c->context);
        outc(w, ' ');
    }
    if (c->has_time) {
        uint64_t us = c->time_us % 1000000, s = c->time_us / 1000000;
        outc(w, '[');
        out_2(w, (unsigned)(s / 3600));
        outc(w, ':');
        out_2(w, (unsigned)(s / 60 % 60));
        outc(w, ':');
        out_2(w, (unsigned)(s % 60));
        outc(w, '.');
        char frac[6];
        for (int i = 5; i >= 0; i--, us /= 10)
            frac[i] = (char)('0' + us % 10);
        out(w, frac, 6);
        outs(w, "] ");
    }
    outs(w, c->name);
    if (w->t->nresources > 1) {
        const at_resource *r = at_trace_resource(w->t, c->res);
        if (r) {
            outc(w, '<');
            outs(w, r->name);
            outc(w, '>');
        }
    }
    outc(w, '(');
    if (c->is_alloc) {
        out_dec(w, c->size);
        outs(w, ") = 0x");
        out_hex(w, c->id);
    } else {
        outs(w, "0x");
        out_hex(w, c->id);
        outc(w, ')');
    }
    outc(w, '\n');
    for (uint32_t i = 0; i < c->nargs; i++) {
        outs(w, "\t$");
        outs(w, c->args[i].name);
        outs(w, " = ");
        outs(w, c->args[i].value);
        outc(w, '\n');
    }
    if (c->is_alloc) {
        int slot = res_slot(w->t, c->res);
        if (slot >= 0) {
            w->leak_count[slot]++;
            w->leak_size[slot] += c->size;
        }
    }
}

/* The leak kind line before a call line (TEXT_FORMAT.md), once per group. */
static void kind_line(writer *w, uint8_t kind)
{
    if (!kind || kind == w->group_kind)
        return;
    outs(w, AT_LEAK_KIND_PREFIX);
    outs(w, at_leak_kind_name((at_leak_kind)kind));
    outc(w, '\n');
    w->group_kind = kind;
}

static void frames(writer *w, const at_stack *s)
{
    for (uint32_t i = 0; i < s->nframes; i++) {
        outs(w, "\t0x");
        out_hex(w, s->frames[i].addr);
        if (s->frames[i].text) {
            outc(w, ' ');
            outs(w, s->frames[i].text);
        }
        outc(w, '\n');
    }
    outc(w, '\n');
}

static void write_group(writer *w, const at_group *g)
{
    for (size_t i = 0; i < g->ncalls; i++) {
        kind_line(w, g->calls[i]->kind);
        call_line(w, g->calls[i]);
        if (g->calls[i]->is_alloc) {
            w->group_blocks++;
            w->group_size += g->calls[i]->size;
        }
    }
    if (g->more)
        return;
    outs(w, AT_ALLOC_SUMMARY);
    out_dec(w, w->group_blocks);
    outs(w, " block(s) with total size ");
    out_dec(w, w->group_size);
    outc(w, '\n');
    frames(w, g->stack);
    w->group_blocks = w->group_size = 0;
    w->group_kind = 0;
}

static void put(at_stage *self, const at_record *r)
{
    writer *w = (writer *)self;
    switch (r->kind) {
    case AT_REC_HEADER:
        write_header(w, r->u.header);
        break;
    case AT_REC_RESOURCE:
        outc(w, '<');
        out_hex(w, r->u.resource->bit);
        outs(w, "> : ");
        outs(w, r->u.resource->name);
        outs(w, " (");
        outs(w, r->u.resource->desc);
        outc(w, ')');
        if (r->u.resource->refcount)
            outs(w, " [refcount]");
        outc(w, '\n');
        break;
    case AT_REC_CONTEXT:
        outs(w, AT_CTX_PREFIX);
        out_hex(w, r->u.context->bit);
        outs(w, " : ");
        outs(w, r->u.context->name);
        outc(w, '\n');
        break;
    case AT_REC_MAP:
        outs(w, AT_MAP_PREFIX);
        outs(w, r->u.map->path);
        outs(w, AT_MAP_ARROW "0x");
        out_hex(w, r->u.map->start);
        outs(w, "-0x");
        out_hex(w, r->u.map->end);
        outc(w, '\n');
        break;
    case AT_REC_COMMENT:
        out(w, r->u.comment.text, r->u.comment.len);
        outc(w, '\n');
        break;
    case AT_REC_ATTACHMENT:
        outs(w, AT_ATTACH_PREFIX);
        outs(w, r->u.attachment.name);
        outs(w, " : ");
        outs(w, r->u.attachment.path);
        outc(w, '\n');
        break;
    case AT_REC_CALL:
        kind_line(w, r->u.call->kind);
        w->group_kind = 0;
        call_line(w, r->u.call);
        frames(w, r->u.call->stack);
        break;
    case AT_REC_GROUP:
        write_group(w, r->u.group);
        break;
    }
}

static void finish(at_stage *self)
{
    writer *w = (writer *)self;
    if (w->t->header.filter & AT_F_LEAKS) {
        for (uint32_t i = 0; i < w->t->nresources; i++) {
            const at_resource *r = &w->t->resources[i];
            outs(w, "# Resource - ");
            outs(w, r->name);
            outs(w, " (");
            outs(w, r->desc);
            outs(w, "):\n# ");
            out_dec(w, w->leak_count[i]);
            outs(w, " block(s) leaked with total size of ");
            out_dec(w, w->leak_size[i]);
            outs(w, " bytes\n");
        }
    }
    flush(w);
}

at_stage *at_writer_new(int fd, at_trace *t, at_diag *d)
{
    writer *w = at_xcalloc(1, sizeof *w);
    w->buf = at_xmalloc(OUT_BUF);
    w->stage = (at_stage){ .put = put, .finish = finish, .next = NULL };
    w->fd = fd;
    w->t = t;
    w->d = d;
    return &w->stage;
}

void at_writer_free(at_stage *s)
{
    writer *w = (writer *)s;
    if (!w)
        return;
    free(w->buf);
    free(w);
}
