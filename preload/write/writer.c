/*
 * preload/write/writer.c: the shared output buffer, which puts the records of
 * every thread into index order, and the writer thread of full mode
 * (chunk.c makes the text, outfd.c keeps the descriptor).
 *
 * File order = index order. Threads unwind and intern their backtrace
 * (sites.c) without any lock; then they take ev_lock only to draw the
 * next index and put a 48-byte binary record (struct at_rec, tracer.h)
 * into the shared buffer. Because index and offset are drawn under the
 * same lock, indices are strictly increasing in the buffer by
 * construction. Text that is no per-event record (header, registry, map
 * lines, leaks mode's records at exit) goes into the same stream as a
 * tagged entry. A buffer becomes text (the compressed form: calls of one
 * backtrace together, frames once) only when it is written, which in full
 * mode is on the writer thread: formatting ~300 bytes of frames per event
 * and compressing them is what the program's threads no longer do.
 * Per-thread buffers would need a merge by index at every flush and would
 * hold a release back in one thread's buffer while another thread's
 * allocation of the same address is already written, which is exactly
 * the order the spec forbids. (A lock-free reservation, one CAS on a word
 * packing buffer, length and index, and per-thread rings merged in clock
 * order were built and measured while records were text: neither was
 * faster with two threads, because what costs is moving the record
 * between cores, not the lock; docs/benchmarks.md.)
 *
 * NBUF buffers of 256 KiB are used in turn so that the writing of full
 * ones overlaps with filling the next: a thread that finds the current
 * buffer full takes wr_lock while still holding ev_lock (so writes
 * happen in buffer order, and the buffer it moves on to is no longer in
 * use), and queues it for the writer thread (or, without one, drops
 * ev_lock and writes it). No syscall per event: one write per chunk.
 *
 * Only whole records are ever written: a record is complete before the
 * buffer's length covers it, so whatever was written - at a flush, by a
 * signal handler, before a SIGKILL - ends with a whole record (a SIGKILL
 * in the middle of a write(2) is another matter: docs/tracer.md). A write
 * that fails ends the trace with a cut line (outfd.c).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"

#define BUF_SIZE AT_CHUNK_BYTES
#define NBUF 4

/* What every record touches, in one cache line of its own: the lock, the
 * current buffer, its reserved length, the last index drawn (under ev_lock
 * in full mode). */
static struct {
    pthread_mutex_t lock;
    int cur;
    size_t len;
    uint64_t counter;
} hot __attribute__((aligned(64))) = { .lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP };
_Static_assert(sizeof hot == 64, "one cache line");
#define ev_lock hot.lock
#define cur hot.cur
#define buf_len hot.len
#define counter hot.counter
static pthread_mutex_t wr_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int holds_ev AT_TLS;
static char *bufs[NBUF];
static int records;               /* any record since the file was (to be) opened */
static int unbuffered;
static uint64_t last_write_stamp; /* stamp of the last age-triggered write */

static char out_path[PATH_MAX];    /* where a forked child's file will be */
static int open_pending;          /* a forked child has written nothing yet */
static int precreated;            /* ... and its file, created at fork, is empty */
static pid_t out_pid;             /* the process the file belongs to */
static pid_t parent_pid;          /* a forked child's parent (getppid() may be a reaper's) */
static int64_t gmtoff_us;

/* ---- the output (outfd.c keeps the descriptor) ------------------------- */

static int sealed;   /* the process is ending: see at_writer_seal */

/* Writes p[0..n), whole records, creating a forked child's file first. */
static void write_out(const char *p, size_t n)
{
    if (n == 0)
        return;
    if (open_pending) {
        open_pending = 0;
        /* Created at fork, unless a failed exec removed it since. */
        if (!precreated &&
            at_outfd_create(out_path, at_cfg.follow_exec, at_cfg.compress, parent_pid) < 0) {
            at_state = AT_STATE_OFF;
            return;
        }
        precreated = 0;
    }
    at_outfd_write(p, n);
}

/* ---- the shared buffer ------------------------------------------------- */

