/*
 * preload/process/signals.c: the signals that end the process.
 *
 * A process ended by a signal's default action runs no exit handler and no
 * destructor, so without help a leaks-mode trace would be empty and a full
 * one would lose its last buffer. The tracer therefore handles every signal
 * whose default action ends the process (terminate or core: SIGTERM,
 * SIGINT, SIGHUP, SIGPIPE, SIGSEGV, SIGABRT, ...) as long as the program
 * leaves it at SIG_DFL. The handler writes the trace with
 * async-signal-safe code (lifecycle.c, at_finish_signal), ends it with a
 * line saying which signal cut it, restores SIG_DFL and raises the signal
 * again, so the process dies exactly as it would have: same signal, same
 * core dump, same status for its parent. SIGKILL and SIGSTOP cannot be
 * caught; a signal the program handles or ignores is the program's.
 *
 * The program must not notice. sigaction(), signal(), bsd_signal() and
 * sysv_signal() are interposed: where the tracer's handler is installed
 * they report the SIG_DFL action the program set or found (flags and mask
 * included); a handler or SIG_IGN the program installs replaces the
 * tracer's at once, and SIG_DFL put back brings it back. Python, for one,
 * installs its SIGINT handler only if it finds SIG_DFL. A disposition set
 * past these wrappers (glibc-internal calls, a raw rt_sigaction) is
 * noticed by checking the real one before answering. The toggle signal,
 * when configured, is the tracer's own and is left alone here; a handler
 * the program installs on it or on the snapshot signal replaces the
 * tracer's, with one line saying so.
 *
 * The handler blocks every signal while it writes; a second thread that
 * gets a fatal signal meanwhile waits for the first to end the process
 * (lifecycle.c).
 */
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "tracer.h"

/* Default action: terminate, or terminate with a core dump. */
static const int ending_signals[] = {
    SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE,
    SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGSTKFLT,
    SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSYS,
};

typedef int (*sigaction_t)(int, const struct sigaction *, struct sigaction *);
static sigaction_t real_sigaction;
static int armed;                        /* set once the tracer runs */
static volatile int ours[NSIG];          /* our handler is installed */
static struct sigaction shown[NSIG];     /* what the program sees there */

static void on_signal(int sig);

static int resolve(void)
{
    if (!real_sigaction)
        real_sigaction = (sigaction_t)dlsym(RTLD_NEXT, "sigaction");
    return real_sigaction ? 0 : -1;
}

static int guarded(int sig)
{
    if (sig <= 0 || sig >= NSIG || sig == at_cfg.toggle_signal)
        return 0;
    for (size_t i = 0; i < sizeof ending_signals / sizeof *ending_signals; i++)
        if (ending_signals[i] == sig)
            return 1;
    return 0;
}

static int install(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_ONSTACK;
    sigfillset(&sa.sa_mask);
    return real_sigaction(sig, &sa, NULL);
}

/* What the handler calls to write the trace: lifecycle.c's, handed down
 * at install so that this file never calls up into the lifecycle. */
static void (*finish)(int sig);

void at_signals_install(void (*on_end)(int sig))
{
    finish = on_end;
    if (resolve() < 0)
        return;
    for (size_t i = 0; i < sizeof ending_signals / sizeof *ending_signals; i++) {
        int sig = ending_signals[i];
        struct sigaction old;
        if (!guarded(sig) || real_sigaction(sig, NULL, &old) != 0 ||
            old.sa_handler != SIG_DFL)
            continue;
        shown[sig] = old;
        if (install(sig) == 0)
            ours[sig] = 1;
    }
    armed = 1;
}

static void on_signal(int sig)
{
    at_guard = 1;
    if (finish)
        finish(sig);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    real_sigaction(sig, &dfl, NULL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    sigprocmask(SIG_UNBLOCK, &only, NULL);
    raise(sig);
    /* Still here: a fault re-runs its instruction when we return and dies
     * of the default action. */
}

/* Our handler is still the one installed (the program may have gone past
 * the wrappers). */
static int still_ours(int sig)
{
    struct sigaction cur;
    return real_sigaction(sig, NULL, &cur) == 0 && cur.sa_handler == on_signal;
}

/* The tracer's own signals (--toggle-signal, --snapshot-signal): the
 * handler at_signal_catch installed on each. */
static void (*own_handler[NSIG])(int);

/* A handler the program installs on one of the tracer's own signals
 * replaces the tracer's, as it would without the tracer (memcached's
 * SIGUSR1 is its graceful stop): the program keeps its behaviour, and one
 * line says what the tracer no longer does on that signal. */
static void note_taken(int sig, const struct sigaction *act)
{
    static int told[NSIG];
    if (!act || sig <= 0 || sig >= NSIG || !own_handler[sig] ||
        act->sa_handler == own_handler[sig] || told[sig])
        return;
    told[sig] = 1;
    const char *name = sigabbrev_np(sig);
    at_warn("the program installs its own handler for SIG", name ? name : "?",
            sig == at_cfg.toggle_signal
                ? ", the --toggle-signal: it replaces the tracer's, and that signal no longer toggles tracing"
                : ", the --snapshot-signal: it replaces the tracer's, and that signal no longer takes a snapshot");
}

AT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (resolve() < 0)
        return -1;
    note_taken(sig, act);
    if (!armed || !guarded(sig))
        return real_sigaction(sig, act, old);
    struct sigaction want, prev;
    if (act)
        want = *act;   /* act and old may be the same */
    if (ours[sig] && !still_ours(sig))
        ours[sig] = 0;
    if (ours[sig])
        prev = shown[sig];
    else if (real_sigaction(sig, NULL, &prev) != 0)
        return -1;
    if (act) {
        if (want.sa_handler == SIG_DFL && (ours[sig] || install(sig) == 0)) {
            shown[sig] = want;
            ours[sig] = 1;
        } else {
            if (real_sigaction(sig, &want, NULL) != 0)
                return -1;
            ours[sig] = 0;
        }
    }
    if (old)
        *old = prev;
    return 0;
}

/* signal() with glibc's BSD semantics (and sysv_signal with System V's),
 * through the sigaction above. */
static sighandler_t set_handler(int sig, sighandler_t handler, int flags, int self_mask)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    if (self_mask && sig > 0 && sig < NSIG)
        sigaddset(&sa.sa_mask, sig);
    return sigaction(sig, &sa, &old) == 0 ? old.sa_handler : SIG_ERR;
}

AT_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    return set_handler(sig, handler, SA_RESTART, 1);
}

AT_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler)
{
    return set_handler(sig, handler, SA_RESTART, 1);
}

AT_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler)
{
    return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER, 0);
}

AT_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler)
{
    return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER, 0);
}

void at_signal_catch(int sig, void (*fn)(int))
{
    if (sig > 0 && sig < NSIG)
        own_handler[sig] = fn;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}
