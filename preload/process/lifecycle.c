/*
 * preload/process/lifecycle.c: start-up, fork, exec, exit, quick_exit, and writing
 * the trace when a signal ends the process.
 *
 * - Start-up runs at the first intercepted allocation, or in the
 *   constructor if none came before (another library's constructor, a
 *   preinit function or the loader may allocate first, and those blocks
 *   must be in the trace like any other: heaptrack starts the same way).
 *   It runs once, with the guard held: whatever the tracer allocates
 *   while reading the environment, loading libunwind and scanning maps
 *   goes untraced; other threads' calls meanwhile pass untraced. A bad
 *   configuration leaves the tracer off. LD_PRELOAD is edited by the
 *   constructor (see edit_environment).
 * - exec: unless follow-exec is set, our entry is removed from LD_PRELOAD
 *   at start-up (in environ, which exec'd children inherit) - editing once
 *   there is cheaper and covers every exec variant, posix_spawn and
 *   system(). Before an exec the buffer is written (the image is about to
 *   vanish); the exec family is interposed for that. A forked child that
 *   has not written its file yet drops its events instead (see writer.c).
 * - fork: pthread_atfork handlers hold every tracer lock across fork, so
 *   the child never inherits a lock held by a thread that does not exist
 *   there. The child drops the parent's buffer (the parent writes it) and
 *   either starts its own file and, in full mode, its own writer thread
 *   (threads do not survive fork), or runs untraced. The file is created
 *   in the fork handler, with the parent's credentials (a worker that
 *   switches to another user could not create it later), and removed
 *   again if the child execs or ends before writing to it (writer.c), so
 *   a shell leaves no empty file per command. Leaks mode's child keeps the
 *   live blocks it inherits: they are its own now, and valgrind reports
 *   them in the child too.
 * - exit: the destructor writes everything, then the writer turns
 *   unbuffered so that frees made later in exit (stdio, other threads) are
 *   still recorded. In leaks mode the report (the scan) waits for the end
 *   of exit instead, after every destructor and handler (exitlast.c):
 *   libraries' destructors run after ours, and a block one frees is no
 *   leak (issue 27). An exit handler registered before anyone else's (so it
 *   runs after every other one, after the destructors too) seals the
 *   writer: a thread still recording when the process ends must not be
 *   stopped in the middle of a write. quick_exit runs no destructor: a
 *   quick_exit handler, registered first too, finishes and seals. _exit
 *   and _Exit are interposed to do the same. Only the process the file
 *   belongs to writes: a vfork child shares our memory.
 * - Signals that end the process (signals.c catches them): the trace is
 *   written with async-signal-safe code, in leaks mode with the live
 *   blocks, and ends with the cut line naming the signal.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer.h"

static pid_t my_pid;
static atomic_int finished;
static int from_exit_end;   /* at_finish called by finish_last */

/* ---- LD_PRELOAD -------------------------------------------------------- */

static int is_us(const char *entry, size_t len)
{
    static const char me[] = "liballoctrace.so";
    size_t m = sizeof me - 1;
    return len >= m && memcmp(entry + len - m, me, m) == 0 &&
           (len == m || entry[len - m - 1] == '/');
}

static void strip_ld_preload(void)
{
    const char *v = getenv("LD_PRELOAD");
    if (!v)
        return;
    size_t len = strlen(v);
    char out[len + 1];
    size_t o = 0;
    for (const char *p = v; *p;) {
        while (*p == ':' || *p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ':' && *e != ' ')
            e++;
        if (e > p && !is_us(p, (size_t)(e - p))) {
            if (o)
                out[o++] = ':';
            memcpy(out + o, p, (size_t)(e - p));
            o += (size_t)(e - p);
        }
        p = e;
    }
    out[o] = '\0';
    if (o)
        setenv("LD_PRELOAD", out, 1);
    else
        unsetenv("LD_PRELOAD");
}

/* ---- exit ------------------------------------------------------------- */

/* The program's registers at exit: __builtin_unwind_init makes this
 * frame save every callee-saved register, and the scan of the stack
 * (reach.c) starts at the stack pointer below them. */
