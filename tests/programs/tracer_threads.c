/*
 * tests/programs/tracer_threads.c: THREADS threads x COUNT allocations,
 * each thread keeping a small window of live blocks and freeing the oldest,
 * so addresses are reused across threads all the time. Everything is freed.
 * Usage: tracer_threads [THREADS [COUNT]].
 *        tracer_threads handoff COUNT: two producer threads each hand COUNT
 *        blocks to a consumer thread that frees them (releases in another
 *        thread than the allocation).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long count = 100000;

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    void *window[32] = { 0 };
    for (long i = 0; i < count; i++) {
        int k = (int)(i % 32);
        free(window[k]);
        seed = seed * 1103515245u + 12345u;
        window[k] = malloc(8 + (seed >> 16) % 512);
    }
    for (int k = 0; k < 32; k++)
        free(window[k]);
    return NULL;
}

static void *_Atomic mailbox[2];

static void *producer(void *arg)
{
    long k = (long)arg;
    for (long i = 0; i < count; i++) {
        void *p = malloc(24 + (size_t)(i & 63));
        void *expected = NULL;
        while (!atomic_compare_exchange_weak(&mailbox[k], &expected, p)) {
            expected = NULL;
            sched_yield();
        }
    }
    return NULL;
}

static void *consumer(void *arg)
{
    long k = (long)arg;
    for (long i = 0; i < count; i++) {
        void *p;
        while (!(p = atomic_exchange(&mailbox[k], NULL)))
            sched_yield();
        free(p);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "handoff") == 0) {
        count = atol(argv[2]);
        pthread_t t[4];
        for (long k = 0; k < 2; k++) {
            pthread_create(&t[2 * k], NULL, producer, (void *)k);
            pthread_create(&t[2 * k + 1], NULL, consumer, (void *)k);
        }
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        return 0;
    }
    int threads = argc > 1 ? atoi(argv[1]) : 8;
    if (argc > 2)
        count = atol(argv[2]);
    pthread_t t[64];
    if (threads < 1 || threads > 64)
        return 2;
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return 0;
}
