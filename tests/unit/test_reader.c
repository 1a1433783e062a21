/* tests/unit/test_reader.c: every record kind of TEXT_FORMAT.md read by
 * postproc/read/reader.c, and each malformed case. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leakkind.h"
#include "pp_run.h"

/* A stage that keeps copies of everything it is given. */
typedef struct collector {
    at_stage stage;
    at_record *recs[256];
    int n;
    bool finished;
} collector;

static void collect_put(at_stage *s, const at_record *r)
{
    collector *c = (collector *)s;
    if (c->n < 256)
        c->recs[c->n++] = at_record_copy(r);
}

static void collect_finish(at_stage *s)
{
    ((collector *)s)->finished = true;
}

typedef struct parsed {
    at_trace *t;
    collector c;
    at_diag d;
    char *msgs;
    size_t mlen;
    FILE *mf;
    int rc;
} parsed;

static parsed *parse_opts(const char *text, bool strict)
{
    parsed *p = calloc(1, sizeof *p);
    p->t = at_trace_new();
    p->c.stage = (at_stage){ .put = collect_put, .finish = collect_finish };
    p->mf = open_memstream(&p->msgs, &p->mlen);
    at_diag_init(&p->d, "t.trace");
    p->d.out = p->mf;
    p->d.strict = strict;
    p->rc = at_read_mem(text, strlen(text), p->t, &p->c.stage, &p->d);
    fflush(p->mf);
    return p;
}

static parsed *parse(const char *text)
{
    return parse_opts(text, false);
}

static void parsed_free(parsed *p)
{
    for (int i = 0; i < p->c.n; i++)
        at_record_free(p->c.recs[i]);
    fclose(p->mf);
    free(p->msgs);
    at_trace_free(p->t);
    free(p);
}

/* The i-th record of a kind. */
static const at_record *nth(parsed *p, at_rec_kind kind, int i)
{
    for (int k = 0; k < p->c.n; k++)
        if (p->c.recs[k]->kind == kind && i-- == 0)
            return p->c.recs[k];
    return NULL;
}

static int count(parsed *p, at_rec_kind kind)
{
    int n = 0;
    for (int k = 0; k < p->c.n; k++)
        n += p->c.recs[k]->kind == kind;
    return n;
}

#define HDR "version=2.0, arch=x86_64, timestamp=2026.11.22 10:43:07, process=./server, pid=4242, backtrace depth=32, origin=alloctrace 0.1.0, \n"
#define MEM "<1> : memory (memory allocation in bytes)\n"

static void header_known_keys_are_parsed(void **state)
{
    (void)state;
    parsed *p = parse(HDR);
    assert_int_equal(p->rc, 0);
    const at_header *h = &p->t->header;
    assert_true(h->present);
    assert_string_equal(h->version, "2.0");
    assert_string_equal(h->arch, "x86_64");
    assert_string_equal(h->timestamp, "2026.11.22 10:43:07");
    assert_string_equal(h->process, "./server");
    assert_string_equal(h->pid, "4242");
    assert_string_equal(h->depth, "32");
    assert_string_equal(h->origin, "alloctrace 0.1.0");
    assert_int_equal(h->nunknown, 0);
    assert_int_equal(p->c.recs[0]->kind, AT_REC_HEADER);
    assert_int_equal(p->d.warnings, 0);
    parsed_free(p);
}

static void header_without_trailing_separator_keeps_unknown_keys(void **state)
{
    (void)state;
    parsed *p = parse("version=2.0, colour=blue, arch=arm, size=big\n");
    const at_header *h = &p->t->header;
    assert_string_equal(h->version, "2.0");
    assert_string_equal(h->arch, "arm");
    assert_int_equal(h->nunknown, 2);
    assert_string_equal(h->unknown[0].key, "colour");
    assert_string_equal(h->unknown[0].value, "blue");
    assert_string_equal(h->unknown[1].key, "size");
    assert_string_equal(h->unknown[1].value, "big");
    assert_int_equal(p->d.warnings, 0);
    parsed_free(p);
}

static void header_sp_rtrace_unpadded_timestamp_is_normalized(void **state)
{
    (void)state;
    parsed *p = parse("version=2.0, timestamp=2011.3.4 9:05:7, \n");
    assert_string_equal(p->t->header.timestamp, "2011.03.04 09:05:07");
    parsed_free(p);
}

static void header_filter_words_and_compress_is_cleared(void **state)
{
    (void)state;
    parsed *p = parse("version=2.0, filter=leaks|compress|resolve|other, \n");
    assert_int_equal(p->t->header.filter, AT_F_LEAKS | AT_F_RESOLVE);
    assert_string_equal(p->t->header.filter_other, "other");
    assert_true(p->t->input_compressed);
    parsed_free(p);
}

