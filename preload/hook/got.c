/*
 * preload/hook/got.c: an object's imported-function slots (GOT), read and
 * rewritten.
 *
 * A call from one loaded object into another goes through a slot of the
 * caller's GOT that the loader filled in: a JUMP_SLOT relocation (a call
 * through the PLT) or a GLOB_DAT one (-fno-plt calls, and an address
 * taken). Rewriting the slot redirects that object's calls and nothing
 * else. An attached tracer (process/attach.c) has no LD_PRELOAD
 * interposition, so this is how it reaches the program's malloc family
 * (heaptrack's attach does the same); unwind_probe.c uses the same way to
 * point libunwind's own calls elsewhere.
 *
 * Decisions:
 * - Only the dynamic section is read (DT_SYMTAB, DT_STRTAB, DT_JMPREL,
 *   DT_RELA): it is mapped in every object, unlike section headers. Its
 *   addresses are absolute once the loader relocated them, offsets from
 *   the base where it did not (the vDSO): an address below the base is an
 *   offset.
 * - A slot in PT_GNU_RELRO (every slot with -z now, GLOB_DAT ones always)
 *   is read-only after start-up: its page is made writable for the store
 *   and read-only again. Other slots are stored to at once. The store is
 *   one aligned 8-byte write, so a thread calling through the slot meets
 *   the old function or the new one, never half of each.
 * - REL (not RELA) tables are not x86-64's and are refused.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tracer.h"

static uintptr_t dyn_addr(const struct at_got *g, uintptr_t v)
{
    return v < g->base ? g->base + v : v;
}

int at_got_open(struct at_got *g, const struct dl_phdr_info *info)
{
    memset(g, 0, sizeof *g);
    g->base = info->dlpi_addr;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(g->base + ph->p_vaddr);
        if (ph->p_type == PT_GNU_RELRO) {
            g->relro_lo = g->base + ph->p_vaddr;
            g->relro_hi = g->relro_lo + ph->p_memsz;
        }
    }
    if (!dyn)
        return -1;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: g->symtab = (const void *)dyn_addr(g, d->d_un.d_ptr); break;
        case DT_STRTAB: g->strtab = (const char *)dyn_addr(g, d->d_un.d_ptr); break;
        case DT_JMPREL: g->jmprel = (const void *)dyn_addr(g, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: g->njmprel = d->d_un.d_val / sizeof(ElfW(Rela)); break;
        case DT_RELA: g->rela = (const void *)dyn_addr(g, d->d_un.d_ptr); break;
        case DT_RELASZ: g->nrela = d->d_un.d_val / sizeof(ElfW(Rela)); break;
        case DT_PLTREL:
            if (d->d_un.d_val != DT_RELA)
                return -1;
            break;
        }
    }
    if (!g->symtab || !g->strtab)
        return -1;
    if (!g->jmprel)
        g->njmprel = 0;
    if (!g->rela)
        g->nrela = 0;
    return 0;
}

static int open_at_base(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct at_got *g = data;
    if (info->dlpi_addr != g->base)
        return 0;
    return at_got_open(g, info) == 0 ? 1 : 2;
}

int at_got_open_base(struct at_got *g, uintptr_t base)
{
    g->base = base;
    return dl_iterate_phdr(open_at_base, g) == 1 ? 0 : -1;
}

static int each_in(const struct at_got *g, const ElfW(Rela) *rel, size_t n, at_got_fn *fn,
                   void *arg)
{
    for (size_t i = 0; i < n; i++) {
        unsigned type = ELF64_R_TYPE(rel[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)g->symtab + ELF64_R_SYM(rel[i].r_info);
        if (sym->st_name == 0)
            continue;
        int rc = fn(g, (void **)(g->base + rel[i].r_offset), g->strtab + sym->st_name, arg);
        if (rc)
            return rc;
    }
    return 0;
}

int at_got_each(const struct at_got *g, at_got_fn *fn, void *arg)
{
    int rc = each_in(g, (const ElfW(Rela) *)g->jmprel, g->njmprel, fn, arg);
    return rc ? rc : each_in(g, (const ElfW(Rela) *)g->rela, g->nrela, fn, arg);
}

int at_got_store(const struct at_got *g, void **slot, void *value)
{
    uintptr_t a = (uintptr_t)slot;
    if (a < g->relro_lo || a >= g->relro_hi) {
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        return 0;
    }
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t page = a & ~(uintptr_t)(ps - 1);
    if (mprotect((void *)page, (size_t)ps, PROT_READ | PROT_WRITE) != 0)
        return -1;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    return mprotect((void *)page, (size_t)ps, PROT_READ);
}
