/*
 * postproc/resolve/resolve_lookup.c: what one address of a module says, from DWARF
 * when there is some and from the symbol table otherwise.
 *
 * The inline chain: dwarf_getscopes gives the innermost scope containing
 * the address, but above an inlined_subroutine it continues with the
 * *abstract* definition's scopes, not the callers; dwarf_getscopes_die on
 * that innermost scope gives the concrete nesting instead (lexical blocks,
 * inlined_subroutine, ..., the subprogram it was inlined into). Frame 0's
 * position is the line table's row for the address; each outer frame's
 * position is the DW_AT_call_file/DW_AT_call_line of the inlined call just
 * inside it.
 *
 * Names: resolve_names.c (a linkage name demangled, or for C++ without
 * one the name built from its scopes and parameter types; C gets "()").
 */
#include "resolve_module.h"
#include "resolve_names.h"
#include "xalloc.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *with_parens(const char *name)
{
    size_t n = strlen(name);
    char *s = malloc(n + 3);
    if (!s)
        abort();
    memcpy(s, name, n);
    memcpy(s + n, "()", 3);
    return s;
}

/* A symbol or linkage name as the text shows it. */
static char *function_name(const char *name, at_demangler *dm)
{
    char *d = at_demangle(dm, name);
    return d ? d : with_parens(name);
}

/* A relative source path joined with its compilation directory. libdw
 * already joins line-table names with the directory table, whose entry 0
 * is the compilation directory; what stays relative is then either under a
 * relative compilation directory (Debian's glibc: "./libio"), which must
 * not be joined twice, or a name libdw left alone. */
static char *full_path(const char *file, const char *comp_dir)
{
    if (!file)
        return NULL;
    size_t a = comp_dir ? strlen(comp_dir) : 0, b = strlen(file);
    if (file[0] == '/' || a == 0 || (strncmp(file, comp_dir, a) == 0 && file[a] == '/'))
        return at_xstrdup(file);
    char *s = malloc(a + b + 2);
    if (!s)
        abort();
    memcpy(s, comp_dir, a);
    size_t n = a;
    if (comp_dir[a - 1] != '/')
        s[n++] = '/';
    memcpy(s + n, file, b + 1);
    return s;
}

static const char *attr_string(Dwarf_Die *die, unsigned name)
{
    Dwarf_Attribute a;
    return dwarf_formstring(dwarf_attr_integrate(die, name, &a));
}

/* The compilation unit covering addr (a module address), in *buf. libdwfl
 * finds it through .debug_aranges, which clang does not write by default
 * (and libdw 0.188 does not make up): then the units' own ranges are
 * asked, as addr2line does (resolve_units.c). *bias is set either way. */
static Dwarf_Die *cu_of(at_module *m, Dwarf_Addr addr, Dwarf_Addr *bias, Dwarf_Die *buf)
{
    Dwarf_Die *cu = dwfl_module_addrdie(m->mod, addr, bias);
    if (cu)
        return cu;
    Dwarf *dw = dwfl_module_getdwarf(m->mod, bias);
    if (!dw)
        return NULL;
    if (!m->units)
        m->units = at_unitindex_build(dw);
    return at_unitindex_find(m->units, addr - *bias, buf);
}

/* The line table's file and line for addr (frame 0's position). Line 0
 * is code of no particular line (compiler-generated: a jump table, a
 * spill); its file is still the function's, which the callstack filters
 * match on, so it is kept with line 0. cu: the unit cu_of found, for a
 * module libdwfl cannot map addresses to units in by itself (or NULL). */
static void line_of(Dwfl_Module *mod, Dwarf_Addr addr, Dwarf_Die *cu, Dwarf_Addr bias, at_symframe *f)
{
    int line = 0;
    const char *file = NULL, *comp_dir = NULL;
    Dwfl_Line *l = dwfl_module_getsrc(mod, addr);
    if (l) {
        file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
        comp_dir = dwfl_line_comp_dir(l);
    } else if (cu) {
        Dwarf_Line *dl = dwarf_getsrc_die(cu, addr - bias);
        if (!dl || dwarf_lineno(dl, &line) != 0)
            return;
        file = dwarf_linesrc(dl, NULL, NULL);
        comp_dir = attr_string(cu, DW_AT_comp_dir);
    }
    if (!file || line < 0)
        return;
    f->file = full_path(file, comp_dir);
    f->line = (unsigned)line;
}

