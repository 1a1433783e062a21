/*
 * tests/programs/tracer_faults.c: programs that end badly, for the tests
 * of traces that survive faults (test_tracer_faults.c). Every mode first
 * allocates a leaked 777-byte block and 1000 leaked 48-byte blocks (what
 * the tests look for), and prints only what does not depend on the
 * tracer, so a plain and a traced run must print the same.
 *   signal SIG     raises signal number SIG (SIG_DFL, as the program found it)
 *   sigkill        SIGKILLs itself
 *   busy-signal SIG  two threads allocate and free without pause while
 *                  main sends itself SIG
 *   sigpipe        writes to a pipe whose reader is gone (SIGPIPE reset to
 *                  SIG_DFL with signal() first)
 *   handler        installs its own SIGTERM handler, which prints and calls
 *                  exit(7), then raises SIGTERM; first prints what
 *                  sigaction() says SIGTERM's disposition is
 *   thread-exit [N]  a thread calls exit(5) while two others allocate; with
 *                  N, each of those holds N blocks of 64 bytes, then frees
 *                  them all (the number of live blocks swings by 2N)
 *   thread-quick-exit  a thread calls quick_exit(6) while two others allocate
 *   fork-noexec    the child execvp()s a missing program, then allocates 888
 *                  (leaked) and exits 0; the parent waits, prints the status
 *   fork-nothing   the child allocates nothing and exits 0 (exit, not _exit)
 *   many N [LIMIT] N more leaked blocks of 100 bytes, then returns 0; with
 *                  LIMIT, first sets RLIMIT_FSIZE to LIMIT bytes (as
 *                  `ulimit -f` would): the tracer's disk is "full"
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int stop;
static int churn_batch = 1;

static void *churn(void *arg)
{
    (void)arg;
    void *volatile held[1024];
    while (!stop) {
        for (int i = 0; i < churn_batch; i++)
            held[i] = malloc(64);
        for (int i = 0; i < churn_batch; i++)
            free(held[i]);
    }
    return NULL;
}

static void start_churn(pthread_t t[2])
{
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, churn, NULL);
    usleep(20000);   /* both threads are allocating */
}

static void *exit_thread(void *arg)
{
    int quick = *(int *)arg;
    void *volatile p = malloc(555);
    (void)p;
    if (quick)
        quick_exit(6);
    exit(5);
}

static void on_term(int sig)
{
    static const char msg[] = "handled SIGTERM\n";
    (void)sig;
    ssize_t w = write(1, msg, sizeof msg - 1);
    (void)w;
    exit(7);
}

static int fork_child(int noexec)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (noexec) {
            char *argv[] = { "alloctrace-no-such-program", NULL };
            execvp(argv[0], argv);
            void *volatile p = malloc(888);
            (void)p;
        }
        exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const char *arg = argc > 2 ? argv[2] : "0";
    void *volatile marker = malloc(777);
    (void)marker;
    for (int i = 0; i < 1000; i++) {
        void *volatile p = malloc(48);
        (void)p;
    }
    pthread_t t[2];
    if (strcmp(mode, "signal") == 0) {
        printf("raising %s\n", arg);
        fflush(stdout);
        raise(atoi(arg));
        return 0;
    }
    if (strcmp(mode, "sigkill") == 0)
        kill(getpid(), SIGKILL);
    if (strcmp(mode, "busy-signal") == 0) {
        start_churn(t);
        kill(getpid(), atoi(arg));
        pause();
        return 0;
    }
    if (strcmp(mode, "sigpipe") == 0) {
        signal(SIGPIPE, SIG_DFL);
        int fds[2];
        if (pipe(fds) != 0)
            return 2;
        close(fds[0]);
        ssize_t w = write(fds[1], "x", 1);
        printf("write returned %zd\n", w);
        return 0;
    }
    if (strcmp(mode, "handler") == 0) {
        struct sigaction sa;
        sigaction(SIGTERM, NULL, &sa);
        printf("SIGTERM was %s, flags %#x\n", sa.sa_handler == SIG_DFL ? "SIG_DFL" : "set",
               (unsigned)sa.sa_flags);
        fflush(stdout);
        signal(SIGTERM, on_term);
        raise(SIGTERM);
        return 0;
    }
    if (strcmp(mode, "thread-exit") == 0 || strcmp(mode, "thread-quick-exit") == 0) {
        static int quick;
        quick = strcmp(mode, "thread-quick-exit") == 0;
        if (argc > 2 && atoi(arg) > 0 && atoi(arg) <= 1024)
            churn_batch = atoi(arg);
        start_churn(t);
        pthread_t e;
        pthread_create(&e, NULL, exit_thread, &quick);
        pthread_join(e, NULL);
        return 0;
    }
    if (strcmp(mode, "fork-noexec") == 0 || strcmp(mode, "fork-nothing") == 0)
        return fork_child(strcmp(mode, "fork-noexec") == 0);
    if (strcmp(mode, "many") == 0) {
        if (argc > 3) {
            struct rlimit rl = { (rlim_t)atol(argv[3]), RLIM_INFINITY };
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        for (long i = 0, n = atol(arg); i < n; i++) {
            void *volatile p = malloc(100);
            (void)p;
        }
        printf("allocated %s\n", arg);
        return 0;
    }
    fprintf(stderr, "tracer_faults: unknown mode %s\n", mode);
    return 2;
}
