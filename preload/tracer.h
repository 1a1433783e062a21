/*
 * preload/tracer.h: the internal interface between the files of
 * liballoctrace.so. Nothing here is exported (the version script exports
 * only the malloc family, the exit/exec wrappers, the close family and the
 * at_* API).
 *
 * The cut: real.c holds the real allocator and the tracing state, at
 * the bottom; hooks.c interposes and decides whether an event is traced;
 * unwind.c captures frames (unwind_probe.c keeps libunwind free of
 * descriptors, unwind_locks.c makes its mutexes safe across fork and
 * drops its signal blocking, unwind_cache.c recycles its per-thread
 * caches); format.c turns records and the header into text;
 * writer.c orders full mode's binary records and other text in one
 * stream and runs the writer thread; chunk.c turns that stream into the
 * compressed form off the program's threads; outfd.c owns the
 * trace's descriptor and the close family; zframe.c makes zstd frames;
 * diag.c writes one-line messages; tzoffset.c finds the local UTC offset;
 * clock.c gives record times and leaks mode's order keys; maps.c turns
 * loaded objects into map lines; live.c keeps the live blocks
 * of leaks mode; sample.c picks the calls of a sampled trace
 * (--sample) and remembers the picked blocks; context.c is the public API; lifecycle.c runs init, fork,
 * exec and exit, and writes the trace when a signal ends the process;
 * signals.c catches those signals; config.c reads the environment.
 */
#ifndef AT_PRELOAD_TRACER_H
#define AT_PRELOAD_TRACER_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "alloctrace/format.h"

/* Initial-exec TLS (a load, no call) in the preloaded library. The
 * variant a debugger loads into a running process (liballoctrace-attach.so,
 * process/attach.c) is built with AT_ATTACH_BUILD: a dlopen'd object's 8 KiB
 * of TLS cannot come from the static TLS block, so it uses TLS descriptors. */
#ifdef AT_ATTACH_BUILD
#define AT_TLS
#else
#define AT_TLS __attribute__((tls_model("initial-exec")))
#endif
/* Where text goes: a layer hands it to the one above through this (the
 * writer's at_append_raw, handed down at start), never by calling up. */
typedef void at_text_out(const char *p, size_t n);
#define AT_HIDDEN __attribute__((visibility("hidden")))
/* What the program or a debugger calls: the interposed functions, the at_*
 * API (exports.map lists them). */
#define AT_EXPORT __attribute__((visibility("default")))

/* ---- thread.c (the tracer's own threads) ------------------------------- */
/* Starts fn as a detached thread named `name`, every signal blocked, the
 * guard held while it is created; pthread_create's result. */
int at_thread_start(void *(*fn)(void *), const char *name, pthread_t *out) AT_HIDDEN;
/* Joinable, on the caller's stack [stack, stack + len); 0 or an error. */
int at_thread_run(void *(*fn)(void *), void *arg, const char *name, void *stack, size_t len,
                  pthread_t *out) AT_HIDDEN;

/* ---- config.c ---------------------------------------------------------- */
enum { AT_TIMES_NONE, AT_TIMES_ON_CHANGE, AT_TIMES_ALL };
struct at_config {
    char output[PATH_MAX];  /* as given (may hold %p); empty: default name */
    int depth;              /* frames per record, 0 .. AT_MAX_DEPTH */
    int timestamps;         /* AT_TIMES_*: none, on change (full mode's calls), all */
    int free_backtraces;
    int start_enabled;
    int toggle_signal;      /* 0: none */
    int follow_fork;
    int follow_exec;
    long exec_chain;        /* > 0: only this pid's exec'd programs are traced (the gate) */
    int leaks_mode;
    int leak_kinds;         /* leaks mode: classify at exit (reach.c) */
    int keeper;             /* leaks mode: records applied on the keeper thread (handoff.c) */
    int exit_threads;       /* leaks mode: the report at exit on two threads; -1: when a core looks free */
    int compress;           /* zstd frames (zframe.c); -1 until read */
    int control;            /* the control socket and thread (control.c) */
    int snapshot_signal;    /* 0: none; else a snapshot on this signal (snapshot.c) */
    char dir[PATH_MAX];     /* relative trace names are resolved here (ALLOCTRACE_DIR, else the start directory) */
    char trace_list[PATH_MAX]; /* the launcher's list (ALLOCTRACE_TRACE_LIST), empty: none */
    uint64_t sample;        /* sampling interval in bytes (sample.c); 0: every call */
    uint64_t sample_seed;   /* ALLOCTRACE_SAMPLE_SEED, when sample_seed_set */
    int sample_seed_set;
};
extern struct at_config at_cfg AT_HIDDEN;
/* Reads the environment into at_cfg. On a bad value prints one line on
 * stderr and returns -1 (the program then runs untraced). */
int at_config_load(void) AT_HIDDEN;
/* The output path for process `pid` (expands %p, or builds the default
 * name); `child` is set for a forked child, whose name must differ. */
void at_config_output_path(char *out, size_t cap, pid_t pid, int child) AT_HIDDEN;
/* getenv and argv[0] that work before libc is initialised (config.c). */
const char *at_getenv(const char *name) AT_HIDDEN;
const char *at_argv0(void) AT_HIDDEN;
/* Attach (process/attach.c): the settings come from `lines` ("NAME=VALUE"
 * separated by newlines, kept by the caller) instead of the environment,
 * which the running program owns; NULL: the environment again. */
void at_config_source(const char *lines) AT_HIDDEN;

/* ---- real.c (the bottom: the real allocator, the tracing state) ------- */
struct at_real {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    void (*free)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*usable_size)(void *);   /* malloc_usable_size, not interposed */
};
extern struct at_real at_real AT_HIDDEN;
void at_resolve_real(void) AT_HIDDEN;
/* Attach: the real functions are what the program's own calls reach (the
 * global scope), not what follows the tracer (process/attach.c). */
void at_resolve_real_with(void *(*lookup)(const char *name)) AT_HIDDEN;

