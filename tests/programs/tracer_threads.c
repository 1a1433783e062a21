/*
 * tests/programs/tracer_threads.c: THREADS threads x COUNT allocations,
 * each thread keeping a small window of live blocks and freeing the oldest,
 * so addresses are reused across threads all the time. Everything is freed.
 * Usage: tracer_threads [THREADS [COUNT]].
 */
#include <pthread.h>
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

int main(int argc, char **argv)
{
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
