/*
 * postproc/resolve/resolve.c: the resolver (resolve.h). It keeps its own copy of
 * the map lines (the trace's map table may move them), opens a module the
 * first time one of its addresses is resolved, and memoizes twice:
 *   - per (map, address): the frame texts one address expands into;
 *   - per input stack: the resolved, interned stack.
 * Addresses are keyed with their map because a later map line may cover
 * the same range with another object (dlclose, then dlopen). An address
 * already seen in a map is found again by the address alone (`seen`), so
 * that the frames of a new stack, 40-120 of them on a compiler's trace,
 * are not each looked for through the maps from the newest back (a third
 * of resolving clang's stacks, 22 map lines): a map line that overlaps an
 * earlier one forgets those, one that does not changes no answer found in
 * a map (an address found in none is not kept there).
 *
 * With a cache directory, a module that can be cached (resolve_module.h:
 * its fingerprint) gets its disk cache file read when it is opened; an
 * address found there is not looked up (no DWARF is read for a module whose
 * addresses all hit). New answers are added only once libdwfl's debug file
 * has been seen to be the predicted one, and written when the resolver is
 * freed.
 *
 * An address is looked up as ADDR - 1, the call instruction itself, so the
 * line is the call's own line and not the next statement's (a call that
 * ends a function would otherwise resolve into the next function).
 */
#include "resolve.h"
#include "xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <alloctrace/format.h>

#include "diag.h"
#include "resolve_cache.h"
#include "resolve_disk.h"
#include "resolve_module.h"


typedef struct rmap {
    char *path, *build_id;
    uint64_t start, end;
    long module; /* index into modules; -1 until first needed */
} rmap;

/* A module and its disk cache. */
typedef struct rmodule {
    at_module m;
    at_rdisk *disk;     /* NULL: not cached */
    bool checked;       /* the debug source has been compared with libdwfl's */
    bool writable;      /* ... and agreed: new answers may be stored */
} rmodule;

/* What an address resolves to: its frame texts, and the stack table's
 * copies of them (at_stacks_text) for the table they were taken from with
 * their part of a stack's hash, so that a stack of known addresses is
 * interned without its texts read, hashed or compared again (5-8% of -r
 * on cc1plus and clang traces, then 4-5% more: at_stacks_intern_kept). */
typedef struct addr_texts {
    at_rtexts *e;
    const at_stack_table *kept_for; /* NULL: none taken yet */
    const char **kept;              /* e->n */
    uint64_t *kept_hash;            /* e->n: at_stacks_text_hash of each */
} addr_texts;

static void addr_texts_free(void *p)
{
    addr_texts *a = p;
    at_rtexts_free(a->e);
    free(a->kept);
    free(a->kept_hash);
    free(a);
}

struct at_resolver {
    bool re_resolve, quiet;
    char *sysroot;
    char **build_id_dirs; /* absolute: --debug-dir..., sysroot debug dir, /usr/lib/debug */
    size_t nbuild_id_dirs;
    char *debuginfo_path; /* the same, in libdwfl's syntax, for .gnu_debuglink too */
    Dwfl_Callbacks callbacks;
    at_module_env env;
    char *cache_dir;      /* NULL: no disk cache */
    char *program_id;     /* this resolver's build, first part of every cache key */

    rmap *maps;
    size_t nmaps, capmaps;
    rmodule *modules;
    size_t nmodules, capmodules;

    at_rcache *addrs;  /* (map index + 1 or 0, address) -> addr_texts */
    at_rcache *seen;   /* (address, 0) -> its addr_texts in the map that has it */
    /* input stack's id -> output stack (NULL: not resolved yet), ids being
     * those of `table`: an array, not a hash, because it is asked once a
     * call and a hash of 100,000 stacks missed the caches (7% of -r on a
     * cc1plus trace) */
    const at_stack **done;
    size_t ndone;
    at_stack_table *table;
    at_demangler *dm;
    at_frame *buf;
    uint64_t *hbuf;    /* buf's text hashes */
    size_t capbuf;
    at_resolve_stats stats;
};

