/*
 * bench/sample_threads.c: a program with 4 threads for bench/realworld's
 * sampling target (issue 24): each thread builds a chained hash table of
 * strdup'ed keys with small malloc'ed records, looks every key up, grows
 * and shrinks a vector of them with realloc, and frees it all, in rounds.
 * The work between allocations (hashing, formatting, comparing) is what a
 * real program does between its calls to malloc.
 *
 *   sample_threads [THREADS [N]]   THREADS threads (4), N keys a round (200000)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rec {
    struct rec *next;
    char *key;
    uint64_t value;
} rec;

static long n_keys = 200000;

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

__attribute__((noinline)) static rec *insert(rec **tab, size_t mask, const char *key, uint64_t v)
{
    rec *r = malloc(sizeof *r);
    r->key = strdup(key);
    r->value = v;
    size_t b = hash(key) & mask;
    r->next = tab[b];
    tab[b] = r;
    return r;
}

__attribute__((noinline)) static uint64_t round_of(long id, int round)
{
    size_t cap = 1;
    while (cap < (size_t)n_keys)
        cap *= 2;
    rec **tab = calloc(cap, sizeof *tab);
    char key[64];
    for (long i = 0; i < n_keys; i++) {
        snprintf(key, sizeof key, "thread-%ld-round-%d-key-%ld", id, round, i * 7919 % n_keys);
        insert(tab, cap - 1, key, (uint64_t)i);
    }
    uint64_t sum = 0;
    rec **vec = NULL;
    size_t nvec = 0;
    for (long i = 0; i < n_keys; i++) {
        snprintf(key, sizeof key, "thread-%ld-round-%d-key-%ld", id, round, i);
        for (rec *r = tab[hash(key) & (cap - 1)]; r; r = r->next)
            if (strcmp(r->key, key) == 0) {
                sum += r->value;
                if ((nvec & (nvec + 1)) == 0)
                    vec = realloc(vec, (nvec * 2 + 1) * sizeof *vec);
                vec[nvec++] = r;
            }
    }
    for (size_t b = 0; b < cap; b++)
        for (rec *r = tab[b], *next; r; r = next) {
            next = r->next;
            free(r->key);
            free(r);
        }
    free(vec);
    free(tab);
    return sum;
}

static void *worker(void *arg)
{
    uint64_t s = 0;
    for (int round = 0; round < 4; round++)
        s += round_of((long)(intptr_t)arg, round);
    return (void *)(uintptr_t)s;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        n_keys = atol(argv[2]);
    if (threads < 1 || threads > 64 || n_keys < 1)
        return 2;
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    uint64_t total = 0;
    for (int i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (uint64_t)(uintptr_t)r;
    }
    printf("%llu\n", (unsigned long long)total);
    return 0;
}
