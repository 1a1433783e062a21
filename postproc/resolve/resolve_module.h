/*
 * postproc/resolve/resolve_module.h: one module file of a trace, opened with
 * libdwfl, and what an address in it says (resolve_module.c opens and
 * checks, resolve_lookup.c reads DWARF and symbols). Internal to the
 * resolver.
 */
#ifndef AT_RESOLVE_MODULE_H
#define AT_RESOLVE_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/stat.h>

#include <elfutils/libdwfl.h>

#include "demangle.h"

typedef enum at_module_state {
    AT_MODULE_OK,
    AT_MODULE_MISSING,  /* no readable ELF file: frames read "from MODULE" */
    AT_MODULE_MISMATCH, /* build id differs from the traced one: "from MODULE" */
} at_module_state;

/* A module's function symbols by address (resolve_symbols.c). */
typedef struct at_symindex at_symindex;
at_symindex *at_symindex_build(Dwfl_Module *mod);
/* The name of the function symbol containing addr, or NULL. */
const char *at_symindex_find(const at_symindex *x, uint64_t addr);
void at_symindex_free(at_symindex *x);

/* A module's compilation units by address range (resolve_units.c), for
 * modules without .debug_aranges. */
typedef struct at_unitindex at_unitindex;
at_unitindex *at_unitindex_build(Dwarf *dw);
/* The unit whose ranges hold addr (a DWARF address), in *out, or NULL. */
Dwarf_Die *at_unitindex_find(const at_unitindex *x, uint64_t addr, Dwarf_Die *out);
void at_unitindex_free(at_unitindex *x);

/* Where libdwfl will read a module's debug info from (resolve_debugsrc.c),
 * found before any DWARF is loaded. */
typedef enum at_debug_kind {
    AT_DEBUG_UNKNOWN, /* cannot tell: the module is not cached */
    AT_DEBUG_NONE,    /* no debug info anywhere */
    AT_DEBUG_SELF,    /* the module file has DWARF */
    AT_DEBUG_FILE,    /* a separate file: path, st */
} at_debug_kind;

typedef struct at_debug_source {
    at_debug_kind kind;
    char *path;
    struct stat st;
} at_debug_source;

typedef struct at_module_env at_module_env;
/* The debug source of the module file `file` (elf, build id hex), under
 * the resolver's search path. */
void at_debug_source_find(at_debug_source *s, Elf *elf, const char *file, const char *hex,
                          const at_module_env *env, const struct stat *main_st);
/* Whether libdwfl, once it has looked (after a lookup), took what s says. */
bool at_debug_source_matches(const at_debug_source *s, Dwfl_Module *mod);
/* "self", "none", or "PATH SIZE MTIME INODE" (a new string); NULL for UNKNOWN. */
char *at_debug_source_text(const at_debug_source *s);
void at_debug_source_clear(at_debug_source *s);
/* An ELF file's build id as lower-case hex (a new string), or NULL. */
char *at_elf_build_id_hex(Elf *elf);
/* DIR/.build-id/xx/rest.debug for build id hex (at least 3 digits). */
char *at_build_id_debug_path(const char *dir, const char *hex);
/* "PATH SIZE MTIME INODE": what the cache key says of a file it depends on. */
char *at_file_identity(const char *path, const struct stat *st);

typedef struct at_module {
    char *path;          /* as the trace names it */
    char *build_id;      /* traced build id, lower-case hex, or NULL */
    at_module_state state;
    char *problem;       /* the warning for a module that is not OK */
    Dwfl *dwfl;          /* one Dwfl per file (see resolve_module.c) */
    Dwfl_Module *mod;
    bool absolute;       /* ET_EXEC: trace addresses are the file's own */
    at_symindex *syms;   /* built on the first symbol-table lookup */
    at_unitindex *units; /* built when libdwfl first finds no unit */
    /* What its answers depend on, for the resolver's disk cache: the file
     * opened (path, size, mtime, inode), its build id (read from it and
     * equal to the traced one) and its debug source; NULL when it must not
     * be cached (no traced build id, another one, a source not known). */
    char *fingerprint;
    at_debug_source debug; /* the predicted debug source */
    bool looked_up;        /* a lookup ran: libdw has read its debug info */
} at_module;

/* Where and how modules are looked for; owned by the resolver. */
struct at_module_env {
    const Dwfl_Callbacks *callbacks;
    const char *sysroot;           /* or NULL */
    const char *const *build_id_dirs; /* absolute debug dirs, searched in order */
    size_t nbuild_id_dirs;
};

/* Opens the module file `path` (under the sysroot) and checks it against
 * the traced build id (NULL: no check). Always fills m; m->state says
 * whether it can be used and m->problem why not. */
void at_module_open(at_module *m, const char *path, const char *build_id, const at_module_env *env);
void at_module_close(at_module *m);

/* One frame of what an address says: function (demangled with parameters,
 * or a C name with "()"), and source position. NULLs/0 when unknown. */
typedef struct at_symframe {
    char *function;
    char *file;
    unsigned line;
} at_symframe;

/* Resolves `addr` (the file's own address, the call instruction): the
 * inline chain innermost first, the real function last. Returns the number
 * of frames in *out (malloc'ed), 0 when nothing at all is known. */
size_t at_module_lookup(at_module *m, uint64_t addr, at_demangler *dm, at_symframe **out);
void at_symframes_free(at_symframe *f, size_t n);

#endif