/* libdwfl searches by build id only in absolute directories. */
static char *absolute(const char *dir)
{
    if (dir[0] == '/')
        return at_xstrdup_or_null(dir);
    char *cwd = getcwd(NULL, 0);
    char *s = at_xasprintf("%s/%s", cwd ? cwd : ".", dir);
    free(cwd);
    return s;
}

static void add_dir(at_resolver *r, char *dir)
{
    r->build_id_dirs = at_xrealloc(r->build_id_dirs, (r->nbuild_id_dirs + 1) * sizeof(char *));
    r->build_id_dirs[r->nbuild_id_dirs++] = dir;
}

/* libdwfl's search path: the --debug-dir directories first, then the
 * module's own directory and its .debug subdirectory (debuglink), then the
 * sysroot's and the system's debug trees. libdwfl tries the build id in
 * every absolute element and the debuglink name in all of them; it checks
 * a found file against the module's build id (or debuglink CRC). */
static char *debuginfo_path(const at_resolver *r, size_t ngiven)
{
    size_t len = 16;
    for (size_t i = 0; i < r->nbuild_id_dirs; i++)
        len += strlen(r->build_id_dirs[i]) + 1;
    char *s = at_xrealloc(NULL, len);
    s[0] = '\0';
    for (size_t i = 0; i < ngiven; i++) {
        strcat(s, r->build_id_dirs[i]);
        strcat(s, ":");
    }
    strcat(s, ":.debug");
    for (size_t i = ngiven; i < r->nbuild_id_dirs; i++) {
        strcat(s, ":");
        strcat(s, r->build_id_dirs[i]);
    }
    return s;
}

/* A directory option libdwfl can use: an existing directory without ':'
 * (the separator of its search path). */
static bool usable_dir(const char *option, const char *dir)
{
    struct stat st;
    if (strchr(dir, ':')) {
        fprintf(stderr, "%s: %s %s: a directory name with ':' is not supported\n", at_program_name,
                option, dir);
        return false;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "%s: %s %s: %s\n", at_program_name, option, dir,
                stat(dir, &st) != 0 ? strerror(errno) : "not a directory");
        return false;
    }
    return true;
}

at_resolver *at_resolver_new(const at_resolve_options *opts)
{
    at_resolve_options none = { 0 };
    if (!opts)
        opts = &none;
    for (size_t i = 0; i < opts->ndebug_dirs; i++)
        if (!usable_dir("--debug-dir", opts->debug_dirs[i]))
            return NULL;
    if (opts->sysroot && !usable_dir("--sysroot", opts->sysroot))
        return NULL;
    at_resolver *r = at_xrealloc(NULL, sizeof *r);
    *r = (at_resolver){ .re_resolve = opts->re_resolve, .quiet = opts->quiet };
    for (size_t i = 0; i < opts->ndebug_dirs; i++)
        add_dir(r, absolute(opts->debug_dirs[i]));
    if (opts->sysroot && opts->sysroot[0]) {
        r->sysroot = absolute(opts->sysroot);
        add_dir(r, at_xasprintf("%s/usr/lib/debug", r->sysroot));
    }
    add_dir(r, at_xstrdup_or_null("/usr/lib/debug"));
    r->debuginfo_path = debuginfo_path(r, opts->ndebug_dirs);
    r->callbacks = (Dwfl_Callbacks){
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
        .debuginfo_path = &r->debuginfo_path,
    };
    r->env = (at_module_env){ .callbacks = &r->callbacks,
                              .sysroot = r->sysroot,
                              .build_id_dirs = (const char *const *)r->build_id_dirs,
                              .nbuild_id_dirs = r->nbuild_id_dirs };
    if (opts->cache_dir && opts->cache_dir[0]) {
        r->cache_dir = absolute(opts->cache_dir);
        r->program_id = at_rdisk_program_id();
    }
    r->addrs = at_rcache_new();
    r->seen = at_rcache_new();
    r->dm = at_demangler_new();
    return r;
}