/*
 * Records. Under ev_lock a thread draws the index and writes its 48-byte
 * record into the current buffer, and only then moves the length past it
 * (a signal handler on this thread, which flushes without the lock it
 * holds, never sees half a record). Index order is file order: index and
 * offset are drawn together under one lock. A release is placed before
 * the real free runs, so an allocation of the same address by another
 * thread is placed later (higher index, later offset). (Until the records
 * became binary, threads copied their ~300 bytes of text outside the
 * lock into reservations marked in per-thread slots; 48 bytes are a few
 * stores, cheaper under the lock than the slot's marks around them.)
 */
static void lock_ev(void)
{
    pthread_mutex_lock(&ev_lock);
    holds_ev = 1;
}

static void unlock_ev(void)
{
    holds_ev = 0;
    pthread_mutex_unlock(&ev_lock);
}

/* Formatters of chunks (chunk.c): one for writes under wr_lock, one for a
 * signal handler's flush, which may interrupt the other. */
static struct at_chunk *fmt_main, *fmt_signal;

/* Stream to text with `k`: the records' stamps become times with the
 * clock's rate as measured now (clock.c). */
static void chunk_out(struct at_chunk *k, const char *p, size_t n)
{
    struct at_stamp_conv conv;
    at_clock_conv(&conv);
    at_chunk_text(k, p, n, write_out, &conv);
}

/* Writes buffer `b` (n bytes of stream) as text; wr_lock held. */
static void write_buffer(int b, size_t n)
{
    if (!sealed && n)
        chunk_out(fmt_main, bufs[b], n);
}

/* ---- the writer thread (full mode) ------------------------------------ */

/*
 * In full mode a full buffer is handed to a thread of the tracer's own,
 * which turns it into text (chunk.c), compresses that into zstd frames
 * of at most 1 MiB (outfd.c, zframe.c) and writes them, while the
 * program's threads fill the next buffer: formatting a chunk of ~5,460
 * records and compressing its text costs a ms or two and a write(2) to
 * disk about as much, which no allocation should wait for. (Leaks mode
 * writes at exit only and has no thread.) The hand-off is a queue under
 * wr_lock (q_first, q_count). The writer thread takes the oldest chunk
 * off it and writes it without the lock, marked `inflight`; every other
 * write (flushes at exit, exec, fork, signals) takes wr_lock, waits for
 * the chunk in flight and writes the queued ones first: file order stays
 * buffer order. So a thread handing a buffer over waits only when all
 * NBUF are in use, not for the chunk being written. With two buffers of
 * 1 MiB and the lock held through each write, two program threads on two
 * cores waited at 23-56 of 91 hand-offs (41-102 ms of a 200-257 ms run)
 * in 3 runs of 4 of bench/tracer's `two`, both stopped while the writer
 * thread, woken, waited for a core (docs/benchmarks.md). With no spare core the program is still slowed
 * down to the writer's pace rather than the trace growing without bound.
 * Every 100 ms the writer thread also hands itself the current buffer
 * when it holds anything, so a SIGKILL loses at most the records of the
 * last 100 ms or the last 256 KiB of records (~5,460 events), plus the
 * chunks queued or being written at that moment when the writer is
 * behind: 1 MiB of records at most, all NBUF buffers, which is issue
 * 13's bound. (With 512 KiB buffers a starved writer could leave 2 MiB
 * unwritten; 256 KiB made the default trace 1-9% larger and cost no
 * measurable time on bench/tracer: docs/benchmarks.md.)
 *
 * The thread is started by the constructor (no lock of the program is
 * held there; a thread cannot be created from a preinit allocation), and
 * by a forked child at its first record, since threads do not survive
 * fork. It blocks every signal, so the program's handlers never run on
 * it, and records nothing (at_guard).
 */
#define AGE_NS 100000000L
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;   /* a chunk queued */
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;   /* inflight cleared */
/* Buffers handed to the writer thread and not yet taken, oldest first,
 * under wr_lock; they follow each other round the ring of NBUF. */
static int q_first, q_count;
static size_t q_len[NBUF];
/* 1 + the buffer the writer thread is writing without wr_lock; 0: none.
 * It precedes q_first in the ring, so the buffers in use (inflight, the
 * queue, cur) are consecutive and the one after cur is free when fewer
 * than NBUF are. */
static int inflight;
static int threaded;         /* the writer thread runs in this process */
static atomic_int thread_state;   /* 0 not wanted, 1 to start, 2 started or failed */
static int threads_allowed;  /* the constructor has run */
static int stop_thread;      /* at_writer_detach asks the writer thread to end */
static __thread int on_writer AT_TLS;   /* this is the writer thread */