/* Tracing state, read on every call. */
enum { AT_STATE_UNINIT, AT_STATE_ACTIVE, AT_STATE_OFF };
extern volatile int at_state AT_HIDDEN;
extern volatile int at_enabled AT_HIDDEN;      /* at_tracing_enable / toggle signal */
/* Held while the tracer itself runs on this thread: whatever is allocated
 * meanwhile (by us, libunwind, the loader, a signal handler) passes
 * through untraced. */
extern __thread int at_guard AT_TLS AT_HIDDEN;
#define AT_GUARD_UNWINDING 2   /* inside unw_backtrace: see hooks.c enter() */
#define AT_GUARD_PROBE 3       /* at_hooks_shadowed's test call ... */
#define AT_GUARD_PROBE_SEEN 4  /* ... reached our malloc */
/* Context bits active on this thread. */
extern __thread uint32_t at_ctx_mask AT_TLS AT_HIDDEN;

/* ---- got.c (an object's imported-function slots) ------------------------ */
struct dl_phdr_info;
struct at_got {
    uintptr_t base, relro_lo, relro_hi;
    const void *symtab;     /* ElfW(Sym) */
    const char *strtab;
    const void *jmprel, *rela;   /* ElfW(Rela) */
    size_t njmprel, nrela;
};
/* Reads the dynamic section of the object dl_iterate_phdr describes by
 * `info`; -1 when it has none usable. */
int at_got_open(struct at_got *g, const struct dl_phdr_info *info) AT_HIDDEN;
/* The same for the loaded object whose load base is `base`. */
int at_got_open_base(struct at_got *g, uintptr_t base) AT_HIDDEN;
/* Calls fn for each JUMP_SLOT and GLOB_DAT slot with its symbol's name;
 * stops at (and returns) the first non-zero answer. */
typedef int at_got_fn(const struct at_got *g, void **slot, const char *name, void *arg);
int at_got_each(const struct at_got *g, at_got_fn *fn, void *arg) AT_HIDDEN;
/* Stores value in the slot (through RELRO's protection); -1 if it cannot. */
int at_got_store(const struct at_got *g, void **slot, void *value) AT_HIDDEN;

/* ---- unwind.c ---------------------------------------------------------- */
int at_unwind_init(void) AT_HIDDEN;
/* The tracer's own code range, whose frames are never shown. */
extern uintptr_t at_self_lo AT_HIDDEN, at_self_hi AT_HIDDEN;
/* libunwind's code range and unw_backtrace (NULL without libunwind). */
extern uintptr_t at_unw_lo AT_HIDDEN, at_unw_hi AT_HIDDEN;
extern int (*at_unw_backtrace)(void **, int) AT_HIDDEN;
/* glibc's backtrace(): used only when libunwind cannot be (unwind.c). */
int at_unwind_glibc(void **raw, int n) AT_HIDDEN;
/* unwind_probe.c: points libunwind's pipe, read, write, close and syscall
 * at descriptor-free memory checks. -1: libunwind must not be used. */
int at_unwind_probe_install(void *handle) AT_HIDDEN;
/* unwind_locks.c: what libunwind's pthread_mutex_lock, _unlock and
 * sigprocmask become (unwind_probe.c points them here), and libunwind's
 * mutexes held across fork. `libunwind_was_loaded`: the program had it
 * before the tracer started, so its signal blocking stays. */
int at_unwind_lock_probe(pthread_mutex_t *m) AT_HIDDEN;
int at_unwind_unlock_probe(pthread_mutex_t *m) AT_HIDDEN;
int at_unwind_sigmask_probe(int how, const sigset_t *set, sigset_t *old) AT_HIDDEN;
void at_unwind_locks_init(int libunwind_was_loaded) AT_HIDDEN;
void at_unwind_fork_prepare(void) AT_HIDDEN;   /* first of the fork handlers */
void at_unwind_fork_parent(void) AT_HIDDEN;    /* last ones */
void at_unwind_fork_child(void) AT_HIDDEN;
/* unwind_cache.c: libunwind's mmap and munmap, which keep its per-thread
 * trace caches for the next thread. */
void *at_unwind_mmap_probe(void *addr, size_t len, int prot, int flags, int fd,
                           off_t off) AT_HIDDEN;
int at_unwind_munmap_probe(void *addr, size_t len) AT_HIDDEN;
void at_unwind_cache_init(int libunwind_was_loaded) AT_HIDDEN;

/* Unwinds into raw[], which has room for depth + AT_SKIP_MAX entries, and
 * points *frames past the tracer's own leading frames: return addresses,
 * innermost first. Returns how many are kept (at most depth). Inlined
 * into the hooks on purpose: each frame of the tracer's own between the
 * hook and unw_backtrace is one more step libunwind takes on every
 * allocation. */
#define AT_SKIP_MAX 8
static inline __attribute__((always_inline)) int at_unwind_raw(void **raw, int depth,
                                                               void ***frames)
{
    *frames = raw;
    if (depth <= 0)
        return 0;
    int saved = at_guard;
    at_guard = AT_GUARD_UNWINDING;
    int n = __builtin_expect(at_unw_backtrace != NULL, 1)
                ? at_unw_backtrace(raw, depth + AT_SKIP_MAX)
                : at_unwind_glibc(raw, depth + AT_SKIP_MAX);
    at_guard = saved;
    int skip = 0;
    for (; skip < n; skip++) {
        uintptr_t a = (uintptr_t)raw[skip];
        if (!((a >= at_self_lo && a < at_self_hi) || (a >= at_unw_lo && a < at_unw_hi)))
            break;
    }
    *frames = raw + skip;
    n -= skip;
    if (n > depth)
        n = depth;
    return n < 0 ? 0 : n;
}