char *at_resolve_cache_dir(const char *given, bool off)
{
    if (off)
        return NULL;
    if (given)
        return given[0] ? at_xstrdup(given) : NULL;
    return at_rdisk_default_dir();
}

void at_resolver_free(at_resolver *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nmaps; i++) {
        free(r->maps[i].path);
        free(r->maps[i].build_id);
    }
    free(r->maps);
    for (size_t i = 0; i < r->nmodules; i++) {
        if (r->modules[i].disk)
            at_rdisk_save(r->modules[i].disk); /* failure only costs time: silent */
        at_rdisk_free(r->modules[i].disk);
        at_module_close(&r->modules[i].m);
    }
    free(r->modules);
    at_rcache_free(r->addrs, addr_texts_free);
    at_rcache_free(r->seen, NULL);
    free(r->done);
    at_demangler_free(r->dm);
    for (size_t i = 0; i < r->nbuild_id_dirs; i++)
        free(r->build_id_dirs[i]);
    free(r->build_id_dirs);
    free(r->debuginfo_path);
    free(r->cache_dir);
    free(r->program_id);
    free(r->sysroot);
    free(r->buf);
    free(r->hbuf);
    free(r);
}

static void forget_stacks(at_resolver *r)
{
    if (r->ndone)
        memset(r->done, 0, r->ndone * sizeof *r->done);
}

static const at_stack *done_get(const at_resolver *r, const at_stack *s)
{
    return s->id < r->ndone ? r->done[s->id] : NULL;
}

static void done_put(at_resolver *r, const at_stack *s, const at_stack *out)
{
    r->done = at_xgrow_to(r->done, &r->ndone, s->id, sizeof *r->done, 1024);
    r->done[s->id] = out;
}

void at_resolver_add_map(at_resolver *r, const at_map *map)
{
    /* A stack resolved before this map replaced part of an older one may
     * now resolve differently: forget resolved stacks (addresses are keyed
     * by map and stay valid). */
    for (size_t i = 0; i < r->nmaps; i++)
        if (map->start < r->maps[i].end && r->maps[i].start < map->end) {
            forget_stacks(r);
            at_rcache_clear(r->seen, NULL);
            break;
        }
    if (r->nmaps == r->capmaps) {
        r->capmaps = r->capmaps ? r->capmaps * 2 : 32;
        r->maps = at_xrealloc(r->maps, r->capmaps * sizeof *r->maps);
    }
    r->maps[r->nmaps++] = (rmap){ .path = at_xstrdup_or_null(map->path), .build_id = at_xstrdup_or_null(map->build_id),
                                  .start = map->start, .end = map->end, .module = -1 };
}

void at_resolver_set_build_id(at_resolver *r, const char *path, const char *hex)
{
    for (size_t i = r->nmaps; i-- > 0;) {
        rmap *m = &r->maps[i];
        if (strcmp(m->path, path) != 0)
            continue;
        if (m->module < 0) { /* too late once the module is open: it was checked without */
            free(m->build_id);
            m->build_id = at_xstrdup_or_null(hex);
        }
        return;
    }
}

static long find_map(const at_resolver *r, uint64_t pc)
{
    for (size_t i = r->nmaps; i-- > 0;)
        if (pc >= r->maps[i].start && pc < r->maps[i].end)
            return (long)i;
    return -1;
}

static bool same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static void warn(at_resolver *r, const char *msg)
{
    r->stats.warnings++;
    if (!r->quiet)
        fprintf(stderr, "%s: WARNING: %s\n", at_program_name, msg);
}

