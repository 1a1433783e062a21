/*
 * tests/programs/resolve_app.c: known allocation sites for the resolver's
 * tests, built -O0 and -O2 (inlining), PIE and non-PIE, and stripped with
 * its debug info in a separate file. It prints its maps and, per site, the
 * return address a tracer would record (resolve_probe.h).
 */
#define RESOLVE_PRINT_MAPS
#include "resolve_probe.h"

void *resolve_lib_alloc(size_t n);

__attribute__((noinline)) static void alloc_direct(void)
{
    void *p = resolve_probe("direct", 16); /* @direct */
    resolve_sink = p;
}

/* Inlined into outer_caller at -O2: one address, three frames. */
static inline void inline_leaf(void)
{
    void *p = resolve_probe("inline", 24); /* @inline_leaf */
    resolve_sink = p;
}

static inline void inline_mid(void)
{
    inline_leaf(); /* @inline_mid */
    resolve_sink = NULL;
}

__attribute__((noinline)) void outer_caller(void);
__attribute__((noinline)) void outer_caller(void)
{
    inline_mid(); /* @outer_caller */
    resolve_sink = NULL;
}

int main(void)
{
    resolve_print_maps();
    alloc_direct();
    outer_caller();
    void *p = resolve_lib_alloc(32);
    free(p);
    return 0;
}