void at_finish(void)
{
    __builtin_unwind_init();
    if (at_state != AT_STATE_ACTIVE || getpid() != my_pid)
        return;
    volatile uintptr_t here = 0;
    at_exit_sp = (uintptr_t)&here & ~(uintptr_t)15;
    /* From the end of exit (finish_last) the callee-saved registers are
     * the C library's, not the program's: no root (a stale pointer there
     * made a lost block look reachable now and then). */
    at_exit_frame = from_exit_end ? 0 : (uintptr_t)__builtin_frame_address(0);
    int saved = at_guard;
    at_guard = 1;
    if (at_cfg.leaks_mode) {
        if (!atomic_exchange(&finished, 1)) {
            at_writer_keep();      /* a child's report is its trace, leaks or none */
            at_handoff_finish();   /* the keeper's records first */
            at_maps_refresh();
            at_leakreport_write_at_exit();
            at_writer_flush();
            at_state = AT_STATE_OFF;
        }
    } else {
        at_writer_flush();
        if (!atomic_exchange(&finished, 1))
            at_writer_unbuffered();
    }
    at_guard = saved;
}

static void at_seal(void *unused);

/* Leaks mode's report once every destructor and exit handler has run. */
static void finish_last(void)
{
    from_exit_end = 1;
    at_finish();
    at_seal(NULL);
}

/* Leaks mode, exiting: defers the report to exitlast.c. Returns 0 when
 * deferred (or done), -1 when the caller must finish now. */
static int defer_report(void)
{
    if (!at_cfg.leaks_mode || at_state != AT_STATE_ACTIVE || getpid() != my_pid ||
        atomic_load(&finished))
        return -1;
    int saved = at_guard;
    at_guard = 1;   /* the stream is the tracer's own: untraced */
    int rc = at_exit_last(finish_last);
    at_guard = saved;
    return rc;
}

__attribute__((destructor)) static void at_fini(void)
{
    if (defer_report() != 0)
        at_finish();
}

/* The last exit handler: nothing the program does is recorded after it.
 * In leaks mode with the report still to come, sealing waits for it. */
static void at_seal(void *unused)
{
    (void)unused;
    if (getpid() != my_pid)
        return;
    if (defer_report() == 0)
        return;
    int saved = at_guard;
    at_guard = 1;
    at_writer_seal();
    at_guard = saved;
}

static void at_quick_exit_handler(void)
{
    at_finish();
    at_seal(NULL);
}

/* glibc: with no DSO handle the handler is not run at our dlclose (there
 * is none) but in plain LIFO order at exit. */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

void at_finish_signal(int sig)
{
    /* (A vfork child shares our memory: it must not even take the flag.) */
    static atomic_int once;
    if (at_state != AT_STATE_ACTIVE || getpid() != my_pid)
        return;
    if (atomic_exchange(&once, 1)) {
        /* Another thread is writing the trace and will end the process. */
        for (;;)
            pause();
    }
    at_guard = 1;
    /* The keeper's records first: applying them may add map lines. */
    int report = at_cfg.leaks_mode && !atomic_exchange(&finished, 1);
    if (report)
        at_writer_keep();
    const char *left_out = report ? at_handoff_finish_signal() : NULL;
    at_writer_emergency_flush();
    if (left_out)
        at_warn("leaks mode: records not yet applied are left out of the report: ", left_out,
                "");
    if (report)
        at_leakreport_write(1);
    at_writer_cut_signal(sig);
    at_state = AT_STATE_OFF;
}

