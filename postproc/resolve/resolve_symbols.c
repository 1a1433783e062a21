/*
 * postproc/resolve/resolve_symbols.c: a module's function symbols sorted by
 * address, built once, searched by bisection. dwfl_module_addrinfo scans
 * the whole symbol table on every call, which made modules without DWARF
 * (libstdc++, most system libraries without -dbg packages) the bulk of a
 * resolve run.
 *
 * Several names at one address (aliases such as malloc/__libc_malloc):
 * the global one wins over a weak one over a local one, as the linker sees
 * it; among equals, the first in the table.
 */
#include "resolve_module.h"

#include <gelf.h>
#include <stdlib.h>

typedef struct sym {
    uint64_t addr, size;
    const char *name; /* in the ELF's string table: lives as long as the Dwfl */
    int rank;         /* binding: 0 global, 1 weak, 2 local */
    size_t order;
} sym;

struct at_symindex {
    sym *syms;
    size_t n;
};

static int rank_of(unsigned char info)
{
    switch (GELF_ST_BIND(info)) {
    case STB_GLOBAL:
        return 0;
    case STB_WEAK:
        return 1;
    default:
        return 2;
    }
}

static int by_address(const void *pa, const void *pb)
{
    const sym *a = pa, *b = pb;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank - b->rank;
    return a->order < b->order ? -1 : a->order > b->order;
}

at_symindex *at_symindex_build(Dwfl_Module *mod)
{
    at_symindex *x = calloc(1, sizeof *x);
    if (!x)
        abort();
    int n = dwfl_module_getsymtab(mod);
    if (n <= 0)
        return x;
    x->syms = malloc((size_t)n * sizeof *x->syms);
    if (!x->syms)
        abort();
    for (int i = 1; i < n; i++) {
        GElf_Sym s;
        GElf_Addr addr = 0;
        GElf_Word shndx = 0;
        const char *name = dwfl_module_getsym_info(mod, i, &s, &addr, &shndx, NULL, NULL);
        int type = GELF_ST_TYPE(s.st_info);
        if (!name || !name[0] || s.st_shndx == SHN_UNDEF ||
            (type != STT_FUNC && type != STT_GNU_IFUNC))
            continue;
        x->syms[x->n++] = (sym){ .addr = addr, .size = s.st_size, .name = name,
                                 .rank = rank_of(s.st_info), .order = (size_t)i };
    }
    qsort(x->syms, x->n, sizeof *x->syms, by_address);
    /* Keep the preferred name of each address only. */
    size_t k = 0;
    for (size_t i = 0; i < x->n; i++)
        if (k == 0 || x->syms[k - 1].addr != x->syms[i].addr)
            x->syms[k++] = x->syms[i];
    x->n = k;
    return x;
}

const char *at_symindex_find(const at_symindex *x, uint64_t addr)
{
    size_t lo = 0, hi = x->n; /* first symbol above addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->syms[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* The nearest symbols below may be small ones inside a larger one: look
     * back a little for one whose extent covers addr. A sizeless symbol
     * (hand-written assembly) covers up to the next symbol. */
    for (size_t i = lo, steps = 0; i-- > 0 && steps < 8; steps++) {
        const sym *s = &x->syms[i];
        if (addr < s->addr + s->size || (s->size == 0 && i + 1 == lo))
            return s->name;
    }
    return NULL;
}

void at_symindex_free(at_symindex *x)
{
    if (!x)
        return;
    free(x->syms);
    free(x);
}