/* The same, copied to frames[0..depth). */
static inline __attribute__((always_inline)) int at_unwind(void **frames, int depth)
{
    if (depth <= 0)
        return 0;
    void *raw[depth + AT_SKIP_MAX], **kept;
    int n = at_unwind_raw(raw, depth, &kept);
    if (n > 0)
        __builtin_memcpy(frames, kept, (size_t)n * sizeof *frames);
    return n;
}

/* ---- writer.c ---------------------------------------------------------- */
enum at_fn {
    AT_MALLOC, AT_CALLOC, AT_REALLOC, AT_REALLOCARRAY, AT_FREE,
    AT_POSIX_MEMALIGN, AT_ALIGNED_ALLOC, AT_MEMALIGN, AT_VALLOC, AT_PVALLOC,
};
extern const char *const at_fn_names[] AT_HIDDEN;

/* Room a record body needs: at most AT_HEAD_MAX bytes before its frames
 * and AT_FRAME_TEXT per frame. A buffer sized so also holds format.c's
 * 16-byte stores of hex numbers, which may run past a number's end. */
#define AT_HEAD_MAX   256
#define AT_FRAME_TEXT 20

struct at_event {
    enum at_fn fn;
    int release;          /* release record (no size, no "= 0xID") */
    uint64_t size;
    uintptr_t id;
    uint64_t alignment;   /* nonzero: "$alignment = N" argument line */
    uint32_t ctx;
    uint64_t time_us;     /* local time of day, microseconds; unused when off */
    int no_time;          /* full mode: the same millisecond as the last time
                           * written (chunk.c): the call line has none */
    uint64_t stamp;       /* full mode: at_clock_stamp() of the event; its time is
                           * made off the hot path, where the text is (chunk.c) */
    void **frames;
    int nframes;
};

/*
 * The shared buffer's stream (writer.c writes it, chunk.c reads it): per
 * event a binary record, 8-byte aligned; other text (header, registry,
 * map lines, leaks mode's records) as a tagged entry, an 8-byte head
 * (AT_REC_TEXT | length << AT_REC_INDEX_SHIFT) and the text, padded to
 * 8 bytes.
 */
#define AT_CHUNK_BYTES (1u << 18)   /* a buffer: one chunk (writer.c: why 256 KiB) */
#define AT_TEXT_PIECE  (1u << 20)   /* text a write (a zstd frame) holds at most */
enum { AT_REC_CALL = 1, AT_REC_TEXT = 2 };
#define AT_REC_RELEASE_SHIFT 2
#define AT_REC_FN_SHIFT 3
#define AT_REC_INDEX_SHIFT 8
struct at_stack;
struct at_rec {
    uint64_t head;       /* AT_REC_CALL | release | fn | index << AT_REC_INDEX_SHIFT */
    uint32_t ctx;
    uint32_t unused;
    uint64_t size;       /* allocation: its size */
    uint64_t id;
    uint64_t stamp;      /* at_clock_stamp(); turned into a time by chunk.c */
    const struct at_stack *stack;   /* interned frames; NULL: none */
};
_Static_assert(sizeof(struct at_rec) == 48, "a record is 48 bytes");

/* Full mode's event: `st` its interned backtrace (NULL: no frames). The
 * next index is drawn and the record put in the buffer under one lock. */
void at_commit_event(const struct at_event *e, const struct at_stack *st) AT_HIDDEN;
/* realloc's pair under one lock hold (both share `st`, the release
 * only with free backtraces): see writer.c. Returns realloc's result. */
void *at_commit_realloc(const struct at_event *rel, struct at_event *alloc,
                        const struct at_stack *st, void *old, size_t n, size_t m,
                        void *(*op)(void *, size_t, size_t)) AT_HIDDEN;
/* Appends a record under a given index (leaks mode, at exit). */
void at_commit_indexed(uint64_t index, const char *body, size_t len) AT_HIDDEN;
/* Appends text that is no record (map lines, registry lines). */
void at_append_raw(const char *text, size_t len) AT_HIDDEN;
void at_append_record_line(const char *text, size_t len) AT_HIDDEN;
/* Opens the output for `pid` (lazily for a forked child) and writes the
 * header and the resource registry. Returns -1 with one line on stderr. */
int at_writer_open(pid_t pid, int child) AT_HIDDEN;
void at_writer_flush(void) AT_HIDDEN;            /* writes everything buffered */
void at_writer_unbuffered(void) AT_HIDDEN;       /* after exit: write each record at once */
/* Writes what is buffered and, where the file exists, "## exec: PATH":
 * the gate tells a wrapper that exec'd from a process that died. */
void at_writer_before_exec(const char *path) AT_HIDDEN;
/* Leaks mode at exit: a forked child's file is written even if its
 * report has no leak. */
void at_writer_keep(void) AT_HIDDEN;
/* The end of the process: writes what is buffered, then nothing more. */
void at_writer_seal(void) AT_HIDDEN;
/* From a handler of a signal that ends the process, async-signal-safe:
 * writes what is buffered and whole and seals the writer; then
 * at_writer_direct writes text at once (record: a leak record, else the
 * summary) and at_writer_cut_signal ends the trace with the cut line. */
void at_writer_emergency_flush(void) AT_HIDDEN;
void at_writer_direct(const char *text, size_t len, int record) AT_HIDDEN;
void at_writer_cut_signal(int sig) AT_HIDDEN;
void at_writer_fork_prepare(void) AT_HIDDEN;
void at_writer_fork_parent(void) AT_HIDDEN;
void at_writer_fork_child(void) AT_HIDDEN;       /* drops the parent's buffer */
void at_writer_close(void) AT_HIDDEN;
/* Attach's end: writes everything, ends the writer thread, closes the
 * trace; nothing more is written until the next at_writer_open. */
void at_writer_detach(void) AT_HIDDEN;
/* A snapshot's clone child: the writer starts over on a file of its own
 * (snapshot.c); -1 with one line on stderr. */
int at_writer_open_snapshot(const char *path, pid_t pid) AT_HIDDEN;
/* The trace's path as configured for this process. */
const char *at_writer_path(void) AT_HIDDEN;
/* From the constructor: starts the thread that compresses and writes
 * (full mode; writer.c). */
