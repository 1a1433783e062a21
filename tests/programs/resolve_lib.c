/* tests/programs/resolve_lib.c: a shared library with an allocation site,
 * so the resolver's tests cover a module loaded at its own base. */
#include "resolve_probe.h"

void *resolve_lib_alloc(size_t n);

void *resolve_lib_alloc(size_t n)
{
    void *p = resolve_probe("lib", n); /* @lib */
    resolve_sink = p;
    return p;
}
