/*
 * tests/programs/sample_sites.c: allocation sites of known sizes and
 * counts, for the sampling tests (test_sample.c) and bench/sample.
 *
 *   sample_sites            every site once: 5 sites, ~120 MB allocated
 *   sample_sites toggle     site_small, then site_off between two SIGUSR2
 *                           (tracing off there with --toggle-signal USR2;
 *                           without it the signal ends the program), then
 *                           site_calloc
 *   sample_sites threads N  the sites in N threads at once
 *   sample_sites snapshot   site_medium (20 MB allocated, 10 MB kept), then
 *                           SIGUSR1 (a snapshot with --snapshot-signal USR1;
 *                           without it the signal ends the program), half a
 *                           second, then the blocks freed
 *   sample_sites fork       the sites in 2 threads while the main thread
 *                           forks 20 children that each run site_calloc
 *
 * Sizes vary within a site (a fixed pattern, no randomness), so the
 * estimate of a site is not the estimate of one size.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Per thread: `threads N` runs the sites at once, and one shared sink let
 * a thread free the block another had just put there (a double free). */
static __thread void *volatile sink;

__attribute__((noinline)) static void site_small(void)
{
    for (int i = 0; i < 100000; i++) {
        sink = malloc(32 + (size_t)(i % 5) * 8);   /* 32..64 B, freed at once */
        free(sink);
    }
}

__attribute__((noinline)) static void site_medium(void **keep)
{
    for (int i = 0; i < 20000; i++) {
        void *p = malloc(1500 + (size_t)(i % 11) * 100);   /* 1.5..2.5 KB */
        if (i % 2)
            keep[i / 2] = p;   /* half of them live to the end */
        else
            free(p);
    }
}

__attribute__((noinline)) static void site_large(void)
{
    for (int i = 0; i < 200; i++) {
        sink = malloc((size_t)(128 + i % 256) * 1024);   /* 128..384 KB */
        free(sink);
    }
}

__attribute__((noinline)) static void site_calloc(void)
{
    for (int i = 0; i < 50000; i++) {
        sink = calloc(1, 200 + (size_t)(i % 3) * 100);   /* 200..400 B */
        free(sink);
    }
}

__attribute__((noinline)) static void site_realloc(void)
{
    for (int i = 0; i < 5000; i++) {
        void *p = NULL;
        for (size_t n = 256; n <= 4096; n *= 2)
            p = realloc(p, n);
        free(p);
    }
}

__attribute__((noinline)) static void site_off(void)
{
    for (int i = 0; i < 20000; i++) {
        sink = malloc(1000);
        free(sink);
    }
}

static void *all_sites(void *arg)
{
    void **keep = calloc(10000, sizeof *keep);
    site_small();
    site_medium(keep);
    site_large();
    site_calloc();
    site_realloc();
    if (arg)
        for (int i = 0; i < 10000; i++)
            free(keep[i]);
    free(keep);   /* the kept blocks themselves stay live (a leak) without arg */
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "threads") == 0) {
        int n = atoi(argv[2]);
        pthread_t t[64];
        for (int i = 0; i < n && i < 64; i++)
            pthread_create(&t[i], NULL, all_sites, (void *)1);
        for (int i = 0; i < n && i < 64; i++)
            pthread_join(t[i], NULL);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "fork") == 0) {
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, all_sites, (void *)1);
        for (int i = 0; i < 20; i++) {
            pid_t pid = fork();
            if (pid == 0) {
                site_calloc();
                _exit(0);
            }
            int st;
            if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
                return 1;
        }
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "snapshot") == 0) {
        void **keep = calloc(10000, sizeof *keep);
        site_medium(keep);
        raise(SIGUSR1);
        /* The tracer's control thread places the snapshot's mark after the
         * signal, as it would after a user's kill: give it the time a
         * loaded machine may take before the blocks go (a run under load
         * freed them first, and the snapshot held 0 bytes). */
        nanosleep(&(struct timespec){ 0, 500 * 1000 * 1000 }, NULL);
        for (int i = 0; i < 10000; i++)
            free(keep[i]);
        free(keep);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "toggle") == 0) {
        /* Run only with --toggle-signal USR2: the tracer's handler takes it. */
        site_small();
        raise(SIGUSR2);
        site_off();
        raise(SIGUSR2);
        site_calloc();
        return 0;
    }
    all_sites(NULL);
    puts("done");
    return 0;
}
