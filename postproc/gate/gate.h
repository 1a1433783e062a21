/*
 * postproc/gate/gate.h: the leak gate (`alloctrace --check`). The judging is
 * split from the reading: a caller hands the gate each traced process's
 * leaked blocks (interned stacks and sizes); the gate groups them by
 * stack, applies suppressions, compares with a baseline, gives the verdict
 * and writes the report (text, JSON, JUnit).
 *
 * Suppressions reach the gate through a small matcher interface instead of
 * the filter module's types, so the judging logic can be tested with
 * matchers built in a test, and the gate does not care how filters parse.
 * gate_supp.c adapts the filter language (postproc/filter/filter.h) to it.
 *
 * The gate copies every string it keeps (frame texts, names) into its own
 * arena, so a process's stack table and maps can be freed as soon as its
 * leaks were added: a whole test suite is judged in one run.
 */
#ifndef AT_GATE_H
#define AT_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "frame.h"
#include "leakkind.h"
#include "maps.h"
#include "stack.h"

/* Exit statuses (issue 7). */
enum {
    AT_GATE_PASS = 0,      /* no leak left after suppressions */
    AT_GATE_LEAKS = 1,     /* the default of --leak-exitcode */
    AT_GATE_USAGE = 2,     /* usage error, bad suppression or baseline file */
    AT_GATE_UNTRUSTED = 3, /* no trace, truncated trace, program killed by a signal */
};

/* A group's standing against the baseline. */
typedef enum at_gate_base_state {
    AT_BASE_NONE,  /* no baseline given: every group gates */
    AT_BASE_NEW,   /* not in the baseline */
    AT_BASE_GROWN, /* more bytes or blocks than the baseline allows */
    AT_BASE_KNOWN, /* within the baseline: reported, does not gate */
} at_gate_base_state;

/* One leaked block, as the reader and leaks pairing leave it. */
typedef struct at_gate_block {
    const at_stack *stack;
    uint64_t size;
    uint8_t kind; /* at_leak_kind; AT_LEAK_UNKNOWN for a trace without kinds */
} at_gate_block;

/* The suppressions, as the gate asks about them. Indices are 0..count-1;
 * the first `ndefault` come from the shipped default file, whose unused
 * entries are not worth listing (every program leaves only some of them). */
typedef struct at_gate_matcher {
    void *ctx;
    size_t count;
    size_t ndefault;
    const char *(*label)(void *ctx, size_t i);
    /* Index of the first suppression matching a block of this size and
     * leak kind, or -1 (valgrind's suppressions can name kinds). */
    long (*first_match)(void *ctx, const at_stack *stack, const at_frame_info *frames,
                        uint64_t size, at_leak_kind kind);
} at_gate_matcher;

/* Leaks of one stack and one failing leak kind in one process, left
 * after suppressions (blocks of kinds that do not fail are only counted,
 * in at_gate_proc.kinds). */
typedef struct at_gate_group {
    at_leak_kind kind;
    at_frame_info *frames; /* innermost first, strings in the gate's arena */
    uint32_t nframes;
    uint64_t bytes, blocks;
    char *key; /* baseline key (baseline.c), owned */
    at_gate_base_state base;
    uint64_t base_bytes, base_blocks; /* the baseline's allowance for the key */
} at_gate_group;

typedef struct at_gate_proc {
    const char *trace_path; /* arena strings; NULL: a temporary trace, not named */
    const char *process;
    long pid;
    const char *problem; /* non-NULL: this trace cannot be trusted (why); not judged */
    const char *exec_into; /* non-NULL: the process exec'd this program, judged in
                              the trace after this one; this one is not judged */
    const char *stopped;   /* non-NULL: a child stopped by another process's signal
                              (a pool's worker terminated): not judged, no problem */
    at_gate_group *groups;
    size_t ngroups, cap;
    uint64_t bytes, blocks;                       /* left after suppressions */
    uint64_t suppressed_bytes, suppressed_blocks; /* taken by suppressions */
    uint64_t gating_bytes, gating_blocks;         /* what the verdict counts */
    size_t gating_groups;
    struct {
        uint64_t bytes, blocks;
    } kinds[AT_LEAK_NKINDS]; /* every kind, left after suppressions (LEAK SUMMARY) */
} at_gate_proc;

