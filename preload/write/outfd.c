/*
 * preload/write/outfd.c: the trace's descriptor, kept out of the program's way.
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
 *   It creates its own trace at once, in the fork handler (writer.c),
 *   while it still has the parent's credentials and directory: nginx's
 *   workers switch to www-data before their first write, where a root-
 *   owned directory refuses them. A child that execs before writing
 *   anything removes its empty file (at_outfd_discard).
 * - A write that fails (disk full, quota, I/O error) or would pass the
 *   file size limit (RLIMIT_FSIZE, checked first, so the tracer never
 *   earns the program a SIGXFSZ) ends the trace: the file is truncated
 *   back to its last whole record and gets one last line, AT_CUT_PREFIX +
 *   the reason; one line on stderr says so, nothing more is written and
 *   tracing stops while the program runs on. When even that line does not
 *   fit, the last records make room for it (read back: the descriptor is
 *   opened for reading too). A signal that ends the program gets its cut
 *   line the same way (at_outfd_cut).
 * - A compressed trace (zframe.c) is written one zstd frame per write, and
 *   there a frame is the unit: a write that fails or would pass the limit
 *   is taken back whole (the chunk is lost, never half a frame kept), the
 *   cut line is a frame of its own, and room for it is made by dropping
 *   the last frame written.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer.h"

#define FD_FLOOR 1000

static atomic_int out_fd = -1;
static dev_t out_dev;
static ino_t out_ino;
static char out_path[PATH_MAX];
static int transient;   /* no descriptor kept: open per write */
static int framed;      /* zstd frames: see the top comment */
static char *zbuf;      /* one encoded chunk */
#define ZCHUNK (1u << 20)   /* text per frame, at most */
static off_t last_start;    /* where the last frame written begins */
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
    int flags = O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC;
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

/* Sets up frames (zframe.c) for a compressed trace; -1 when out of memory. */
static int setup_frames(int compress)
{
    framed = compress;
    last_start = 0;
    if (!compress || zbuf)
        return 0;
    if (at_cfg.sample)
        at_zframe_defer();   /* made at the second write (zframe.c) */
    else
        at_zframe_init();   /* without a context: raw frames */
    void *m = mmap(NULL, at_zframe_bound(ZCHUNK), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    zbuf = m;
    return 0;
}

int at_outfd_create(const char *path, int numbered, int compress, pid_t parent)
{
    if (setup_frames(compress) < 0) {
        at_warn(path, ": cannot map the compression buffer, running untraced: ", strerror(errno));
        return -1;
    }
    size_t plen = strlen(path);
    if (plen >= sizeof out_path) {
        errno = ENAMETOOLONG;
        at_warn(path, ": cannot create the trace, running untraced: ", strerror(errno));
        return -1;
    }
    memcpy(out_path, path, plen + 1);
    int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC;
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
    if (parent >= 0)   /* -1: a snapshot, not a trace of the process tree */
        at_tracelist_line("trace", parent > 0 ? parent : getppid(), out_path);
    return 0;
}

/* A forked child's trace, created at fork with nothing in it yet, removed
 * because the child execs (or ends) before writing anything: a shell or
 * make would otherwise leave an empty file per command. Only an empty
 * file is removed. After a change of credentials the unlink may be
 * refused; the empty file then stays. */
void at_outfd_discard(void)
{
    if (!out_path[0])
        return;
    pthread_mutex_lock(&fd_lock);
    int fd = atomic_exchange(&out_fd, -1);
    struct stat st;
    if (fd >= 0 && is_trace(fd) && fstat(fd, &st) == 0 && st.st_size == 0) {
        if (unlink(out_path) == 0)
            at_tracelist_line("gone", 0, out_path);
    }
    if (fd >= 0 && is_trace(fd))
        __close(fd);
    out_path[0] = '\0';
    transient = 0;
    pthread_mutex_unlock(&fd_lock);
}

/* The kept descriptor, reopened by path if a raw system call took it. */
static int kept_fd(void)
{
    int fd = atomic_load(&out_fd);
    if (fd >= 0 && is_trace(fd))
        return fd;
    fd = open(out_path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        atomic_store(&out_fd, -1);
        at_warn(out_path, ": cannot reopen the trace: ", strerror(errno));
        at_state = AT_STATE_OFF;
        return -1;
    }
    keep(fd);
    return transient ? open_for_write() : atomic_load(&out_fd);
}

/* ---- a trace cut short ------------------------------------------------- */

static int cut;          /* the cut line is written: nothing more */
#define CUT_ROOM 128     /* room kept for the cut line */
#define ROOM (CUT_ROOM + (framed ? 16 : 0))   /* ... and its frame */

static const char *errno_reason(int e)
{
    switch (e) {
    case ENOSPC: return "no space left on device";
    case EDQUOT: return "disk quota exceeded";
    case EFBIG: return "the file is too large";
    case EIO: return "input/output error";
    default: return "write error";
    }
}

/* Room the file size limit leaves after `size` bytes. */
static size_t room_under_limit(off_t size)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return SIZE_MAX;
    return rl.rlim_cur > (rlim_t)size ? (size_t)(rl.rlim_cur - (rlim_t)size) : 0;
}

