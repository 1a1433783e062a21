/*
 * preload/process/control.c: the control path (docs/tracer.md, "Talking
 * to a running tracer"): the abstract Unix socket "@alloctrace.PID" of
 * every traced process, served by a thread of the tracer's own,
 * `alloctrace-ct`, one request at a time. The program's threads never run
 * control code; the verbs are status, snapshot [LABEL], toggle on|off,
 * flush and detach (which an attached tracer plugs in: at_control_on_detach).
 *
 * Decisions:
 * - Datagrams, not a stream. accept() hands the process a new descriptor,
 *   and always the lowest free number: for the moment a request is served
 *   a daemon that just closed 0-2 would find its next open() given 3, the
 *   thing outfd.c goes to lengths to avoid for the trace. recvmsg on the
 *   one socket makes no descriptor. A request is one datagram, a line
 *   "VERB [ARGUMENT]"; the answer is one datagram sent back to the
 *   client's (autobound) address: lines of detail, then "ok ..." or
 *   "error ...". A datagram arrives whole, so no half-sent request can
 *   hold the thread; answers are sent without waiting (a client that
 *   does not read loses its answer, the thread goes on).
 * - Who may ask: the socket has SO_PASSCRED, so the kernel attaches the
 *   sender's credentials to each request (the sender cannot forge them
 *   without CAP_SYS_ADMIN); only the process's real or effective uid, or
 *   root, is served, anyone else gets "error permission denied".
 * - The socket is kept high and hidden from the close family as the
 *   trace's descriptor is (outfd.c), close-on-exec. Abstract: no file to
 *   leave behind, the name is free again when the process ends.
 * - The thread sleeps in ppoll and costs nothing until a request comes.
 *   The snapshot signal (ALLOCTRACE_SNAPSHOT_SIGNAL) is unblocked only in
 *   that ppoll: its handler, on whichever thread gets it, sets a flag and
 *   sends the signal on to this thread, whose ppoll then returns; the
 *   snapshot runs here, never in a handler.
 * - A forked child closes the parent's socket and opens its own, with its
 *   own pid, and starts its own thread (threads do not survive fork).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"

static int (*detach_fn)(char *detail, size_t cap);
static atomic_int signal_pending;
static atomic_int ctl_tid;
static atomic_int stopping;   /* at_control_stop: the thread ends */

void at_control_on_detach(int (*fn)(char *detail, size_t cap))
{
    detach_fn = fn;
}

/* ---- answers ------------------------------------------------------------ */

struct answer {
    char text[AT_CONTROL_MAX];
    size_t len;
};

static void put(struct answer *a, const char *s)
{
    size_t n = strlen(s);
    if (n > sizeof a->text - 1 - a->len)
        n = sizeof a->text - 1 - a->len;
    memcpy(a->text + a->len, s, n);
    a->len += n;
}

static void put_num(struct answer *a, uint64_t v)
{
    char num[24];
    num[at_fmt_dec(num, v)] = '\0';
    put(a, num);
}

/* ---- the verbs ------------------------------------------------------------ */

static void verb_status(struct answer *a)
{
    const char *path = at_outfd_path();
    put(a, "ok mode=");
    put(a, at_cfg.leaks_mode ? "leaks" : "full");
    put(a, " pid=");
    put_num(a, (uint64_t)getpid());
    put(a, " trace=");
    put(a, path[0] ? path : at_writer_path());
    put(a, " tracing=");
    put(a, at_state == AT_STATE_ACTIVE && at_enabled ? "on" : "off");
    /* The sampling interval in bytes (--sample, sample.c); 0: every call. */
    put(a, " sample=");
    put_num(a, at_cfg.sample);
}

static void verb_toggle(struct answer *a, const char *arg)
{
    if (strcmp(arg, "on") == 0)
        at_enabled = 1;
    else if (strcmp(arg, "off") == 0)
        at_enabled = 0;
    else {
        put(a, "error toggle takes on or off");
        return;
    }
    put(a, "ok tracing=");
    put(a, at_enabled ? "on" : "off");
}

static void verb_flush(struct answer *a)
{
    if (!at_cfg.leaks_mode)
        at_writer_flush();
    put(a, "ok");
}

static void verb_snapshot(struct answer *a, const char *label)
{
    char detail[PATH_MAX + 64];
    int rc = at_snapshot_take(label, detail, sizeof detail);
    /* Lines of detail first (held_us=N), then "ok PATH" or "error WHY". */
    char *last = strrchr(detail, '\n');
    if (last) {
        *last++ = '\0';
        put(a, detail);
        put(a, "\n");
    } else {
        last = detail;
    }
    put(a, rc > 0 ? "ok " : "error ");
    put(a, last);
}

static void verb_detach(struct answer *a)
{
    if (!detach_fn) {
        put(a, "error not attached");
        return;
    }
    char detail[PATH_MAX + 64] = "";
    int rc = detach_fn(detail, sizeof detail);
    put(a, rc == 0 ? "ok " : "error ");
    put(a, detail);
}

