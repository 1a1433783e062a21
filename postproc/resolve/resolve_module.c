/*
 * postproc/resolve/resolve_module.c: opening a module file and checking that it is
 * the one that ran.
 *
 * Each file gets a Dwfl of its own, reported at base 0 with add_p_vaddr, so
 * libdwfl addresses are the file's own addresses (bias 0) for shared
 * objects, PIE and non-PIE executables alike: the resolver subtracts the
 * map's load base itself (TEXT_FORMAT.md section 3: address - START for
 * ET_DYN, the address itself for ET_EXEC). One Dwfl per file, rather than
 * one for the whole trace at the traced addresses, means a library
 * unloaded and loaded again at another address (or a map replaced by a
 * later one over the same range) needs neither a second open nor
 * overlapping modules, which a Dwfl does not allow.
 *
 * Separate debug info is found by libdwfl's standard search (the file
 * itself, then build id and .gnu_debuglink under the debuginfo path the
 * resolver builds). When the file itself is missing but the trace recorded
 * its build id, the debug file of that build id stands in for it: it has
 * the symbols and the DWARF, which is all resolving needs (a trace from
 * another machine, with only the -dbg packages installed here).
 */
#include "resolve_module.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file to open for a traced path: under the sysroot when it is absolute. */
static char *host_path(const char *path, const at_module_env *env)
{
    if (env->sysroot && path[0] == '/')
        return at_xasprintf("%s%s", env->sysroot, path);
    return at_xasprintf("%s", path);
}

/* DIR/.build-id/xx/rest.debug of the first directory that has it, opened. */
static int open_by_build_id(const char *hex, const at_module_env *env, char **found)
{
    if (!hex || strlen(hex) < 3)
        return -1;
    for (size_t i = 0; i < env->nbuild_id_dirs; i++) {
        char *p = at_build_id_debug_path(env->build_id_dirs[i], hex);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            *found = p;
            return fd;
        }
        free(p);
    }
    return -1;
}

static void check_build_id(at_module *m, const char *file, const char *have)
{
    if (!have || strcasecmp(have, m->build_id) != 0) {
        m->state = AT_MODULE_MISMATCH;
        m->problem = at_xasprintf("%s: build id %s is not the traced %s (the file changed since the "
                               "run); its frames are shown as \"from %s\" only",
                               file, have ? have : "(none)", m->build_id, m->path);
    }
}

/* The disk cache's fingerprint of an opened module (resolve_module.h), or
 * NULL. `have` is the build id read from the file itself: the trace's
 * claim alone never makes a module cacheable. */
static char *fingerprint(at_module *m, Elf *elf, const char *file, const char *have,
                         const struct stat *st, const at_module_env *env)
{
    if (m->state != AT_MODULE_OK || !m->build_id || !have || strcasecmp(have, m->build_id) != 0)
        return NULL;
    at_debug_source_find(&m->debug, elf, file, have, env, st);
    char *debug = at_debug_source_text(&m->debug);
    if (!debug)
        return NULL;
    char *id = at_file_identity(file, st);
    char *s = at_xasprintf("module=%s\tfile=%s\tbuild-id=%s\tkind=%s\tdebug=%s", m->path, id, have,
                           m->absolute ? "exec" : "dyn", debug);
    free(id);
    free(debug);
    return s;
}

static void mark_missing(at_module *m, const char *file, const char *why)
{
    m->state = AT_MODULE_MISSING;
    m->problem = at_xasprintf("cannot read %s: %s; its frames are shown as \"from %s\" only", file, why,
                           m->path);
}

void at_module_open(at_module *m, const char *path, const char *build_id, const at_module_env *env)
{
    *m = (at_module){ .path = at_xstrdup_or_null(path), .build_id = at_xstrdup_or_null(build_id) };
    char *file = host_path(path, env);
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    bool stand_in = false;
    if (fd < 0) {
        int err = errno;
        char *debug = NULL;
        fd = open_by_build_id(build_id, env, &debug);
        if (fd < 0) {
            mark_missing(m, file, strerror(err));
            free(file);
            return;
        }
        free(file);
        file = debug;
        stand_in = true;
    }

    struct stat st;
    if (fstat(fd, &st) != 0)
        st = (struct stat){ 0 };
    m->dwfl = dwfl_begin(env->callbacks);
    if (m->dwfl) {
        dwfl_report_begin(m->dwfl);
        m->mod = dwfl_report_elf(m->dwfl, path, file, fd, 0, true);
        dwfl_report_end(m->dwfl, NULL, NULL);
    }
    if (!m->mod) {
        close(fd); /* consumed only on success */
        mark_missing(m, file, dwfl_errmsg(-1));
        free(file);
        return;
    }

    GElf_Addr bias = 0;
    Elf *elf = dwfl_module_getelf(m->mod, &bias);
    GElf_Ehdr ehdr;
    if (elf && gelf_getehdr(elf, &ehdr))
        m->absolute = ehdr.e_type == ET_EXEC;
    char *have = at_elf_build_id_hex(elf);
    /* A stand-in was found by the traced build id: it matches by construction. */
    if (m->build_id && !stand_in)
        check_build_id(m, file, have);
    m->fingerprint = fingerprint(m, elf, file, have, &st, env);
    free(have);
    free(file);
}

void at_module_close(at_module *m)
{
    at_symindex_free(m->syms);
    at_unitindex_free(m->units);
    if (m->dwfl)
        dwfl_end(m->dwfl);
    free(m->path);
    free(m->build_id);
    free(m->problem);
    free(m->fingerprint);
    at_debug_source_clear(&m->debug);
    *m = (at_module){ 0 };
}