static void write_buffer(int b, size_t n);

static int next_buf(int b)
{
    return (b + 1) % NBUF;
}

/* wr_lock held (or every lock kept, from a signal): the oldest chunk
 * handed off, taken off the queue; *n gets its length. */
static int dequeue(size_t *n)
{
    int b = q_first;
    *n = q_len[b];
    q_first = next_buf(b);
    q_count--;
    return b;
}

/* wr_lock held: the writer thread's chunk in progress is written. */
static void wait_inflight(void)
{
    while (__atomic_load_n(&inflight, __ATOMIC_ACQUIRE))
        pthread_cond_wait(&done_cv, &wr_lock);
}

/* wr_lock held: writes the chunks handed off, in order. */
static void drain_pending(void)
{
    wait_inflight();
    while (q_count) {
        size_t n;
        int b = dequeue(&n);
        write_buffer(b, n);
    }
    pthread_cond_broadcast(&done_cv);
}

/* ev_lock and wr_lock held: hands the current buffer to the thread.
 * Returns with wr_lock released. */
static void hand_off(void)
{
    while (q_count + (inflight != 0) + 1 >= NBUF)
        pthread_cond_wait(&done_cv, &wr_lock);
    if (!q_count)
        q_first = cur;
    q_len[cur] = buf_len;
    q_count++;
    cur = next_buf(cur);
    buf_len = 0;
    pthread_cond_signal(&work_cv);
    pthread_mutex_unlock(&wr_lock);
}

static void swap_and_write(void);

/* The current buffer, when it holds anything, goes to the writer; the
 * writer thread's own, without wr_lock. It never waits for ev_lock: the
 * thread holding it may be waiting in hand_off for this one to write the
 * buffer handed off before. When the lock is taken, the next record
 * hands the buffer over instead (age_due), and 0 says to try again soon. */
static atomic_int age_due;

static int age_flush(void)
{
    if (pthread_mutex_trylock(&ev_lock) != 0) {
        atomic_store(&age_due, 1);
        return 0;
    }
    holds_ev = 1;
    atomic_store(&age_due, 0);
    if (!sealed && buf_len && !(open_pending && records == 0))
        swap_and_write();
    unlock_ev();
    return 1;
}

static void *writer_main(void *arg)
{
    (void)arg;
    at_guard = 1;
    on_writer = 1;
    pthread_mutex_lock(&wr_lock);
    long wait_ns = AGE_NS;
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += wait_ns;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_nsec -= 1000000000L;
            until.tv_sec++;
        }
        while (!q_count && !stop_thread &&
               pthread_cond_timedwait(&work_cv, &wr_lock, &until) == 0)
            ;
        if (stop_thread && !q_count) {   /* at_writer_detach: nothing left to write */
            stop_thread = 0;
            threaded = 0;
            on_writer = 0;
            atomic_store(&thread_state, 0);
            pthread_cond_broadcast(&done_cv);
            pthread_mutex_unlock(&wr_lock);
            return NULL;
        }
        if (q_count) {
            size_t n;
            int b = dequeue(&n);
            __atomic_store_n(&inflight, b + 1, __ATOMIC_RELEASE);
            pthread_mutex_unlock(&wr_lock);
            write_buffer(b, n);
            __atomic_store_n(&inflight, 0, __ATOMIC_RELEASE);
            pthread_mutex_lock(&wr_lock);
            pthread_cond_broadcast(&done_cv);
            continue;
        }
        pthread_mutex_unlock(&wr_lock);   /* ev_lock comes first */
        wait_ns = age_flush() ? AGE_NS : AGE_NS / 100;
        pthread_mutex_lock(&wr_lock);
    }
    return NULL;
}

static void start_thread(void)
{
    int expected = 1;
    if (getpid() != out_pid || !atomic_compare_exchange_strong(&thread_state, &expected, 2))
        return;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&work_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_t t;
    int rc = at_thread_start(writer_main, "alloctrace-wr", &t);
    if (rc != 0) {
        at_warn("cannot start the trace writer thread, compressing on the program's threads: ",
                strerror(rc), "");
        return;
    }
    pthread_mutex_lock(&wr_lock);
    threaded = 1;
    pthread_mutex_unlock(&wr_lock);
}