void at_writer_start_thread(void) AT_HIDDEN;

/* ---- chunk.c (the buffer's stream into text, off the hot path) ------- */
struct at_chunk;
/* The state of one formatter (mmap'd: no malloc); NULL when out of memory. */
struct at_chunk *at_chunk_new(void) AT_HIDDEN;
/* The stream p[0..n) as the protocol's text in the compressed form,
 * handed to out() in pieces of whole units; `conv` (clock.c) turns the
 * records' stamps into times. */
struct at_stamp_conv;
void at_chunk_text(struct at_chunk *k, const char *p, size_t n, at_text_out *out,
                   const struct at_stamp_conv *conv) AT_HIDDEN;

/* ---- outfd.c (the trace's descriptor, out of the program's way) ------ */
/* Creates the trace at `path` (never overwriting; `numbered`: a taken name
 * gets ".N"); `parent`: the process it was forked from, for the launcher's
 * list (0: getppid(); -1: a snapshot, not listed). Returns -1 with one line on stderr. */
int at_outfd_create(const char *path, int numbered, int compress, pid_t parent) AT_HIDDEN;
/* Removes the trace if nothing was written to it, and forgets it. */
void at_outfd_discard(void) AT_HIDDEN;
/* Appends n bytes (whole records) to the trace; -1 when they could not
 * all be written: then the trace is cut (see outfd.c) and tracing off. */
int at_outfd_write(const char *p, size_t n) AT_HIDDEN;
/* Ends the trace with the cut line AT_CUT_PREFIX reason detail;
 * async-signal-safe. Nothing is written after it. */
void at_outfd_cut(const char *reason, const char *detail) AT_HIDDEN;
/* Attach's end: closes and forgets the trace (writes fail until the next
 * at_outfd_create). */
void at_outfd_close(void) AT_HIDDEN;
void at_outfd_fork_prepare(void) AT_HIDDEN;
void at_outfd_fork_parent(void) AT_HIDDEN;
void at_outfd_fork_child(void) AT_HIDDEN;   /* the parent's descriptor is closed */
/* The control socket (control.c), kept like the trace's descriptor: moved
 * to >= 1000, close-on-exec, invisible to the close family. at_outfd_hide
 * returns its new number (-1: none); at_outfd_hidden its number now (a
 * dup2 onto it moves it); at_outfd_hidden_close closes it. */
int at_outfd_hide(int fd) AT_HIDDEN;
int at_outfd_hidden(void) AT_HIDDEN;
void at_outfd_hidden_close(void) AT_HIDDEN;
/* The trace's path (absolute; empty before it is opened). */
const char *at_outfd_path(void) AT_HIDDEN;

/* ---- clock.c (record times; leaks mode's order) ----------------------- */
/* Starts the clock with the local UTC offset (writer.c, at the header). */
void at_clock_start(int64_t offset_us) AT_HIDDEN;
/* Local time of day of now, microseconds (the TSC where it is invariant). */
uint64_t at_now_us(void) AT_HIDDEN;
/* Full mode's record time, as cheap as the hot path can have it: the TSC
 * where it is invariant (see at_clock_tsc), else the local time of day in
 * microseconds. Off the hot path at_stamp_us turns it into the time. */
uint64_t at_clock_stamp(void) AT_HIDDEN;
/* What turns stamps into times: the start-up's clock and TSC, and the
 * rate measured from then to the moment at_clock_conv is called (once a
 * chunk; async-signal-safe). */
struct at_stamp_conv {
    int tsc;              /* 0: stamps are times already */
    uint64_t tsc0, ns0;   /* read together at start-up */
    uint64_t rate_q32;    /* ns per tick << 32 */
    int64_t gmtoff_us;
};
void at_clock_conv(struct at_stamp_conv *c) AT_HIDDEN;
/* About a second in stamps: the writer's age check. */
uint64_t at_clock_stamp_second(void) AT_HIDDEN;
/* The local time of day, microseconds, of a stamp (or of TSC ticks). */
static inline uint64_t at_stamp_us(const struct at_stamp_conv *c, uint64_t stamp)
{
    if (!c->tsc)
        return stamp;
    uint64_t d = stamp >= c->tsc0 ? stamp - c->tsc0 : c->tsc0 - stamp;
    int64_t d_ns = (int64_t)(((unsigned __int128)d * c->rate_q32) >> 32);
    if (stamp < c->tsc0)
        d_ns = -d_ns;
    return (uint64_t)(((int64_t)c->ns0 + d_ns) / 1000 + c->gmtoff_us);
}
/* "time=on change" (TEXT_FORMAT.md section 4), for full mode's calls
 * (chunk.c) and leaks mode's report (leakreport.c), in index order:
 * whether a call at time_us shows its time, i.e. its millisecond is not
 * *last_ms, that of the last time shown (UINT64_MAX: none yet); if so,
 * *last_ms becomes its millisecond. */
static inline int at_time_moves_on(uint64_t *last_ms, uint64_t time_us)
{
    uint64_t ms = time_us / 1000;
    if (ms == *last_ms)
        return 0;
    *last_ms = ms;
    return 1;
}
/* 1 when order keys are TSC readings (their time comes from
 * at_order_key_us); 0 when they are a count of events. */
int at_clock_tsc(void) AT_HIDDEN;
/* Leaks mode: a key in the true order of allocations, drawn without
 * shared memory where the TSC is invariant, else a count of events. */
uint64_t at_order_key(void) AT_HIDDEN;
/* The local time of a TSC key, microseconds (at exit: one rate for the run). */
uint64_t at_order_key_us(uint64_t key) AT_HIDDEN;

/* ---- zframe.c (zstd frames, libzstd on mmap'd memory) ----------------- */
int at_zframe_init(void) AT_HIDDEN;   /* -1: raw frames only */
void at_zframe_defer(void) AT_HIDDEN;   /* the context at the second write */
/* Room the frame of n bytes of text may take. */
size_t at_zframe_bound(size_t n) AT_HIDDEN;
/* One frame of src[0..n) into dst (at_zframe_bound(n) bytes); returns its
 * length. Compressed when the context is free, else raw. */