static __attribute__((noreturn)) void exit_now(int status)
{
    /* A signal handler that interrupted the tracer on this thread may call
     * _exit: the locks may be ours, so take the emergency path. */
    if (at_guard && at_state == AT_STATE_ACTIVE && getpid() == my_pid) {
        at_writer_emergency_flush();
    } else {
        at_finish();
        at_seal(NULL);
    }
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

AT_EXPORT void _exit(int status) { exit_now(status); }
AT_EXPORT void _Exit(int status) { exit_now(status); }

/* ---- exec ------------------------------------------------------------- */

/* `what`: the path or name exec'd, for the launcher's list (it tells the
 * user that the program exec'd PATH, untraced, instead of guessing) and
 * the trace's exec line (the gate's way to tell a wrapper that exec'd the
 * test). */
static void before_exec(const char *what)
{
    if (at_state != AT_STATE_ACTIVE || at_guard)
        return;
    at_guard = 1;
    at_writer_before_exec(what);
    at_tracelist_line("exec", 0, what ? what : "?");
    at_guard = 0;
}

/* The exec failed and the image runs on: the launcher's "exec'd PATH"
 * would be wrong. errno is the exec's. */
static int after_exec(int rc)
{
    if (at_state == AT_STATE_ACTIVE && !at_guard) {
        int e = errno;
        at_tracelist_line("noexec", 0, "");
        errno = e;
    }
    return rc;
}

#define REAL(name, type) \
    static type real_##name; \
    if (!real_##name) \
        real_##name = (type)dlsym(RTLD_NEXT, #name)

typedef int (*execve_t)(const char *, char *const[], char *const[]);
typedef int (*execv_t)(const char *, char *const[]);
typedef int (*fexecve_t)(int, char *const[], char *const[]);

AT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    REAL(execve, execve_t);
    before_exec(path);
    return after_exec(real_execve(path, argv, envp));
}

AT_EXPORT int execv(const char *path, char *const argv[])
{
    REAL(execv, execv_t);
    before_exec(path);
    return after_exec(real_execv(path, argv));
}

AT_EXPORT int execvp(const char *file, char *const argv[])
{
    REAL(execvp, execv_t);
    before_exec(file);
    return after_exec(real_execvp(file, argv));
}

AT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    REAL(execvpe, execve_t);
    before_exec(file);
    return after_exec(real_execvpe(file, argv, envp));
}

AT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    REAL(fexecve, fexecve_t);
    (void)fd;
    before_exec("a program by descriptor (fexecve)");
    return after_exec(real_fexecve(fd, argv, envp));
}

/* The execl family: collect the list into an array, then the v form. */
#define COLLECT_ARGS(arg, ap, argv, extra) \
    size_t argc_ = 1; \
    va_start(ap, arg); \
    while (va_arg(ap, const char *)) \
        argc_++; \
    va_end(ap); \
    const char *argv[argc_ + 1]; \
    argv[0] = arg; \
    va_start(ap, arg); \
    for (size_t i_ = 1; i_ <= argc_; i_++) \
        argv[i_] = i_ < argc_ ? va_arg(ap, const char *) : (va_arg(ap, const char *), NULL); \
    extra; \
    va_end(ap)

AT_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    COLLECT_ARGS(arg, ap, argv, (void)0);
    return execv(path, (char *const *)argv);
}

AT_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    COLLECT_ARGS(arg, ap, argv, (void)0);
    return execvp(file, (char *const *)argv);
}

AT_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    char *const *envp;
    COLLECT_ARGS(arg, ap, argv, envp = va_arg(ap, char *const *));
    return execve(path, (char *const *)argv, envp);
}

/* ---- fork ----------------------------------------------------------------- */

static __thread int fork_saved_guard AT_TLS;

static void fork_prepare(void)
{
    if (at_state != AT_STATE_ACTIVE)
        return;
    fork_saved_guard = at_guard;
    at_guard = 1;
    /* Before any tracer lock: the keeper, between two records, may wait
     * for one of them. */
    if (at_cfg.leaks_mode)
        at_handoff_fork_prepare();
    at_unwind_fork_prepare();   /* then: it waits for unwinding threads */
    at_maps_fork_prepare();
    at_writer_fork_prepare();
    if (at_cfg.leaks_mode)
        at_live_fork_prepare();
    else
        at_sites_fork_prepare();
}

static void fork_parent(void)
{
    if (at_state != AT_STATE_ACTIVE)
        return;
    if (at_cfg.leaks_mode)
        at_live_fork_parent();
    else
        at_sites_fork_parent();
    at_writer_fork_parent();
    at_maps_fork_parent();
    at_unwind_fork_parent();
    if (at_cfg.leaks_mode)
        at_handoff_fork_parent();
    at_guard = fork_saved_guard;
}

static void fork_child(void)
{
    if (at_state != AT_STATE_ACTIVE)
        return;
    int e = errno;
    if (at_cfg.leaks_mode)
        at_live_fork_child();
    else
        at_sites_fork_child();
    at_writer_fork_child();
    at_maps_fork_child();
    at_unwind_fork_child();
    if (at_cfg.leaks_mode)
        at_handoff_fork_child();
    my_pid = getpid();
    atomic_store(&finished, 0);
    if (!at_cfg.follow_fork || at_writer_open(my_pid, 1) < 0)
        at_state = AT_STATE_OFF;
    else
        at_context_write_registry();
    at_control_fork_child();   /* its own socket and thread (control.c) */
    at_guard = fork_saved_guard;
    errno = e;
}

