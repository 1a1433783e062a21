/*
 * tests/programs/tracer_keeper.c: leaks mode's records handed to the
 * keeper thread (preload/hook/handoff.c) where the order of rings matters.
 *
 *   reuse    thread A allocates blocks of 2000-2060 bytes (past glibc's
 *            tcache, so a release by another thread puts them back in A's
 *            arena) and hands them to thread B, which frees them; A gets
 *            the same addresses again. 300 rounds of 64. Then A keeps 8
 *            blocks from keep_block() and prints "keep ADDRESS SIZE" and
 *            "keep_block ADDRESS" (the function's address).
 *   fork     three threads allocate and free (each freeing the other's
 *            blocks) while the main thread forks 20 children; each child
 *            leaks one block of 7777 bytes and exits; the parent leaks one
 *            of 8888 and prints "child PID" for each.
 *   sigterm  allocates 20000 blocks of 4097 bytes, keeps them, and raises
 *            SIGTERM at once: the last records are still in the ring.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUND 64
#define ROUNDS 300

static void *handed[ROUND];
static int handed_n, done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *freer(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!handed_n && !done)
            pthread_cond_wait(&cv, &lock);
        if (!handed_n) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        void *p = handed[--handed_n];
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&lock);
        free(p);
    }
}

static void hand(void *p)
{
    pthread_mutex_lock(&lock);
    while (handed_n == ROUND)
        pthread_cond_wait(&cv, &lock);
    handed[handed_n++] = p;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&lock);
}

/* Zeroed: glibc's old free-list pointers in it would make another kept
 * block look indirectly lost. */
static __attribute__((noinline)) void *keep_block(size_t size)
{
    void *p = malloc(size);
    memset(p, 0, size);
    return p;
}

static int reuse(void)
{
    pthread_t t;
    pthread_create(&t, NULL, freer, NULL);
    static void *seen[ROUND * 8];
    size_t again = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < ROUND; i++) {
            void *p = malloc(2000 + (size_t)(i % 4) * 16);
            for (size_t s = 0; s < sizeof seen / sizeof *seen; s++)
                if (seen[s] == p) {
                    again++;
                    break;
                }
            seen[(r * ROUND + i) % (sizeof seen / sizeof *seen)] = p;
            hand(p);
        }
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&lock);
    pthread_join(t, NULL);
    /* Old copies of addresses the kept blocks may get again: cleared, so
     * the kept blocks are definitely lost, as valgrind (which does not
     * give addresses back so soon) finds them. */
    memset(seen, 0, sizeof seen);
    memset(handed, 0, sizeof handed);
    for (int i = 0; i < 8; i++) {
        size_t size = 2000 + (size_t)i * 16;   /* the sizes of the handed blocks */
        printf("keep %p %zu\n", keep_block(size), size);
    }
    printf("keep_block %p\nreused %zu\n", (void *)keep_block, again);
    return 0;
}

static volatile int stop;

/* Allocates and frees, and frees what the next thread left in its slot. */
static void *churn(void *arg)
{
    static void *slot[3];
    int me = (int)(long)arg;
    while (!stop) {
        void *p = malloc(100 + (size_t)me);
        void *q = __atomic_exchange_n(&slot[(me + 1) % 3], p, __ATOMIC_ACQ_REL);
        free(q);
        free(malloc(3000));
    }
    return NULL;
}

static int forks(void)
{
    pthread_t t[3];
    for (long i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, churn, (void *)i);
    for (int i = 0; i < 20; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            void *p = malloc(7777);
            memset(p, 1, 7777);
            exit(0);
        }
        printf("child %d\n", (int)pid);
        int status;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 1;
    }
    stop = 1;
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("parent %p\n", malloc(8888));
    return 0;
}

static int sigterm(void)
{
    static void *kept[20000];
    for (int i = 0; i < 20000; i++)
        kept[i] = malloc(4097);
    printf("kept %p\n", (void *)kept);
    fflush(stdout);
    raise(SIGTERM);
    return 1;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "reuse") == 0)
        return reuse();
    if (strcmp(what, "fork") == 0)
        return forks();
    if (strcmp(what, "sigterm") == 0)
        return sigterm();
    fprintf(stderr, "usage: tracer_keeper reuse|fork|sigterm\n");
    return 2;
}