size_t at_zframe_encode(void *dst, size_t cap, const void *src, size_t n) AT_HIDDEN;
/* The bytes as they are in a frame (async-signal-safe). */
size_t at_zframe_raw(void *dst, const void *src, size_t n) AT_HIDDEN;
void at_zframe_fork_child(void) AT_HIDDEN;

/* ---- tzoffset.c --------------------------------------------------------- */
/* Seconds east of UTC of local time at t, read from TZ or /etc/localtime
 * without glibc's time-zone state. */
long at_tz_offset(int64_t t) AT_HIDDEN;

/* ---- format.c ---------------------------------------------------------- */
/* Body of a record: everything after "INDEX. ". `buf` has the room given
 * by AT_HEAD_MAX and AT_FRAME_TEXT. Returns its length. */
size_t at_format_body(char *buf, const struct at_event *e) AT_HIDDEN;
/* The same, with the text of the last second's time kept in `tc` between
 * calls (sec 0: none yet); one per formatter, never shared by threads. */
struct at_time_text {
    uint64_t sec;        /* the second + 1 that text[] shows; 0: none */
    char text[16];       /* "[HH:MM:SS." */
};
size_t at_format_call(char *buf, const struct at_event *e, struct at_time_text *tc) AT_HIDDEN;
/* The header line and the resource registry, into `cap` bytes (at least
 * 256); a process name too long for them is cut. Returns the length. */
struct tm;
size_t at_format_header(char *h, size_t cap, const struct tm *tm, const char *process,
                        pid_t pid) AT_HIDDEN;
/* The same for a forked child: ppid and, in full mode, the fork index
 * (the parent's last index before the fork) after origin. */
size_t at_format_header_child(char *h, size_t cap, const struct tm *tm, const char *process,
                              pid_t pid, pid_t ppid, uint64_t fork_index) AT_HIDDEN;
/* The end of a compressed-form group: "# allocation summary: ...", the
 * frames, the blank line (96 bytes and AT_FRAME_TEXT a frame at most). */
char *at_format_group_tail(char *p, void *const *frames, int n, uint64_t count,
                           uint64_t bytes) AT_HIDDEN;
/* The end of the last whole unit (record, map line, header line) in
 * p[0..k), for text p[0..n) of whole units; 0 when there is none. */
size_t at_unit_boundary(const char *p, size_t k, size_t n) AT_HIDDEN;
/* Decimal and lower-case hex without leading zeros; return the length. */
size_t at_fmt_dec(char *p, uint64_t v) AT_HIDDEN;
size_t at_fmt_hex(char *p, uint64_t v) AT_HIDDEN;

/* ---- maps.c ------------------------------------------------------------ */
/* `out` takes the map lines (the writer's at_append_raw). */
void at_maps_init(at_text_out *out) AT_HIDDEN;
/* Makes sure every frame has its map line in the file before the record:
 * lock-free when all frames lie in known objects, else looks at the
 * loader's counters and hands lines of new objects to `out`. */
void at_maps_check(void *const *frames, int n) AT_HIDDEN;
/* Changes whenever the known ranges do (objects loaded, dlclose): frames
 * found known by at_maps_check stay known while it reads the same. */
unsigned at_maps_epoch(void) AT_HIDDEN;
/* Writes map lines of objects loaded since the last look. */
void at_maps_refresh(void) AT_HIDDEN;
/* fn runs before each dlclose of the program's (handoff.c hands it down). */
void at_maps_before_dlclose(void (*fn)(void)) AT_HIDDEN;
/* Forgets the known ranges (after dlclose a range may get a new object). */
void at_maps_invalidate(void) AT_HIDDEN;
/* Forgets what was written (a forked child starts a new file). */
void at_maps_reset(void) AT_HIDDEN;
void at_maps_fork_prepare(void) AT_HIDDEN;
void at_maps_fork_parent(void) AT_HIDDEN;
void at_maps_fork_child(void) AT_HIDDEN;

/* A 64-bit finaliser (MurmurHash3's fmix64): every input bit moves every
 * output bit, for hashing addresses and call sites. */
static inline uint64_t at_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* ---- sites.c (interned call sites: leaks mode's blocks, full mode's records) */
/* What every block from one call site shares. 16-byte aligned (shadow.c
 * keeps tag bits in a pointer to it); never freed. */
struct at_stack {
    struct at_stack *next;
    uint64_t hash;
    uint64_t alignment;
    uint32_t ctx;
    uint16_t fn;
    uint16_t n;
    void *frames[];
};
void at_sites_init(void) AT_HIDDEN;
/* The site of an allocation event; NULL only when out of memory. Makes
 * sure the frames' objects have their map lines (at_maps_check), unless
 * this thread met the same frames since the maps last changed. */
const struct at_stack *at_site_intern(const struct at_event *e) AT_HIDDEN;
void at_sites_fork_prepare(void) AT_HIDDEN;
void at_sites_fork_parent(void) AT_HIDDEN;
void at_sites_fork_child(void) AT_HIDDEN;

/* ---- sample.c (sampling by bytes) ------------------------------------ */
/* 1 once the tracer runs with sampling (at_sample_init, after the
 * start-up's probe of the hooks); the hooks read it, not at_cfg.sample. */
extern int at_sampling AT_HIDDEN;
/* This thread's bytes left until its next picked byte. */
extern __thread uint64_t at_sample_left AT_TLS AT_HIDDEN;
/* The countdown ran out within a call of n bytes: 1 when the call is
 * picked (a new countdown is drawn); 0 on a thread's first call whose
 * freshly drawn countdown outlasts it. */
int at_sample_pick_slow(uint64_t n) AT_HIDDEN;
/* fn is called on each thread's first allocation and on every pick, off
 * the tracer's guard: control.c starts its thread there once the program
 * has a second thread (handed down, so sample.c never calls up). */
