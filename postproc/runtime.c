/*
 * postproc/runtime.c: the runtime's own caches (runtime.h).
 *
 * Decisions:
 *   - By backtrace, since a full trace has nothing else: the exit scan of
 *     leaks mode (preload/leaks/reach.c) sees what points to a block, the
 *     post-processor only where it was made. Two rules, both about who
 *     made the block, never about its size:
 *       1. every frame in a runtime object: no code of the program asked
 *          for it (libstdc++'s emergency pool is allocated by libstdc++'s
 *          constructor, called by the loader before main). Works on
 *          unresolved traces: objects come from the maps.
 *       2. a frame of one of glibc's functions that keep memory for the
 *          life of the process and free it only in __libc_freeres (the
 *          list below, the same caches the exit scan finds through libc's
 *          memory), or libstdc++'s pool by name (a dlopen'ed libstdc++ is
 *          loaded from the program's frames). Needs names (-r).
 *   - A stdio stream the program opened and never closed stays leaked (its
 *     FILE is the program's; valgrind keeps it too), but its buffer, made by
 *     _IO_file_doallocate, is libc's: freeres frees it.
 *   - One answer per stack id, kept: the outputs ask for every site.
 */
#include "runtime.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "xalloc.h"

struct at_runtime {
    const at_maps *maps;
    at_stack_table *stacks;
    uint8_t *memo; /* per stack id: 0 not asked, 1 no, 2 yes */
    size_t nmemo;
};

/* glibc's cache makers (C names, as the resolver gives them without "()"). */
static const char *const MAKERS[] = {
    "_IO_file_doallocate",                                 /* stdio buffers */
    "_nl_find_locale", "_nl_load_locale", "_nl_load_locale_from_archive",
    "_nl_intern_locale_data", "new_composite_name", "setlocale", /* locales */
    "_nl_find_domain", "_nl_load_domain", "set_binding_values",  /* gettext */
    "tzset_internal", "__tzfile_read", "__tzstring", "__tzstring_len", /* time zone */
    "__nss_database_get", "__nss_module_load", "__nss_module_allocate",
    "nss_database_check_reload_and_get", "__nss_files_data_open",
    "getpwuid", "getpwnam", "getgrgid", "getgrnam", "getspnam",
    "gethostbyname", "gethostbyname2", "gethostbyaddr", "getservbyname",
    "getservbyport", "getprotobyname", "getprotobynumber", /* NSS */
    "__gconv_load_cache", "__gconv_read_conf", "__gconv_find_shlib", /* iconv */
    "_dl_exception_create", "_dl_exception_create_format", "_dlerror_run", /* dlerror */
    "__strerror_l", "strerror_l", "strsignal",               /* per-thread strings */
};

/* libstdc++'s emergency exception pool, by the names its debug info gives. */
static const char *const POOL[] = { "(anonymous namespace)::pool::pool", "__gnu_cxx::__freeres" };

at_runtime *at_runtime_new(const at_maps *maps, at_stack_table *stacks)
{
    at_runtime *r = at_xcalloc(1, sizeof *r);
    r->maps = maps;
    r->stacks = stacks;
    return r;
}

void at_runtime_free(at_runtime *r)
{
    if (!r)
        return;
    free(r->memo);
    free(r);
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* libc.so.6, libstdc++.so.6, ld-linux-x86-64.so.2 and their kin, by name. */
static bool runtime_module(const char *module)
{
    if (strcmp(module, AT_UNKNOWN) == 0)
        return false;
    const char *b = at_path_base(module);
    return starts(b, "libc.so") || starts(b, "libc-") || starts(b, "libstdc++.so") ||
           starts(b, "libgcc_s.so") || starts(b, "libm.so") || starts(b, "libm-") ||
           starts(b, "ld-linux") || starts(b, "ld64.so") || starts(b, "ld-2.");
}

/* The first byte compared before the call: this runs for every frame of
 * every stack still holding blocks at the end, 40 names each (on a
 * cc1plus trace, with 100-frame stacks, strcmp was 3-4% of -r). */
static bool maker(const char *function)
{
    for (size_t i = 0; i < sizeof MAKERS / sizeof *MAKERS; i++)
        if (function[0] == MAKERS[i][0] && strcmp(function, MAKERS[i]) == 0)
            return true;
    for (size_t i = 0; i < sizeof POOL / sizeof *POOL; i++)
        if (function[0] == POOL[i][0] && starts(function, POOL[i]))
            return true;
    return false;
}

static bool classify(at_runtime *r, const at_stack *s)
{
    if (s->nframes == 0)
        return false;
    at_frame_info *fi = at_xcalloc(s->nframes, sizeof *fi);
    at_frame_read_stack(s, r->maps, r->stacks, fi);
    bool all_runtime = true, made = false;
    const char *last_module = NULL; /* neighbouring frames share their module */
    bool last_runtime = false;
    for (uint32_t i = 0; i < s->nframes; i++) {
        if (all_runtime && fi[i].module != last_module) {
            last_module = fi[i].module;
            last_runtime = runtime_module(last_module);
        }
        all_runtime &= last_runtime;
        made |= maker(fi[i].function);
    }
    free(fi);
    return all_runtime || made;
}

bool at_runtime_cache(at_runtime *r, const at_stack *s)
{
    r->memo = at_xgrow_to(r->memo, &r->nmemo, s->id, 1, 256);
    if (!r->memo[s->id])
        r->memo[s->id] = classify(r, s) ? 2 : 1;
    return r->memo[s->id] == 2;
}