static void resource_registry_with_refcount_flag(void **state)
{
    (void)state;
    parsed *p = parse(HDR MEM "<2> : gobject (GObject (ref) instances) [refcount]\n");
    assert_int_equal(count(p, AT_REC_RESOURCE), 2);
    const at_resource *m = nth(p, AT_REC_RESOURCE, 0)->u.resource;
    const at_resource *g = nth(p, AT_REC_RESOURCE, 1)->u.resource;
    assert_int_equal(m->bit, 1);
    assert_string_equal(m->name, "memory");
    assert_string_equal(m->desc, "memory allocation in bytes");
    assert_false(m->refcount);
    assert_int_equal(g->bit, 2);
    assert_string_equal(g->name, "gobject");
    assert_string_equal(g->desc, "GObject (ref) instances");
    assert_true(g->refcount);
    parsed_free(p);
}

static void context_registry_is_hex_bit_and_name(void **state)
{
    (void)state;
    parsed *p = parse(HDR "@ 1 : parse-phase\n@ 10 : render phase two\n");
    assert_int_equal(count(p, AT_REC_CONTEXT), 2);
    assert_int_equal(nth(p, AT_REC_CONTEXT, 1)->u.context->bit, 0x10);
    assert_string_equal(nth(p, AT_REC_CONTEXT, 1)->u.context->name, "render phase two");
    parsed_free(p);
}

static void map_line_with_spaces_in_path(void **state)
{
    (void)state;
    parsed *p = parse(HDR ": /opt/my app/lib => x.so => 0x7f00-0x8f00\n");
    const at_map *m = nth(p, AT_REC_MAP, 0)->u.map;
    assert_string_equal(m->path, "/opt/my app/lib => x.so");
    assert_int_equal(m->start, 0x7f00);
    assert_int_equal(m->end, 0x8f00);
    parsed_free(p);
}

static void build_id_comment_sets_map_build_id_and_stays_a_comment(void **state)
{
    (void)state;
    parsed *p = parse(HDR ": /usr/lib/libc.so.6 => 0x1000-0x2000\n"
                          "## build-id: /usr/lib/libc.so.6 => 93ac61ec\n");
    assert_string_equal(at_maps_get(p->t->maps, 0)->build_id, "93ac61ec");
    const at_record *c = nth(p, AT_REC_COMMENT, 0);
    assert_non_null(c);
    assert_string_equal(c->u.comment.text, "## build-id: /usr/lib/libc.so.6 => 93ac61ec");
    parsed_free(p);
}

static void call_with_context_time_and_frames(void **state)
{
    (void)state;
    parsed *p = parse(HDR MEM "18. @1f [10:43:07.120601] calloc(400) = 0x55d0c3a0e2d0\n"
                              "\t0x55d0c2f1a1c9\n"
                              "\t0x55d0c2f1a2e4 parse_config() at /home/u/src/config.c:88\n\n");
    const at_call *c = nth(p, AT_REC_CALL, 0)->u.call;
    assert_int_equal(c->index, 18);
    assert_int_equal(c->context, 0x1f);
    assert_true(c->has_time);
    assert_int_equal(c->time_us, ((10 * 60 + 43) * 60 + 7) * 1000000ull + 120601);
    assert_string_equal(c->name, "calloc");
    assert_true(c->is_alloc);
    assert_int_equal(c->size, 400);
    assert_int_equal(c->id, 0x55d0c3a0e2d0);
    assert_int_equal(c->res, 1);
    assert_int_equal(c->stack->nframes, 2);
    assert_int_equal(c->stack->frames[0].addr, 0x55d0c2f1a1c9);
    assert_null(c->stack->frames[0].text);
    assert_string_equal(c->stack->frames[1].text, "parse_config() at /home/u/src/config.c:88");
    assert_int_equal(p->d.warnings, 0);
    parsed_free(p);
}

static void call_without_context_or_time_and_empty_backtrace(void **state)
{
    (void)state;
    parsed *p = parse(HDR "3. malloc(0) = 0x10\n\n");
    const at_call *c = nth(p, AT_REC_CALL, 0)->u.call;
    assert_int_equal(c->index, 3);
    assert_int_equal(c->context, 0);
    assert_false(c->has_time);
    assert_int_equal(c->size, 0);
    assert_int_equal(c->stack->nframes, 0);
    parsed_free(p);
}

static void millisecond_time_of_sp_rtrace_is_read_as_microseconds(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. [01:02:03.456] malloc(8) = 0x10\n\n");
    const at_call *c = nth(p, AT_REC_CALL, 0)->u.call;
    assert_int_equal(c->time_us, ((1 * 60 + 2) * 60 + 3) * 1000000ull + 456000);
    parsed_free(p);
}