void at_sample_on_threads(void (*fn)(void)) AT_HIDDEN;
/* Whether an allocation of n bytes goes untraced: with sampling on, the
 * only work of a call that is not picked (inlined into the hooks). */
static inline __attribute__((always_inline)) int at_sample_skip(uint64_t n)
{
    if (__builtin_expect(!at_sampling, 1))
        return 0;
    /* Unsigned: one compare, no clamp of n (the countdown is at least 1,
     * and 0 only before a thread's first call, which the slow path seeds). */
    uint64_t left = at_sample_left;
    if (__builtin_expect(n < left, 1)) {
        at_sample_left = left - n;
        return 1;
    }
    return !at_sample_pick_slow(n);
}
/* Picked blocks: added once recorded; 0, or -1 when out of memory. */
int at_sample_add(uintptr_t p) AT_HIDDEN;
/* One bit per bucket of addresses: set while a picked block lives in it.
 * A release whose bit is clear was not picked (sample.c keeps the counts
 * behind the bits, under its lock). */
#define AT_SAMPLE_FILTER_BITS 16
extern _Atomic uint64_t at_sample_bits[] AT_HIDDEN;   /* 1 << 16 bits: 8 KiB */
/* An address's bucket: its 16-byte granule modulo 1 MiB, folded with the
 * bits above, with no multiply. Blocks freed near each other in time are
 * mostly near each other in memory, and then share a cache line of the
 * bits (512 of them a line, 8 KiB of heap). The fold keeps page-aligned
 * blocks (malloc's mmapped ones) from sharing a few buckets. */
static inline size_t at_sample_bucket(uintptr_t p)
{
    return (size_t)(((p >> 4) ^ (p >> 20)) & ((1u << AT_SAMPLE_FILTER_BITS) - 1));
}
/* Whether the bucket of p holds a picked block: one load. */
static inline int at_sample_maybe(uintptr_t p)
{
    size_t b = at_sample_bucket(p);
    return (int)(__atomic_load_n(&at_sample_bits[b >> 6], __ATOMIC_RELAXED) >> (b & 63) & 1);
}
int at_sample_take_slow(uintptr_t p) AT_HIDDEN;
/* 1 when p was picked (it is forgotten now); never locks from inside the
 * tracer (see sample.c). */
static inline int at_sample_take(uintptr_t p)
{
    if (__builtin_expect(!at_sample_maybe(p), 1))
        return 0;
    return at_guard == 1 ? 0 : at_sample_take_slow(p);
}

/* ---- tag.c (picked blocks carry a header) --------------------------- */
/* at_sampling's value when picked blocks carry a header (tag.c): free()
 * then reads the word below the block instead of the bitmap above. */
#define AT_SAMPLE_TAGGED 2
/* Set in the word below a picked block (and an arena block): glibc's
 * chunk size there never has it. */
#define AT_TAG_BIT (1ull << 63)
/* Whether the word below p has the bit: a picked block or the arena's.
 * Only for blocks of glibc's (at_sampling == AT_SAMPLE_TAGGED). */
static inline int at_tagged(const void *p)
{
    return (int64_t)((const uint64_t *)p)[-1] < 0;
}
/* Whether picked blocks can carry a header here: glibc's allocator below,
 * not the attach build. */
int at_tag_possible(void) AT_HIDDEN;
/* p carries a picked block's header (not the arena's). */
int at_tag_is_picked(const void *p) AT_HIDDEN;
/* The allocations of a picked block, with its header; as glibc's they
 * fail (errno, EINVAL, ENOMEM). */
void *at_tag_malloc(size_t n) AT_HIDDEN;
void *at_tag_calloc(size_t n, size_t m) AT_HIDDEN;
void *at_tag_aligned(void *(*fn)(size_t, size_t), size_t align, size_t n) AT_HIDDEN;
int at_tag_posix_memalign(void **out, size_t align, size_t n) AT_HIDDEN;
/* valloc's block, or pvalloc's (whole_pages: the size rounded up). */
void *at_tag_page_aligned(size_t n, int whole_pages) AT_HIDDEN;
/* A picked block back to glibc; its usable size as the program sees it. */
void at_tag_free(void *p) AT_HIDDEN;
size_t at_tag_usable(void *p) AT_HIDDEN;
/* realloc(p, total), p != NULL, picked or not, to a block picked
 * (tag_new) or not: in place when both are picked, else a copy. */
void *at_tag_resize(void *p, size_t total, int tag_new) AT_HIDDEN;
void at_sample_init(void) AT_HIDDEN;   /* at start, with sampling on: fork handlers, then on */

/* ---- live.c (leaks mode) ----------------------------------------------- */
/* 32 bytes, two to a cache line: what a call site shares (frames,
 * function, contexts, alignment) is interned in the stack, and index
 * (45 bits), size (46 bits) and the time of day in microseconds (37 bits)
 * are packed into `packed` (see live.c), so the table stays small. */
struct at_live_block {
    uintptr_t id;
    const struct at_stack *stack;   /* interned site */
    uint64_t packed[2];
};
int at_live_init(void) AT_HIDDEN;
/* `key`: at_order_key() at the allocation. */
void at_live_add(const struct at_event *e, uint64_t key) AT_HIDDEN;
/* Removes a block; returns 1 if it was live (and copies it to `out`). */
int at_live_remove(uintptr_t id, struct at_live_block *out) AT_HIDDEN;
/* Puts back a block a failed realloc did not release. */
void at_live_restore(const struct at_live_block *b) AT_HIDDEN;
/* Every live block, from shadow.c and the hash tables, in a mapping of
 * its own (*map_len bytes, for munmap; NULL when there is none or no
 * memory), in no particular order. With `emergency` (a signal handler) a
 * table whose lock cannot be had is left out. */
