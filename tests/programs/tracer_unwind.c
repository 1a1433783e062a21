/*
 * tests/programs/tracer_unwind.c: libunwind under the tracer.
 *
 *   tracer_unwind fork FORKS
 *     Two spawner threads start short threads one after another, without
 * pause; each short thread makes 1000 allocations of 48 bytes, each
 * through a different path of 3 calls among 32 functions of 8 call sites, so that
 * libunwind keeps meeting return addresses its per-thread trace cache has
 * not seen (its slow path, which takes its global locks). Meanwhile main
 * forks FORKS children, one at a time. Each child allocates 200 blocks of
 * 777 bytes through another 32 functions, never called before the fork
 * (slow-path unwinds again, now in the child), and exits 0. A child that
 * has not finished after 20 seconds counts as hung and is killed; the
 * whole program gives up after 120 (SIGALRM). Prints "forks N hung H".
 *   tracer_unwind threads N
 *     N threads one after another, each allocating 20 blocks of 10000 + its
 *     number bytes through child_0 -> child_1 and freeing them: each new
 *     thread's libunwind cache is one an earlier thread left (unwind_cache.c).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef void *(*step_fn)(unsigned path, int depth, size_t size);

/* 32 functions: each either allocates or calls the one its path names. */
#define STEP(table, i)                                                           \
    __attribute__((noinline)) static void *table##_##i(unsigned path, int depth, \
                                                       size_t size);
#define STEPS(table)                                                                      \
    STEP(table, 0) STEP(table, 1) STEP(table, 2) STEP(table, 3) STEP(table, 4)           \
    STEP(table, 5) STEP(table, 6) STEP(table, 7) STEP(table, 8) STEP(table, 9)           \
    STEP(table, 10) STEP(table, 11) STEP(table, 12) STEP(table, 13) STEP(table, 14)      \
    STEP(table, 15) STEP(table, 16) STEP(table, 17) STEP(table, 18) STEP(table, 19)      \
    STEP(table, 20) STEP(table, 21) STEP(table, 22) STEP(table, 23) STEP(table, 24)      \
    STEP(table, 25) STEP(table, 26) STEP(table, 27) STEP(table, 28) STEP(table, 29)      \
    STEP(table, 30) STEP(table, 31)
STEPS(parent)
STEPS(child)
#undef STEP

#define STEP(table, i) table##_##i,
static const step_fn parent_steps[32] = { STEPS(parent) };
static const step_fn child_steps[32] = { STEPS(child) };
#undef STEP

/* Eight call sites in each: 256 return addresses a table, more than
 * libunwind's cache of unwind rules holds (128), so it keeps parsing. */
#define CALL(table, k)                                                                   \
    case k:                                                                              \
        p = table##_steps[(path >> 3) & 31](path >> 8, depth - 1, size);                 \
        break;
#define STEP(table, i)                                                                   \
    __attribute__((noinline)) static void *table##_##i(unsigned path, int depth,         \
                                                       size_t size)                      \
    {                                                                                    \
        void *p = NULL;                                                                  \
        if (depth == 0)                                                                  \
            return malloc(size);                                                         \
        switch (path & 7) {                                                              \
            CALL(table, 0) CALL(table, 1) CALL(table, 2) CALL(table, 3)                  \
            CALL(table, 4) CALL(table, 5) CALL(table, 6) CALL(table, 7)                  \
        }                                                                                \
        __asm__ volatile("" ::: "memory"); /* a real frame, not a tail call */           \
        return p;                                                                        \
    }
STEPS(parent)
STEPS(child)
#undef STEP

static volatile int stop;

static void *short_thread(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg;
    for (int i = 0; i < 1000; i++) {
        seed = seed * 1103515245u + 12345u;
        free(parent_steps[seed >> 27](seed, 3, 48));
    }
    return NULL;
}

static void *spawner(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg;
    while (!stop) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_thread, (void *)(size_t)seed++) == 0)
            pthread_join(t, NULL);
    }
    return NULL;
}

static void child_work(void)
{
    alarm(20);
    unsigned seed = (unsigned)getpid();
    for (int i = 0; i < 200; i++) {
        seed = seed * 1103515245u + 12345u;
        void *volatile p = child_steps[seed >> 27](seed, 3, 777);
        (void)p;
    }
    _exit(0);
}

/* 1 when the child exited 0 within 20 seconds; else kills it. */
static int child_finished(pid_t pid)
{
    for (int waited_ms = 0; waited_ms < 20000; waited_ms += 10) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) && WEXITSTATUS(st) == 0;
        nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return 0;
}

static void *short_path_thread(void *arg)
{
    for (int i = 0; i < 20; i++)
        free(child_0(9, 1, 10000 + (size_t)arg));   /* child_0 -> child_1 -> malloc */
    return NULL;
}

static int threads(int n)
{
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_path_thread, (void *)(size_t)i) != 0)
            return 1;
        pthread_join(t, NULL);
    }
    printf("threads %d\n", n);
    return 0;
}

static int fork_while_unwinding(int forks)
{
    int done = 0, hung = 0;
    alarm(120);
    /* Main's own first backtraces, before forking. */
    for (int i = 0; i < 1000; i++)
        free(parent_steps[i & 31]((unsigned)i * 2654435761u, 3, 32));
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, spawner, (void *)(size_t)(i * 100000 + 1));
    for (int i = 0; i < forks; i++) {
        nanosleep(&(struct timespec){ 0, 2 * 1000 * 1000 }, NULL);
        pid_t pid = fork();
        if (pid == 0)
            child_work();
        if (pid > 0 && child_finished(pid))
            done++;
        else
            hung++;
    }
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("forks %d hung %d\n", done, hung);
    return hung != 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "fork") == 0)
        return fork_while_unwinding(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "threads") == 0)
        return threads(atoi(argv[2]));
    fprintf(stderr, "usage: tracer_unwind fork FORKS | threads N\n");
    return 2;
}
