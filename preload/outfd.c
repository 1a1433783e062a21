/*
 * preload/outfd.c: the trace's descriptor, kept out of the program's way.
 *
 * The tracer holds one descriptor, the trace file, and no other (libunwind
 * has none either: unwind_probe.c). Decisions:
 *
 * - It lives at >= 1000 (F_DUPFD_CLOEXEC), above the numbers programs get
 *   from open(), so the program never finds a number taken that it would
 *   have had. It is opened once, at start-up (the first allocation or
 *   the constructor), while the process has one thread: a later open()
 *   would take the lowest free number for a moment, which a daemon that
 *   just closed 0-2 in another thread expects to get.
 * - The close family is interposed so that the program cannot close it or
 *   put something else at its number: to the program the number is not
 *   open (close and close_range/closefrom skip it; close(it) is EBADF, as
 *   in a plain run). dup2/dup3 onto it move the trace to another high
 *   number first, under the lock every write holds, so the program gets
 *   the number it asked for and the tracer never writes into its file. A
 *   raw system call that closes or replaces it anyway is caught by the
 *   dev/inode check before each write: the file is reopened by path.
 * - A soft RLIMIT_NOFILE of 1000 or less leaves no room above the
 *   program's numbers (with a limit of 4 the one free number is the one
 *   the program opens next). Then no descriptor is kept: each write opens
 *   the file by path, appends and closes it. Writes happen once per MiB of
 *   trace, once a second with timestamps, and at exit. When the program
 *   has every number in use, the open borrows one number above the limit
 *   (the soft limit is raised by one for the open and put back: an open
 *   descriptor may lie above the limit).
 * - A forked child closes the parent's descriptor only if it is still the
 *   trace (the program may have dup2'd its own file there by a raw call).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer.h"

#define FD_FLOOR 1000
#define EXPORT __attribute__((visibility("default")))

static atomic_int out_fd = -1;
static dev_t out_dev;
static ino_t out_ino;
static char out_path[PATH_MAX];
static int transient;   /* no descriptor kept: open per write */
/* Held while writing and while moving the descriptor. Recursive: a
 * signal handler may dup2 or flush on a thread that is writing. */
static pthread_mutex_t fd_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* glibc's own close (a cancellation point like close), not ours. */
extern int __close(int fd);
extern int __dup2(int fd, int fd2);

static int is_trace(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == out_dev && st.st_ino == out_ino;
}

static int room_above_floor(void)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
           rl.rlim_cur > FD_FLOOR;
}

/* Keeps `fd` (just opened, the trace) at >= FD_FLOOR, or closes it and
 * turns transient when the limit leaves no room there. */
static void keep(int fd)
{
    struct stat st;
    if (fstat(fd, &st) == 0) {
        out_dev = st.st_dev;
        out_ino = st.st_ino;
    }
    int high = room_above_floor() ? fcntl(fd, F_DUPFD_CLOEXEC, FD_FLOOR) : -1;
    __close(fd);
    transient = high < 0;
    atomic_store(&out_fd, high);
}

/* Opens the trace for one write; see the top comment for the limit. */
static int open_for_write(void)
{
    int flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC;
    int fd = open(out_path, flags);
    if (fd >= 0 || errno != EMFILE)
        return fd;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return -1;
    struct rlimit more = { rl.rlim_cur + 1, rl.rlim_max };
    if (setrlimit(RLIMIT_NOFILE, &more) != 0)
        return -1;
    fd = open(out_path, flags);
    int e = errno;
    setrlimit(RLIMIT_NOFILE, &rl);
    errno = e;
    return fd;
}

int at_outfd_create(const char *path, int numbered)
{
    size_t plen = strlen(path);
    if (plen >= sizeof out_path) {
        errno = ENAMETOOLONG;
        at_warn(path, ": cannot create the trace, running untraced: ", strerror(errno));
        return -1;
    }
    memcpy(out_path, path, plen + 1);
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC;
    int fd = open(out_path, flags, 0644);
    /* With follow-exec an exec'd program keeps the pid, so a taken name
     * gets a ".N" suffix instead of failing. */
    if (fd < 0 && errno == EEXIST && numbered) {
        for (unsigned k = 2; fd < 0 && errno == EEXIST && k < 1000 && plen + 5 < sizeof out_path; k++) {
            char *p = out_path + plen;
            *p++ = '.';
            p[at_fmt_dec(p, k)] = '\0';
            fd = open(out_path, flags, 0644);
        }
        if (fd < 0)
            out_path[plen] = '\0';
    }
    if (fd < 0) {
        at_warn(out_path, ": cannot create the trace, running untraced: ", strerror(errno));
        return -1;
    }
    /* Reopening by path must still work after the program's chdir. */
    char cwd[PATH_MAX];
    plen = strlen(out_path);
    if (out_path[0] != '/' && getcwd(cwd, sizeof cwd)) {
        size_t clen = strlen(cwd);
        if (clen + 1 + plen < sizeof out_path) {
            memmove(out_path + clen + 1, out_path, plen + 1);
            memcpy(out_path, cwd, clen);
            out_path[clen] = '/';
        }
    }
    keep(fd);
    return 0;
}