void at_writer_start_thread(void)
{
    /* Sampling writes a record in a few hundred KiB of allocation: the
     * program's thread writes a full buffer itself (and one a second
     * old), and a program with one thread keeps glibc's single-thread
     * paths (control.c). */
    if (at_cfg.sample)
        return;
    threads_allowed = 1;
    if (bufs[0] && !at_cfg.leaks_mode && atomic_load(&thread_state) == 0)
        atomic_store(&thread_state, 1);
    if (atomic_load(&thread_state) == 1)
        start_thread();
}

/* ev_lock held on entry and on return; see the top comment. */
static void swap_and_write(void)
{
    pthread_mutex_lock(&wr_lock);
    if (threaded && !unbuffered) {
        if (on_writer)
            drain_pending();   /* its own age flush: never wait for itself */
        hand_off();
        return;
    }
    drain_pending();
    int full = cur;
    size_t n = buf_len;
    cur = next_buf(cur);
    buf_len = 0;
    unlock_ev();
    write_buffer(full, n);
    pthread_mutex_unlock(&wr_lock);
    lock_ev();
}

static void reserve(size_t need)
{
    while (buf_len + need > BUF_SIZE)
        swap_and_write();
}

/* Writes the current buffer without letting go of ev_lock. */
static void write_held(void)
{
    pthread_mutex_lock(&wr_lock);
    drain_pending();
    write_buffer(cur, buf_len);
    buf_len = 0;
    pthread_mutex_unlock(&wr_lock);
}

/* The length moves past what was written only now (see "Records"). */
static void publish(size_t len)
{
    atomic_signal_fence(memory_order_seq_cst);
    __atomic_store_n(&buf_len, len, __ATOMIC_RELEASE);
}

static void note_record(void)
{
    if (!records)   /* no store once set: the line is read by every record */
        records = 1;
}

/*
 * The line records will reach PREFETCH bytes on is fetched ahead. A
 * buffer's lines were last read by the writer thread on the other core,
 * so each first store to one waits for the line to come back, and
 * unlock_ev's atomic exchange waits for that store: perf put 5.7% of
 * python3's samples on the unlock (3.4% of cc1plus's), 1.7% with this
 * (docs/benchmarks.md, issue 25). (GCC makes a plain prefetcht0 of it for
 * x86-64; prefetchw measured the same.) The buffers are one mapping, used
 * in turn, so the offset wraps round the ring into the buffer used next.
 * A prefetch is only a hint: it never faults and changes no data.
 */
#define PREFETCH 512

#define RING_BYTES (NBUF * (size_t)BUF_SIZE)
_Static_assert((RING_BYTES & (RING_BYTES - 1)) == 0, "the ring's offsets wrap with a mask");

static void put_rec(const struct at_event *e, const struct at_stack *st, uint64_t idx)
{
    struct at_rec *r = (struct at_rec *)(void *)(bufs[cur] + buf_len);
    *r = (struct at_rec){
        .head = AT_REC_CALL | (uint64_t)(e->release != 0) << AT_REC_RELEASE_SHIFT |
                (uint64_t)e->fn << AT_REC_FN_SHIFT | idx << AT_REC_INDEX_SHIFT,
        .ctx = e->ctx, .size = e->size, .id = e->id, .stamp = e->stamp, .stack = st,
    };
    publish(buf_len + sizeof *r);
    note_record();
    /* Here, not in a function of its own: GCC takes a function that only
     * prefetches for one without effect and drops the call. */
    size_t ahead = ((size_t)cur * BUF_SIZE + buf_len + PREFETCH) & (RING_BYTES - 1);
    __builtin_prefetch(bufs[0] + ahead, 1, 3);
}

/* Under ev_lock: a text entry of `len` bytes, made by fill(). */
static void put_text(size_t len, void (*fill)(char *, const void *, size_t), const void *arg)
{
    reserve(8 + len + 7);
    char *p = bufs[cur] + buf_len;
    uint64_t head = AT_REC_TEXT | (uint64_t)len << AT_REC_INDEX_SHIFT;
    memcpy(p, &head, 8);
    fill(p + 8, arg, len);
    publish(buf_len + 8 + ((len + 7) & ~(size_t)7));
}

