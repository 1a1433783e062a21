/*
 * tests/programs/tracer_host.c: programs that watch what the tracer must
 * leave alone - their descriptors, errno, their output under signals and
 * low limits. Run plain and traced, the output must be the same. Every
 * mode allocates through nested calls (so unwinding walks real frames)
 * from several threads.
 *   closeall IN OUT   closes every descriptor above 2 (close_range when
 *                     argv[4] is "range", closefrom when "from", a loop
 *                     otherwise), opens IN and OUT into the freed numbers
 *                     and copies IN to OUT while allocating
 *   daemon LOG        closes 0, 1 and 2 and every other, reopens stdin
 *                     from /dev/null and stdout/stderr to LOG, prints 101
 *                     lines while allocating
 *   dup2fork FILE     dup2's FILE onto 1000, forks; the child writes
 *                     "child" to 1000, the parent "parent" after it
 *   errno             8 threads check that successful malloc/calloc/
 *                     realloc/free leave errno as they found it; then a
 *                     failing malloc must give ENOMEM
 *   nofile [keep]     opens /dev/null until EMFILE, prints the numbers
 *                     (with keep, exits with all of them still open)
 *   alarm             a SIGALRM every 100 us while it allocates, reads
 *                     and writes a pipe; prints what it saw
 *   tz                switches TZ twice with tzset (glibc frees the zone
 *                     it held) and prints a local hour
 */
#include <alloca.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

/* A few real frames under every allocation. */
static __attribute__((noinline)) void *level3(size_t n) { return malloc(n); }
static __attribute__((noinline)) void *level2(size_t n) { return level3(n + 1); }
static __attribute__((noinline)) void *level1(size_t n) { return level2(n + 1); }

static void churn(int n)
{
    for (int i = 0; i < n; i++)
        free(level1((size_t)(i % 200) + 8));
}

static void *churn_thread(void *arg)
{
    (void)arg;
    while (!stop)
        churn(100);
    return NULL;
}

static pthread_t threads[2];

static void start_threads(void)
{
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, churn_thread, NULL);
}

static void stop_threads(void)
{
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
}

static void close_above_2(const char *how)
{
    if (how && strcmp(how, "range") == 0) {
        close_range(3, ~0u, 0);
    } else if (how && strcmp(how, "from") == 0) {
        closefrom(3);
    } else {
        struct rlimit rl;
        getrlimit(RLIMIT_NOFILE, &rl);
        long max = rl.rlim_cur > 65536 ? 65536 : (long)rl.rlim_cur;
        for (long fd = 3; fd < max; fd++)
            close((int)fd);
    }
}

static int closeall(const char *in, const char *out, const char *how)
{
    start_threads();
    churn(2000);
    close_above_2(how);
    churn(2000);
    int ifd = open(in, O_RDONLY);
    int ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char buf[16];
    ssize_t n;
    size_t total = 0;
    while ((n = read(ifd, buf, sizeof buf)) > 0) {
        churn(50);
        if (write(ofd, buf, (size_t)n) != n)
            return 1;
        total += (size_t)n;
    }
    stop_threads();
    printf("in=%d out=%d copied %zu bytes\n", ifd, ofd, total);
    return close(ofd) != 0;
}

static int daemonise(const char *log)
{
    start_threads();
    churn(2000);
    for (int fd = 0; fd < 1024; fd++)
        close(fd);
    churn(2000);
    int in = open("/dev/null", O_RDONLY);
    int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = dup2(out, 2);
    for (int i = 0; i <= 100; i++) {
        churn(20);
        printf("line %d of the log\n", i);
        fflush(stdout);
    }
    stop_threads();
    printf("stdin=%d stdout=%d stderr=%d\n", in, out, err);
    return 0;
}

static int dup2fork(const char *file)
{
    churn(1000);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 1000) != 1000)
        return 1;
    close(fd);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        churn(1000);
        _exit(write(1000, "child\n", 6) == 6 ? 0 : 1);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    churn(1000);
    int ok = write(1000, "parent\n", 7) == 7;
    printf("child status %d, parent write %s\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
           ok ? "ok" : "failed");
    return 0;
}

#define SENTINEL 4242

/* Frames spread over several stack pages: libunwind checks each new page
 * it reads (its cache holds four), so every call here checks memory. */
static __attribute__((noinline)) void *spread(size_t n, int pages)
{
    volatile char *pad = alloca((size_t)pages * 4096 + 16);
    pad[0] = 0;
    void *p = level1(n);
    pad[1] = 0;
    return p;
}