/* The kept descriptor, reopened by path if a raw system call took it. */
static int kept_fd(void)
{
    int fd = atomic_load(&out_fd);
    if (fd >= 0 && is_trace(fd))
        return fd;
    fd = open(out_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        atomic_store(&out_fd, -1);
        at_warn(out_path, ": cannot reopen the trace: ", strerror(errno));
        at_state = AT_STATE_OFF;
        return -1;
    }
    keep(fd);
    return transient ? open_for_write() : atomic_load(&out_fd);
}

int at_outfd_write(const char *p, size_t n)
{
    if (!out_path[0])
        return -1;
    pthread_mutex_lock(&fd_lock);
    int fd = transient ? open_for_write() : kept_fd();
    int kept = !transient;   /* kept_fd may have turned transient */
    static int warned;
    if (fd < 0 && !kept && !warned) {
        warned = 1;
        at_warn(out_path, ": cannot open the trace to write it, records are lost: ",
                strerror(errno));
    }
    int rc = fd < 0 ? -1 : 0;
    while (fd >= 0 && n > 0) {
        /* A signal handler on this thread may have moved the trace
         * (dup2 onto it): write to where it is now. */
        if (kept && (fd = atomic_load(&out_fd)) < 0) {
            rc = -1;
            break;
        }
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = -1;
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    if (fd >= 0 && !kept)
        __close(fd);
    pthread_mutex_unlock(&fd_lock);
    return rc;
}

void at_outfd_fork_prepare(void)
{
    pthread_mutex_lock(&fd_lock);
}

void at_outfd_fork_parent(void)
{
    pthread_mutex_unlock(&fd_lock);
}

/* The parent's descriptor is the parent's: closed here, unless the program
 * has put a file of its own at that number. */
void at_outfd_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    fd_lock = fresh;
    int fd = atomic_exchange(&out_fd, -1);
    if (fd >= 0 && is_trace(fd))
        __close(fd);
    out_path[0] = '\0';
    transient = 0;
}

/* ---- the close family -------------------------------------------------- */

static int ours(int fd)
{
    return fd >= 0 && fd == atomic_load(&out_fd);
}

/* Before the program puts something at the trace's number: the trace
 * moves to another high number, under the write lock. */
static void step_aside(int fd)
{
    pthread_mutex_lock(&fd_lock);
    if (ours(fd)) {
        int high = fcntl(fd, F_DUPFD_CLOEXEC, FD_FLOOR);
        atomic_store(&out_fd, high);   /* -1: the next write reopens */
    }
    pthread_mutex_unlock(&fd_lock);
}

/* A dup onto the trace's old number that failed leaves the number as it
 * was in a plain run: not open. */
static int after_dup(int rc, int fd)
{
    if (rc < 0) {
        int e = errno;
        if (is_trace(fd))
            __close(fd);
        errno = e;
    }
    return rc;
}

EXPORT int close(int fd)
{
    if (ours(fd)) {
        errno = EBADF;
        return -1;
    }
    return __close(fd);
}

static int close_range_sys(unsigned lo, unsigned hi, int flags)
{
    return (int)syscall(SYS_close_range, lo, hi, flags);
}

EXPORT int close_range(unsigned lo, unsigned hi, int flags)
{
    int fd = atomic_load(&out_fd);
    if (fd < 0 || (unsigned)fd < lo || (unsigned)fd > hi)
        return close_range_sys(lo, hi, flags);
    int rc = 0;
    if ((unsigned)fd > lo)
        rc = close_range_sys(lo, (unsigned)fd - 1, flags);
    if (rc == 0 && (unsigned)fd < hi)
        rc = close_range_sys((unsigned)fd + 1, hi, flags);
    return rc;
}

EXPORT void closefrom(int lo)
{
    if (lo < 0)
        lo = 0;
    int e = errno;
    if (close_range((unsigned)lo, ~0u, 0) == 0) {
        errno = e;
        return;
    }
    /* No close_range in this kernel: one by one, the trace skipped. */
    struct rlimit rl;
    long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 1u << 20 ? (long)rl.rlim_cur
                                                                          : 1 << 20;
    for (long fd = lo; fd < max; fd++)
        close((int)fd);
    errno = e;
}

EXPORT int dup2(int old, int fd)
{
    if (ours(old)) {
        errno = EBADF;
        return -1;
    }
    if (!ours(fd))
        return __dup2(old, fd);
    step_aside(fd);
    return after_dup(__dup2(old, fd), fd);
}

EXPORT int dup3(int old, int fd, int flags)
{
    if (ours(old)) {
        errno = EBADF;
        return -1;
    }
    if (!ours(fd) || old == fd)
        return (int)syscall(SYS_dup3, old, fd, flags);
    step_aside(fd);
    return after_dup((int)syscall(SYS_dup3, old, fd, flags), fd);
}