void at_commit_event(const struct at_event *e, const struct at_stack *st)
{
    if (__builtin_expect(atomic_load_explicit(&thread_state, memory_order_relaxed) == 1, 0))
        start_thread();   /* a forked child's */
    lock_ev();
    if (!bufs[0]) {
        unlock_ev();
        return;
    }
    uint64_t stamp = e->stamp;
    if (stamp && !last_write_stamp)
        last_write_stamp = stamp;
    reserve(sizeof(struct at_rec));
    put_rec(e, st, ++counter);
    /* Without the writer thread (leaks mode has none; its start may have
     * failed) a record a second after the last write writes the buffer. */
    int aged = (!threaded && stamp && !open_pending &&
                (int64_t)(stamp - last_write_stamp) > (int64_t)at_clock_stamp_second()) ||
               (atomic_load_explicit(&age_due, memory_order_relaxed) && !open_pending);
    if (__builtin_expect(unbuffered || aged, 0)) {
        atomic_store_explicit(&age_due, 0, memory_order_relaxed);
        last_write_stamp = stamp;
        swap_and_write();
    }
    unlock_ev();
}

struct indexed {
    uint64_t index;
    const char *body;
    size_t len;
};

static void fill_indexed(char *p, const void *arg, size_t len)
{
    const struct indexed *x = arg;
    p += at_fmt_dec(p, x->index);
    *p++ = '.';
    *p++ = ' ';
    memcpy(p, x->body, x->len);
    (void)len;
}

static size_t dec_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

void at_commit_indexed(uint64_t index, const char *body, size_t len)
{
    lock_ev();
    if (bufs[0]) {
        struct indexed x = { index, body, len };
        put_text(dec_len(index) + 2 + len, fill_indexed, &x);
        note_record();
    }
    unlock_ev();
}

/*
 * realloc's release must be in the file before the old block can be handed
 * out again, yet a realloc that fails must leave no record. So both happen
 * under one hold of ev_lock: the release is placed, the real realloc runs,
 * and on failure the release is taken back (nothing can have been numbered
 * or reserved after it meanwhile). Room for both records is reserved first
 * so no flush can separate them.
 */
void *at_commit_realloc(const struct at_event *rel, struct at_event *alloc,
                        const struct at_stack *st, void *old, size_t n, size_t m,
                        void *(*op)(void *, size_t, size_t))
{
    lock_ev();
    if (!bufs[0]) {
        unlock_ev();
        return op(old, n, m);
    }
    reserve(2 * sizeof(struct at_rec));
    size_t saved_len = buf_len;
    put_rec(rel, rel->nframes ? st : NULL, ++counter);
    void *q = op(old, n, m);
    if (!q && alloc->size != 0) {
        __atomic_store_n(&buf_len, saved_len, __ATOMIC_RELEASE);
        counter--;
        unlock_ev();
        return NULL;
    }
    if (q) {
        alloc->id = (uintptr_t)q;
        put_rec(alloc, st, ++counter);
    }
    if (unbuffered)
        swap_and_write();
    unlock_ev();
    return q;
}

static void fill_copy(char *p, const void *arg, size_t len)
{
    memcpy(p, arg, len);
}

static void append_locked(const char *text, size_t len)
{
    while (bufs[0] && len > 0) {
        size_t chunk = len < BUF_SIZE / 2 ? len : BUF_SIZE / 2;
        put_text(chunk, fill_copy, text);
        text += chunk;
        len -= chunk;
    }
}

void at_append_raw(const char *text, size_t len)
{
    lock_ev();
    append_locked(text, len);
    unlock_ev();
}

/* A line that counts as a record of the process's own: a snapshot's mark
 * makes a forked child's file (header, then the mark) even before its
 * first allocation, so the snapshot can be made from it. */
void at_append_record_line(const char *text, size_t len)
{
    lock_ev();
    append_locked(text, len);
    note_record();
    unlock_ev();
}

/* ---- header ---------------------------------------------------------- */

/* Local broken-down time from the UTC offset found at start-up (neither
 * the process nor a forked child calls localtime_r: tzoffset.c).
 * Civil-from-days after H. Hinnant's algorithm. */
