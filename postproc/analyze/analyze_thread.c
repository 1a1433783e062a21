/*
 * postproc/analyze/analyze_thread.c: the analyzer on a second thread
 * (analyze_thread.h), so that reading the trace (decompression, lines,
 * parsing, pairing with stacks, resolving) and analysing its calls run on
 * both cores at once.
 *
 * Decisions:
 * - The split is at the analyzer's door: everything before it (the reader,
 *   the reorder window, the resolver) interns into one stack table and
 *   stays on the first thread; the analyzer keeps its own state and reads
 *   of a call only its numbers, its interned stack and its interned name,
 *   which never change once published. On a 2.7M-call python3 trace the
 *   analyzer was a third of the time, the part behind it the rest.
 * - Calls go in batches of BATCH copies through a ring of NBATCH batches:
 *   one lock and signal a batch, not a call, and nothing allocated a call;
 *   the memory is a constant (NBATCH * BATCH calls, about 1.2 MB). When
 *   the ring is full the reader waits (the analyzer is the slower side
 *   only on small stacks), and the analyzer waits on an empty ring.
 * - Order is the queue's: batches are taken in the order they were filled
 *   and their calls one by one, so the analyzer sees exactly the sequence
 *   it would have been given directly (peaks, temporaries and the series
 *   depend on it).
 * - While analysing a batch the thread prefetches the live-block slot of
 *   the call AHEAD calls on (at_analyzer_prefetch): the table is tens of MB
 *   on big traces and each lookup otherwise waits on memory.
 * - If the thread cannot be started, the calls are analysed on the
 *   caller's thread as they come: the same results, one core.
 */
#include "analyze_thread.h"
#include "xalloc.h"

#include <pthread.h>
#include <stdlib.h>

#define BATCH 4096
#define NBATCH 4
#define AHEAD 16

typedef struct batch {
    at_call calls[BATCH];
    size_t n;
} batch;

struct at_an_thread {
    at_analyzer *a;
    bool threaded;
    pthread_t tid;
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    batch *ring;      /* NBATCH */
    size_t head;      /* the batch the analyzer takes next */
    size_t full;      /* batches filled and not yet analysed */
    bool done;        /* no more batches come */
    size_t fill;      /* the batch being filled by the reader */
};

static void analyse_batch(at_analyzer *a, const batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        if (i + AHEAD < b->n)
            at_analyzer_prefetch(a, b->calls[i + AHEAD].id);
        at_analyzer_call(a, &b->calls[i]);
    }
}

static void *run(void *arg)
{
    at_an_thread *q = arg;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (!q->full && !q->done)
            pthread_cond_wait(&q->not_empty, &q->lock);
        if (!q->full)
            break; /* done, and every batch analysed */
        batch *b = &q->ring[q->head];
        pthread_mutex_unlock(&q->lock);
        analyse_batch(q->a, b);
        pthread_mutex_lock(&q->lock);
        q->head = (q->head + 1) % NBATCH;
        q->full--;
        pthread_cond_signal(&q->not_full);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

at_an_thread *at_an_thread_start(at_analyzer *a)
{
    at_an_thread *q = at_xcalloc(1, sizeof *q);
    q->a = a;
    q->ring = at_xcalloc(NBATCH, sizeof *q->ring);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    q->threaded = pthread_create(&q->tid, NULL, run, q) == 0;
    return q;
}

/* The batch being filled goes to the analyzer; the reader waits for a
 * free one. */
static void hand_on(at_an_thread *q)
{
    pthread_mutex_lock(&q->lock);
    q->full++;
    pthread_cond_signal(&q->not_empty);
    while (q->full == NBATCH)
        pthread_cond_wait(&q->not_full, &q->lock);
    pthread_mutex_unlock(&q->lock);
    q->fill = (q->fill + 1) % NBATCH;
    q->ring[q->fill].n = 0;
}

void at_an_thread_call(at_an_thread *q, const at_call *c)
{
    if (!q->threaded) {
        at_analyzer_call(q->a, c);
        return;
    }
    batch *b = &q->ring[q->fill];
    at_call *w = &b->calls[b->n++];
    at_call_copy_fresh(w, c); /* c was just built by the stage before: trace.h */
    w->stack = c->stack;
    w->nargs = 0;
    w->args = NULL;
    if (b->n == BATCH)
        hand_on(q);
}

void at_an_thread_join(at_an_thread *q)
{
    if (!q)
        return;
    if (q->threaded) {
        pthread_mutex_lock(&q->lock);
        if (q->ring[q->fill].n)
            q->full++;
        q->done = true;
        pthread_cond_signal(&q->not_empty);
        pthread_mutex_unlock(&q->lock);
        pthread_join(q->tid, NULL);
    }
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    free(q->ring);
    free(q);
}