/* Makes room for the cut line on a full disk: truncates the file back to
 * a record boundary at least CUT_ROOM bytes before its end. */
static int drop_last_units(int fd, off_t size)
{
    if (framed)
        return last_start < size && ftruncate(fd, last_start) == 0;
    char tail[4096];
    off_t from = size > (off_t)sizeof tail ? size - (off_t)sizeof tail : 0;
    ssize_t got = pread(fd, tail, sizeof tail, from);
    if (got <= CUT_ROOM)
        return 0;
    size_t keep = at_unit_boundary(tail, (size_t)got - CUT_ROOM, (size_t)got);
    return keep > 0 && ftruncate(fd, from + (off_t)keep) == 0;
}

/* Appends the cut line whole or not at all, and stops writing for good;
 * async-signal-safe. `warn`: one line on stderr too. */
static void put_cut_line(int fd, const char *reason, const char *detail, int warn)
{
    char line[CUT_ROOM];
    size_t n = 0;
    const char *parts[] = { AT_CUT_PREFIX, reason, detail };
    for (size_t i = 0; i < 3; i++)
        for (const char *q = parts[i]; *q && n < sizeof line - 1; q++)
            line[n++] = *q;
    line[n++] = '\n';
    char frame[CUT_ROOM + 16];
    if (framed)
        n = at_zframe_raw(frame, line, n);
    const char *out = framed ? frame : line;
    for (int attempt = 0; fd >= 0 && attempt < 2; attempt++) {
        struct stat st;
        if (fstat(fd, &st) != 0 || write(fd, out, n) == (ssize_t)n)
            break;
        (void)!ftruncate(fd, st.st_size);   /* no half line */
        if (attempt == 0 && !drop_last_units(fd, st.st_size))
            break;
    }
    cut = 1;
    at_state = AT_STATE_OFF;
    if (warn)
        at_warn(out_path, ": trace cut, the program runs on untraced: ", reason);
}

/* Writes p[0..n), whole records, to fd (the kept one re-read before each
 * write: a signal handler on this thread may have moved it), or cuts the
 * trace at a record boundary. Returns 0 when all of it was written. */
static int write_or_cut(int fd, int kept, const char *p, size_t n)
{
    struct stat st;
    off_t start = fstat(fd, &st) == 0 ? st.st_size : 0;
    size_t room = room_under_limit(start), take = n, done = 0;
    if (room < n + ROOM)
        take = framed ? 0 : at_unit_boundary(p, room > CUT_ROOM ? room - CUT_ROOM : 0, n);
    while (done < take) {
        if (kept && (fd = atomic_load(&out_fd)) < 0)
            return -1;
        ssize_t w = write(fd, p + done, take - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            /* Back to a boundary, with room freed for the cut line. */
            size_t keep = framed ? 0 : at_unit_boundary(p, done > CUT_ROOM ? done - CUT_ROOM : 0, n);
            const char *why = errno_reason(w < 0 ? errno : ENOSPC);
            if (keep < done && ftruncate(fd, start + (off_t)keep) != 0)
                fd = -1;   /* no cut line glued to a cut record */
            put_cut_line(fd, why, "", 1);
            return -1;
        }
        done += (size_t)w;
    }
    if (take == n) {
        last_start = start;
        return 0;
    }
    put_cut_line(fd, "the file size limit (RLIMIT_FSIZE) is reached", "", 1);
    return -1;
}

/* Text in frames of at most ZCHUNK bytes, each ending with a whole unit
 * where there is one. Near the file size limit a frame holds the whole
 * units that fit (halved until they do), and the cut line follows. */
static int write_frames(int fd, int kept, const char *p, size_t n)
{
    while (n > 0) {
        size_t k = n;
        if (k > ZCHUNK) {
            k = at_unit_boundary(p, ZCHUNK, n);
            if (k == 0)
                k = ZCHUNK;
        }
        struct stat st;
        size_t room = room_under_limit(fstat(fd, &st) == 0 ? st.st_size : 0), all = k;
        size_t z = at_zframe_encode(zbuf, at_zframe_bound(ZCHUNK), p, k);
        while (z + ROOM > room && k > 0) {
            k = at_unit_boundary(p, k / 2, all);
            z = k ? at_zframe_encode(zbuf, at_zframe_bound(ZCHUNK), p, k) : 0;
        }
        if ((k > 0 && write_or_cut(fd, kept, zbuf, z) < 0) || k < all) {
            if (!cut)
                put_cut_line(fd, "the file size limit (RLIMIT_FSIZE) is reached", "", 1);
            return -1;
        }
        p += k;
        n -= k;
    }
    return 0;
}

