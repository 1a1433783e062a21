/*
 * postproc/resolve/demangle.c: __cxa_demangle from libstdc++, looked up with
 * dlopen the first time a mangled name is seen. Linking libstdc++ into the
 * C post-processor would cost every run its load time (and a link flag in
 * the top Makefile); loaded lazily, only runs that resolve C++ code pay.
 * When libstdc++ is not installed the names stay mangled: still the right
 * function, only less readable.
 */
#include "demangle.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

struct at_demangler {
    bool tried;
    void *handle;
    cxa_demangle_fn fn;
};

at_demangler *at_demangler_new(void)
{
    return calloc(1, sizeof(at_demangler));
}

void at_demangler_free(at_demangler *d)
{
    if (!d)
        return;
    if (d->handle)
        dlclose(d->handle);
    free(d);
}

static void load(at_demangler *d)
{
    d->tried = true;
    d->handle = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (!d->handle)
        return;
    /* POSIX's sanctioned way to turn dlsym's void * into a function pointer. */
    *(void **)&d->fn = dlsym(d->handle, "__cxa_demangle");
}

char *at_demangle(at_demangler *d, const char *name)
{
    /* Itanium ABI names start with "_Z"; anything else is a C name. */
    if (!d || !name || strncmp(name, "_Z", 2) != 0)
        return NULL;
    if (!d->tried)
        load(d);
    if (!d->fn)
        return NULL;
    int status = 0;
    char *out = d->fn(name, NULL, NULL, &status);
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}
