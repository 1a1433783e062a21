/*
 * alloctrace.h: what a program can tell the tracer. Header only, and with
 * no link dependency: each function looks the tracer's at_* symbol up at
 * run time (dlsym(RTLD_DEFAULT)), so a program built with it runs
 * unchanged, doing nothing here, when liballoctrace.so is not preloaded.
 *
 *   unsigned parse = alloctrace_context_register("parse-phase");
 *   alloctrace_context_enter(parse);     // calls of this thread get @1
 *   ...
 *   alloctrace_context_exit(parse);
 *   alloctrace_enable(0);                 // stop tracing (all threads)
 *   alloctrace_snapshot("after-load");    // what the process holds now
 *
 * Contexts are per thread: a call's @CTX is the OR of the contexts its own
 * thread is in. A name gets a bit (1, 2, 4, ... up to 32 names); the same
 * name gets the same bit again; 0 means "no tracer" or "no bit left", and
 * entering 0 does nothing. Link with -ldl on glibc older than 2.34.
 */
#ifndef ALLOCTRACE_H
#define ALLOCTRACE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1   /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The tracer's function named `name`, or NULL without the tracer. */
static inline void *alloctrace_symbol_(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

typedef unsigned (*alloctrace_reg_fn_)(const char *);
typedef void (*alloctrace_bits_fn_)(unsigned);
typedef void (*alloctrace_int_fn_)(int);
typedef int (*alloctrace_query_fn_)(void);
typedef void (*alloctrace_void_fn_)(void);

#define ALLOCTRACE_LOOKUP_(var, type, name) \
    static type var; \
    static int var##_done; \
    if (!var##_done) { \
        *(void **)(&var) = alloctrace_symbol_(name); \
        var##_done = 1; \
    }

/* Registers a context name; returns its bit, 0 without the tracer. */
static inline unsigned alloctrace_context_register(const char *name)
{
    ALLOCTRACE_LOOKUP_(fn, alloctrace_reg_fn_, "at_context_register");
    return fn ? fn(name) : 0u;
}

/* Adds the bits to this thread's active contexts. */
static inline void alloctrace_context_enter(unsigned bits)
{
    ALLOCTRACE_LOOKUP_(fn, alloctrace_bits_fn_, "at_context_enter");
    if (fn)
        fn(bits);
}

/* Removes the bits from this thread's active contexts. */
static inline void alloctrace_context_exit(unsigned bits)
{
    ALLOCTRACE_LOOKUP_(fn, alloctrace_bits_fn_, "at_context_exit");
    if (fn)
        fn(bits);
}

/* Switches tracing on (1) or off (0) for the whole process. */
static inline void alloctrace_enable(int on)
{
    ALLOCTRACE_LOOKUP_(fn, alloctrace_int_fn_, "at_tracing_enable");
    if (fn)
        fn(on);
}

/* 1 when the tracer is loaded and recording. */
static inline int alloctrace_active(void)
{
    ALLOCTRACE_LOOKUP_(fn, alloctrace_query_fn_, "at_tracing_active");
    return fn ? fn() : 0;
}

/* Writes what the tracer has buffered (full mode), e.g. before a crash-prone step. */
static inline void alloctrace_flush(void)
{
    ALLOCTRACE_LOOKUP_(fn, alloctrace_void_fn_, "at_trace_flush");
    if (fn)
        fn();
}

typedef int (*alloctrace_snapshot_fn_)(const char *);

/* A snapshot now, named `label` (may be NULL): in leaks mode every live
 * block with its stack and leak kind goes into TRACE.snapN.txt (a leak
 * check now); in full mode the trace gets the mark "## snapshot: N LABEL"
 * (alloctrace-postproc --snapshot N makes the file, and the launcher does
 * at the end of the run). Returns N (1, 2, ...), 0 without the tracer,
 * -1 when it failed (one line on stderr says why). */
static inline int alloctrace_snapshot(const char *label)
{
    ALLOCTRACE_LOOKUP_(fn, alloctrace_snapshot_fn_, "at_snapshot");
    return fn ? fn(label) : 0;
}

#undef ALLOCTRACE_LOOKUP_

#ifdef __cplusplus
}
#endif

#endif
