/* tests/unit/test_reorder.c: postproc/read/reorder.c puts the calls of a
 * compressed-form input back into index order, handing each on as soon as
 * every index before it was seen, and lets everything else through. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "pp_run.h"
#include "reorder.h"

typedef struct sink {
    at_stage stage;
    uint64_t idx[64], size[64];
    at_rec_kind kinds[64];
    size_t n;
    bool finished;
} sink;

static void sink_put(at_stage *s, const at_record *r)
{
    sink *k = (sink *)s;
    k->kinds[k->n] = r->kind;
    k->size[k->n] = r->kind == AT_REC_CALL ? r->u.call->size : 0;
    k->idx[k->n++] = r->kind == AT_REC_CALL ? r->u.call->index : 0;
}

static void sink_finish(at_stage *s)
{
    ((sink *)s)->finished = true;
}

static void put_call(at_stage *s, uint64_t index)
{
    at_arg arg = { "n", "1" };
    at_call c = { .index = index, .name = "malloc", .is_alloc = true, .size = index, .id = index * 16,
                  .nargs = 1, .args = &arg };
    at_record r = { .kind = AT_REC_CALL, .u.call = &c };
    at_stage_put(s, &r);
}

/* A call without arguments: the kind the window holds by value. */
static void put_plain(at_stage *s, uint64_t index)
{
    at_call c = { .index = index, .name = "malloc", .is_alloc = true, .size = index + 1000,
                  .id = index * 16 };
    at_record r = { .kind = AT_REC_CALL, .u.call = &c };
    at_stage_put(s, &r);
}

/* A reorder stage in front of a sink, on a trace of its own. */
typedef struct rig {
    at_trace *t;
    sink k;
    at_diag d;
    at_stage *o;
} rig;

static void rig_start(rig *r, bool compressed)
{
    r->t = at_trace_new();
    r->t->input_compressed = compressed;
    r->k = (sink){ .stage = { .put = sink_put, .finish = sink_finish } };
    at_diag_init(&r->d, "t.trace");
    r->o = at_reorder_new(&r->k.stage, r->t, &r->d);
}

static void rig_end(rig *r)
{
    at_reorder_free(r->o);
    at_trace_free(r->t);
}

static void calls_of_a_chunk_go_on_as_soon_as_the_chunk_is_whole(void **state)
{
    (void)state;
    rig r;
    rig_start(&r, true);
    at_stage *o = r.o;
    sink *k = &r.k;
    assert_true(r.t->calls_in_order);
    /* chunk one: 1..3 grouped as 3 1 | 2 */
    put_call(o, 3);
    put_call(o, 1);
    assert_int_equal(k->n, 1); /* 1 goes at once, 3 waits for 2 */
    put_call(o, 2);
    assert_int_equal(k->n, 3);
    /* chunk two: 4..6 grouped as 6 | 5 4 */
    put_call(o, 6);
    put_call(o, 5);
    assert_int_equal(k->n, 3);
    put_call(o, 4);
    assert_int_equal(k->n, 6);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(k->idx[i], i + 1);
    at_stage_finish(o);
    assert_true(k->finished);
    rig_end(&r);
}