static void release_line_has_id_and_no_size(void **state)
{
    (void)state;
    parsed *p = parse(HDR "19. @2 free(0x55d0c3a0e2a0)\n\t0x10 f() from /lib/x.so\n\n");
    const at_call *c = nth(p, AT_REC_CALL, 0)->u.call;
    assert_false(c->is_alloc);
    assert_int_equal(c->id, 0x55d0c3a0e2a0);
    assert_int_equal(c->context, 2);
    assert_string_equal(c->name, "free");
    assert_int_equal(c->stack->nframes, 1);
    parsed_free(p);
}

static void type_is_split_only_when_registered(void **state)
{
    (void)state;
    parsed *p = parse(HDR MEM "<2> : fd (file descriptors)\n"
                              "1. open<fd>(1) = 0x3\n\n"
                              "2. operator new<int>(4) = 0x20\n\n");
    const at_call *a = nth(p, AT_REC_CALL, 0)->u.call;
    const at_call *b = nth(p, AT_REC_CALL, 1)->u.call;
    assert_string_equal(a->name, "open");
    assert_int_equal(a->res, 2);
    assert_string_equal(b->name, "operator new<int>");
    assert_int_equal(b->res, 1);
    parsed_free(p);
}

static void argument_values_keep_spaces(void **state)
{
    (void)state;
    parsed *p = parse(HDR "20. posix_memalign(4096) = 0x11000\n"
                          "\t$alignment = 4096\n\t$note = a b  c\n\t0x10\n\n");
    const at_call *c = nth(p, AT_REC_CALL, 0)->u.call;
    assert_int_equal(c->nargs, 2);
    assert_string_equal(c->args[0].name, "alignment");
    assert_string_equal(c->args[0].value, "4096");
    assert_string_equal(c->args[1].name, "note");
    assert_string_equal(c->args[1].value, "a b  c");
    parsed_free(p);
}

static void compressed_group_gives_each_call_the_frames(void **state)
{
    (void)state;
    parsed *p = parse("version=2.0, filter=leaks|compress, \n"
                      "5. malloc(10) = 0x10\n"
                      "9. malloc(20) = 0x20\n\t$x = 1\n"
                      "# allocation summary: 2 block(s) with total size 30\n"
                      "\t0x400\n\t0x500\n\n");
    assert_int_equal(count(p, AT_REC_CALL), 2);
    const at_call *a = nth(p, AT_REC_CALL, 0)->u.call;
    const at_call *b = nth(p, AT_REC_CALL, 1)->u.call;
    assert_int_equal(a->index, 5);
    assert_int_equal(b->index, 9);
    assert_int_equal(a->nargs, 0);
    assert_int_equal(b->nargs, 1);
    assert_ptr_equal(a->stack, b->stack);
    assert_int_equal(a->stack->nframes, 2);
    assert_int_equal(p->t->header.filter, AT_F_LEAKS);
    assert_int_equal(p->d.warnings, 0);
    parsed_free(p);
}

/* A "## leak kind:" line is no comment: it gives the calls of the next
 * block (all of a compressed group's) their kind, and no more. A word
 * that names no kind leaves the line a comment. */
static void leak_kind_line_gives_the_next_block_its_kind(void **state)
{
    (void)state;
    parsed *p = parse("version=2.0, filter=leaks|compress, \n"
                      "## leak kind: indirect\n"
                      "5. malloc(10) = 0x10\n"
                      "9. malloc(20) = 0x20\n"
                      "# allocation summary: 2 block(s) with total size 30\n"
                      "\t0x400\n\n"
                      "## leak kind: sideways\n"
                      "11. malloc(1) = 0x30\n\t0x500\n\n");
    assert_int_equal(count(p, AT_REC_CALL), 3);
    assert_int_equal(nth(p, AT_REC_CALL, 0)->u.call->kind, AT_LEAK_INDIRECT);
    assert_int_equal(nth(p, AT_REC_CALL, 1)->u.call->kind, AT_LEAK_INDIRECT);
    assert_int_equal(nth(p, AT_REC_CALL, 2)->u.call->kind, AT_LEAK_UNKNOWN);
    assert_int_equal(count(p, AT_REC_COMMENT), 1);
    assert_string_equal(nth(p, AT_REC_COMMENT, 0)->u.comment.text, "## leak kind: sideways");
    parsed_free(p);
}

