/*
 * bench/snapshot_work.c: the program bench/snapshot snapshots. It makes N
 * live blocks (sizes 16..256, from 8 call sites), prints its pid and then
 * "ready", and keeps a ticker thread allocating and freeing one block
 * every ~2 us, noting the longest gap between two of its allocations: how
 * long the program was paused. Commands on stdin: "reset" (forget the
 * longest gap), "report" (print it, in microseconds), "quit".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_uint_fast64_t max_gap_ns;
static atomic_int resetting;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *ticker(void *arg)
{
    (void)arg;
    uint64_t last = now_ns();
    for (;;) {
        void *volatile p = malloc(48);
        free(p);
        uint64_t t = now_ns();
        if (atomic_exchange(&resetting, 0))
            atomic_store(&max_gap_ns, 0);
        else if (t - last > atomic_load(&max_gap_ns))
            atomic_store(&max_gap_ns, t - last);
        last = t;
        while (now_ns() - t < 2000)
            ;
    }
    return NULL;
}

#define SITE(k) \
    __attribute__((noinline)) static void *site##k(size_t n) { return malloc(n); }
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7)
static void *(*const sites[8])(size_t) = { site0, site1, site2, site3, site4, site5, site6, site7 };

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
    void **keep = malloc(n * sizeof *keep);
    for (size_t i = 0; i < n; i++)
        keep[i] = sites[i & 7](16 + (i * 37) % 241);
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_t t;
    pthread_create(&t, NULL, ticker, NULL);
    printf("%d\nready\n", (int)getpid());
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "reset", 5) == 0) {
            atomic_store(&resetting, 1);
            while (atomic_load(&resetting))
                usleep(100);
            printf("ok\n");
        } else if (strncmp(line, "report", 6) == 0) {
            printf("%llu\n", (unsigned long long)(atomic_load(&max_gap_ns) / 1000));
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
    }
    _exit(0);   /* no exit report to wait for: the bench measures snapshots */
}
