/*
 * postproc/resolve/resolve_debugsrc.c: which file libdwfl will read a module's
 * debug info from, found without loading any DWARF (the resolver's disk
 * cache keys on it: docs/resolve.md, "The cache").
 *
 * It follows libdwfl's own order (dwfl_module_getdwarf, then
 * dwfl_standard_find_debuginfo with the resolver's search path):
 *   1. the module file itself when it has DWARF sections;
 *   2. DIR/.build-id/xx/rest.debug in each absolute element of the path,
 *      the first that exists, taken only when its build id is the module's;
 *   3. the .gnu_debuglink name (or BASENAME.debug without one) in each
 *      element: "" is the file's directory, a relative element a
 *      subdirectory of it, an absolute one DIR/<file's directory>/ with
 *      leading components dropped one at a time; the first whose build id
 *      is the module's (libdwfl validates by build id when the module has
 *      one, and only modules with one are cached);
 *   4. step 3 again for the file's real path when it is a symbolic link.
 * Only cheap things are read: section headers and notes.
 *
 * A guess that goes wrong must not serve wrong answers, so the guess is
 * checked against what libdwfl really opened after the module's first
 * lookup (at_debug_source_matches); the resolver writes a module's answers
 * only when it agreed. A guess that cannot be made (an unreadable
 * candidate, nothing found while debuginfod may be asked) is UNKNOWN: the
 * module is not cached.
 */
#include "frame.h"
#include "resolve_module.h"
#include "xalloc.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether elf has a section libdw reads as DWARF (a file with any of these
 * is its own debug info: libdwfl then looks no further). */
static bool has_dwarf(Elf *elf)
{
    static const char *const names[] = { ".debug_info", ".debug_line", ".debug_frame",
                                         ".zdebug_info", ".zdebug_line", ".zdebug_frame" };
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return false;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        const char *name;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
            !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
            continue;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(name, names[i]) == 0)
                return true;
    }
    return false;
}

/* The build id of an ELF file as lower-case hex, or NULL. */
char *at_elf_build_id_hex(Elf *elf)
{
    const void *bits = NULL;
    ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &bits) : -1;
    if (n <= 0)
        return NULL;
    char *s = at_xmalloc(2 * (size_t)n + 1);
    for (ssize_t i = 0; i < n; i++)
        sprintf(s + 2 * i, "%02x", ((const unsigned char *)bits)[i]);
    s[2 * n] = '\0';
    return s;
}

char *at_build_id_debug_path(const char *dir, const char *hex)
{
    return at_xasprintf("%s/.build-id/%.2s/%s.debug", dir, hex, hex + 2);
}

char *at_file_identity(const char *path, const struct stat *st)
{
    return at_xasprintf("%s %lld %lld.%09ld %llu", path, (long long)st->st_size,
                        (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
                        (unsigned long long)st->st_ino);
}

/* The outcome of trying one candidate. */
typedef enum { TRY_ABSENT, TRY_INVALID, TRY_TAKEN, TRY_ERROR } try_result;

/* Opens candidate path: TAKEN (s filled) when it is another file than the
 * module's with the module's build id. */
static try_result try_candidate(at_debug_source *s, const char *path, const char *hex,
                                const struct stat *main_st)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? TRY_ABSENT : TRY_ERROR;
    struct stat st;
    try_result r = TRY_INVALID;
    if (fstat(fd, &st) != 0) {
        r = TRY_ERROR;
    } else if (st.st_ino == main_st->st_ino && st.st_dev == main_st->st_dev) {
        r = TRY_ABSENT; /* the module file by another name */
    } else {
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        char *have = at_elf_build_id_hex(elf);
        if (have && strcmp(have, hex) == 0) {
            *s = (at_debug_source){ .kind = AT_DEBUG_FILE, .path = at_xstrdup(path), .st = st };
            r = TRY_TAKEN;
        }
        free(have);
        elf_end(elf);
    }
    close(fd);
    return r;
}

/* Step 2: the first DIR/.build-id/xx/rest.debug that exists decides. */
static try_result by_build_id(at_debug_source *s, const char *const *dirs, size_t ndirs,
                              const char *hex, const struct stat *main_st)
{
    if (strlen(hex) < 3)
        return TRY_ABSENT;
    for (size_t i = 0; i < ndirs; i++) {
        if (dirs[i][0] != '/')
            continue;
        char *p = at_build_id_debug_path(dirs[i], hex);
        try_result r = try_candidate(s, p, hex, main_st);
        free(p);
        if (r != TRY_ABSENT)
            return r;
    }
    return TRY_ABSENT;
}

/* Tries DIR/SUB/NAME (either may be NULL), then BASENAME there too when
 * the link name was made up. */