static void local_tm(struct tm *tm)
{
    int64_t t = (int64_t)time(NULL) + gmtoff_us / 1000000;
    int64_t days = t / 86400, secs = t % 86400;
    if (secs < 0) {
        secs += 86400;
        days--;
    }
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    int64_t doe = days - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    tm->tm_year = (int)(y - 1900);
    tm->tm_mon = (int)(m - 1);
    tm->tm_mday = (int)d;
    tm->tm_hour = (int)(secs / 3600);
    tm->tm_min = (int)(secs / 60 % 60);
    tm->tm_sec = (int)(secs % 60);
}

static void write_header(pid_t pid, int child, uint64_t fork_index)
{
    char h[PATH_MAX + 512];
    struct tm tm;
    if (!child) {   /* not localtime_r: tzoffset.c says why */
        gmtoff_us = (int64_t)at_tz_offset(time(NULL)) * 1000000;
        at_clock_start(gmtoff_us);
    }
    local_tm(&tm);
    at_append_raw(h, at_format_header_child(h, sizeof h, &tm, at_argv0(), pid,
                                            child ? parent_pid : 0, fork_index));
}

int at_writer_open(pid_t pid, int child)
{
    if (!bufs[0]) {
        char *m = mmap(NULL, NBUF * (size_t)BUF_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            at_warn("cannot map the trace buffer: ", strerror(errno), "");
            return -1;
        }
        for (int i = 0; i < NBUF; i++)
            bufs[i] = m + (size_t)i * BUF_SIZE;
        fmt_main = at_chunk_new();
        fmt_signal = at_chunk_new();
        if (!fmt_main || !fmt_signal) {
            at_warn("cannot map the trace formatter: ", strerror(errno), "");
            bufs[0] = NULL;
            return -1;
        }
    }
    at_config_output_path(out_path, sizeof out_path, pid, child);
    uint64_t fork_index = counter;   /* a child: the parent's last index */
    parent_pid = child ? out_pid : 0;
    out_pid = pid;
    sealed = 0;   /* a new attach after a detach (at_writer_detach) */
    buf_len = 0;
    counter = 0;
    records = 0;
    unbuffered = 0;
    /* A child's file is created now, with the parent's credentials and
     * directory (outfd.c), and written at its first write; one that
     * execs before it is removed (at_writer_before_exec). */
    open_pending = child;
    precreated = 0;
    if (at_outfd_create(out_path, at_cfg.follow_exec, at_cfg.compress, parent_pid) < 0)
        return -1;
    precreated = child;
    write_header(pid, child, fork_index);
    return 0;
}

/* A snapshot's file, in the clone child that writes it (snapshot.c): the
 * writer starts over on `path` (created, never overwritten) with the
 * header of process `pid`, the parent; the child itself writes it. */
int at_writer_open_snapshot(const char *path, pid_t pid)
{
    out_pid = getpid();
    buf_len = 0;
    counter = 0;
    records = 0;
    unbuffered = 0;
    open_pending = 0;
    if (at_outfd_create(path, 0, at_cfg.compress, -1) < 0)
        return -1;
    /* The process's own header (not a child's): the snapshot stands for
     * the process, and the clock was started by the process already. */
    char h[PATH_MAX + 512];
    struct tm tm;
    local_tm(&tm);
    at_append_raw(h, at_format_header(h, sizeof h, &tm, at_argv0(), pid));
    return 0;
}

/* Where this process's trace goes (relative as configured). */
const char *at_writer_path(void)
{
    return out_path;
}

/* ---- flushing ----------------------------------------------------------- */

/* A child with nothing but its header keeps it unwritten (no file yet). */
static void flush_locked(void)
{
    if (open_pending && records == 0)
        return;
    write_held();
}

void at_writer_flush(void)
{
    if (!bufs[0] || getpid() != out_pid)   /* a vfork child shares our memory */
        return;
    lock_ev();
    flush_locked();
    unlock_ev();
}

/* A forked child's empty file, created at fork, is removed (the process
 * ends or execs having written nothing). */
static void discard_unwritten(void)
{
    if (open_pending && precreated) {
        precreated = 0;
        at_outfd_discard();
    }
}

/* Before an exec: a forked child that has written nothing removes its
 * empty file. If the exec succeeds its events vanish with its image and no
 * file is left (a shell or make would otherwise leave one per command);
 * if it fails, the child runs on and creates its file again, header first,
 * at its first write. */
