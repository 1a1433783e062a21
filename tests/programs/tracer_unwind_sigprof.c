/*
 * tests/programs/tracer_unwind_sigprof.c: a program that links libunwind
 * itself and unwinds with it from a SIGPROF handler, as a sampling
 * profiler does, while its threads allocate.
 *
 *   tracer_unwind_sigprof THREADS
 *
 * A profiling timer fires every 100 us of CPU time; the handler calls
 * unw_backtrace. Meanwhile THREADS short threads, one after another, each
 * allocate 60 blocks through 3 nested calls chosen among 16 functions of
 * 4 call sites, so every new thread takes libunwind's slow path (its
 * locks) under the tracer. The tracer shares this libunwind: it must keep
 * libunwind's signal blocking, or a sample landing inside the tracer's
 * slow-path unwind waits forever on the lock its own thread holds. Gives
 * up after 60 seconds (SIGALRM). Prints "threads N samples S" (S > 0).
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t samples;

static void on_prof(int sig)
{
    (void)sig;
    void *frames[64];
    if (unw_backtrace(frames, 64) > 0)
        samples++;
}

typedef void *(*step_fn)(unsigned path, int depth);

#define STEP(i) __attribute__((noinline)) static void *step_##i(unsigned path, int depth);
#define STEPS STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) \
              STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15)
STEPS
#undef STEP
#define STEP(i) step_##i,
static const step_fn steps[16] = { STEPS };
#undef STEP

#define CALL(k)                                                                   \
    case k:                                                                       \
        p = steps[(path >> 2) & 15](path >> 6, depth - 1);                        \
        break;
#define STEP(i)                                                                   \
    __attribute__((noinline)) static void *step_##i(unsigned path, int depth)     \
    {                                                                             \
        void *p = NULL;                                                           \
        if (depth == 0)                                                           \
            return malloc(64);                                                    \
        switch (path & 3) {                                                       \
            CALL(0) CALL(1) CALL(2) CALL(3)                                       \
        }                                                                         \
        __asm__ volatile("" ::: "memory"); /* a real frame, not a tail call */    \
        return p;                                                                 \
    }
STEPS
#undef STEP

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg;
    for (int i = 0; i < 60; i++) {
        seed = seed * 1103515245u + 12345u;
        free(steps[seed >> 28](seed, 3));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200;
    alarm(60);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = { { 0, 100 }, { 0, 100 } };
    setitimer(ITIMER_PROF, &it, NULL);
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, (void *)(size_t)(i + 1)) != 0)
            return 1;
        pthread_join(t, NULL);
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_PROF, &off, NULL);
    printf("threads %d samples %s\n", n, samples > 0 ? "some" : "none");
    return 0;
}