struct at_live_block *at_live_collect(size_t *n, size_t *map_len, int emergency) AT_HIDDEN;
void at_live_drop(void) AT_HIDDEN;
/* A block's size, order key (clock.c's at_order_key at its allocation)
 * and time of day in microseconds, unpacked. */
uint64_t at_live_size(const struct at_live_block *b) AT_HIDDEN;
uint64_t at_live_key(const struct at_live_block *b) AT_HIDDEN;
uint64_t at_live_time_us(const struct at_live_block *b) AT_HIDDEN;
/* Hands every range of the live-block tables (here and in shadow.c) to
 * add(ctx, ...): memory of the tracer's that holds block addresses and
 * must not count as a root. */
typedef void at_range_fn(void *ctx, const void *p, size_t len);
void at_live_exclusions(at_range_fn *add, void *ctx) AT_HIDDEN;
/* fn hands at_live_exclusions the ranges of a layer above (handoff.c). */
void at_live_more_exclusions(void (*fn)(at_range_fn *add, void *ctx)) AT_HIDDEN;
void at_live_fork_prepare(void) AT_HIDDEN;
void at_live_fork_parent(void) AT_HIDDEN;
void at_live_fork_child(void) AT_HIDDEN;

/* ---- handoff.c (leaks mode: the records applied on the keeper thread) -- */
/* 1 once the keeper runs: the hooks append records instead of changing
 * the live blocks themselves (0: the inline path). */
extern int at_handoff_on AT_HIDDEN;
/* Starts the keeper (the constructor, leaks mode, TSC keys); -1: the
 * inline path stays. */
int at_handoff_start(void) AT_HIDDEN;
/* The hooks: an allocation with its key (at_order_key after libc
 * returned the block), a release with its key (taken before the memory
 * goes back to libc). */
void at_handoff_alloc(const struct at_event *e, uint64_t key) AT_HIDDEN;
void at_handoff_release(uintptr_t id, uint64_t key) AT_HIDDEN;
/* Stops the keeper and applies every record (before the report). */
void at_handoff_finish(void) AT_HIDDEN;
/* The same from a signal handler: NULL, or why records were left out. */
const char *at_handoff_finish_signal(void) AT_HIDDEN;
void at_handoff_fork_prepare(void) AT_HIDDEN;
void at_handoff_fork_parent(void) AT_HIDDEN;
void at_handoff_fork_child(void) AT_HIDDEN;
/* The rules, one record at a time, and the end of a pass over every ring
 * (the consumer's side; the unit test drives them directly). */
void at_handoff_apply_alloc(const struct at_event *e, uint64_t key) AT_HIDDEN;
void at_handoff_apply_release(uintptr_t id, uint64_t key) AT_HIDDEN;
void at_handoff_end_pass(void) AT_HIDDEN;

/* ---- shadow.c (leaks mode: blocks kept at a place set by the address) -- */
/* 0 when kept; -1 when the block does not fit and live.c must keep it. */
int at_shadow_put(const struct at_live_block *b) AT_HIDDEN;
/* 1 when the block was kept here (now removed, copied to `out`). */
int at_shadow_take(uintptr_t id, struct at_live_block *out) AT_HIDDEN;
/* Called by the hooks before unwinding: starts loading the slot a new
 * block will take, while the unwinder runs. */
void at_shadow_prefetch(uintptr_t id) AT_HIDDEN;
/* Copies up to `max` kept blocks to `out` and returns how many it saw,
 * which is more than `max` when blocks did not fit; with out NULL, counts
 * them. */
size_t at_shadow_collect(struct at_live_block *out, size_t max) AT_HIDDEN;
void at_shadow_drop(void) AT_HIDDEN;
/* Hands every leaf mapping to add (see at_live_exclusions). */
void at_shadow_exclusions(at_range_fn *add, void *ctx) AT_HIDDEN;
void at_shadow_fork_prepare(void) AT_HIDDEN;
void at_shadow_fork_parent(void) AT_HIDDEN;
void at_shadow_fork_child(void) AT_HIDDEN;

/* ---- reach.c (leaks mode, at exit: memcheck's leak kinds) ------------- */
enum at_leak_kind {
    AT_KIND_UNKNOWN,     /* not classified: the scan could not run */
    AT_KIND_DEFINITE,
    AT_KIND_INDIRECT,
    AT_KIND_POSSIBLE,
    AT_KIND_REACHABLE,
    AT_KIND_LIBC,        /* glibc's own caches, which valgrind's freeres frees */
};
/* The stack pointer of the exiting thread in at_finish, and at_finish's
 * frame address: that frame holds the callee-saved registers. */
extern uintptr_t at_exit_sp AT_HIDDEN;
extern uintptr_t at_exit_frame AT_HIDDEN;
/* Sets kind[i] for the block all[i] (any order) by scanning the roots and
 * the blocks. Returns NULL, or why it could not scan (no memory, no
 * /proc/self/maps, an allocator not glibc's): then every kind is
 * AT_KIND_UNKNOWN. */
const char *at_reach_classify(const struct at_live_block *all, size_t n, uint8_t *kind) AT_HIDDEN;
/* The same, leaving out of the roots the caller's nmore ranges too (memory
 * of the caller's that may hold anything: a helper thread's stack and
 * tables) and the thread `helper` (a thread id, or 0: a helper of the
 * caller's, not one of the program's threads), and calling read(ctx) as
 * soon as the scan no longer reads `all` (it may then change under the
 * scan; read is called once at most, and may not be called at all).
 * mark_helper: the marking may take a thread of its own (reach.c's
 * mark_shared), joined before it returns. */
struct at_span {
    const void *p;
    size_t len;
};
const char *at_reach_classify_more(const struct at_live_block *all, size_t n, uint8_t *kind,
                                   const struct at_span *more, size_t nmore, long helper,
                                   void (*read)(void *ctx), void *ctx, int mark_helper) AT_HIDDEN;
