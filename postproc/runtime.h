/*
 * postproc/runtime.h: the C and C++ runtime's own caches, told from a
 * block's backtrace: what valgrind frees before it counts leaks
 * (--run-libc-freeres, --run-cxx-freeres) and the tracer's exit scan calls
 * "libc" (leakkind.h, AT_LEAK_LIBC). A full trace has no exit scan, so
 * the report, the stats, the HTML report, the flame graphs and --diff ask
 * this instead, and count such a block never freed as "libc's caches",
 * never as leaked. docs/gate.md ("What a leak is here") lists the caches.
 */
#ifndef AT_RUNTIME_H
#define AT_RUNTIME_H

#include <stdbool.h>

#include "maps.h"
#include "stack.h"

typedef struct at_runtime at_runtime;

/* A memo of answers per stack id over one trace's maps and stacks. */
at_runtime *at_runtime_new(const at_maps *maps, at_stack_table *stacks);
void at_runtime_free(at_runtime *r);

/* Whether a block allocated from stack s and never freed is the runtime's
 * own cache:
 *   - every frame is in a runtime object (libc, libstdc++, libgcc_s, libm,
 *     the dynamic loader): the runtime allocated it by itself, as
 *     libstdc++'s emergency exception pool at load time (named or not);
 *   - or a frame is one of glibc's cache makers (stdio buffers, locales,
 *     the time zone, NSS, iconv, dlerror strings) or libstdc++'s pool:
 *     these need names (-r), and are found inwards of any program frame. */
bool at_runtime_cache(at_runtime *r, const at_stack *s);

/* The category's name in every output, the gate's words for AT_LEAK_LIBC. */
#define AT_RUNTIME_WORDS "libc's caches"

#endif
