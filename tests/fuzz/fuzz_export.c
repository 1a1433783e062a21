/*
 * tests/fuzz/fuzz_export.c: libFuzzer target for the exports. The first
 * byte picks the mode: odd, the rest is a Callgrind text for webgrind's
 * preprocessing (at_webgrind_preprocess must reject or read it, never
 * crash); even, the rest is a trace whose allocations become samples for
 * every export, written to /dev/null, and whose calls go through the
 * analyses into the HTML report. Our own Callgrind output must always be
 * one webgrind can read: a failure other than "too large" aborts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "diag.h"
#include "analyze.h"
#include "export.h"
#include "html.h"
#include "reader.h"
#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct collect {
    at_stage stage;
    at_stage *analyze; /* every record goes there too */
    at_sample *s;
    size_t n, cap;
} collect;

static void take(collect *c, const at_call *call)
{
    if (!call->is_alloc)
        return;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->s = realloc(c->s, c->cap * sizeof *c->s);
        if (!c->s)
            abort();
    }
    c->s[c->n++] = (at_sample){ call->stack, call->name, call->size, 1 };
}

static void put(at_stage *self, const at_record *r)
{
    collect *c = (collect *)self;
    c->analyze->put(c->analyze, r);
    if (r->kind == AT_REC_CALL)
        take(c, r->u.call);
    else if (r->kind == AT_REC_GROUP)
        for (size_t i = 0; i < r->u.group->ncalls; i++)
            take(c, r->u.group->calls[i]);
}

static void finish(at_stage *self)
{
    collect *c = (collect *)self;
    c->analyze->finish(c->analyze);
}

static int html(void *null_f, const at_analysis *an, at_trace *t)
{
    return at_export_html(null_f, an, t, (an->nsites & 1) != 0, 3);
}

static void exports(const uint8_t *data, size_t size, FILE *null_f)
{
    at_diag d;
    at_diag_init(&d, "fuzz");
    d.out = null_f;
    at_trace *t = at_trace_new();
    collect c = { .stage = { put, finish, NULL }, .analyze = at_analyze_stage_new(t, &d, html, null_f) };
    if (at_read_mem((const char *)data, size, t, &c.stage, &d) == 0) {
        at_profile *p = at_profile_build(c.s, c.n, t->maps, t->stacks);
        at_export_meta m = { t->header.process, t->header.pid, NULL, (size & 1) != 0, 0 };
        at_export_callgrind(null_f, p, &m);
        errno = 0;
        if (at_export_webgrind(null_f, p, &m) != 0 && errno != EOVERFLOW)
            abort();
        at_export_folded(null_f, p, AT_COST_BYTES, false);
        at_export_folded(null_f, p, AT_COST_BLOCKS, true);
        at_export_flamegraph(null_f, p, &m, (size & 2) ? AT_COST_BLOCKS : AT_COST_BYTES, size & 4);
        at_profile_free(p);
    }
    free(c.s);
    at_analyze_stage_free(c.analyze);
    at_trace_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null_f;
    if (!null_f)
        null_f = fopen("/dev/null", "w");
    uint8_t mode = size ? data[0] : 0;
    if (size) {
        data++;
        size--;
    }
    if (mode & 1) {
        unsigned char *out = NULL;
        size_t len = 0;
        uint64_t max = 0;
        char err[128];
        if (at_webgrind_preprocess((const char *)data, size, &out, &len, &max, err, sizeof err) == 0)
            free(out);
    } else {
        exports(data, size, null_f);
    }
    return 0;
}