static void temporary_comments_are_dropped_others_kept_verbatim(void **state)
{
    (void)state;
    parsed *p = parse(HDR "# temporary\n## kept 100%s %d\nheap status: fine\n#\n");
    assert_int_equal(count(p, AT_REC_COMMENT), 3);
    assert_string_equal(nth(p, AT_REC_COMMENT, 0)->u.comment.text, "## kept 100%s %d");
    assert_string_equal(nth(p, AT_REC_COMMENT, 1)->u.comment.text, "heap status: fine");
    assert_string_equal(nth(p, AT_REC_COMMENT, 2)->u.comment.text, "#");
    assert_int_equal(p->d.warnings, 1); /* the non-'#' line */
    assert_non_null(strstr(p->msgs, "t.trace:4: warning:"));
    parsed_free(p);
}

static void comment_inside_a_call_goes_after_it(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(1) = 0x1\n## note\n\t0x10\n\n2. malloc(2) = 0x2\n\n");
    assert_int_equal(p->c.recs[1]->kind, AT_REC_CALL);
    assert_int_equal(p->c.recs[2]->kind, AT_REC_COMMENT);
    assert_int_equal(p->c.recs[3]->kind, AT_REC_CALL);
    assert_int_equal(nth(p, AT_REC_CALL, 0)->u.call->stack->nframes, 1);
    parsed_free(p);
}

static void attachment_name_and_path(void **state)
{
    (void)state;
    parsed *p = parse(HDR "& core dump : /tmp/a b/core\n");
    const at_record *a = nth(p, AT_REC_ATTACHMENT, 0);
    assert_string_equal(a->u.attachment.name, "core dump");
    assert_string_equal(a->u.attachment.path, "/tmp/a b/core");
    parsed_free(p);
}

static void crlf_line_ends_are_accepted(void **state)
{
    (void)state;
    parsed *p = parse("version=2.0, arch=x86_64, \r\n<1> : memory (bytes)\r\n"
                      "1. malloc(8) = 0x10\r\n\t0x20 f() at a.c:1\r\n\r\n");
    assert_string_equal(p->t->header.arch, "x86_64");
    const at_call *c = nth(p, AT_REC_CALL, 0)->u.call;
    assert_int_equal(c->id, 0x10);
    assert_string_equal(c->stack->frames[0].text, "f() at a.c:1");
    assert_int_equal(p->d.warnings, 0);
    parsed_free(p);
}

static void very_long_lines_are_read_whole(void **state)
{
    (void)state;
    size_t n = 6u << 20; /* longer than the reader's 4 MiB block */
    char *name = malloc(n + 1);
    memset(name, 'x', n);
    name[n] = '\0';
    size_t len = strlen(HDR) + n + 64;
    char *text = malloc(len);
    snprintf(text, len, HDR "1. malloc(8) = 0x10\n\t0x20 %s\n\n", name);
    /* through a file, so the fd reader's buffer has to grow */
    char path[] = "/tmp/pp-long-XXXXXX";
    int fd = mkstemp(path);
    assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    lseek(fd, 0, SEEK_SET);
    at_trace *t = at_trace_new();
    collector c = { .stage = { .put = collect_put, .finish = collect_finish } };
    at_diag d;
    at_diag_init(&d, path);
    assert_int_equal(at_read_fd(fd, t, &c.stage, &d, NULL), 0);
    assert_int_equal(c.n, 2);
    assert_int_equal(strlen(c.recs[1]->u.call->stack->frames[0].text), n);
    for (int i = 0; i < c.n; i++)
        at_record_free(c.recs[i]);
    at_trace_free(t);
    close(fd);
    unlink(path);
    free(text);
    free(name);
}

static void truncated_last_record_is_one_warning_and_dropped(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(8) = 0x10\n\t0x20\n\n2. malloc(9) = 0x11\n\t0x20\n");
    assert_int_equal(p->rc, 0);
    assert_int_equal(count(p, AT_REC_CALL), 1);
    assert_int_equal(p->d.warnings, 1);
    assert_non_null(strstr(p->msgs, "t.trace:5: warning: truncated last record (call 2) dropped"));
    parsed_free(p);
}

static void partial_last_line_is_one_warning(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(8) = 0x10\n\t0x20\n\n2. malloc(9) = 0x1");
    assert_int_equal(count(p, AT_REC_CALL), 1);
    assert_int_equal(p->d.warnings, 1);
    assert_non_null(strstr(p->msgs, "t.trace:5: warning: truncated last line dropped"));
    parsed_free(p);
}