/* Where an inlined_subroutine was called from. */
static void call_site_of(Dwarf_Die *inlined, Dwarf_Die *cu, at_symframe *f)
{
    Dwarf_Attribute a;
    Dwarf_Word file_idx = 0, line = 0;
    if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &a), &file_idx) != 0 ||
        dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &a), &line) != 0 || line == 0)
        return;
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || file_idx >= nfiles)
        return;
    const char *file = dwarf_filesrc(files, file_idx, NULL, NULL);
    if (!file)
        return;
    f->file = full_path(file, attr_string(cu, DW_AT_comp_dir));
    f->line = (unsigned)line;
}

static bool is_function(Dwarf_Die *die)
{
    int tag = dwarf_tag(die);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point;
}

/* The concrete scopes around addr, innermost first, or 0. */
static int concrete_scopes(Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Die **scopes)
{
    Dwarf_Die *first = NULL;
    int n = dwarf_getscopes(cu, addr, &first);
    if (n <= 0) {
        free(first);
        return 0;
    }
    Dwarf_Die innermost = first[0];
    free(first);
    n = dwarf_getscopes_die(&innermost, scopes);
    if (n <= 0) {
        free(*scopes);
        *scopes = NULL;
        return 0;
    }
    return n;
}

static size_t from_dwarf(at_module *m, Dwarf_Addr addr, at_demangler *dm, at_symframe **out)
{
    Dwfl_Module *mod = m->mod;
    Dwarf_Addr bias = 0;
    Dwarf_Die cu_buf;
    Dwarf_Die *cu = cu_of(m, addr, &bias, &cu_buf);
    if (!cu)
        return 0;
    Dwarf_Die *scopes = NULL;
    int n = concrete_scopes(cu, addr - bias, &scopes);
    size_t nf = 0;
    for (int i = 0; i < n; i++)
        if (is_function(&scopes[i])) {
            nf++;
            if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
                break; /* the real function: what contains it is not a caller */
        }
    if (nf == 0) {
        free(scopes);
        return 0;
    }
    at_symframe *f = calloc(nf, sizeof *f);
    if (!f)
        abort();
    Dwarf_Die *inner = NULL; /* the inlined call just inside the current frame */
    size_t k = 0;
    for (int i = 0; i < n && k < nf; i++) {
        if (!is_function(&scopes[i]))
            continue;
        f[k].function = at_die_function_name(&scopes[i], dm);
        if (inner)
            call_site_of(inner, cu, &f[k]);
        else
            line_of(mod, addr, cu, bias, &f[k]);
        inner = &scopes[i];
        k++;
    }
    free(scopes);
    *out = f;
    return nf;
}

static size_t from_symtab(at_module *m, Dwarf_Addr addr, at_demangler *dm, at_symframe **out)
{
    if (!m->syms)
        m->syms = at_symindex_build(m->mod);
    const char *name = at_symindex_find(m->syms, addr);
    if (!name)
        return 0;
    at_symframe *f = calloc(1, sizeof *f);
    if (!f)
        abort();
    f->function = function_name(name, dm);
    Dwarf_Addr bias = 0;
    Dwarf_Die cu_buf;
    line_of(m->mod, addr, cu_of(m, addr, &bias, &cu_buf), bias, f);
    *out = f;
    return 1;
}

size_t at_module_lookup(at_module *m, uint64_t addr, at_demangler *dm, at_symframe **out)
{
    *out = NULL;
    if (m->state != AT_MODULE_OK || !m->mod)
        return 0;
    m->looked_up = true;
    size_t n = from_dwarf(m, addr, dm, out);
    if (n == 0)
        n = from_symtab(m, addr, dm, out);
    /* DWARF that names no function for frame 0 (no name attribute): the
     * symbol table may still know it. */
    if (n > 0 && !(*out)[0].function) {
        at_symframe *s = NULL;
        if (from_symtab(m, addr, dm, &s) == 1) {
            (*out)[0].function = s->function;
            s->function = NULL;
            at_symframes_free(s, 1);
        }
    }
    return n;
}

void at_symframes_free(at_symframe *f, size_t n)
{
    if (!f)
        return;
    for (size_t i = 0; i < n; i++) {
        free(f[i].function);
        free(f[i].file);
    }
    free(f);
}