static void a_gap_in_the_indices_holds_calls_to_the_end_in_order(void **state)
{
    (void)state;
    rig r;
    rig_start(&r, true);
    at_stage *o = r.o;
    sink *k = &r.k;
    uint64_t in[] = { 9, 4, 7, 2 }; /* leaks mode: only some indices */
    for (size_t i = 0; i < 4; i++)
        put_call(o, in[i]);
    assert_int_equal(k->n, 0);
    at_stage_finish(o);
    uint64_t want[] = { 2, 4, 7, 9 };
    assert_int_equal(k->n, 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(k->idx[i], want[i]);
    rig_end(&r);
}

static void window_heap_and_duplicates_go_out_in_index_order(void **state)
{
    (void)state;
    rig r;
    rig_start(&r, true);
    at_stage *o = r.o;
    sink *k = &r.k;
    put_plain(o, 3);
    put_plain(o, 2);
    put_call(o, 5);              /* arguments: copied to the heap */
    put_plain(o, 4);
    assert_int_equal(k->n, 0);
    put_plain(o, 1);             /* its turn: 1..5 go on */
    assert_int_equal(k->n, 5);
    put_plain(o, 50000000);      /* far beyond the window: the heap */
    put_plain(o, 7);
    put_plain(o, 7);             /* an index already held: the heap */
    put_plain(o, 6);
    assert_int_equal(k->n, 8);
    at_stage_finish(o);
    uint64_t want[] = { 1, 2, 3, 4, 5, 6, 7, 7, 50000000 };
    assert_int_equal(k->n, 9);
    for (size_t i = 0; i < 9; i++) {
        assert_int_equal(k->idx[i], want[i]);
        assert_int_equal(k->size[i], want[i] == 5 ? 5 : want[i] + 1000);
    }
    rig_end(&r);
}

static void plain_input_and_other_records_pass_at_once(void **state)
{
    (void)state;
    rig r;
    rig_start(&r, false);
    at_stage *o = r.o;
    sink *k = &r.k;
    put_call(o, 5); /* not compressed: the reader already checks the order */
    assert_int_equal(k->n, 1);
    r.t->input_compressed = true;
    at_record c = { .kind = AT_REC_COMMENT, .u.comment = { "## x", 4 } };
    put_call(o, 7);
    at_stage_put(o, &c);
    assert_int_equal(k->n, 2);
    assert_int_equal(k->kinds[1], AT_REC_COMMENT);
    at_stage_finish(o);
    assert_int_equal(k->n, 3);
    rig_end(&r);
}

/* `text` read through the reorder stage into the writer: the plain text
 * written, and the messages on `d` (its out goes to a file read back). */
struct through {
    char *out, *msg;
    uint64_t chunk_end;
};

static struct through read_through(const char *text, size_t len, at_diag *d)
{
    FILE *err = tmpfile(), *of = tmpfile();
    d->out = err;
    at_trace *t = at_trace_new();
    at_stage *w = at_writer_new(fileno(of), t, d);
    at_stage *o = at_reorder_new(w, t, d);
    assert_int_equal(at_read_mem(text, len, t, o, d), 0);
    at_stage_finish(o);
    fflush(err);
    struct through r = { pp_slurp_fd(fileno(of)), pp_slurp_fd(fileno(err)), t->chunk_end };
    at_reorder_free(o);
    at_writer_free(w);
    at_trace_free(t);
    fclose(of);
    fclose(err);
    return r;
}

static void compressed_form_reads_back_to_the_plain_normal_form(void **state)
{
    (void)state;
    /* the same trace plain and as -c writes it: with the reorder stage in
     * front of the writer both give the plain text */
    static const char plain[] = "version=2.0, arch=x86_64, \n<1> : memory (bytes)\n"
                                "1. malloc(8) = 0x10\n\t0x20\n\n"
                                "2. malloc(16) = 0x20\n\t$n = 1\n\t0x30\n\n"
                                "3. free(0x10)\n\n"
                                "4. malloc(8) = 0x40\n\t0x20\n\n";
    static const char grouped[] = "version=2.0, arch=x86_64, filter=compress, \n<1> : memory (bytes)\n"
                                  "1. malloc(8) = 0x10\n4. malloc(8) = 0x40\n"
                                  "# allocation summary: 2 block(s) with total size 16\n\t0x20\n\n"
                                  "2. malloc(16) = 0x20\n\t$n = 1\n"
                                  "# allocation summary: 1 block(s) with total size 16\n\t0x30\n\n"
                                  "3. free(0x10)\n\n";
    at_diag d;
    at_diag_init(&d, "t.trace");
    struct through r = read_through(grouped, sizeof grouped - 1, &d);
    assert_string_equal(r.out, plain);
    assert_int_equal(d.warnings, 0);
    assert_string_equal(r.msg, "");
    free(r.out);
    free(r.msg);
}

/* A full trace whose second chunk a SIGKILL cut between its groups: the
 * malloc group of 0x40 is there, the free between the two mallocs is
 * not. The calls after the last "# chunk end" mark that follow a missing
 * index are dropped, with one warning; everything before goes out. */
static void calls_of_a_chunk_cut_short_are_dropped_after_the_last_mark(void **state)
{
    (void)state;
    static const char cut[] = "version=2.0, arch=x86_64, filter=compress, \n<1> : memory (bytes)\n"
                              "1. malloc(8) = 0x10\n3. malloc(8) = 0x30\n"
                              "# allocation summary: 2 block(s) with total size 16\n\t0x20\n\n"
                              "2. free(0x10)\n"
                              "# allocation summary: 1 block(s) with total size 0\n\n"
                              "# chunk end: 3\n"
                              "4. malloc(8) = 0x40\n6. malloc(8) = 0x40\n"
                              "# allocation summary: 2 block(s) with total size 16\n\t0x20\n\n";
    static const char kept[] = "version=2.0, arch=x86_64, \n<1> : memory (bytes)\n"
                               "1. malloc(8) = 0x10\n\t0x20\n\n"
                               "2. free(0x10)\n\n"
                               "3. malloc(8) = 0x30\n\t0x20\n\n"
                               "4. malloc(8) = 0x40\n\t0x20\n\n";
    at_diag d;
    at_diag_init(&d, "t.trace");
    struct through r = read_through(cut, sizeof cut - 1, &d);
    assert_int_equal(r.chunk_end, 3);
    assert_string_equal(r.out, kept);
    assert_non_null(strstr(r.msg, "1 call(s) from index 6 on dropped: the trace ends inside a chunk"));
    free(r.out);
    free(r.msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(calls_of_a_chunk_go_on_as_soon_as_the_chunk_is_whole),
        cmocka_unit_test(a_gap_in_the_indices_holds_calls_to_the_end_in_order),
        cmocka_unit_test(window_heap_and_duplicates_go_out_in_index_order),
        cmocka_unit_test(plain_input_and_other_records_pass_at_once),
        cmocka_unit_test(compressed_form_reads_back_to_the_plain_normal_form),
        cmocka_unit_test(calls_of_a_chunk_cut_short_are_dropped_after_the_last_mark),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
