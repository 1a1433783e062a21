/* tests/programs/gate_pool.c: a pool of 4 threads that look up a user and
 * a host (glibc's NSS, its per-thread buffers), then wait for work forever;
 * main exits with the pool still running. The leak kinds must not depend
 * on where each thread happened to be when the scan looked. */
#include <netdb.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started;

static void *worker(void *arg)
{
    (void)arg;
    struct passwd *pw = getpwnam("root");
    struct addrinfo *ai = NULL;
    if (getaddrinfo("localhost", "80", NULL, &ai) == 0)
        freeaddrinfo(ai);
    char *name = malloc(64);
    snprintf(name, 64, "%s", pw ? pw->pw_name : "?");
    free(name);
    pthread_mutex_lock(&lock);
    started++;
    pthread_cond_broadcast(&cv);   /* wakes the other workers too */
    for (;;)
        pthread_cond_wait(&cv, &lock);
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    pthread_mutex_lock(&lock);
    while (started < 4)
        pthread_cond_wait(&cv, &lock);
    pthread_mutex_unlock(&lock);
    puts("pool ready");
    return 0;
}