static void *errno_thread(void *arg)
{
    long changed = 0;
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        errno = SENTINEL;
        char *p = spread((size_t)(i % 300) + 1, i % 9);
        changed += errno != SENTINEL;
        errno = SENTINEL;
        p = realloc(p, (size_t)(i % 500) + 64);
        changed += errno != SENTINEL;
        errno = SENTINEL;
        free(p);
        changed += errno != SENTINEL;
        errno = SENTINEL;
        p = calloc(3, 7);
        changed += errno != SENTINEL;
        errno = SENTINEL;
        free(p);
        changed += errno != SENTINEL;
    }
    return (void *)changed;
}

static int errno_kept(void)
{
    pthread_t t[8];
    long changed = 0;
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, errno_thread, NULL);
    for (int i = 0; i < 8; i++) {
        void *c;
        pthread_join(t[i], &c);
        changed += (long)c;
    }
    errno = 0;
    void *volatile huge = malloc((size_t)1 << 62);
    int failed_errno = errno;
    printf("errno changed %ld times; failing malloc: %s, errno %s\n", changed,
           huge ? "succeeded" : "NULL", failed_errno == ENOMEM ? "ENOMEM" : strerror(failed_errno));
    return 0;
}

static int nofile(int keep)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    churn(1000);
    int fds[64], n = 0;
    while (n < 64 && (fds[n] = open("/dev/null", O_RDONLY)) >= 0) {
        churn(50);
        n++;
    }
    int e = errno;
    printf("limit %ld: %d opened:", (long)rl.rlim_cur, n);
    for (int i = 0; i < n; i++)
        printf(" %d", fds[i]);
    printf("; then %s\n", strerror(e));
    if (keep)   /* every number stays in use until exit */
        return 0;
    for (int i = 0; i < n; i++)
        close(fds[i]);
    int p[2];
    int rc = pipe(p);
    printf("pipe: %d %d %d\n", rc, rc == 0 ? p[0] : -1, rc == 0 ? p[1] : -1);
    return 0;
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

static int alarm_storm(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);   /* no SA_RESTART: calls see EINTR */
    struct itimerval it = { { 0, 100 }, { 0, 100 } };
    setitimer(ITIMER_REAL, &it, NULL);
    start_threads();
    int p[2];
    if (pipe(p) != 0)
        return 1;
    long bad = 0, lines = 0;
    for (int i = 0; i < 3000; i++) {
        errno = SENTINEL;
        free(level1((size_t)i % 100 + 1));
        bad += errno != SENTINEL;
        char line[32];
        int len = snprintf(line, sizeof line, "%d\n", i);
        ssize_t w;
        while ((w = write(p[1], line, (size_t)len)) < 0 && errno == EINTR)
            ;
        char back[32];
        ssize_t r;
        while ((r = read(p[0], back, sizeof back)) < 0 && errno == EINTR)
            ;
        lines += r == len && memcmp(back, line, (size_t)len) == 0;
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    stop_threads();
    printf("lines echoed %ld of 3000; errno changed %ld times; alarms %s\n", lines, bad,
           alarms > 0 ? "seen" : "none");
    return 0;
}

static int zones(void)
{
    churn(1000);
    setenv("TZ", "Europe/Paris", 1);
    tzset();
    time_t t = 1700000000;
    struct tm tm;
    localtime_r(&t, &tm);
    setenv("TZ", "America/New_York", 1);
    tzset();
    struct tm ny;
    localtime_r(&t, &ny);
    printf("Paris %d, New York %d\n", tm.tm_hour, ny.tm_hour);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "closeall") == 0 && argc > 3)
        return closeall(argv[2], argv[3], argc > 4 ? argv[4] : NULL);
    if (strcmp(mode, "daemon") == 0 && argc > 2)
        return daemonise(argv[2]);
    if (strcmp(mode, "dup2fork") == 0 && argc > 2)
        return dup2fork(argv[2]);
    if (strcmp(mode, "errno") == 0)
        return errno_kept();
    if (strcmp(mode, "nofile") == 0)
        return nofile(argc > 2 && strcmp(argv[2], "keep") == 0);
    if (strcmp(mode, "alarm") == 0)
        return alarm_storm();
    if (strcmp(mode, "tz") == 0)
        return zones();
    fprintf(stderr, "usage: tracer_host closeall|daemon|dup2fork|errno|nofile|alarm|tz ...\n");
    return 2;
}
