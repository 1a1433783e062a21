/*
 * postproc/analyze/analyze_stage.c: the analyses as the pipeline's last
 * stage (analyze.h).
 *
 * Calls count when they are of the memory resource, or of the only
 * resource when none or one is registered, as in export_stage.c.
 *
 * Order: the analyses need the calls in index order (peaks, temporaries
 * and the series are about what came first). A plain trace arrives in that
 * order and streams through, and so does a compressed trace once the
 * reorder stage has put it back in order. Groups from -c come
 * group by group: those calls are kept in a compact form (no arguments, no
 * copies of anything the trace owns) and replayed sorted by index at the
 * end. That is the one case where memory grows with the calls; the
 * leaks pairing stage does the same for the same reason.
 *
 * The analyzer runs on a thread of its own (analyze_thread.c), fed the
 * calls in order through a bounded queue, while this thread goes on
 * reading; finish waits for it before the replay and the results. Calls of
 * other resources are only counted here and added to the analyzer's count
 * after the join, so that nothing else touches it while the thread runs.
 */
#include "analyze.h"
#include "analyze_thread.h"
#include "runtime.h"
#include "sampling.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <alloctrace/format.h>

typedef struct kept_call {
    uint64_t index, size, id, time_us;
    const at_stack *stack;
    const char *name;
    uint32_t context;
    bool is_alloc, has_time;
    uint8_t kind;
} kept_call;

typedef struct analyze_stage {
    at_stage stage;
    at_trace *t;
    at_diag *d;
    at_an_output out;
    void *arg;
    at_analyzer *an;
    at_runtime *runtime;
    kept_call *kept;
    size_t nkept, ckept;
    at_an_thread *thread;  /* the analyzer's, started at the first call */
    uint64_t skipped;      /* calls of other resources, counted at the end */
} analyze_stage;

static bool counted(const analyze_stage *s, const at_call *c)
{
    const at_resource *r = at_trace_resource(s->t, c->res);
    return !r || s->t->nresources <= 1 || strcmp(r->name, AT_RES_MEMORY_NAME) == 0;
}

static bool is_cache(void *ctx, const at_stack *st)
{
    return at_runtime_cache(ctx, st);
}

static at_analyzer *analyzer(analyze_stage *s)
{
    if (!s->an) {
        s->an = at_analyzer_new((s->t->header.filter & AT_F_LEAKS) != 0);
        s->runtime = at_runtime_new(s->t->maps, s->t->stacks);
        at_analyzer_set_cache(s->an, is_cache, s->runtime);
        at_analyzer_sampled(s->an, at_sampling_interval(s->t));
    }
    return s->an;
}

static void keep(analyze_stage *s, const at_call *c)
{
    if (s->nkept == s->ckept) {
        s->ckept = s->ckept ? s->ckept * 2 : 4096;
        s->kept = at_xreallocarray(s->kept, s->ckept, sizeof *s->kept);
    }
    s->kept[s->nkept++] = (kept_call){ .index = c->index, .size = c->size, .id = c->id,
                                       .time_us = c->time_us, .stack = c->stack,
                                       .name = c->name, .context = c->context,
                                       .is_alloc = c->is_alloc, .has_time = c->has_time,
                                       .kind = c->kind };
}

/* c to the analyzer's thread, started at the first call. */
static void hold(analyze_stage *s, const at_call *c)
{
    if (!s->thread)
        s->thread = at_an_thread_start(analyzer(s));
    at_an_thread_call(s->thread, c);
}

/* The analyzer's thread done: every call handed on analysed. */
static void join(analyze_stage *s)
{
    at_an_thread_join(s->thread);
    s->thread = NULL;
    for (; s->skipped; s->skipped--)
        at_analyzer_skip(analyzer(s));
}

static void take(analyze_stage *s, const at_call *c, bool grouped)
{
    if (!counted(s, c)) {
        s->skipped++;
        return;
    }
    /* A compressed trace's calls come in index order once the reorder
     * stage ran (the tracer's full traces: grouped chunk by chunk). */
    if (grouped || (s->t->input_compressed && !s->t->calls_in_order))
        keep(s, c);
    else
        hold(s, c);
}

static void put(at_stage *self, const at_record *r)
{
    analyze_stage *s = (analyze_stage *)self;
    if (r->kind == AT_REC_CALL)
        take(s, r->u.call, false);
    else if (r->kind == AT_REC_GROUP)
        for (size_t i = 0; i < r->u.group->ncalls; i++)
            take(s, r->u.group->calls[i], true);
}

static int by_index(const void *x, const void *y)
{
    const kept_call *a = x, *b = y;
    return (a->index > b->index) - (a->index < b->index);
}

static void replay(analyze_stage *s)
{
    if (!s->nkept)
        return;
    qsort(s->kept, s->nkept, sizeof *s->kept, by_index);
    at_analyzer *a = analyzer(s);
    for (size_t i = 0; i < s->nkept; i++) {
        const kept_call *k = &s->kept[i];
        if (i + 16 < s->nkept) /* its live slot: see analyze_thread.c */
            at_analyzer_prefetch(a, s->kept[i + 16].id);
        at_call c = { .index = k->index, .context = k->context, .has_time = k->has_time,
                      .time_us = k->time_us, .name = k->name, .is_alloc = k->is_alloc,
                      .size = k->size, .id = k->id, .stack = k->stack, .kind = k->kind };
        at_analyzer_call(a, &c);
    }
    free(s->kept);
    s->kept = NULL;
    s->nkept = s->ckept = 0;
}

static void finish(at_stage *self)
{
    analyze_stage *s = (analyze_stage *)self;
    join(s);
    replay(s);
    const at_analysis *an = at_analyzer_finish(analyzer(s), s->t);
    errno = 0;
    if (s->out && s->out(s->arg, an, s->t) != 0 && !s->d->failed)
        at_diag_error(s->d, AT_EXIT_FAIL, "writing the analysis: %s",
                      strerror(errno ? errno : EIO));
}

at_stage *at_analyze_stage_new(at_trace *t, at_diag *d, at_an_output out, void *arg)
{
    analyze_stage *s = at_xcalloc(1, sizeof *s);
    s->stage = (at_stage){ .put = put, .finish = finish, .next = NULL };
    s->t = t;
    s->d = d;
    s->out = out;
    s->arg = arg;
    return &s->stage;
}

void at_analyze_stage_free(at_stage *self)
{
    analyze_stage *s = (analyze_stage *)self;
    if (!s)
        return;
    at_an_thread_join(s->thread); /* freed before finish: an error path */
    at_analyzer_free(s->an);
    at_runtime_free(s->runtime);
    free(s->kept);
    free(s);
}