void at_writer_before_exec(const char *path)
{
    if (!bufs[0] || getpid() != out_pid)
        return;
    /* The exec line: this image's part of the trace ends here, on purpose
     * (a failed exec goes on and ends the trace as usual later). Bounded:
     * the path is the program's, any length. */
    if (!open_pending && path) {
        char line[512];
        size_t n = sizeof AT_EXEC_PREFIX - 1, plen = strnlen(path, sizeof line - n - 1);
        memcpy(line, AT_EXEC_PREFIX, n);
        for (size_t i = 0; i < plen; i++)
            line[n + i] = path[i] == '\n' ? ' ' : path[i];
        line[n + plen] = '\n';
        at_append_raw(line, n + plen + 1);
    }
    lock_ev();
    if (!open_pending)
        flush_locked();
    else
        discard_unwritten();
    unlock_ev();
}

/* Leaks mode: the report at exit is the child's content, even with no
 * leak in it ("0 block(s) leaked"), so its file is written. */
void at_writer_keep(void)
{
    records = 1;
}

/* After the destructor. A forked child with nothing but its header still
 * leaves no file. */
void at_writer_unbuffered(void)
{
    lock_ev();
    unbuffered = 1;
    if (buf_len && !(open_pending && records == 0))
        swap_and_write();
    unlock_ev();
}

/*
 * The last thing before the process ends (exit handlers have run, or
 * _exit, quick_exit): writes what is buffered and keeps both locks for
 * good. A thread still recording then waits for the end of the process
 * instead of being stopped by it in the middle of a write(2), which would
 * cut the trace inside a record (the kernel ends a write at a page
 * boundary for a thread being killed).
 */
void at_writer_seal(void)
{
    if (!bufs[0] || getpid() != out_pid || holds_ev || sealed)
        return;
    lock_ev();
    flush_locked();
    if (records == 0)
        discard_unwritten();
    pthread_mutex_lock(&wr_lock);
    sealed = 1;
    /* Off, or this thread would wait for itself at its next record. */
    at_state = AT_STATE_OFF;
}

/* From a signal handler: the locks may be held by this thread (a crash
 * inside the tracer) or by a thread that will never run again, so try
 * them for a bounded time and write what is whole either way. Only
 * async-signal-safe calls (write, fstat, open, clock_gettime) are made. */
static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int try_lock_bounded(pthread_mutex_t *m, uint64_t limit_us)
{
    uint64_t until = mono_us() + limit_us;
    for (unsigned i = 0;; i++) {
        if (pthread_mutex_trylock(m) == 0)
            return 1;
        if (i % 1024 == 0 && mono_us() > until)
            return 0;
        __builtin_ia32_pause();
    }
}

/*
 * Writes what is buffered and whole, from a handler of a signal that ends
 * the process (or _exit called from one). The locks it gets are kept and
 * the writer is sealed: whatever other threads still record is not
 * written, so the trace ends with what this function, the leak records of
 * at_writer_direct and the cut line put there. A write by another thread
 * in progress is waited for (up to a second). A record this thread was
 * interrupted in is not covered by the buffer's length yet and is left
 * out (its index goes missing). The chunks become text in fmt_signal,
 * chunk.c's state kept for this: no malloc, and the writer thread's state
 * may be in use by the write that was interrupted.
 */
void at_writer_emergency_flush(void)
{
    if (!bufs[0] || sealed)
        return;
    if (!holds_ev && try_lock_bounded(&ev_lock, 1000000))
        holds_ev = 1;
    try_lock_bounded(&wr_lock, 1000000);
    sealed = 1;
    if (open_pending && records == 0)
        return;
    /* The writer thread's chunk in progress ends first (a second at most). */
    uint64_t until = mono_us() + 1000000;
    while (__atomic_load_n(&inflight, __ATOMIC_ACQUIRE) && mono_us() < until)
        __builtin_ia32_pause();
    while (q_count) {   /* handed off, not written: before the current one */
        size_t len;
        int b = dequeue(&len);
        chunk_out(fmt_signal, bufs[b], len);
    }
    size_t n = __atomic_load_n(&buf_len, __ATOMIC_ACQUIRE);
    chunk_out(fmt_signal, bufs[cur], n);
    buf_len = 0;
}