static void dispatch(struct answer *a, char *req)
{
    char *arg = strchr(req, ' ');
    if (arg)
        *arg++ = '\0';
    else
        arg = req + strlen(req);
    if (strcmp(req, "status") == 0 && !*arg)
        verb_status(a);
    else if (strcmp(req, "toggle") == 0)
        verb_toggle(a, arg);
    else if (strcmp(req, "flush") == 0 && !*arg)
        verb_flush(a);
    else if (strcmp(req, "snapshot") == 0)
        verb_snapshot(a, arg);
    else if (strcmp(req, "detach") == 0 && !*arg)
        verb_detach(a);
    else {
        put(a, "error unknown request ");
        put(a, req);
    }
}

/* ---- serving ------------------------------------------------------------ */

static int allowed(const struct ucred *c)
{
    return c && (c->uid == 0 || c->uid == getuid() || c->uid == geteuid());
}

/* Receives one request on `fd` and answers it. */
static void serve_one(int fd)
{
    char req[AT_CONTROL_MAX + 1];
    struct sockaddr_un from;
    union {
        struct cmsghdr h;
        char room[CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    struct iovec iov = { req, sizeof req - 1 };
    struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov,
                        .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof ctl };
    ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0)
        return;
    const struct ucred *cred = NULL;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
            cred = (const struct ucred *)(void *)CMSG_DATA(c);
    struct answer a = { .len = 0 };
    if (!allowed(cred)) {
        put(&a, "error permission denied");
    } else if (m.msg_flags & MSG_TRUNC) {
        put(&a, "error request longer than 4096 bytes");
    } else {
        while (n > 0 && (req[n - 1] == '\n' || req[n - 1] == '\r'))
            n--;
        req[n] = '\0';
        if (memchr(req, '\n', (size_t)n))
            put(&a, "error one request a message");
        else
            dispatch(&a, req);
    }
    a.text[a.len++] = '\n';
    if (m.msg_namelen > offsetof(struct sockaddr_un, sun_path))
        sendto(fd, a.text, a.len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&from,
               m.msg_namelen);
}

static void take_signal_snapshot(void)
{
    char detail[PATH_MAX + 64];
    at_snapshot_take("signal", detail, sizeof detail);
}

static void *control_main(void *arg)
{
    (void)arg;
    at_guard = 1;
    atomic_store(&ctl_tid, (int)syscall(SYS_gettid));
    sigset_t during;
    sigfillset(&during);
    if (at_cfg.snapshot_signal)
        sigdelset(&during, at_cfg.snapshot_signal);
    for (;;) {
        if (atomic_load(&stopping)) {   /* an attach's end: socket and thread go */
            at_outfd_hidden_close();
            atomic_store(&stopping, 0);
            atomic_store(&ctl_tid, 0);
            return NULL;
        }
        int fd = at_outfd_hidden();
        if (fd < 0)
            return NULL;   /* the program put a file of its own there */
        /* Looked at before ppoll too: a signal that came before ctl_tid
         * was set (the thread not yet scheduled) only set the flag, and no
         * tgkill would wake the ppoll. One that comes after the look is
         * sent on to this thread and ends the ppoll. */
        if (atomic_exchange(&signal_pending, 0))
            take_signal_snapshot();
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = ppoll(&p, 1, NULL, &during);
        if (atomic_exchange(&signal_pending, 0))
            take_signal_snapshot();
        if (r > 0 && (p.revents & POLLIN))
            serve_one(fd);
    }
}

/* ---- the snapshot signal ---------------------------------------------- */

static void on_snapshot_signal(int sig)
{
    int e = errno;
    atomic_store(&signal_pending, 1);
    int tid = atomic_load(&ctl_tid);
    if (tid > 0 && tid != (int)syscall(SYS_gettid))
        syscall(SYS_tgkill, getpid(), tid, sig);
    errno = e;
}

/* ---- start ---------------------------------------------------------------- */

/* Opens @alloctrace.PID; -1 with one line on stderr. */
static int open_socket(void)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        at_warn("cannot open the control socket, snapshots and detach are off: ",
                strerror(errno), "");
        return -1;
    }
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    char *p = a.sun_path + 1;
    memcpy(p, AT_CONTROL_NAME, sizeof AT_CONTROL_NAME - 1);
    p += sizeof AT_CONTROL_NAME - 1;
    p += at_fmt_dec(p, (uint64_t)getpid());
    int one = 1;
    socklen_t len = (socklen_t)(p - (char *)&a);
    if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&a, len) != 0) {
        int e = errno;
        close(fd);
        a.sun_path[0] = '@';
        *p = '\0';
        at_warn(a.sun_path, ": cannot open the control socket, snapshots and detach are off: ",
                strerror(e));
        return -1;
    }
    return at_outfd_hide(fd);
}

