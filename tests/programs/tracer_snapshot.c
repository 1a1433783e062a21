/*
 * tests/programs/tracer_snapshot.c: a program that grows on command, for
 * test_tracer_snapshot.c and bench/snapshot. It prints its pid, then reads
 * commands on stdin, one a line, and answers each with "ok" once done:
 *   grow N SIZE    N blocks of SIZE bytes from grow_cache(), kept (reachable)
 *   leak SIZE      one block from leak_one(), its pointer dropped (definitely lost)
 *   snap LABEL     alloctrace_snapshot(LABEL); answers "ok N"
 *   closeall       closes every descriptor from 3 up (closefrom), as daemons do
 *   fork           forks a child that prints "child PID" and waits to be killed
 *   thread         starts a thread that allocates a block and waits for ever
 *   tasks          answers "ok N", N the process's threads (/proc/self/task)
 *   handle SIG     installs its own handler on signal number SIG (sigaction)
 *   handled        answers "ok N", N the signals that handler has seen
 *   churn MS       allocates and frees blocks for MS ms (the thread is
 *                  mostly inside the allocator when stopped from outside)
 *   quit           returns from main
 * Allocations happen only in those two functions (and stdio's buffers), so
 * a snapshot's sites are known exactly.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloctrace.h"

static void **cache;
static size_t ncache, capcache;

__attribute__((noinline)) static void grow_cache(size_t n, size_t size)
{
    if (ncache + n > capcache) {
        size_t cap = capcache ? capcache : 1024;
        while (cap < ncache + n)
            cap *= 2;
        void **bigger = calloc(cap, sizeof *bigger);
        if (ncache)
            memcpy(bigger, cache, ncache * sizeof *cache);
        free(cache);
        cache = bigger;
        capcache = cap;
    }
    for (size_t i = 0; i < n; i++) {
        cache[ncache] = malloc(size);
        memset(cache[ncache], 0x5a, size);
        ncache++;
    }
}

static volatile sig_atomic_t handled;

static void *waiter(void *arg)
{
    (void)arg;
    void *volatile keep = malloc(64 << 10);
    (void)keep;
    for (;;)
        pause();
    return NULL;
}

static int tasks(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void on_own_signal(int sig)
{
    (void)sig;
    handled++;
}

__attribute__((noinline)) static void leak_one(size_t size)
{
    char *volatile p = malloc(size);
    memset(p, 0x33, size);
    p = NULL;
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

__attribute__((noinline)) static void churn(long ms)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (size_t i = 0; i < 1000; i++) {
            void *volatile p = malloc(16 + i * 8);
            free(p);
        }
    } while (ms_since(&t0) < ms);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("%d\n", (int)getpid());
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        size_t n, size;
        char label[200];
        if (sscanf(line, "grow %zu %zu", &n, &size) == 2) {
            grow_cache(n, size);
            printf("ok\n");
        } else if (sscanf(line, "leak %zu", &size) == 1) {
            leak_one(size);
            printf("ok\n");
        } else if (sscanf(line, "snap %199s", label) == 1) {
            printf("ok %d\n", alloctrace_snapshot(label));
        } else if (sscanf(line, "handle %zu", &n) == 1) {
            struct sigaction sa = { .sa_handler = on_own_signal, .sa_flags = SA_RESTART };
            sigemptyset(&sa.sa_mask);
            printf(sigaction((int)n, &sa, NULL) == 0 ? "ok\n" : "failed\n");
        } else if (sscanf(line, "churn %zu", &n) == 1) {
            churn((long)n);
            printf("ok\n");
        } else if (strncmp(line, "thread", 6) == 0) {
            pthread_t t;
            printf(pthread_create(&t, NULL, waiter, NULL) == 0 ? "ok\n" : "failed\n");
        } else if (strncmp(line, "tasks", 5) == 0) {
            printf("ok %d\n", tasks());
        } else if (strncmp(line, "handled", 7) == 0) {
            printf("ok %d\n", (int)handled);
        } else if (strncmp(line, "closeall", 8) == 0) {
            closefrom(3);
            printf("ok\n");
        } else if (strncmp(line, "fork", 4) == 0) {
            if (fork() == 0) {
                printf("child %d\n", (int)getpid());
                for (;;)
                    pause();
            }
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        } else {
            printf("bad command\n");
        }
    }
    return 0;
}