static void malformed_call_line_is_a_warning_and_its_block_skipped(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(8 = 0x10\n\t0x20\n\t0x30\n\n2. malloc(9) = 0x11\n\n");
    assert_int_equal(count(p, AT_REC_CALL), 1);
    assert_int_equal(nth(p, AT_REC_CALL, 0)->u.call->index, 2);
    assert_int_equal(p->d.warnings, 1);
    assert_non_null(strstr(p->msgs, "t.trace:2: warning: malformed call line"));
    parsed_free(p);
}

static void malformed_numbers_are_rejected(void **state)
{
    (void)state;
    const char *bad[] = {
        HDR "1. malloc(99999999999999999999) = 0x10\n\n", /* size overflow */
        HDR "1. malloc(8) = 0x1234567890abcdef1\n\n",     /* id overflow */
        HDR "1. [10:43:07.12] malloc(8) = 0x10\n\n",      /* 2 fraction digits */
        HDR "1. @zz malloc(8) = 0x10\n\n",                /* bad context */
        HDR "1. free(0xzz)\n\n",
        HDR "1. (8) = 0x10\n\n",                          /* no name */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        parsed *p = parse(bad[i]);
        assert_int_equal(count(p, AT_REC_CALL), 0);
        assert_int_equal(p->d.warnings, 1);
        parsed_free(p);
    }
}

static void malformed_frame_and_argument_lines_warn(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(8) = 0x10\n\t0x20\n\tgarbage\n\t$late = 1\n\n");
    assert_int_equal(count(p, AT_REC_CALL), 1);
    assert_int_equal(p->d.warnings, 2);
    assert_non_null(strstr(p->msgs, "t.trace:4: warning: malformed frame line"));
    assert_non_null(strstr(p->msgs, "t.trace:5: warning: argument line after the frames"));
    parsed_free(p);
}

static void frame_outside_a_call_warns(void **state)
{
    (void)state;
    parsed *p = parse(HDR "\t0x20\n");
    assert_int_equal(p->d.warnings, 1);
    assert_non_null(strstr(p->msgs, "t.trace:2: warning: argument or frame line outside"));
    parsed_free(p);
}

static void decreasing_index_warns(void **state)
{
    (void)state;
    parsed *p = parse(HDR "5. malloc(8) = 0x10\n\n4. malloc(8) = 0x20\n\n");
    assert_int_equal(count(p, AT_REC_CALL), 2);
    assert_int_equal(p->d.warnings, 1);
    assert_non_null(strstr(p->msgs, "t.trace:4: warning: call index 4 does not follow 5"));
    parsed_free(p);
}

static void missing_blank_line_before_next_record_warns(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(8) = 0x10\n\t0x20\n2. malloc(8) = 0x20\n\n");
    assert_int_equal(count(p, AT_REC_CALL), 2);
    assert_int_equal(nth(p, AT_REC_CALL, 0)->u.call->stack->nframes, 1);
    assert_int_equal(nth(p, AT_REC_CALL, 1)->u.call->stack->nframes, 0);
    assert_int_equal(p->d.warnings, 1);
    assert_non_null(strstr(p->msgs, "t.trace:2: warning: call record not ended by a blank line"));
    parsed_free(p);
}

static void strict_turns_a_malformed_line_into_an_error(void **state)
{
    (void)state;
    parsed *p = parse_opts(HDR "1. malloc(8) = 0x10\n\n2. nonsense\n\n3. malloc(1) = 0x1\n\n", true);
    assert_int_equal(p->rc, -1);
    assert_int_equal(p->d.status, AT_EXIT_USAGE);
    assert_non_null(strstr(p->msgs, "t.trace:4: error: malformed call line"));
    assert_int_equal(count(p, AT_REC_CALL), 1);
    parsed_free(p);
}

static void missing_header_is_a_warning(void **state)
{
    (void)state;
    parsed *p = parse("1. malloc(8) = 0x10\n\n");
    assert_false(p->t->header.present);
    assert_int_equal(count(p, AT_REC_CALL), 1);
    assert_int_equal(p->d.warnings, 1);
    assert_int_equal(p->c.recs[0]->kind, AT_REC_HEADER);
    parsed_free(p);
}

/* An empty input is no trace (the traced process wrote nothing): an
 * error, with or without --strict, and no record. */
static void empty_input_is_an_error_and_no_record(void **state)
{
    (void)state;
    parsed *p = parse("");
    assert_int_equal(p->c.n, 0);
    assert_false(p->t->header.present);
    assert_true(p->d.failed);
    assert_int_equal(p->d.status, AT_EXIT_USAGE);
    parsed_free(p);
}

static void equal_frame_lists_share_one_stack(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(8) = 0x10\n\t0x20\n\t0x30\n\n"
                          "2. malloc(8) = 0x11\n\t0x20\n\t0x30\n\n"
                          "3. malloc(8) = 0x12\n\t0x20\n\n");
    assert_ptr_equal(nth(p, AT_REC_CALL, 0)->u.call->stack, nth(p, AT_REC_CALL, 1)->u.call->stack);
    assert_ptr_not_equal(nth(p, AT_REC_CALL, 0)->u.call->stack,
                         nth(p, AT_REC_CALL, 2)->u.call->stack);
    assert_int_equal(at_stacks_count(p->t->stacks), 2);
    parsed_free(p);
}