/* A snapshot of the live process (snapshot.c). at_reach_thread_sps, in
 * the process, reads the stack pointers of its threads other than the
 * caller that sit in a system call (/proc/self/task/TID/syscall) into
 * sp[0..max) and returns how many; *running counts the others. In the
 * clone child that scans, at_reach_use_threads hands them to the scan in
 * place of /proc/self/task (the child has one thread); `own_is_tracer`:
 * the scanning thread's own stack is the tracer's (the control thread's),
 * not a root. at_exit_sp is 0 there. */
size_t at_reach_thread_sps(uintptr_t *sp, size_t max, size_t *running) AT_HIDDEN;
void at_reach_use_threads(const uintptr_t *sp, size_t n, size_t running, int own_is_tracer) AT_HIDDEN;
/* Up to cap - 1 bytes of the file `path` (relative to the directory dfd,
 * or AT_FDCWD) into buf through raw system calls (no stdio, no malloc:
 * safe at exit and in the scan's clone child). Returns the count, or -1
 * when it cannot be opened. */
long at_read_small_file(int dfd, const char *path, char *buf, size_t cap) AT_HIDDEN;

/* ---- leakreport.c (leaks mode, at exit: the report) -------------------- */
/* Appends the live blocks in index order, each after its leak kind line
 * (reach.c), and the leak summary. With `emergency` (a signal handler)
 * async-signal-safe, written through at_writer_direct and without kinds:
 * the scan reads /proc/self/maps and calls backtrace(), which a
 * fatal-signal handler must not. */
void at_leakreport_write(int emergency) AT_HIDDEN;
void at_leakreport_write_at_exit(void) AT_HIDDEN;

/* ---- context.c --------------------------------------------------------- */
void at_context_write_registry(void) AT_HIDDEN;   /* a child's new file */

/* ---- control.c (the control path: @alloctrace.PID, the alloctrace-ct thread) */
/* From the constructor (and a forked child): opens the socket and starts
 * the thread, unless ALLOCTRACE_CONTROL=0; one line when it cannot. */
void at_control_start(void) AT_HIDDEN;
void at_control_fork_child(void) AT_HIDDEN;
/* Attach code plugs its detach in here (NULL: "error not attached"): fn
 * undoes the attach, writes into detail what to answer after "ok " (the
 * trace's path) or "error " (why), and returns 0 or -1. */
void at_control_on_detach(int (*fn)(char *detail, size_t cap)) AT_HIDDEN;
/* An attach's end: the control thread ends and its socket closes. */
void at_control_stop(void) AT_HIDDEN;

/* ---- snapshot.c (a snapshot of the live blocks, now) -------------------- */
/* Takes snapshot number N (counted per process) labelled `label` (may be
 * empty): leaks mode writes the live blocks with their leak kinds into a
 * file of its own (a raw clone child of the process does the work);
 * full mode marks the point in the trace and writes the trace up to it.
 * Returns N, with what to answer in detail ("held_us=N\nPATH" in leaks
 * mode, "held_us=N\ntrace=PATH mark=N" in full mode: how long the
 * tracer's locks were held, then the file), or -1 with why. Serialized. */
int at_snapshot_take(const char *label, char *detail, size_t cap) AT_HIDDEN;
void at_snapshot_fork_child(void) AT_HIDDEN;

/* ---- signals.c --------------------------------------------------------- */
/* Catches the signals that end the process while the program leaves them
 * at SIG_DFL; sigaction()/signal() still show the program SIG_DFL. */
/* `on_end(sig)` writes the trace (lifecycle.c's at_finish_signal). */
void at_signals_install(void (*on_end)(int sig)) AT_HIDDEN;
/* Gives `sig` to `fn` (SA_RESTART, nothing masked): the tracer's own
 * signals, the toggle and the snapshot signal, which the program asked
 * the tracer to take. */
void at_signal_catch(int sig, void (*fn)(int)) AT_HIDDEN;

/* ---- lifecycle.c ------------------------------------------------------- */
/* Starts the tracer, once: from the first intercepted allocation or the
 * constructor, whichever comes first. */
void at_start(void) AT_HIDDEN;
/* Writes everything the run holds: leaks, buffers. Idempotent. */
void at_finish(void) AT_HIDDEN;

/* ---- exitlast.c ------------------------------------------------------- */
/* Runs fn after every exit handler and every destructor (from exit's last
 * stdio flush; see exitlast.c). Call while exiting. 0, or -1 when it
 * cannot: then the caller runs fn itself. */
int at_exit_last(void (*fn)(void)) AT_HIDDEN;
/* Whether fn has run. */
int at_exit_last_done(void) AT_HIDDEN;
/* From the handler of signal `sig`, which is about to end the process:
 * writes the trace (leaks mode: the live blocks) and the cut line. */
void at_finish_signal(int sig) AT_HIDDEN;
/* Attach (process/attach.c): starts tracing in a running process that was
 * not started with the tracer: the settings from at_config_source, full
 * mode, no LD_PRELOAD, signal or exit wrappers. 0, or -1 after saying why
 * (at_warn). at_stop_late writes everything, closes the trace, stops the
 * writer thread; the next at_start_late opens a new trace. */
int at_start_late(void) AT_HIDDEN;
void at_stop_late(void) AT_HIDDEN;

/* ---- diag.c ------------------------------------------------------------- */
/* One line on stderr: "alloctrace: " a b c; async-signal-safe. */
void at_warn(const char *a, const char *b, const char *c) AT_HIDDEN;
/* While `buf` is set, at_warn's lines go into it (cut to `cap`) instead of
 * stderr: an attach answers the launcher, never the program's stderr. */
void at_warn_capture(char *buf, size_t cap) AT_HIDDEN;

/* ---- process/tracelist.c (bottom: the launcher's list) ---------------- */
/* Appends "WORD PID [PPID] TEXT" to ALLOCTRACE_TRACE_LIST, if set (ppid 0:
 * left out); async-signal-safe. */
void at_tracelist_line(const char *word, pid_t ppid, const char *text) AT_HIDDEN;

#endif