/* After at_writer_emergency_flush: text written at once (leaks mode's
 * records and summary). A forked child whose file does not exist yet
 * creates it, header first, for its first record; a summary alone (no
 * leaks) leaves no file. */
void at_writer_direct(const char *text, size_t len, int record)
{
    if (open_pending && records == 0 && !record)
        return;
    records = 1;
    if (buf_len) {
        chunk_out(fmt_signal, bufs[cur], buf_len);
        buf_len = 0;
    }
    write_out(text, len);
}

/* After at_writer_emergency_flush: ends the trace with the cut line. */
void at_writer_cut_signal(int sig)
{
    char detail[48], *p = detail;
    const char *abbrev = sigabbrev_np(sig);
    *p++ = ' ';
    p += at_fmt_dec(p, (uint64_t)sig);
    if (abbrev) {
        memcpy(p, " (SIG", 5);
        p += 5;
        for (size_t i = 0; abbrev[i] && i < 16; i++)
            *p++ = abbrev[i];
        *p++ = ')';
    }
    *p = '\0';
    if (!open_pending)   /* pending: no file, and none for a line alone */
        at_outfd_cut("killed by signal", detail);
    else if (records == 0)
        discard_unwritten();
}

/*
 * Attach's end (process/attach.c): everything buffered is written, the
 * writer thread ends (waited for: the library stays loaded, but nothing
 * of the tracer's may run once the process is left to itself) and the
 * trace is closed. Sealed, so a record that a thread still inside a hook
 * adds afterwards is never written; the next at_writer_open unseals.
 */
void at_writer_detach(void)
{
    if (!bufs[0] || getpid() != out_pid)
        return;
    lock_ev();
    flush_locked();
    pthread_mutex_lock(&wr_lock);
    drain_pending();
    sealed = 1;
    if (threaded) {
        stop_thread = 1;
        pthread_cond_broadcast(&work_cv);
        while (threaded)
            pthread_cond_wait(&done_cv, &wr_lock);
    }
    pthread_mutex_unlock(&wr_lock);
    buf_len = 0;
    unlock_ev();
    at_outfd_close();
}

void at_writer_close(void)
{
    at_writer_flush();
}

/* ---- fork ------------------------------------------------------------- */

void at_writer_fork_prepare(void)
{
    lock_ev();
    pthread_mutex_lock(&wr_lock);
    wait_inflight();   /* the formatter's state is whole in the child */
    at_outfd_fork_prepare();
}

/* A process that forked keeps its trace even with no call in it (a
 * daemon's middle process): its header links the child's trace to its
 * parent's (postproc/read/tree.c). */
void at_writer_fork_parent(void)
{
    note_record();
    at_outfd_fork_parent();
    pthread_mutex_unlock(&wr_lock);
    /* A sampled run has no writer thread to write what the parent holds
     * within 0.1 s, and an idle parent (nginx's master) would hold its
     * calls up to the fork until it exits: a snapshot of the child, which
     * reads them beside its own (postproc/read/tree.c), would miss its
     * inherited blocks. A few records, written once a fork. */
    if (at_cfg.sample && !threaded) {
        int saved = errno;
        flush_locked();
        errno = saved;
    }
    unlock_ev();
}

/* The child's copy of the buffer is the parent's to write: drop it. The
 * descriptor is the parent's too (shared offset), so forget it. */
void at_writer_fork_child(void)
{
    pthread_mutex_t fresh_ev = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
    pthread_mutex_t fresh_wr = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cv = PTHREAD_COND_INITIALIZER;
    ev_lock = fresh_ev;
    wr_lock = fresh_wr;
    /* No writer thread here: a new one at the first record. The chunk
     * it may have been handed is the parent's to write. */
    work_cv = fresh_cv;
    done_cv = fresh_cv;
    q_count = 0;
    inflight = 0;
    threaded = 0;
    atomic_store(&age_due, 0);
    if (atomic_load(&thread_state))
        atomic_store(&thread_state, threads_allowed && !at_cfg.leaks_mode ? 1 : 0);
    holds_ev = 0;
    buf_len = 0;
    records = 0;
    at_outfd_fork_child();
    open_pending = 0;
    precreated = 0;
}
