/*
 * tests/unit/pp_run.h: what the post-processor's unit tests share: run a
 * trace text (written in the test) through the stages main.c would chain,
 * and get back the output text, the messages and the read status.
 */
#ifndef PP_RUN_H
#define PP_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compress.h"
#include "diag.h"
#include "leaks.h"
#include "reader.h"
#include "select.h"
#include "trace.h"
#include "writer.h"

typedef struct pp_opts {
    bool leaks, compress, strict;
    bool from_fd;   /* read as a file is (at_read_fd: zstd on its own thread) */
    at_sort sort;
    unsigned depth;
    const at_select_opts *select;
} pp_opts;

typedef struct pp_result {
    char *out;      /* what the writer wrote */
    char *msgs;     /* what went to stderr */
    int rc;         /* at_read_mem's (at_read_fd's) result */
    uint64_t warnings;
    int status;     /* diag status when failed, else 0 */
    uint64_t hints; /* from_fd: line starts read from the scanner's hints */
} pp_result;

static inline char *pp_slurp_fd(int fd)
{
    off_t len = lseek(fd, 0, SEEK_END);
    char *s = malloc((size_t)len + 1);
    if (pread(fd, s, (size_t)len, 0) != len)
        abort();
    s[len] = '\0';
    return s;
}

/* The same for len bytes that may hold NUL bytes. */
static inline pp_result pp_run_bytes(const char *in, size_t len, const pp_opts *o)
{
    pp_opts none = { 0 };
    if (!o)
        o = &none;
    pp_result res = { 0 };
    size_t mlen;
    FILE *mf = open_memstream(&res.msgs, &mlen);
    FILE *of = tmpfile();
    at_diag d;
    at_diag_init(&d, "t.trace");
    d.out = mf;
    d.strict = o->strict;
    at_trace *t = at_trace_new();
    at_stage *w = at_writer_new(fileno(of), t, &d), *head = w;
    at_stage *c = NULL, *s = NULL, *l = NULL;
    if (o->compress || o->depth)
        head = c = at_compress_new(head, t, &d, o->compress, o->sort, o->depth);
    if (o->select) {
        s = at_select_new(head, t, o->select, &d);
        if (s)
            head = s;
    }
    if (o->leaks)
        head = l = at_leaks_new(head, t);
    if (o->from_fd) {
        FILE *inf = tmpfile();
        if (fwrite(in, 1, len, inf) != len || fflush(inf) != 0)
            abort();
        rewind(inf);
        at_read_opts ro = { .hints_used = &res.hints };
        res.rc = at_read_fd(fileno(inf), t, head, &d, &ro);
        fclose(inf);
    } else {
        res.rc = at_read_mem(in, len, t, head, &d);
    }
    if (res.rc == 0)
        at_stage_finish(head);
    res.out = pp_slurp_fd(fileno(of));
    res.warnings = d.warnings;
    res.status = d.failed ? d.status : 0;
    at_leaks_free(l);
    at_select_free(s);
    at_compress_free(c);
    at_writer_free(w);
    at_trace_free(t);
    fclose(of);
    fclose(mf);
    return res;
}

static inline pp_result pp_run(const char *in, const pp_opts *o)
{
    return pp_run_bytes(in, strlen(in), o);
}

static inline void pp_free(pp_result *r)
{
    free(r->out);
    free(r->msgs);
}

#endif