static void repeated_malformed_frame_list_warns_each_time(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(8) = 0x10\n\t0x20\n\tbad\n\n"
                          "2. malloc(8) = 0x11\n\t0x20\n\tbad\n\n");
    assert_int_equal(count(p, AT_REC_CALL), 2);
    assert_int_equal(p->d.warnings, 2);
    assert_non_null(strstr(p->msgs, "t.trace:4: warning: malformed frame line"));
    assert_non_null(strstr(p->msgs, "t.trace:8: warning: malformed frame line"));
    parsed_free(p);
}

static void line_numbers_stay_right_after_repeated_frame_lists(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(8) = 0x10\n\t0x20\n\t0x30\n\n"
                          "2. malloc(8) = 0x11\n\t0x20\n\t0x30\n\n"
                          "3. malloc(8) = 0x12\n\t0x20\n\t0x30\n\n"
                          "oops\n");
    assert_int_equal(count(p, AT_REC_CALL), 3);
    assert_int_equal(nth(p, AT_REC_CALL, 2)->line, 10);
    assert_non_null(strstr(p->msgs, "t.trace:14: warning: unreadable line"));
    parsed_free(p);
}

static void repeated_frame_list_with_a_comment_keeps_the_comment(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(8) = 0x10\n\t0x20\n\n"
                          "2. malloc(8) = 0x11\n\t0x20\n## inside\n\t0x30\n\n"
                          "3. malloc(8) = 0x12\n\t0x20\n## inside\n\t0x30\n\n");
    assert_int_equal(count(p, AT_REC_COMMENT), 2);
    assert_ptr_equal(nth(p, AT_REC_CALL, 1)->u.call->stack, nth(p, AT_REC_CALL, 2)->u.call->stack);
    assert_int_equal(nth(p, AT_REC_CALL, 2)->u.call->stack->nframes, 2);
    assert_int_equal(p->d.warnings, 0);
    parsed_free(p);
}

/* A new list is read in one loop while every line is "\t0x" HEX alone
 * (reader.c, plain_frames); a line of any other form further down sends
 * the whole list the line-by-line way, with the same frames, texts,
 * warnings and line numbers as before. */
static void a_list_plain_until_its_last_line_is_read_whole_the_other_way(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(8) = 0x10\n\t0x20\n\t0x30\n\n"
                          "2. malloc(8) = 0x11\n\t0x20\n\t0x30 f() at f.c:3\n\n"
                          "3. malloc(8) = 0x12\n\t0x20\n\t0x30\r\n\n"
                          "4. malloc(8) = 0x13\n\t0x20\n\t0x11112222333344445\n\n"
                          "5. malloc(8) = 0x14\n\t0x20\n\t0x\n\n"
                          "6. malloc(8) = 0x15\n\t0x20\n\t0x30\n\n");
    assert_int_equal(count(p, AT_REC_CALL), 6);
    const at_stack *s1 = nth(p, AT_REC_CALL, 0)->u.call->stack;
    const at_stack *s2 = nth(p, AT_REC_CALL, 1)->u.call->stack;
    assert_int_equal(s1->nframes, 2);
    assert_int_equal(s1->frames[1].addr, 0x30);
    assert_null(s1->frames[1].text);
    assert_int_equal(s2->nframes, 2);
    assert_string_equal(s2->frames[1].text, "f() at f.c:3");
    assert_ptr_equal(nth(p, AT_REC_CALL, 2)->u.call->stack, s1); /* CRLF: the same frames */
    assert_ptr_equal(nth(p, AT_REC_CALL, 5)->u.call->stack, s1);
    assert_int_equal(p->d.warnings, 2); /* 17 hex digits; no digits */
    assert_non_null(strstr(p->msgs, "t.trace:16: warning: malformed frame line"));
    assert_non_null(strstr(p->msgs, "t.trace:20: warning: malformed frame line"));
    assert_int_equal(nth(p, AT_REC_CALL, 5)->line, 22);
    parsed_free(p);
}

/* A block's frame list is found and hashed at its first call line
 * (reader.c, look_ahead), past its other call lines, comments and the
 * summary line; whatever lies between, the records are those of reading
 * it where it comes. */
