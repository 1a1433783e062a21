/*
 * tests/programs/tracer_process.c: process life-cycle cases, one per mode.
 * Every mode first allocates 777 bytes (the marker the tests look for).
 *   fork        child allocates 888, exits; prints "child PID"
 *   fork-exec   child execs `/bin/true`; parent allocates 999 after wait
 *   system      system("true") then allocates 999
 *   thread-exit a thread allocates 555 and calls exit(3)
 *   _exit       allocates 666 and calls _exit(4)
 *   abort       allocates 666 and aborts
 *   toggle      raises SIGUSR2, allocates 321, raises it again, allocates 322
 *               (run with the tracer's toggle signal set to USR2)
 *   fork-threads  three threads allocate without pause while main forks 50
 *               children that allocate 888 and _exit; prints "forks 50"
 *   sigkill     allocates 50000 blocks of 64 bytes (several MiB of trace),
 *               then SIGKILLs itself
 *   sigkill-starved  pins itself to CPU 0 with the tracer's writer thread
 *               (alloctrace-wr) at nice 19, prints "starved TID", then as
 *               sigkill: the writer gets the CPU only when the program
 *               waits for a buffer, so every buffer is full at the kill
 *   sigkill-idle  allocates and frees 1000 blocks of 64 bytes (far less
 *               than a MiB of trace), sleeps 400 ms, then SIGKILLs itself
 *   interleave  30000 allocations of 100, 101, ... bytes from three call
 *               sites in turn (site_a, site_b, site_c), each site freeing
 *               its previous block first: records of several backtraces
 *               interleaved over several buffers
 *   interleave-abort  the same, then aborts with the blocks of the last
 *               round live
 *   closefds    closes every descriptor above 2, allocates 20000 blocks
 *               of 32 bytes, opens a file into the freed number (the
 *               tracer must not write into it), allocates 444
 */
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Every thread of the process on CPU 0, the tracer's writer thread at the
 * lowest priority a process may give its own threads. */
static void starve_writer(void)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        pid_t tid = atoi(e->d_name);
        sched_setaffinity(tid, sizeof one, &one);
        char path[64], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(name, sizeof name, f))
                name[0] = 0;
            fclose(f);
        }
        if (strncmp(name, "alloctrace-wr", 13) == 0 && setpriority(PRIO_PROCESS, tid, 19) == 0)
            printf("starved %d\n", (int)tid);
    }
    if (d)
        closedir(d);
    fflush(stdout);
}

static void *exit_thread(void *arg)
{
    (void)arg;
    void *volatile p = malloc(555);
    (void)p;
    exit(3);
}

static volatile int stop;

static void *busy_thread(void *arg)
{
    (void)arg;
    while (!stop) {
        void *volatile p = malloc(48);
        free(p);
    }
    return NULL;
}

static int fork_threads(void)
{
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, busy_thread, NULL);
    int done = 0;
    for (int i = 0; i < 50; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            void *volatile p = malloc(888);
            (void)p;
            _exit(0);
        }
        int st;
        if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
            done++;
    }
    stop = 1;
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("forks %d\n", done);
    return 0;
}

static int closefds(const char *scratch)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    long max = rl.rlim_cur > 65536 ? 65536 : (long)rl.rlim_cur;
    for (long fd = 3; fd < max; fd++)
        close((int)fd);
    /* Take the tracer's old number so a write there would land in scratch. */
    int fd = open(scratch, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0 && fd != 1000) {
        dup2(fd, 1000);
        close(fd);
    }
    void *blocks[20000];
    for (int i = 0; i < 20000; i++)
        blocks[i] = malloc(32);
    for (int i = 0; i < 20000; i++)
        free(blocks[i]);
    void *volatile p = malloc(444);
    free(p);
    return 0;
}

/* One call site each: frame 0 of their records differs. */
static __attribute__((noinline)) void *site_a(void *old, size_t n)
{
    free(old);
    return malloc(n);
}

static __attribute__((noinline)) void *site_b(void *old, size_t n)
{
    free(old);
    return malloc(n);
}

static __attribute__((noinline)) void *site_c(void *old, size_t n)
{
    free(old);
    return malloc(n);
}

static void interleave(void)
{
    void *(*const sites[3])(void *, size_t) = { site_a, site_b, site_c };
    void *last[3] = { NULL, NULL, NULL };
    for (int i = 0; i < 30000; i++)
        last[i % 3] = sites[i % 3](last[i % 3], 100 + (size_t)i);
    printf("site_a %p\nsite_b %p\nsite_c %p\n", last[0], last[1], last[2]);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    void *volatile marker = malloc(777);
    if (strcmp(mode, "fork") == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            void *volatile p = malloc(888);
            free(p);
            exit(0);
        }
        printf("child %d\n", (int)pid);
        int st;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (strcmp(mode, "fork-exec") == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        printf("child %d\n", (int)pid);
        int st;
        waitpid(pid, &st, 0);
        void *volatile p = malloc(999);
        free(p);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (strcmp(mode, "system") == 0) {
        int rc = system("true");
        void *volatile p = malloc(999);
        free(p);
        return rc;
    }
    if (strcmp(mode, "thread-exit") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, exit_thread, NULL);
        pthread_join(t, NULL);
        return 0;
    }
    if (strcmp(mode, "_exit") == 0) {
        void *volatile p = malloc(666);
        (void)p;
        _exit(4);
    }
    if (strcmp(mode, "interleave") == 0) {
        interleave();
        return 0;
    }
    if (strcmp(mode, "interleave-abort") == 0) {
        interleave();
        abort();
    }
    if (strcmp(mode, "abort") == 0) {
        void *volatile p = malloc(666);
        (void)p;
        abort();
    }
    if (strcmp(mode, "toggle") == 0) {
        raise(SIGUSR2);
        void *volatile a = malloc(321);
        raise(SIGUSR2);
        void *volatile b = malloc(322);
        free(a);
        free(b);
        return 0;
    }
    if (strcmp(mode, "sigkill-starved") == 0)
        starve_writer();
    if (strcmp(mode, "sigkill") == 0 || strcmp(mode, "sigkill-starved") == 0) {
        for (int i = 0; i < 50000; i++) {
            void *volatile p = malloc(64);
            free(p);
        }
        kill(getpid(), SIGKILL);
    }
    if (strcmp(mode, "sigkill-idle") == 0) {
        for (int i = 0; i < 1000; i++) {
            void *volatile p = malloc(64);
            free(p);
        }
        usleep(400000);
        kill(getpid(), SIGKILL);
    }
    if (strcmp(mode, "fork-threads") == 0)
        return fork_threads();
    if (strcmp(mode, "closefds") == 0 && argc > 2)
        return closefds(argv[2]);
    free(marker);
    return 0;
}
