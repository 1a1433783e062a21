/*
 * postproc/resolve/resolve_units.c: which compilation unit covers an address, for
 * modules libdwfl cannot answer that for.
 *
 * libdwfl maps addresses to units through .debug_aranges. clang writes
 * none unless asked (-gdwarf-aranges), and libdw 0.188 does not make them
 * up from the units, so every lookup in a clang-built module fails there.
 * The units' own ranges (DW_AT_low_pc/high_pc or DW_AT_ranges) say the
 * same: they are read once per module into a table sorted by start and
 * searched by bisection, so a module of thousands of units costs one pass,
 * not one pass per address.
 */
#include "resolve_module.h"
#include "xalloc.h"

#include <stdlib.h>

typedef struct unit_range {
    uint64_t start, end; /* [start, end) in the module's DWARF addresses */
    Dwarf_Off die;       /* the unit's DIE */
} unit_range;

struct at_unitindex {
    Dwarf *dw;
    unit_range *v;
    size_t n, cap;
};

static int by_start(const void *a, const void *b)
{
    const unit_range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void add(at_unitindex *x, uint64_t start, uint64_t end, Dwarf_Off die)
{
    if (start >= end)
        return;
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 64;
        x->v = at_xreallocarray(x->v, x->cap, sizeof *x->v);
    }
    x->v[x->n++] = (unit_range){ start, end, die };
}

at_unitindex *at_unitindex_build(Dwarf *dw)
{
    at_unitindex *x = at_xcalloc(1, sizeof *x);
    x->dw = dw;
    Dwarf_Off off = 0, next;
    size_t hsize;
    while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        if (dwarf_offdie(dw, off + hsize, &cu)) {
            Dwarf_Addr base, start, end;
            ptrdiff_t r = 0;
            while ((r = dwarf_ranges(&cu, r, &base, &start, &end)) > 0)
                add(x, start, end, dwarf_dieoffset(&cu));
        }
        off = next;
    }
    qsort(x->v, x->n, sizeof *x->v, by_start);
    return x;
}

Dwarf_Die *at_unitindex_find(const at_unitindex *x, uint64_t addr, Dwarf_Die *out)
{
    /* The last range starting at or before addr; units do not overlap. */
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->v[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr >= x->v[lo - 1].end)
        return NULL;
    return dwarf_offdie(x->dw, x->v[lo - 1].die, out);
}

void at_unitindex_free(at_unitindex *x)
{
    if (!x)
        return;
    free(x->v);
    free(x);
}
