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
 *   - And what each frame says for the two rules (its module is the
 *     runtime's; it is a cache maker) kept per frame, by address and text:
 *     the stacks still holding blocks at the end of a compiler's trace are
 *     tens of thousands of 40-120 frames, mostly the same frames, and
 *     reading every frame of every one (its text split, its names copied,
 *     its map found) was 40 ms of the 95 after a cc1plus trace's last call.
 *     A stack's texts are the stack table's own copies (stack.h), so the
 *     text's address stands for its content. What a frame says depends on
 *     the maps too (the module of a frame without one in its text), so the
 *     frames kept are forgotten when a map line is added.
 */
#include "runtime.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "xalloc.h"

/* A frame's answers: RT_KNOWN always, RT_RUNTIME when its module is the
 * runtime's, RT_MAKER when it is one of the cache makers. */
enum { RT_KNOWN = 1, RT_RUNTIME = 2, RT_MAKER = 4 };

typedef struct frame_slot {
    uint64_t addr;
    const char *text;
    uint8_t says; /* 0: empty */
} frame_slot;

struct at_runtime {
    const at_maps *maps;
    at_stack_table *stacks;
    uint8_t *memo; /* per stack id: 0 not asked, 1 no, 2 yes */
    size_t nmemo;
    frame_slot *frames; /* what each frame says, by (address, text) */
    size_t nframes, cframes;
    size_t maps_seen;   /* at_maps_count when the frames were kept */
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
    free(r->frames);
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

/* What one frame says (RT_*), read from its text and the maps. */
static uint8_t read_frame(at_runtime *r, const at_frame *f)
{
    at_frame_info fi;
    at_frame_read(f, r->maps, r->stacks, &fi);
    return RT_KNOWN | (runtime_module(fi.module) ? RT_RUNTIME : 0) |
           (maker(fi.function) ? RT_MAKER : 0);
}

static size_t frame_home(const at_frame *f, size_t cap)
{
    uint64_t h = (f->addr ^ (uint64_t)(uintptr_t)f->text * 0x9e3779b97f4a7c15ull) *
                 0xff51afd7ed558ccdull;
    return (size_t)(h ^ (h >> 32)) & (cap - 1);
}

static frame_slot *frame_find(const at_runtime *r, const at_frame *f)
{
    size_t i = frame_home(f, r->cframes);
    while (r->frames[i].says && (r->frames[i].addr != f->addr || r->frames[i].text != f->text))
        i = (i + 1) & (r->cframes - 1);
    return &r->frames[i];
}

/* The table of frames kept, emptied when the maps have grown since. */
static void frames_ready(at_runtime *r)
{
    size_t maps = r->maps ? at_maps_count(r->maps) : 0;
    if (maps != r->maps_seen && r->nframes) {
        memset(r->frames, 0, r->cframes * sizeof *r->frames);
        r->nframes = 0;
    }
    r->maps_seen = maps;
    if ((r->nframes + 1) * 2 <= r->cframes)
        return;
    frame_slot *old = r->frames;
    size_t ocap = r->cframes;
    r->cframes = ocap ? ocap * 2 : 1024;
    r->frames = at_xcalloc(r->cframes, sizeof *r->frames);
    for (size_t i = 0; i < ocap; i++)
        if (old[i].says)
            *frame_find(r, &(at_frame){ .addr = old[i].addr, .text = old[i].text }) = old[i];
    free(old);
}

static uint8_t frame_says(at_runtime *r, const at_frame *f)
{
    frames_ready(r);
    frame_slot *s = frame_find(r, f);
    if (!s->says) {
        *s = (frame_slot){ .addr = f->addr, .text = f->text, .says = read_frame(r, f) };
        r->nframes++;
    }
    return s->says;
}

static bool classify(at_runtime *r, const at_stack *s)
{
    if (s->nframes == 0)
        return false;
    uint8_t all = RT_RUNTIME, any = 0;
    for (uint32_t i = 0; i < s->nframes; i++) {
        uint8_t says = frame_says(r, &s->frames[i]);
        all &= says;
        any |= says;
    }
    return all || (any & RT_MAKER);
}

bool at_runtime_cache(at_runtime *r, const at_stack *s)
{
    r->memo = at_xgrow_to(r->memo, &r->nmemo, s->id, 1, 256);
    if (!r->memo[s->id])
        r->memo[s->id] = classify(r, s) ? 2 : 1;
    return r->memo[s->id] == 2;
}