/* The thread that serves the socket already open; 0, or -1 with one line
 * on stderr (the socket is closed). */
static int start_thread(int install_signal)
{
    pthread_t t;
    int rc = at_thread_start(control_main, "alloctrace-ct", &t);
    if (rc != 0) {
        at_outfd_hidden_close();
        at_warn("cannot start the control thread, snapshots and detach are off: ", strerror(rc), "");
        return -1;
    }
    if (at_cfg.snapshot_signal && install_signal)
        at_signal_catch(at_cfg.snapshot_signal, on_snapshot_signal);
    return 0;
}

static int control_wanted(void)
{
    if (!at_cfg.control || at_state != AT_STATE_ACTIVE) {
        if (at_cfg.snapshot_signal && !at_cfg.control)
            at_warn(AT_ENV_SNAPSHOT_SIG, " needs the control thread (", AT_ENV_CONTROL "=0): no snapshots by signal");
        return 0;
    }
    return 1;
}

/*
 * Sampling on a program with one thread: the socket opens at start, but
 * its thread waits until the program starts a thread of its own. A
 * process with any second thread loses glibc's single-thread paths for
 * good (malloc's arena lock, stdio's locks): one idle thread made perl 6%
 * slower (docs/benchmarks.md), twice sampling's own cost. sample.c calls
 * back on a thread's first allocation and on every pick; from there the
 * thread starts once the process has a second thread anyway. A snapshot
 * signal asks for the thread from the start (its handler wakes it).
 * Until then a request waits in the socket, and the launcher, which sees
 * the socket without its thread, has gdb call at_control_wake (below).
 */
static atomic_int deferred;

static int one_thread_sampled(void)
{
#ifdef AT_ATTACH_BUILD
    return 0;   /* an attached tracer's detach needs the thread */
#else
    return at_cfg.sample && !at_cfg.snapshot_signal && __libc_single_threaded;
#endif
}

/* The deferred thread, from a program's thread: its creation's
 * allocations are not the program's. The snapshot signal, if any, was
 * never deferred. */
static int start_deferred_thread(void)
{
    int saved = at_guard;
    at_guard = 1;
    int rc = start_thread(0);
    at_guard = saved;
    return rc;
}

static void start_deferred(void)
{
    if (!atomic_load_explicit(&deferred, memory_order_relaxed) || __libc_single_threaded ||
        !atomic_exchange(&deferred, 0))
        return;
    start_deferred_thread();
}

static void start_or_defer(int install_signal)
{
    if (!control_wanted() || open_socket() < 0)
        return;
    if (one_thread_sampled()) {
        atomic_store(&deferred, 1);
        at_sample_on_threads(start_deferred);
        return;
    }
    start_thread(install_signal);
}

/*
 * The launcher's way to a deferred thread (`alloctrace --snapshot PID`
 * and the other requests, through scripts/alloctrace-inject wake): gdb
 * calls this on the program's thread, stopped outside the tracer's hooks
 * (the script steps out of them first: the thread's creation allocates,
 * and a nested call inside glibc's malloc would corrupt it). From then on
 * the process has the thread, and glibc's multi-thread paths, like any
 * traced process. Returns the answer line gdb prints.
 */
AT_EXPORT const char *at_control_wake(void)
{
    if (atomic_load(&ctl_tid) > 0)
        return "ok running";
    if (!atomic_exchange(&deferred, 0))
        return at_outfd_hidden() < 0 ? "error no control socket (ALLOCTRACE_CONTROL=0, or it could not be opened)"
                                     : "ok starting";
    return start_deferred_thread() == 0 ? "ok woken"
                                          : "error cannot start the control thread (see the program's stderr)";
}

void at_control_start(void)
{
    start_or_defer(1);
}

/*
 * An attach's end (process/attach.c): the thread ends and the socket
 * closes, so that nothing of the tracer's runs in the process left to
 * itself and a later attach opens both again. Called on the control
 * thread (a detach request), the thread ends after sending its answer;
 * from another thread (gdb's at_detach), shutdown wakes its ppoll and the
 * end is waited for (2 s at most).
 */
void at_control_stop(void)
{
    int tid = atomic_load(&ctl_tid);
    if (tid <= 0)
        return;
    atomic_store(&stopping, 1);
    if (tid == (int)syscall(SYS_gettid))
        return;
    int fd = at_outfd_hidden();
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
    for (int i = 0; i < 2000 && atomic_load(&ctl_tid) > 0; i++) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
}

/* A forked child: the parent's socket and thread are the parent's. */
void at_control_fork_child(void)
{
    at_outfd_hidden_close();
    atomic_store(&ctl_tid, 0);
    atomic_store(&signal_pending, 0);
    at_snapshot_fork_child();
    /* The signal's handler stays installed: only the socket and the
     * thread are new. */
    if (at_state == AT_STATE_ACTIVE && at_cfg.control)
        start_or_defer(0);
}