static try_result try_in(at_debug_source *s, const char *dir, const char *sub, const char *name,
                         const char *alt, const char *hex, const struct stat *main_st)
{
    for (int k = 0; k < 2; k++) {
        const char *file = k == 0 ? name : alt;
        if (!file)
            break;
        char *p = dir && sub ? at_xasprintf("%s/%s/%s", dir, sub, file)
                  : dir      ? at_xasprintf("%s/%s", dir, file)
                  : sub      ? at_xasprintf("%s/%s", sub, file)
                             : at_xstrdup(file);
        try_result r = try_candidate(s, p, hex, main_st);
        free(p);
        if (r != TRY_ABSENT)
            return r;
    }
    return TRY_ABSENT;
}

/* One element of the search path, by name (step 3). */
static try_result in_element(at_debug_source *s, const char *elem, const char *file_dir,
                             const char *link, const char *alt, const char *hex,
                             const struct stat *main_st)
{
    if (elem[0] == '\0')
        return try_in(s, file_dir, NULL, link, NULL, hex, main_st);
    if (elem[0] != '/')
        return try_in(s, file_dir, elem, link, alt, hex, main_st);
    if (!file_dir || file_dir[0] != '/')
        return TRY_ABSENT;
    /* DIR/a/b/c/NAME, DIR/b/c/NAME, DIR/c/NAME, DIR/NAME: the first found. */
    for (const char *sub = file_dir;;) {
        sub = strchr(sub, '/');
        if (sub)
            sub++;
        if (sub && !*sub)
            return TRY_ABSENT;
        try_result r = try_in(s, elem, sub, link, alt, hex, main_st);
        if (r != TRY_ABSENT || !sub)
            return r;
    }
}

/* Step 3 for one file name: each element of the path in order. */
static try_result by_name(at_debug_source *s, const char *path, const char *file,
                          const char *debuglink, const char *hex, const struct stat *main_st)
{
    const char *base = at_path_base(file);
    char *file_dir = base == file ? NULL : at_xstrndup(file, (size_t)(base - 1 - file));
    char *made_up = debuglink ? NULL : at_xasprintf("%s.debug", base);
    const char *link = debuglink ? debuglink : made_up;
    const char *alt = debuglink ? NULL : base;
    char *copy = at_xstrdup(path), *rest = copy, *elem;
    try_result r = TRY_ABSENT;
    while (r != TRY_TAKEN && r != TRY_ERROR && (elem = strsep(&rest, ":")))
        r = in_element(s, elem, file_dir, link, alt, hex, main_st);
    free(copy);
    free(made_up);
    free(file_dir);
    return r == TRY_INVALID ? TRY_ABSENT : r;
}

void at_debug_source_find(at_debug_source *s, Elf *elf, const char *file, const char *hex,
                          const at_module_env *env, const struct stat *main_st)
{
    *s = (at_debug_source){ .kind = AT_DEBUG_UNKNOWN };
    if (!elf || !hex)
        return;
    if (has_dwarf(elf)) {
        s->kind = AT_DEBUG_SELF;
        return;
    }
    GElf_Word crc;
    const char *link = dwelf_elf_gnu_debuglink(elf, &crc);
    const char *path = *env->callbacks->debuginfo_path;
    try_result r = by_build_id(s, env->build_id_dirs, env->nbuild_id_dirs, hex, main_st);
    if (r == TRY_ABSENT || r == TRY_INVALID)
        r = by_name(s, path, file, link, hex, main_st);
    if (r == TRY_ABSENT) {
        char *canon = realpath(file, NULL);
        if (canon && strcmp(canon, file) != 0)
            r = by_name(s, path, canon, link, hex, main_st);
        free(canon);
    }
    /* Nothing here: libdwfl may still ask debuginfod, whose answer is not ours to predict. */
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (r == TRY_ABSENT && !(urls && urls[0]))
        s->kind = AT_DEBUG_NONE;
}

bool at_debug_source_matches(const at_debug_source *s, Dwfl_Module *mod)
{
    const char *debugfile = NULL;
    Dwarf_Addr bias;
    if (!dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile))
        return false;
    if (!debugfile) /* no separate file: the module's own DWARF or none at all */
        return s->kind == (dwfl_module_getdwarf(mod, &bias) ? AT_DEBUG_SELF : AT_DEBUG_NONE);
    struct stat st;
    return s->kind == AT_DEBUG_FILE && stat(debugfile, &st) == 0 && st.st_ino == s->st.st_ino &&
           st.st_dev == s->st.st_dev;
}

char *at_debug_source_text(const at_debug_source *s)
{
    switch (s->kind) {
    case AT_DEBUG_SELF:
        return at_xstrdup("self");
    case AT_DEBUG_NONE:
        return at_xstrdup("none");
    case AT_DEBUG_FILE:
        return at_file_identity(s->path, &s->st);
    default:
        return NULL;
    }
}

void at_debug_source_clear(at_debug_source *s)
{
    free(s->path);
    *s = (at_debug_source){ .kind = AT_DEBUG_UNKNOWN };
}