static void a_list_found_ahead_of_its_calls_gives_the_same_records(void **state)
{
    (void)state;
    parsed *p = parse(HDR "1. malloc(8) = 0x10\n\t0x20\n\t0x30\n\n"
                          "2. malloc(8) = 0x11\n## inside\n3. free(0x11)\n"
                          "# allocation summary: 1 block(s) with total size 8\n\t0x20\n\t0x30\n\n"
                          "4. malloc(8) = 0x12\n5. malloc(x) = 0x13\n\t0x20\n\t0x30\n\n"
                          "6. malloc(8) = 0x14\n\t0x20\n\t0x30\n\n");
    assert_int_equal(count(p, AT_REC_CALL), 5);
    const at_stack *s = nth(p, AT_REC_CALL, 0)->u.call->stack;
    assert_ptr_equal(nth(p, AT_REC_CALL, 1)->u.call->stack, s);
    assert_ptr_equal(nth(p, AT_REC_CALL, 2)->u.call->stack, s);
    /* call 5 cannot be read: call 4's block ends there, without frames,
     * and call 5's block is skipped to its blank line */
    assert_int_equal(nth(p, AT_REC_CALL, 3)->u.call->index, 4);
    assert_int_equal(nth(p, AT_REC_CALL, 3)->u.call->stack->nframes, 0);
    assert_ptr_equal(nth(p, AT_REC_CALL, 4)->u.call->stack, s);
    assert_int_equal(count(p, AT_REC_COMMENT), 1);
    assert_int_equal(p->d.warnings, 2);
    assert_non_null(strstr(p->msgs, "t.trace:13: warning: call record not ended by a blank line"));
    assert_non_null(strstr(p->msgs, "t.trace:14: warning: malformed call line"));
    assert_int_equal(nth(p, AT_REC_CALL, 4)->line, 18);
    parsed_free(p);
}

static void nul_bytes_in_a_call_name_make_it_malformed(void **state)
{
    (void)state;
    static const char text[] = HDR "<2> : g (objs)\n1. g_new<g\0\0>(1) = 0x10\n\n"
                                   "2. mal\0loc(1) = 0x20\n\n3. malloc(1) = 0x30\n\n";
    at_trace *t = at_trace_new();
    collector c = { .stage = { .put = collect_put, .finish = collect_finish } };
    at_diag d;
    char *msgs = NULL;
    size_t mlen;
    at_diag_init(&d, "t.trace");
    d.out = open_memstream(&msgs, &mlen);
    assert_int_equal(at_read_mem(text, sizeof text - 1, t, &c.stage, &d), 0);
    fclose(d.out);
    int calls = 0;
    for (int i = 0; i < c.n; i++) {
        calls += c.recs[i]->kind == AT_REC_CALL;
        at_record_free(c.recs[i]);
    }
    assert_int_equal(calls, 1);
    assert_int_equal(d.warnings, 2);
    free(msgs);
    at_trace_free(t);
}

/* A stage that folds each call's index and frames into a checksum. */
typedef struct summer {
    at_stage stage;
    uint64_t sum, calls;
} summer;

static void sum_put(at_stage *s, const at_record *r)
{
    summer *m = (summer *)s;
    if (r->kind != AT_REC_CALL)
        return;
    const at_call *c = r->u.call;
    uint64_t h = c->index * 0x9e3779b97f4a7c15ull + c->nargs;
    for (uint32_t i = 0; i < c->stack->nframes; i++)
        h = (h ^ c->stack->frames[i].addr) * 0xff51afd7ed558ccdull;
    m->sum = m->sum * 31 + h; /* order matters too */
    m->calls++;
}

static void sum_finish(at_stage *s)
{
    (void)s;
}

static void reading_a_file_in_blocks_gives_the_same_calls_as_in_memory(void **state)
{
    (void)state;
    /* 10 MiB: records cross the 4 MiB read blocks at every possible point
     * of a block (call line, arguments, frames, blank line) */
    size_t cap = 11u << 20, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, HDR);
    uint64_t x = 7;
    for (unsigned i = 1; len < (10u << 20); i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        len += (size_t)snprintf(text + len, cap - len, "%u. malloc(%u) = 0x%x\n", i, i % 500, i * 16);
        if ((x >> 60) == 0)
            len += (size_t)snprintf(text + len, cap - len, "\t$note = %u\n", i);
        unsigned depth = 1 + (unsigned)((x >> 33) % 12);
        for (unsigned f = 0; f < depth; f++)
            len += (size_t)snprintf(text + len, cap - len, "\t0x%llx\n",
                                    (unsigned long long)(0x400000 + ((x >> (f * 4)) & 0x7) * 16 + f));
        text[len++] = '\n';
    }
    char path[] = "/tmp/pp-blocks-XXXXXX";
    int fd = mkstemp(path);
    assert_true(write(fd, text, len) == (ssize_t)len);
    lseek(fd, 0, SEEK_SET);

    summer a = { .stage = { .put = sum_put, .finish = sum_finish } }, b = a;
    at_diag d;
    at_diag_init(&d, path);
    at_trace *t1 = at_trace_new(), *t2 = at_trace_new();
    assert_int_equal(at_read_mem(text, len, t1, &a.stage, &d), 0);
    assert_int_equal(at_read_fd(fd, t2, &b.stage, &d, NULL), 0);
    assert_int_equal(d.warnings, 0);
    assert_true(a.calls > 100000);
    assert_int_equal(a.calls, b.calls);
    assert_int_equal(a.sum, b.sum);
    at_trace_free(t1);
    at_trace_free(t2);
    close(fd);
    unlink(path);
    free(text);
}