/* A module's disk cache, when it can have one. */
static at_rdisk *open_disk(const at_resolver *r, const at_module *mod)
{
    if (!r->cache_dir || !mod->fingerprint)
        return NULL;
    char *key = at_xasprintf("%s\t%s", r->program_id, mod->fingerprint);
    at_rdisk *d = at_rdisk_open(r->cache_dir, mod->path, key, AT_RDISK_MAX_ENTRIES);
    free(key);
    return d;
}

/* The module of a map, opened on first use; one per (path, build id). */
static rmodule *module_of(at_resolver *r, rmap *m)
{
    if (m->module >= 0)
        return &r->modules[m->module];
    for (size_t i = 0; i < r->nmodules; i++)
        if (strcmp(r->modules[i].m.path, m->path) == 0 && same(r->modules[i].m.build_id, m->build_id)) {
            m->module = (long)i;
            return &r->modules[i];
        }
    if (r->nmodules == r->capmodules) {
        r->capmodules = r->capmodules ? r->capmodules * 2 : 16;
        r->modules = at_xrealloc(r->modules, r->capmodules * sizeof *r->modules);
    }
    rmodule *rm = &r->modules[r->nmodules];
    m->module = (long)r->nmodules++;
    *rm = (rmodule){ 0 };
    at_module_open(&rm->m, m->path, m->build_id, &r->env);
    r->stats.modules_opened++;
    /* A pseudo-object such as linux-vdso.so.1 has no file: nothing to warn about. */
    if (rm->m.problem && strchr(m->path, '/'))
        warn(r, rm->m.problem);
    rm->disk = open_disk(r, &rm->m);
    return rm;
}

static at_rtexts *one_text(char *text)
{
    at_rtexts *e = at_rtexts_new(1);
    e->texts[0] = text;
    return e;
}

static char *frame_text(const at_symframe *f, const char *module, bool inlined)
{
    const char *suffix = inlined ? AT_FRAME_INLINED : "";
    if (f->function && f->file) /* line 0: a line of no particular place in FILE */
        return at_xasprintf("%s%s%s:%u%s", f->function, AT_FRAME_AT, f->file, f->line, suffix);
    return at_xasprintf("%s %s%s%s", f->function ? f->function : "??", AT_FRAME_FROM,
                     module, suffix);
}

/* What the module's debug info says of addr (the file's own address). */
static at_rtexts *look_up(at_resolver *r, rmodule *rm, const char *path, uint64_t addr)
{
    if (!rm->m.looked_up)
        r->stats.dwarf_loaded++;
    at_symframe *f = NULL;
    size_t n = at_module_lookup(&rm->m, addr, r->dm, &f);
    if (!rm->checked) { /* libdwfl has looked for the debug file by now */
        rm->checked = true;
        rm->writable = rm->disk && at_debug_source_matches(&rm->m.debug, rm->m.mod);
    }
    if (n == 0)
        return one_text(at_xasprintf("%s%s", AT_FRAME_FROM, path));
    at_rtexts *e = at_rtexts_new((uint32_t)n);
    for (size_t i = 0; i < n; i++)
        e->texts[i] = frame_text(&f[i], path, i + 1 < n);
    at_symframes_free(f, n);
    return e;
}

static at_rtexts *resolve_in_map(at_resolver *r, rmap *m, uint64_t pc)
{
    rmodule *rm = module_of(r, m);
    if (rm->m.state != AT_MODULE_OK)
        return one_text(at_xasprintf("%s%s", AT_FRAME_FROM, m->path));
    uint64_t addr = rm->m.absolute ? pc : pc - m->start;
    const at_rtexts *hit = rm->disk ? at_rdisk_get(rm->disk, addr) : NULL;
    if (hit) {
        r->stats.cache_hits++;
        return at_rtexts_copy(hit);
    }
    at_rtexts *e = look_up(r, rm, m->path, addr);
    if (rm->writable)
        at_rdisk_put(rm->disk, addr, e);
    return e;
}

