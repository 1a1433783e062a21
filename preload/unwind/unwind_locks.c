/*
 * preload/unwind/unwind_locks.c: libunwind's locks across fork, and its signal
 * blocking left out of the tracer's own unwinding.
 *
 * Debian's libunwind 1.6 has no thread-local storage configured, so
 * UNW_CACHE_PER_THREAD silently becomes UNW_CACHE_GLOBAL: its cache of
 * unwind rules is one structure behind one mutex, held for the whole of a
 * slow-path step (DWARF lookup, dl_iterate_phdr, parsing), and its memory
 * pools have mutexes of their own. A thread inside one of them when
 * another forks leaves the child a mutex nobody will release: the child
 * hangs in its first slow-path unwind. The mutexes are libunwind's private
 * statics, so the tracer learns them from libunwind's own calls:
 * unwind_probe.c points libunwind's pthread_mutex_lock and _unlock at the
 * functions below, which note each mutex the first time it is seen (a
 * read of a small array afterwards; no shared write) and count, per
 * thread, the ones held. Before fork every known mutex is taken - all or
 * none, retried, because libunwind nests them (rule cache, then a pool)
 * and a fixed order could deadlock with a thread nesting the other way -
 * and released after it in both processes, as glibc does for malloc. Only
 * the slow path takes these mutexes, so allocations pay nothing.
 *
 * Signals: around every one of those mutexes and around its
 * dl_iterate_phdr libunwind blocks all signals and restores them, two
 * rt_sigprocmask calls each time: ~93,000 system calls in a 2-second
 * g++ run. Blocking protects a signal handler that unwinds with the same
 * libunwind on the same thread from its own lock. The tracer's unwinding
 * never nests - a signal handler's allocation meets at_guard and records
 * no frames - so inside it (at_guard == AT_GUARD_UNWINDING) the calls are
 * skipped, unless libunwind was already loaded by the program when the
 * tracer started (its handlers may unwind with it). The decision is made
 * once, so a block and its restore are always both skipped or both made.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include "tracer.h"

#define MAX_LOCKS 16

static pthread_mutex_t *locks[MAX_LOCKS];
static int nlocks;                         /* published with release */
static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
static int skip_signal_blocking;
static __thread int held_here AT_TLS;      /* libunwind mutexes this thread holds */
/* 1 + how many this thread took for its fork, with the registry; 0: none. */
static __thread int fork_held AT_TLS;

static int known(const pthread_mutex_t *m)
{
    int n = __atomic_load_n(&nlocks, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (locks[i] == m)
            return 1;
    return 0;
}

/* First sight of a mutex: added under the registry, which fork holds, so
 * that no mutex is added between fork's look at the list and the fork. */
static void note(pthread_mutex_t *m)
{
    pthread_mutex_lock(&registry);
    if (!known(m) && nlocks < MAX_LOCKS) {
        locks[nlocks] = m;
        __atomic_store_n(&nlocks, nlocks + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&registry);
}

int at_unwind_lock_probe(pthread_mutex_t *m)
{
    if (__builtin_expect(!known(m), 0))
        note(m);
    int r = pthread_mutex_lock(m);
    held_here += r == 0;
    return r;
}

int at_unwind_unlock_probe(pthread_mutex_t *m)
{
    int r = pthread_mutex_unlock(m);
    held_here -= r == 0 && held_here > 0;
    return r;
}

int at_unwind_sigmask_probe(int how, const sigset_t *set, sigset_t *old)
{
    if (skip_signal_blocking && at_guard == AT_GUARD_UNWINDING)
        return 0;
    return sigprocmask(how, set, old);
}

void at_unwind_locks_init(int libunwind_was_loaded)
{
    skip_signal_blocking = !libunwind_was_loaded;
}

/* Takes the registry and every known mutex, or none of them. */
static int take_all(void)
{
    if (pthread_mutex_trylock(&registry) != 0)
        return 0;
    int i = 0;
    while (i < nlocks && pthread_mutex_trylock(locks[i]) == 0)
        i++;
    if (i == nlocks) {
        fork_held = i + 1;
        return 1;
    }
    while (i-- > 0)
        pthread_mutex_unlock(locks[i]);
    pthread_mutex_unlock(&registry);
    return 0;
}

void at_unwind_fork_prepare(void)
{
    fork_held = 0;
    /* Forking from a signal handler that interrupted this thread inside
     * libunwind: its mutexes cannot be waited for, and the thread that
     * holds them goes on in the child too, so leave them. */
    if (held_here > 0)
        return;
    int e = errno;
    while (!take_all())
        sched_yield();
    errno = e;
}

static void release_all(void)
{
    if (fork_held == 0)
        return;
    for (int i = 0; i < fork_held - 1; i++)
        pthread_mutex_unlock(locks[i]);
    pthread_mutex_unlock(&registry);
    fork_held = 0;
}

void at_unwind_fork_parent(void) { release_all(); }
void at_unwind_fork_child(void) { release_all(); }