/* ---- signals ---------------------------------------------------------- */

static void on_toggle(int sig)
{
    (void)sig;
    at_enabled = !at_enabled;
}

/* ---- start-up ----------------------------------------------------------- */

static atomic_int started;      /* 0, 1 while starting, 2 once done */
static int env_pending;         /* LD_PRELOAD still to be edited */

/* Edits LD_PRELOAD, from the constructor only: before libc owns environ
 * (a start from a preinit function) libc would replace it with the
 * original vector, and a start from inside the program's setenv would
 * wait on the environment lock its own thread holds. */
static void edit_environment(void)
{
    extern char **environ;
    if (env_pending && environ) {
        env_pending = 0;
        strip_ld_preload();
    }
    /* Followed programs resolve relative names where we do (config.c),
     * even when exec'd after a chdir. */
    if (environ && at_cfg.follow_exec && at_cfg.dir[0] && !getenv(AT_ENV_DIR))
        setenv(AT_ENV_DIR, at_cfg.dir, 0);
}

/* NULL when the program's malloc is ours; else the object whose malloc
 * comes first in the symbol lookup (an allocator preloaded before us).
 * Calls malloc the way the program does (through the symbol lookup) and
 * sees whether our hook gets the call: hooks.c's enter_slow marks the
 * guard. Comparing addresses would not do: an executable that takes
 * malloc's address has a "canonical" PLT entry that dlsym returns in
 * place of the definition (python3 does). */
static const char *malloc_taken_by(void)
{
    void *(*volatile call)(size_t) = malloc;
    int saved = at_guard;
    at_guard = AT_GUARD_PROBE;
    void *p = call(1);
    int ours = at_guard == AT_GUARD_PROBE_SEEN;
    at_guard = saved;
    free(p);
    if (ours)
        return NULL;
    /* Name the object, unless dlsym's answer is the executable's canonical
     * entry (then the allocator is not known by name). */
    Dl_info di, exe, self;
    void *bound = dlsym(RTLD_DEFAULT, "malloc");
    /* Not the tracer itself: a versioned malloc (glibc's
     * libc_malloc_debug.so) is not what an unversioned lookup finds. */
    int is_self = bound && dladdr(bound, &di) && dladdr((void *)malloc_taken_by, &self) &&
                  di.dli_fbase == self.dli_fbase;
    if (is_self)
        return "another library in LD_PRELOAD";
    if (bound && dladdr(bound, &di) && di.dli_fname && di.dli_fname[0] &&
        !(dladdr((void *)getauxval(AT_PHDR), &exe) && exe.dli_fbase == di.dli_fbase))
        return di.dli_fname;
    return "the program itself (an allocator linked into it)";
}

void at_start(void)
{
#ifdef AT_ATTACH_BUILD
    return;   /* loaded into a running process: only at_attach starts it */
#endif
    int expected = 0;
    if (!atomic_compare_exchange_strong(&started, &expected, 1))
        return;
    int saved = at_guard;
    at_guard = 1;
    at_resolve_real();
    my_pid = getpid();
    if (!at_real.free || at_config_load() < 0)
        goto off;
    env_pending = !at_cfg.follow_exec;   /* done by the constructor */
    /* The gate's exec chain (config.c, ALLOCTRACE_EXEC_CHAIN): a program
     * exec'd by any process but that one runs untraced, and so do the
     * programs it starts (LD_PRELOAD edited by the constructor). Checked
     * before libunwind is loaded: an untraced tool costs little. */
    if (at_cfg.exec_chain > 0 && at_cfg.exec_chain != (long)my_pid) {
        env_pending = 1;
        goto off;
    }
    /* An allocator preloaded before the tracer gets every call: nothing
     * would be recorded, so no trace at all, and one line saying why. */
    const char *first = malloc_taken_by();
    if (first) {
        at_warn("malloc is taken by ", first,
                ", loaded before the tracer: put liballoctrace.so first in LD_PRELOAD; running untraced");
        goto off;
    }
    at_maps_init(at_append_raw);
    at_unwind_init();
    if (at_cfg.leaks_mode)
        at_live_init();
    else
        at_sites_init();   /* full mode's records point to interned backtraces */
    if (at_cfg.sample)
        at_sample_init();
    if (at_writer_open(my_pid, 0) < 0)
        goto off;
    at_maps_refresh();
    /* Header and maps at once: after a SIGKILL, which nothing can catch,
     * the file still names the process (leaks mode writes nothing else
     * before exit). */
    at_writer_flush();
    at_enabled = at_cfg.start_enabled;
    if (at_cfg.toggle_signal)
        at_signal_catch(at_cfg.toggle_signal, on_toggle);
    at_signals_install(at_finish_signal);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    /* Registered before main, so they run after every handler of the
     * program's own. */
    __cxa_atexit(at_seal, NULL, NULL);
    at_quick_exit(at_quick_exit_handler);
    at_state = AT_STATE_ACTIVE;
    at_guard = saved;
    atomic_store(&started, 2);
    return;
off:
    at_state = AT_STATE_OFF;
    at_guard = saved;
    atomic_store(&started, 2);
}

