/*
 * preload/process/snapshot.c: a snapshot of a running process, now
 * (`alloctrace --snapshot PID`, the snapshot signal, alloctrace_snapshot()):
 * every block it holds, with its allocation stack. Called by the control
 * thread (control.c) or, through at_snapshot, by a thread of the program;
 * one at a time.
 *
 * Leaks mode: the live blocks with memcheck's leak kinds, as the exit
 * report would give them, into a file of their own, TRACE.snapN.txt
 * (TRACE: the trace's name without .txt/.zst). Scanning a heap takes
 * from milliseconds to seconds, and the heap must not change meanwhile,
 * so the work is done by a child made with a raw clone (exit signal 0):
 * - the tracer's locks are taken first, in the order fork takes them
 *   (lifecycle.c), so no thread is inside the live blocks, the sites, the
 *   maps, the writer or libunwind at the clone, and the stack pointers
 *   of the program's threads are read (/proc/self/task/TID/syscall, for
 *   the scan's roots: see reach.c); then the clone, then the locks go.
 *   The program's threads wait only for that: the pause measured by
 *   bench/snapshot.
 * - The child has a copy-on-write image of that moment. It unlocks its
 *   copies, points the writer at the snapshot's temporary file, writes
 *   the header, the map lines and the report exactly as at exit
 *   (leakreport.c; nothing there calls malloc, whose locks a thread of
 *   the program may have held at the clone), and _exits. The control
 *   thread waits for it (__WCLONE: the program's wait() never sees it,
 *   and no SIGCHLD is sent), then renames the file into place.
 * - The child dies with the process (PR_SET_PDEATHSIG) and is killed
 *   after SNAP_TIMEOUT_S: a snapshot never outlives or hangs the program.
 *   A lock of the C library's held by another thread at the clone (the
 *   loader's, by a dlopen in progress) would stop the child: the timeout
 *   ends it and the answer says so.
 * - With ALLOCTRACE_KEEPER=1 the keeper is paused as for fork; the
 *   records still in its rings (a few milliseconds' worth) are not in the
 *   snapshot.
 *
 * Full mode keeps no table of live blocks (that would cost every event;
 * the trace already says which blocks are live): a snapshot writes the
 * mark "## snapshot: N LABEL" into the trace, in index order with the
 * calls, and writes the trace up to it; `alloctrace-postproc --snapshot N`
 * makes the snapshot file from the trace (what the launcher runs). The
 * program's threads wait only for the writing of the last chunk.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"

#define SNAP_TIMEOUT_S 300
#define MAX_THREADS 65536
#define LABEL_MAX 200

static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned snap_count;   /* snapshots taken by this process */

/* ---- text ------------------------------------------------------------- */

static char *put(char *p, char *end, const char *s)
{
    while (*s && p < end)
        *p++ = *s++;
    return p;
}

static char *put_num(char *p, char *end, uint64_t v)
{
    char num[24];
    num[at_fmt_dec(num, v)] = '\0';
    return put(p, end, num);
}

/* detail = a . b . c, bounded. */
static void say(char *detail, size_t cap, const char *a, const char *b, const char *c)
{
    char *p = detail, *end = detail + cap - 1;
    p = put(p, end, a);
    p = put(p, end, b);
    p = put(p, end, c);
    *p = '\0';
}

/* "## snapshot: N LABEL\n" (the label one line, bounded). */
static size_t mark_line(char *out, size_t cap, unsigned n, const char *label)
{
    char *p = out, *end = out + cap - 2;
    p = put(p, end, AT_SNAPSHOT_PREFIX);
    p = put_num(p, end, n);
    if (label && *label) {
        *p++ = ' ';
        for (size_t i = 0; label[i] && i < LABEL_MAX && p < end; i++)
            *p++ = (label[i] == '\n' || label[i] == '\r') ? ' ' : label[i];
    }
    *p++ = '\n';
    return (size_t)(p - out);
}

/* TRACE.snapN.txt[.zst], TRACE: the trace's path without .zst, .txt. */
static void snapshot_path(char *out, size_t cap, unsigned n)
{
    const char *t = at_outfd_path()[0] ? at_outfd_path() : at_writer_path();
    size_t len = strlen(t);
    if (len > 4 && strcmp(t + len - 4, ".zst") == 0)
        len -= 4;
    if (len > 4 && memcmp(t + len - 4, ".txt", 4) == 0)
        len -= 4;
    if (len > cap - 40)
        len = cap - 40;
    memcpy(out, t, len);
    char *p = out + len, *end = out + cap - 1;
    p = put(p, end, ".snap");
    p = put_num(p, end, n);
    p = put(p, end, at_cfg.compress ? ".txt.zst" : ".txt");
    *p = '\0';
}

