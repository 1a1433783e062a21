/*
 * preload/process/thread.c: the tracer's own threads (full mode's writer,
 * leaks mode's keeper), started one way. Detached (nothing joins them:
 * they end with the process), with a small stack, every signal blocked
 * (the program's handlers never run on them, and a signal that ends the
 * process is handled on a thread of the program's), created with the
 * guard held (whatever pthread_create allocates passes untraced) and
 * named, so that `top -H` and /proc show whose they are.
 */
#include <pthread.h>
#include <signal.h>

#include "tracer.h"

int at_thread_start(void *(*fn)(void *), const char *name, pthread_t *out)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 << 10);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int saved = at_guard;
    at_guard = 1;
    int rc = pthread_create(out, &attr, fn, NULL);
    at_guard = saved;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc == 0)
        pthread_setname_np(*out, name);
    return rc;
}