/* Starts the tracer if no allocation did before (see hooks.c enter()). */
__attribute__((constructor)) static void at_init(void)
{
    int e = errno;
    at_start();
    int saved = at_guard;
    at_guard = 1;
    edit_environment();
    if (at_state == AT_STATE_ACTIVE)
        at_writer_start_thread();
    /* The control path (control.c): @alloctrace.PID and its thread. */
    if (at_state == AT_STATE_ACTIVE)
        at_control_start();
    /* Leaks mode's keeper (handoff.c), when ALLOCTRACE_KEEPER=1: with TSC
     * order keys only; else the inline path stays. Not the default: on
     * the 2-core machine measured it did not pay (docs/benchmarks.md,
     * "Leaks mode's records on a keeper thread"). */
    if (at_state == AT_STATE_ACTIVE && at_cfg.leaks_mode && at_cfg.keeper && at_clock_tsc() &&
        at_handoff_start() != 0)
        at_warn("cannot start the leaks keeper thread, ",
                "keeping live blocks on the program's threads", "");
    at_guard = saved;
    errno = e;
}

/* ---- a late start: attach (process/attach.c) ------------------------------ */

/*
 * What at_start does, in a process that is already running and was not
 * started with the tracer. Not done: editing LD_PRELOAD (the tracer is not
 * in it), the probe of who owns malloc (attach.c redirects the calls
 * itself), the signal, exit and quick_exit handlers (installing them would
 * change what the running program sees of its own signals; the destructor
 * still writes the trace at exit), the toggle signal. Full mode only: a
 * leaks report needs every block from the start. What is set up once
 * (maps, libunwind, sites, the fork handlers) stays for the next attach.
 */
int at_start_late(void)
{
    static int once;
    my_pid = getpid();
    if (at_config_load() < 0)
        return -1;
    if (at_cfg.leaks_mode) {
        at_warn("leaks mode needs every block from the start: ",
                "an attached tracer records in full mode", "");
        return -1;
    }
    at_cfg.follow_exec = 0;
    at_cfg.toggle_signal = 0;
    static int sampler_set_up;
    if (!once) {
        at_maps_init(at_append_raw);
        at_unwind_init();
        at_sites_init();
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        once = 1;
    } else {
        at_maps_reset();   /* the new file gets its own map lines */
    }
    if (at_cfg.sample && !sampler_set_up) {   /* --sample (hook/sample.c) */
        at_sample_init();
        sampler_set_up = 1;
    }
    at_sampling = at_cfg.sample != 0;   /* a later attach may not sample */
    if (at_writer_open(my_pid, 0) < 0)
        return -1;
    atomic_store(&finished, 0);
    at_maps_refresh();
    at_writer_flush();
    at_enabled = at_cfg.start_enabled;
    at_state = AT_STATE_ACTIVE;
    atomic_store(&started, 2);
    at_writer_start_thread();
    at_control_start();   /* snapshots and detach without gdb (control.c) */
    return 0;
}

void at_stop_late(void)
{
    at_state = AT_STATE_OFF;
    at_control_stop();
    at_writer_detach();
}
