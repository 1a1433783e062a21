/*
 * tests/programs/attach_target.c: a program started without the tracer,
 * for alloctrace -p (tests/integration/test_attach.c).
 *
 * One round per line read on stdin ("r"), "exit" ends it: round N keeps a
 * block of 7000+N bytes allocated by grow_cache() (the oldest one of 4 is
 * freed), copies the line with strdup (libc's own malloc) and prints a
 * line. The output depends only on the rounds, so a traced run's must be
 * the same bytes. Between rounds the main thread waits in read(), as a
 * server waits in accept. A second thread allocates and frees all along,
 * so attach and detach meet a thread inside malloc.
 *
 * A line "dlopen PATH" loads that library (tests/programs/tracer_dlib.c)
 * and keeps what its dlib_alloc() allocates: an object loaded after the
 * attach. It prints "loaded".
 *
 * `attach_target exit-on-load`: a thread ends the process (exit status 3)
 * as soon as a new object is loaded into it, i.e. in the middle of an
 * attach.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *cache[4];
static void *loaded[16];   /* what dlopen'd libraries allocated: kept */
static volatile int stop;

__attribute__((noinline)) static void *grow_cache(size_t n)
{
    char *p = malloc(n);
    memset(p, 'x', n);
    return p;
}

static void *churn(void *arg)
{
    (void)arg;
    while (!stop) {
        void *p = malloc(48);
        free(p);
        usleep(100);
    }
    return NULL;
}

static int count_objects(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info;
    (void)size;
    ++*(int *)data;
    return 0;
}

static void *exit_on_load(void *arg)
{
    (void)arg;
    int first = 0;
    dl_iterate_phdr(count_objects, &first);
    for (;;) {
        int n = 0;
        dl_iterate_phdr(count_objects, &n);
        if (n != first)
            _exit(3);
        usleep(200);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t;
    if (argc > 1 && strcmp(argv[1], "exit-on-load") == 0)
        pthread_create(&t, NULL, exit_on_load, NULL);
    else
        pthread_create(&t, NULL, churn, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    char line[4096];
    unsigned long sum = 0;
    int nloaded = 0;
    for (int round = 0; fgets(line, sizeof line, stdin); round++) {
        if (strcmp(line, "exit\n") == 0)
            break;
        if (strncmp(line, "dlopen ", 7) == 0 && nloaded < 16) {
            line[strcspn(line, "\n")] = '\0';
            void *h = dlopen(line + 7, RTLD_NOW);
            void *(*fn)(void) = h ? (void *(*)(void))dlsym(h, "dlib_alloc") : NULL;
            loaded[nloaded++] = fn ? fn() : NULL;
            printf("loaded %s\n", fn ? "" : dlerror());
            round--;
            continue;
        }
        free(cache[round % 4]);
        cache[round % 4] = grow_cache(7000 + (size_t)round);
        char *copy = strdup(line);
        sum += strlen(copy) + 7000 + (size_t)round;
        printf("round %d: %lu\n", round, sum);
        free(copy);
    }
    stop = 1;
    return 0;
}
