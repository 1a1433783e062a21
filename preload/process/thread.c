/*
 * preload/process/thread.c: the tracer's own threads (full mode's writer,
 * leaks mode's keeper), started one way. Detached (nothing joins them:
 * they end with the process), with a small stack, every signal blocked
 * (the program's handlers never run on them, and a signal that ends the
 * process is handled on a thread of the program's), created with the
 * guard held (whatever pthread_create allocates passes untraced) and
 * named, so that `top -H` and /proc show whose they are.
 *
 * at_thread_run starts a joinable one on a stack the caller mapped:
 * leaks mode's exit report shares its work with one (leakreport.c), joins
 * it, and must know its stack's range, which the scan for leak kinds
 * leaves out of the roots.
 */
#include <pthread.h>
#include <signal.h>

#include "tracer.h"

static int start(pthread_attr_t *attr, void *(*fn)(void *), void *arg, const char *name,
                 pthread_t *out)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int saved = at_guard;
    at_guard = 1;
    int rc = pthread_create(out, attr, fn, arg);
    at_guard = saved;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(attr);
    if (rc == 0)
        pthread_setname_np(*out, name);
    return rc;
}

int at_thread_start(void *(*fn)(void *), const char *name, pthread_t *out)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 << 10);
    return start(&attr, fn, NULL, name, out);
}

int at_thread_run(void *(*fn)(void *), void *arg, const char *name, void *stack, size_t len,
                  pthread_t *out)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (pthread_attr_setstack(&attr, stack, len) != 0) {
        pthread_attr_destroy(&attr);
        return -1;
    }
    return start(&attr, fn, arg, name, out);
}