static void warnings_stop_after_a_hundred_with_one_notice(void **state)
{
    (void)state;
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, HDR);
    for (int i = 0; i < 150; i++)
        len += (size_t)snprintf(text + len, cap - len, "garbage %d\n", i);
    parsed *p = parse(text);
    assert_int_equal(p->d.warnings, 150);
    int lines = 0;
    for (const char *m = p->msgs; (m = strchr(m, '\n')); m++)
        lines++;
    assert_int_equal(lines, AT_MAX_WARNINGS + 1);
    assert_non_null(strstr(p->msgs, "t.trace:101: warning:"));
    assert_null(strstr(p->msgs, "t.trace:102: warning:"));
    assert_non_null(strstr(p->msgs, "alloctrace-postproc: more warnings about t.trace not shown\n"));
    assert_int_equal(count(p, AT_REC_COMMENT), 150);
    parsed_free(p);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(header_known_keys_are_parsed),
        cmocka_unit_test(header_without_trailing_separator_keeps_unknown_keys),
        cmocka_unit_test(header_sp_rtrace_unpadded_timestamp_is_normalized),
        cmocka_unit_test(header_filter_words_and_compress_is_cleared),
        cmocka_unit_test(resource_registry_with_refcount_flag),
        cmocka_unit_test(context_registry_is_hex_bit_and_name),
        cmocka_unit_test(map_line_with_spaces_in_path),
        cmocka_unit_test(build_id_comment_sets_map_build_id_and_stays_a_comment),
        cmocka_unit_test(call_with_context_time_and_frames),
        cmocka_unit_test(call_without_context_or_time_and_empty_backtrace),
        cmocka_unit_test(millisecond_time_of_sp_rtrace_is_read_as_microseconds),
        cmocka_unit_test(release_line_has_id_and_no_size),
        cmocka_unit_test(type_is_split_only_when_registered),
        cmocka_unit_test(argument_values_keep_spaces),
        cmocka_unit_test(compressed_group_gives_each_call_the_frames),
        cmocka_unit_test(temporary_comments_are_dropped_others_kept_verbatim),
        cmocka_unit_test(comment_inside_a_call_goes_after_it),
        cmocka_unit_test(attachment_name_and_path),
        cmocka_unit_test(crlf_line_ends_are_accepted),
        cmocka_unit_test(very_long_lines_are_read_whole),
        cmocka_unit_test(reading_a_file_in_blocks_gives_the_same_calls_as_in_memory),
        cmocka_unit_test(truncated_last_record_is_one_warning_and_dropped),
        cmocka_unit_test(partial_last_line_is_one_warning),
        cmocka_unit_test(malformed_call_line_is_a_warning_and_its_block_skipped),
        cmocka_unit_test(malformed_numbers_are_rejected),
        cmocka_unit_test(malformed_frame_and_argument_lines_warn),
        cmocka_unit_test(frame_outside_a_call_warns),
        cmocka_unit_test(decreasing_index_warns),
        cmocka_unit_test(missing_blank_line_before_next_record_warns),
        cmocka_unit_test(strict_turns_a_malformed_line_into_an_error),
        cmocka_unit_test(warnings_stop_after_a_hundred_with_one_notice),
        cmocka_unit_test(missing_header_is_a_warning),
        cmocka_unit_test(empty_input_is_an_error_and_no_record),
        cmocka_unit_test(equal_frame_lists_share_one_stack),
        cmocka_unit_test(repeated_malformed_frame_list_warns_each_time),
        cmocka_unit_test(a_list_plain_until_its_last_line_is_read_whole_the_other_way),
        cmocka_unit_test(a_list_found_ahead_of_its_calls_gives_the_same_records),
        cmocka_unit_test(nul_bytes_in_a_call_name_make_it_malformed),
        cmocka_unit_test(line_numbers_stay_right_after_repeated_frame_lists),
        cmocka_unit_test(repeated_frame_list_with_a_comment_keeps_the_comment),
        cmocka_unit_test(leak_kind_line_gives_the_next_block_its_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