static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The answer's line of detail "held_us=N": how long the tracer's locks
 * were held, which is as long as an allocating thread could wait (what
 * bench/snapshot and the launcher report). Returns its length. */
static size_t held_line(char *detail, size_t cap, uint64_t us)
{
    char *p = detail, *end = detail + cap - 2;
    p = put(p, end, "held_us=");
    p = put_num(p, end, us);
    *p++ = '\n';
    *p = '\0';
    return (size_t)(p - detail);
}

/* ---- full mode: a mark in the trace ----------------------------------- */

static int snapshot_full(unsigned n, const char *label, char *detail, size_t cap)
{
    char line[LABEL_MAX + 64];
    uint64_t t0 = mono_us();
    at_append_record_line(line, mark_line(line, sizeof line, n, label));
    at_writer_flush();
    const char *t = at_outfd_path()[0] ? at_outfd_path() : at_writer_path();
    char num[24];
    num[at_fmt_dec(num, n)] = '\0';
    size_t l = held_line(detail, cap, mono_us() - t0);
    say(detail + l, cap - l, "trace=", t, " mark=");
    l += strlen(detail + l);
    say(detail + l, cap - l, num, "", "");
    return (int)n;
}

/* ---- leaks mode: a clone child writes the report ------------------------ */

/* The tracer's locks, in fork's order (lifecycle.c's fork_prepare). */
static void hold_locks(void)
{
    at_handoff_fork_prepare();
    at_unwind_fork_prepare();
    at_maps_fork_prepare();
    at_writer_fork_prepare();
    at_live_fork_prepare();
}

static void release_locks(void)
{
    at_live_fork_parent();
    at_writer_fork_parent();
    at_maps_fork_parent();
    at_unwind_fork_parent();
    at_handoff_fork_parent();
}

/* What the child needs and says back (a shared page). */
struct child_job {
    char tmp[PATH_MAX];
    pid_t pid;                 /* the process's */
    unsigned n;
    char label[LABEL_MAX + 1];
    int own_is_tracer;
    size_t nsp, running;
    char error[256];           /* the child's reason when it fails */
    uintptr_t sp[];            /* the threads' stack pointers */
};

static __attribute__((noreturn)) void child_exit(int status)
{
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

/* In the clone child: the report into job->tmp. */
static __attribute__((noreturn)) void child_main(struct child_job *job)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != job->pid)
        child_exit(3);
    /* Its copies of the locks: the live blocks' are plain mutexes it may
     * unlock; the writer's and the maps' start afresh, as in a fork. */
    at_live_fork_parent();
    at_writer_fork_child();
    at_maps_fork_child();
    at_unwind_fork_child();
    int fd = open(job->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        say(job->error, sizeof job->error, job->tmp, ": cannot create: ", strerror(errno));
        child_exit(1);
    }
    close(fd);
    unlink(job->tmp);
    if (at_writer_open_snapshot(job->tmp, job->pid) < 0) {
        say(job->error, sizeof job->error, job->tmp, ": cannot create: ", strerror(errno));
        child_exit(1);
    }
    char line[LABEL_MAX + 64];
    at_append_raw(line, mark_line(line, sizeof line, job->n, job->label));
    at_context_write_registry();
    at_maps_refresh();
    at_exit_sp = 0;
    at_exit_frame = 0;
    at_reach_use_threads(job->sp, job->nsp, job->running, job->own_is_tracer);
    at_leakreport_write(0);
    at_writer_flush();
    child_exit(at_state == AT_STATE_ACTIVE ? 0 : 2);
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits for the clone child; its status, or -1 when it had to be killed. */
static int wait_child(pid_t c)
{
    uint64_t until = mono_ms() + SNAP_TIMEOUT_S * 1000ull;
    long nap_ns = 100000;
    for (;;) {
        int st;
        pid_t r = waitpid(c, &st, __WCLONE | WNOHANG);
        if (r == c)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0 && errno != EINTR)
            return -2;
        if (mono_ms() > until) {
            kill(c, SIGKILL);
            waitpid(c, &st, __WCLONE);
            return -1;
        }
        struct timespec d = { 0, nap_ns };
        nanosleep(&d, NULL);
        if (nap_ns < 10000000)
            nap_ns *= 2;
    }
}