typedef struct at_gate_supp_use {
    const char *label; /* arena string */
    bool is_default;
    uint64_t blocks, bytes;
} at_gate_supp_use;

typedef struct at_gate_options {
    int leak_exitcode;          /* 1 unless --leak-exitcode */
    bool ignore_program_status; /* no: a clean run exits with the program's own status */
    bool fail_on_unused;        /* an unused user suppression fails the gate */
    bool gen_suppressions;      /* print a filter line per group left */
    size_t max_groups;          /* groups shown per process; 0: all */
    int program_status;         /* the program's exit status; -1 unknown */
    int program_signal;         /* the signal that killed it; 0 none */
    const char *baseline_label; /* for the report; NULL without a baseline */
    unsigned fail_kinds;        /* leak kinds that fail (AT_LEAK_BIT set); default
                                   definite, indirect and unknown */
    const char *no_trace_reason; /* why no trace was written, when the caller knows */
} at_gate_options;

typedef struct at_baseline at_baseline;

typedef struct at_gate {
    at_gate_options opt;
    at_gate_proc *procs;
    size_t nprocs, cap;
    at_gate_supp_use *supps;
    size_t nsupps;
    at_gate_matcher matcher;
    bool has_matcher;
    const at_baseline *baseline; /* not owned; NULL: none */
    size_t nskipped;             /* traces of processes not to judge (--process) */
    size_t nwrapper_children;    /* forked by a wrapper before it exec'd the program */
    const char *untrusted;       /* set by at_gate_finish: why the verdict is 3 */
    int verdict;                 /* set by at_gate_finish */
    at_stack_table *arena;       /* string storage */
} at_gate;

void at_gate_options_init(at_gate_options *o);

/* A gate using matcher m (NULL: no suppressions; copied, m->ctx must live
 * as long as the gate) and baseline b (NULL: none; must outlive the gate). */
at_gate *at_gate_new(const at_gate_options *opt, const at_gate_matcher *m, const at_baseline *b);
void at_gate_free(at_gate *g);

/* A traced process; `pid` < 0 when unknown; trace_path NULL for a trace
 * that is deleted once judged (reports do not point at it). */
at_gate_proc *at_gate_add_process(at_gate *g, const char *trace_path, const char *process,
                                  long pid);

/* Marks a process's trace as not trustworthy (truncated, unreadable): the
 * verdict will be AT_GATE_UNTRUSTED. */
void at_gate_set_problem(at_gate *g, at_gate_proc *p, const char *why);

/* Marks a process that exec'd `program` (a wrapper: `exec "$@"`, libtool's
 * scripts): its own trace ends at the exec and is not judged; the program
 * it became is judged in a trace of its own. */
void at_gate_set_exec(at_gate *g, at_gate_proc *p, const char *program);

/* Marks a forked child that another process stopped with a signal (why):
 * it never exited, so there is nothing to judge, and it is no reason to
 * distrust the run (the program stopped its own worker). */
void at_gate_set_stopped(at_gate *g, at_gate_proc *p, const char *why);

/* Groups the blocks by stack and applies the suppressions with matcher m
 * given to at_gate_new. maps may be NULL; `stacks` serves as the frame
 * reader's arena and may be freed after the call. */
void at_gate_add_leaks(at_gate *g, at_gate_proc *p, const at_gate_block *blocks, size_t n,
                       const at_maps *maps, at_stack_table *stacks);

/* Sorts groups largest first, compares with the baseline, and returns the
 * verdict (also in g->verdict). Call after every process was added; call
 * again after setting g->baseline to judge the same leaks against another
 * baseline (--update-baseline judges against the one it wrote). */