static addr_texts *resolve_address(at_resolver *r, uint64_t addr)
{
    addr_texts *a = at_rcache_get(r->seen, addr, 0);
    if (a)
        return a;
    uint64_t pc = addr ? addr - 1 : 0;
    long mi = find_map(r, pc);
    a = at_rcache_get(r->addrs, (uint64_t)(mi + 1), addr);
    if (!a) {
        a = at_xcalloc(1, sizeof *a);
        a->e = mi < 0 ? one_text(at_xstrdup_or_null(AT_FRAME_UNKNOWN))
                      : resolve_in_map(r, &r->maps[mi], pc);
        at_rcache_put(r->addrs, (uint64_t)(mi + 1), addr, a);
        r->stats.addresses++;
    }
    if (mi >= 0) /* see the top */
        at_rcache_put(r->seen, addr, 0, a);
    return a;
}

/* The address's texts as the table's copies, with their hashes (taken
 * once a table). */
static void keep_texts(at_stack_table *table, addr_texts *a)
{
    if (a->kept_for == table)
        return;
    if (!a->kept) {
        a->kept = at_xcalloc(a->e->n ? a->e->n : 1, sizeof *a->kept);
        a->kept_hash = at_xcalloc(a->e->n ? a->e->n : 1, sizeof *a->kept_hash);
    }
    for (uint32_t k = 0; k < a->e->n; k++) {
        a->kept[k] = at_stacks_text(table, a->e->texts[k]);
        a->kept_hash[k] = at_stacks_text_hash(a->kept[k]);
    }
    a->kept_for = table;
}

/* A frame onto the stack being built; text is the table's own copy (or
 * NULL) and hash its at_stacks_text_hash. */
static void push(at_resolver *r, size_t *n, uint64_t addr, const char *text, uint64_t hash)
{
    if (*n == r->capbuf) {
        r->capbuf = r->capbuf ? r->capbuf * 2 : 64;
        r->buf = at_xrealloc(r->buf, r->capbuf * sizeof *r->buf);
        r->hbuf = at_xrealloc(r->hbuf, r->capbuf * sizeof *r->hbuf);
    }
    r->buf[*n] = (at_frame){ .addr = addr, .text = text };
    r->hbuf[(*n)++] = hash;
}

static bool ends_inlined(const char *text)
{
    size_t n = text ? strlen(text) : 0, k = strlen(AT_FRAME_INLINED);
    return n >= k && memcmp(text + n - k, AT_FRAME_INLINED, k) == 0;
}

const at_stack *at_resolver_resolve(at_resolver *r, at_stack_table *table, const at_stack *stack)
{
    if (table != r->table) {
        forget_stacks(r);
        r->table = table;
    }
    const at_stack *out = done_get(r, stack);
    if (out)
        return out;
    size_t n = 0;
    for (uint32_t i = 0; i < stack->nframes; i++) {
        const at_frame *f = &stack->frames[i];
        if (f->text && !r->re_resolve) { /* the input stack may be another table's */
            const char *text = at_stacks_text(table, f->text);
            push(r, &n, f->addr, text, at_stacks_text_hash(text));
            continue;
        }
        /* Re-resolving: the outer frames of an earlier inline expansion
         * come again from resolving its first frame. */
        if (f->text && i > 0 && stack->frames[i - 1].addr == f->addr &&
            ends_inlined(stack->frames[i - 1].text))
            continue;
        addr_texts *a = resolve_address(r, f->addr);
        keep_texts(table, a);
        for (uint32_t k = 0; k < a->e->n; k++)
            push(r, &n, f->addr, a->kept[k], a->kept_hash[k]);
    }
    out = at_stacks_intern_kept(table, r->buf, r->hbuf, (uint32_t)n);
    r->stats.stacks++;
    done_put(r, stack, out);
    done_put(r, out, out); /* resolving it again changes nothing */
    return out;
}

at_resolve_stats at_resolver_stats(const at_resolver *r) { return r->stats; }