int at_outfd_write(const char *p, size_t n)
{
    if (!out_path[0] || cut)
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
    int rc = fd < 0 || cut ? -1
             : framed ? write_frames(fd, kept, p, n)
                      : write_or_cut(fd, kept, p, n);
    if (fd >= 0 && !kept)
        __close(fd);
    pthread_mutex_unlock(&fd_lock);
    return rc;
}

void at_outfd_cut(const char *reason, const char *detail)
{
    if (!out_path[0] || cut)
        return;
    pthread_mutex_lock(&fd_lock);
    int fd = transient ? open_for_write() : kept_fd();
    if (fd >= 0 && !cut)
        put_cut_line(fd, reason, detail, 0);
    if (fd >= 0 && transient)
        __close(fd);
    pthread_mutex_unlock(&fd_lock);
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
    at_zframe_fork_child();
}

/* Attach's end (process/attach.c): the trace is closed and forgotten; the
 * next at_outfd_create starts a new one, not cut. */
void at_outfd_close(void)
{
    pthread_mutex_lock(&fd_lock);
    int fd = atomic_exchange(&out_fd, -1);
    if (fd >= 0 && is_trace(fd))
        __close(fd);
    out_path[0] = '\0';
    transient = 0;
    cut = 0;
    pthread_mutex_unlock(&fd_lock);
}

/* ---- the close family -------------------------------------------------- */

/* ---- the control socket (control.c) ------------------------------------ */

/* The control path's socket is kept exactly as the trace's descriptor:
 * high, close-on-exec, and not open as far as the program's close family
 * can tell. (The only other descriptor the tracer ever holds.) */
static atomic_int ctl_fd = -1;

int at_outfd_hide(int fd)
{
    int high = fcntl(fd, F_DUPFD_CLOEXEC, FD_FLOOR);
    __close(fd);
    atomic_store(&ctl_fd, high);
    return high;
}

int at_outfd_hidden(void)
{
    return atomic_load(&ctl_fd);
}

void at_outfd_hidden_close(void)
{
    int fd = atomic_exchange(&ctl_fd, -1);
    if (fd >= 0)
        __close(fd);
}

static int ours(int fd)
{
    return fd >= 0 && (fd == atomic_load(&out_fd) || fd == atomic_load(&ctl_fd));
}

/* Before the program puts something at the trace's number (or the
 * control socket's): it moves to another high number, under the write
 * lock. */
static void step_aside(int fd)
{
    pthread_mutex_lock(&fd_lock);
    if (fd >= 0 && fd == atomic_load(&out_fd)) {
        int high = fcntl(fd, F_DUPFD_CLOEXEC, FD_FLOOR);
        atomic_store(&out_fd, high);   /* -1: the next write reopens */
    } else if (fd >= 0 && fd == atomic_load(&ctl_fd)) {
        int high = fcntl(fd, F_DUPFD_CLOEXEC, FD_FLOOR);
        atomic_store(&ctl_fd, high);   /* -1: the control path is gone */
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

AT_EXPORT int close(int fd)
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

/* [lo, hi] without the number `fd` (none when negative or outside). */
static int close_range_skip(unsigned lo, unsigned hi, int flags, int fd)
{
    if (fd < 0 || (unsigned)fd < lo || (unsigned)fd > hi)
        return close_range_sys(lo, hi, flags);
    int rc = 0;
    if ((unsigned)fd > lo)
        rc = close_range_sys(lo, (unsigned)fd - 1, flags);
    if (rc == 0 && (unsigned)fd < hi)
        rc = close_range_sys((unsigned)fd + 1, hi, flags);
    return rc;
}

AT_EXPORT int close_range(unsigned lo, unsigned hi, int flags)
{
    int a = atomic_load(&out_fd), b = atomic_load(&ctl_fd);
    if (a < 0 || b < 0 || a == b)
        return close_range_skip(lo, hi, flags, a >= 0 ? a : b);
    /* Two numbers to skip: below the higher one, then above it. */
    int top = a > b ? a : b, low = a > b ? b : a;
    if ((unsigned)top < lo || (unsigned)top > hi)
        return close_range_skip(lo, hi, flags, low);
    int rc = 0;
    if ((unsigned)top > lo)
        rc = close_range_skip(lo, (unsigned)top - 1, flags, low);
    if (rc == 0 && (unsigned)top < hi)
        rc = close_range_sys((unsigned)top + 1, hi, flags);
    return rc;
}

AT_EXPORT void closefrom(int lo)
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

AT_EXPORT int dup2(int old, int fd)
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

AT_EXPORT int dup3(int old, int fd, int flags)
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

const char *at_outfd_path(void)
{
    return out_path;
}