int at_gate_finish(at_gate *g);

/* The text report: groups per process, suppression use, unused
 * suppressions, the LEAK SUMMARY per kind and the SUMMARY line. */
void at_gate_print_report(FILE *out, const at_gate *g);

/* One filter line per group left, precise enough to match that group
 * only: functions and file names, no addresses, a leading "...". */
void at_gate_print_suppressions(FILE *out, const at_gate *g);

/* The filter line for group i of proc p (a new string). */
char *at_gate_suppression_line(const at_gate *g, const at_gate_proc *p, size_t i);

/* Machine-readable results (gate_json.c, gate_junit.c); 0 on success, -1
 * with errno set when the file cannot be written. */
/* Writes `document` of g to path; 0, or -1 with errno set (an error while
 * writing or closing counts: a full disk must not leave a silent stub). */
int at_gate_write_file(const at_gate *g, const char *path, void (*document)(FILE *, const at_gate *));
int at_gate_write_json(const at_gate *g, const char *path);
int at_gate_write_junit(const at_gate *g, const char *path);
/* The leaks as a valgrind memcheck log, the form ctest -T memcheck reads
 * (gate_vglog.c). */
int at_gate_write_valgrind_log(const at_gate *g, const char *path);

/* Where a leak was made: the first frame (innermost first) that is not an
 * allocation wrapper (strdup, operator new, xmalloc, g_malloc...), the
 * innermost when all are; NULL for no frame (gate_site.c). */
const at_frame_info *at_gate_alloc_site(const at_frame_info *frames, uint32_t n);
/* Whether a function is an allocation wrapper or the C++ standard library's
 * (operator new, std::, strdup, xmalloc, g_malloc...): what at_gate_alloc_site
 * looks past. */
bool at_gate_is_wrapper(const char *function);

/* "FUNCTION (FILE:LINE)" of a site, or "(MODULE)", names written through
 * esc (XML needs escaping). */
void at_gate_print_site(FILE *out, const at_frame_info *f, void (*esc)(FILE *, const char *));


/* ---- baselines (baseline.c) -------------------------------------------- */

/* How many frames, innermost first, reach up to the outermost "main":
 * what keys and generated suppressions use, so that the C library's
 * start-up frames (_start, __libc_start_main, ...) that an upgrade may
 * rename do not change them. n when no frame is main (threads). */
uint32_t at_gate_frames_to_main(const at_frame_info *frames, uint32_t n);

/* The normalised key of a stack: outermost frame first (from main on, see
 * at_gate_frames_to_main), each "FUNCTION@FILE" with FILE reduced to its
 * last component (a module's for frames without a file), no addresses, no
 * lines: a rebuild or another checkout directory does not change it. */
char *at_baseline_key(const at_frame_info *frames, uint32_t n);

at_baseline *at_baseline_new(void);
void at_baseline_free(at_baseline *b);

/* Reads a baseline file. On error returns NULL and writes a
 * "FILE:LINE: reason" message into err. */
at_baseline *at_baseline_read(const char *path, char *err, size_t errlen);

/* Adds (or raises to the maximum) the allowance for a key in a process. */
void at_baseline_put(at_baseline *b, const char *process, const char *key, uint64_t bytes,
                     uint64_t blocks);

/* The allowance for a key, false when the key is not in the baseline. */
bool at_baseline_get(const at_baseline *b, const char *process, const char *key,
                     uint64_t *bytes, uint64_t *blocks);

/* The baseline of a judged gate's groups left after suppressions. */
at_baseline *at_baseline_from_gate(const at_gate *g);

/* Writes b; 0 on success, -1 with errno set. */
int at_baseline_write(const at_baseline *b, const char *path);

/* The name a baseline files a process under: its program's base name, so
 * pids and install directories do not matter. Points into `process`. */
const char *at_baseline_process_name(const char *process);

#endif
