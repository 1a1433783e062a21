/*
 * bench/tracer_work.c: allocation-heavy workloads for bench/tracer.
 *   tracer_work one N    one thread, N allocations (and as many frees)
 *                        from a call chain ~12 frames deep
 *   tracer_work two N    the same split over two threads
 *   tracer_work hash N   a chained hash table of N strdup'ed strings that
 *                        grows by rehashing, then torn down
 *   tracer_work keep N   the same table, kept (reachable from a global)
 *                        at exit: 2N+1 live blocks for leaks mode's scan
 *                        of reachability at exit (bench/gate)
 *   tracer_work threads N  N/20 short-lived threads one after the other,
 *                        each making 20 allocations (the first-unwind cost)
 *   tracer_work pingpong N  two threads hand one cache line back and forth
 *                        N times and print "round_trip_ns R": what moving a
 *                        line between cores costs on this machine, which is
 *                        what full mode pays for text formatted on one core
 *                        and copied next to another core's (docs/benchmarks.md)
 * Prints "events E" (allocation calls + frees made by the workload) and
 * "rss_kb R" (its own peak resident size, from getrusage).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static long per_thread;

/* A call chain of `depth` frames ending in the allocation loop body. */
__attribute__((noinline)) static void *deep(int depth, size_t size)
{
    if (depth == 0)
        return malloc(size);
    void *p = deep(depth - 1, size);
    __asm__ volatile("" ::: "memory");   /* keep the frames */
    return p;
}

static void *short_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        void *p = deep(10, 40);
        free(p);
    }
    return NULL;
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg;
    void *window[64] = { 0 };
    for (long i = 0; i < per_thread; i++) {
        int k = (int)(i & 63);
        free(window[k]);
        seed = seed * 1103515245u + 12345u;
        window[k] = deep(10, 16 + (seed >> 16) % 200);
    }
    for (int k = 0; k < 64; k++)
        free(window[k]);
    return NULL;
}

static _Atomic long baton __attribute__((aligned(64)));

/* Waits for the baton to read `want`, then passes it on as want + 1. */
static void pass_baton(long want)
{
    while (baton != want)
        __asm__ volatile("pause");
    baton = want + 1;
}

static void *pong(void *arg)
{
    long n = (long)(size_t)arg;
    for (long i = 0; i < n; i++)
        pass_baton(2 * i + 1);
    return NULL;
}

static double ping_pong(long n)
{
    pthread_t t;
    struct timespec t0, t1;
    pthread_create(&t, NULL, pong, (void *)(size_t)n);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++)
        pass_baton(2 * i);
    pthread_join(t, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n;
}

struct node {
    char *key;
    struct node *next;
};

struct node **tracer_work_kept;   /* "keep": the table, reachable at exit (not static: kept) */

static long hash_workload(long n, int keep)
{
    size_t cap = 16, count = 0;
    long events = 1;
    struct node **t = calloc(cap, sizeof *t);
    char buf[64];
    for (long i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "key-%ld-%lx", i, (unsigned long)i * 2654435761u);
        unsigned long h = 5381;
        for (char *c = buf; *c; c++)
            h = h * 33 + (unsigned char)*c;
        struct node *e = malloc(sizeof *e);
        e->key = strdup(buf);
        e->next = t[h % cap];
        t[h % cap] = e;
        events += 2;
        if (++count > cap * 2) {          /* grow: rehash into a new table */
            size_t ncap = cap * 4;
            struct node **nt = calloc(ncap, sizeof *nt);
            events++;
            for (size_t b = 0; b < cap; b++)
                for (struct node *x = t[b], *next; x; x = next) {
                    next = x->next;
                    unsigned long hh = 5381;
                    for (char *c = x->key; *c; c++)
                        hh = hh * 33 + (unsigned char)*c;
                    x->next = nt[hh % ncap];
                    nt[hh % ncap] = x;
                }
            free(t);
            events++;
            t = nt;
            cap = ncap;
        }
    }
    if (keep) {
        tracer_work_kept = t;
        return events;
    }
    for (size_t b = 0; b < cap; b++)    /* tear the table down */
        for (struct node **pp = &t[b]; *pp;) {
            struct node *x = *pp;
            *pp = x->next;
            free(x->key);
            free(x);
            events += 2;
        }
    free(t);
    return events + 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: tracer_work one|two|hash|keep|threads|pingpong N\n");
        return 2;
    }
    long n = atol(argv[2]), events;
    if (strcmp(argv[1], "one") == 0 || strcmp(argv[1], "two") == 0) {
        int threads = argv[1][0] == 'o' ? 1 : 2;
        per_thread = n / threads;
        pthread_t t[2];
        for (int i = 0; i < threads; i++)
            pthread_create(&t[i], NULL, worker, (void *)(size_t)(i + 1));
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
        events = 2 * per_thread * threads;
    } else if (strcmp(argv[1], "threads") == 0) {
        for (long i = 0; i < n / 20; i++) {
            pthread_t t;
            pthread_create(&t, NULL, short_worker, NULL);
            pthread_join(t, NULL);
        }
        events = n / 20 * 40;
    } else if (strcmp(argv[1], "pingpong") == 0) {
        printf("round_trip_ns %.0f\n", ping_pong(n));
        return 0;
    } else if (strcmp(argv[1], "hash") == 0 || strcmp(argv[1], "keep") == 0) {
        events = hash_workload(n, argv[1][0] == 'k');
    } else {
        fprintf(stderr, "tracer_work: unknown workload %s\n", argv[1]);
        return 2;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("events %ld\nrss_kb %ld\n", events, ru.ru_maxrss);
    return 0;
}
