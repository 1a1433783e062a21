/*
 * postproc/resolve/resolve.h: turning "\t0xADDR" frames into text with elfutils
 * libdw (TEXT_FORMAT.md section 5):
 *     FUNC() at FILE:LINE      FUNC() from MODULE      from MODULE      in ??
 * inlined calls expanded into one frame each (same address, innermost
 * first, " [inlined]" on all but the last).
 *
 * The resolver learns the trace's modules from its map lines as they are
 * read, opens each module file once, when a frame first needs it, and
 * resolves each distinct address once; a whole input stack is resolved once
 * too (stacks are interned, so the cache is keyed by pointer). With a cache
 * directory, answers persist across runs, keyed by the module file, its
 * build id and its debug file (docs/resolve.md, "The cache"): a hit reads
 * no DWARF and gives the text a lookup would.
 *
 * Warnings ("alloctrace-postproc: WARNING: ..." on stderr, none when quiet):
 * a module file that cannot be opened, once per module; a module whose
 * build id is not the one the trace recorded, once, naming the file, and its
 * frames then read "from MODULE" only, never with lines of another build.
 */
#ifndef AT_RESOLVE_H
#define AT_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>

#include "maps.h"
#include "stack.h"

typedef struct at_resolver at_resolver;

typedef struct at_resolve_options {
    const char *const *debug_dirs; /* --debug-dir: searched first, by build id and by
                                      .gnu_debuglink, before /usr/lib/debug */
    size_t ndebug_dirs;
    const char *sysroot;           /* --sysroot: prefixed to absolute module paths and
                                      to /usr/lib/debug; NULL for none */
    const char *cache_dir;         /* the disk cache's directory (at_resolve_cache_dir);
                                      NULL: no disk cache */
    bool re_resolve;               /* --re-resolve: frames with text are resolved again */
    bool quiet;                    /* -q: no warnings */
} at_resolve_options;

/* A resolver, or NULL after printing "alloctrace-postproc: ..." when the
 * options cannot be used (a --debug-dir or --sysroot that is no directory,
 * or whose name has a ':', which libdw's search path cannot express). The
 * options are copied. */
at_resolver *at_resolver_new(const at_resolve_options *opts);

/* The disk cache directory to use (a new string), or NULL for none: none
 * when `off` (--no-cache); else `given` (--cache-dir; empty: none); else
 * $ALLOCTRACE_CACHE_DIR (empty: none), $XDG_CACHE_HOME/alloctrace or
 * $HOME/.cache/alloctrace. The directory is created when first written;
 * one that cannot be is skipped in silence (the cache only saves time). */
char *at_resolve_cache_dir(const char *given, bool off);

/* One map line, as it is read: path, load base, end and build id are
 * copied. A map that overlaps an earlier one replaces it from now on. */
void at_resolver_add_map(at_resolver *r, const at_map *map);

/* A "## build-id: PATH => HEX" that came after its map line: it applies to
 * the newest map of PATH (the same rule as at_maps_set_build_id). */
void at_resolver_set_build_id(at_resolver *r, const char *path, const char *hex);

/* The stack with every frame resolved (inline frames expanded), interned in
 * `table`. Frames that have text keep it unless re_resolve; with
 * re_resolve an earlier inline expansion (frames of one address whose text
 * ends in " [inlined]") is resolved as the one frame it stands for. Cached
 * per input stack by its id, so `stack` must be interned in `table` too
 * (one resolver serves one table). Never NULL. */
const at_stack *at_resolver_resolve(at_resolver *r, at_stack_table *table, const at_stack *stack);

/* Counters for tests and the benchmark. */
typedef struct at_resolve_stats {
    size_t modules_opened;   /* module files opened (each at most once) */
    size_t addresses;        /* distinct addresses resolved */
    size_t stacks;           /* distinct input stacks resolved */
    size_t warnings;         /* warnings issued (also counted when quiet) */
    size_t cache_hits;       /* addresses answered from the disk cache */
    size_t dwarf_loaded;     /* modules whose debug info libdw read (a lookup ran) */
} at_resolve_stats;

at_resolve_stats at_resolver_stats(const at_resolver *r);

/* Frees r; first writes the disk cache's new answers (resolve_disk.h). */
void at_resolver_free(at_resolver *r);

#endif