/* Moves tmp to path unless path exists (never replaces a file). */
static int put_in_place(const char *tmp, const char *path)
{
    if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, path, 1 /* RENAME_NOREPLACE */) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    if (link(tmp, path) != 0)
        return -1;
    unlink(tmp);
    return 0;
}

static int snapshot_leaks(unsigned n, const char *label, char *detail, size_t cap,
                          int own_is_tracer)
{
    size_t job_len = sizeof(struct child_job) + MAX_THREADS * sizeof(uintptr_t);
    struct child_job *job = mmap(NULL, job_len, PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (job == MAP_FAILED) {
        say(detail, cap, "no memory for the snapshot: ", strerror(errno), "");
        return -1;
    }
    char path[PATH_MAX];
    snapshot_path(path, sizeof path, n);
    say(job->tmp, sizeof job->tmp, path, ".tmp", "");
    job->pid = getpid();
    job->n = n;
    say(job->label, sizeof job->label, label ? label : "", "", "");
    job->own_is_tracer = own_is_tracer;

    /* A thread seen running has its whole stack scanned, stale frames
     * too. One that is only passing through (back from the snapshot
     * signal's handler into its read) sits in a system call again a
     * moment later: wait up to 10 ms for that, before the pause. */
    for (int i = 0; i < 10; i++) {
        at_reach_thread_sps(job->sp, MAX_THREADS - 1, &job->running);
        if (job->running == 0)
            break;
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    uint64_t t0 = mono_us();
    hold_locks();
    job->nsp = at_reach_thread_sps(job->sp, MAX_THREADS - 1, &job->running);
    if (!own_is_tracer) {   /* the calling thread is the program's: a root */
        volatile uintptr_t here = 0;
        job->sp[job->nsp++] = (uintptr_t)&here;
    }
    long c = syscall(SYS_clone, 0UL, NULL, NULL, NULL, 0UL);
    if (c == 0)
        child_main(job);
    int clone_errno = errno;
    release_locks();
    uint64_t held = mono_us() - t0;

    int rc = -1;
    if (c < 0) {
        say(detail, cap, "cannot start the snapshot's process: ", strerror(clone_errno), "");
    } else {
        int st = wait_child((pid_t)c);
        if (st == 0 && put_in_place(job->tmp, path) == 0) {
            size_t l = held_line(detail, cap, held);
            say(detail + l, cap - l, path, "", "");
            rc = (int)n;
        } else {
            if (st == 0)
                say(detail, cap, path, ": cannot put the snapshot in place: ", strerror(errno));
            else if (st == -1)
                say(detail, cap, "the snapshot took longer than 300 s and was stopped", "", "");
            else if (job->error[0])
                say(detail, cap, job->error, "", "");
            else
                say(detail, cap, "the snapshot's process failed writing ", job->tmp, "");
            unlink(job->tmp);
        }
    }
    munmap(job, job_len);
    return rc;
}

/* ---- the entry -------------------------------------------------------- */

int at_snapshot_take(const char *label, char *detail, size_t cap)
{
    int saved = at_guard;
    at_guard = 1;
    int rc = -1;
    pthread_mutex_lock(&snap_lock);
    if (at_state != AT_STATE_ACTIVE) {
        say(detail, cap, "not tracing (the tracer is off in this process)", "", "");
    } else {
        unsigned n = ++snap_count;
        rc = at_cfg.leaks_mode ? snapshot_leaks(n, label, detail, cap, saved != 0)
                               : snapshot_full(n, label, detail, cap);
    }
    pthread_mutex_unlock(&snap_lock);
    at_guard = saved;
    return rc;
}

void at_snapshot_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    snap_lock = fresh;
    snap_count = 0;
}

/* alloctrace_snapshot(label): from a thread of the program. Returns the
 * snapshot's number, 0 without a running tracer, -1 when it failed (one
 * line on stderr says why). */
AT_EXPORT int at_snapshot(const char *label)
{
    if (at_state != AT_STATE_ACTIVE)
        return 0;
    int e = errno;
    char detail[PATH_MAX + 64];
    int rc = at_snapshot_take(label, detail, sizeof detail);
    if (rc < 0)
        at_warn("snapshot: ", detail, "");
    errno = e;
    return rc;
}
