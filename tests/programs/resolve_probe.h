/*
 * tests/programs/resolve_probe.h: what the resolver's test programs share.
 * They print what a trace would hold, without the tracer: their own map
 * lines (with build ids) and, for each known allocation site, the return
 * address into it. The sites are marked in the sources with "@LABEL"
 * comments, from which the tests read the lines they expect.
 *
 * Output lines:  map PATH 0xSTART 0xEND BUILDID|-      site LABEL 0xADDR
 */
#ifndef RESOLVE_PROBE_H
#define RESOLVE_PROBE_H

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile resolve_sink;

/* Allocates like any allocation site and reports the return address into
 * its caller: the frame a tracer records for that call. */
__attribute__((noinline, unused)) static void *resolve_probe(const char *label, size_t n)
{
    void *p = malloc(n);
    printf("site %s %p\n", label, __builtin_return_address(0));
    resolve_sink = p;
    return p;
}

#ifdef RESOLVE_PRINT_MAPS
static void resolve_print_build_id(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const unsigned char *desc = (const unsigned char *)p + sizeof *n + ((n->n_namesz + 3) & ~3u);
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(p + sizeof *n, "GNU", 4) == 0) {
                for (unsigned k = 0; k < n->n_descsz; k++)
                    printf("%02x", desc[k]);
                return;
            }
            p = (const char *)desc + ((n->n_descsz + 3) & ~3u);
        }
    }
    printf("-");
}

/* START is the load base; for a non-PIE executable (dlpi_addr 0) that is
 * its lowest mapped address, as TEXT_FORMAT.md section 3 says. */
static int resolve_print_map(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    char exe[4096];
    const char *name = info->dlpi_name;
    if (!name || !name[0]) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n < 0)
            return 0;
        exe[n] = '\0';
        name = exe;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if ((ph->p_vaddr & ~(uint64_t)0xfff) < lo)
            lo = ph->p_vaddr & ~(uint64_t)0xfff;
        if (ph->p_vaddr + ph->p_memsz > hi)
            hi = ph->p_vaddr + ph->p_memsz;
    }
    if (lo == UINT64_MAX)
        return 0;
    printf("map %s 0x%llx 0x%llx ", name, (unsigned long long)(info->dlpi_addr + lo),
           (unsigned long long)(info->dlpi_addr + hi));
    resolve_print_build_id(info);
    printf("\n");
    return 0;
}

static void resolve_print_maps(void)
{
    dl_iterate_phdr(resolve_print_map, NULL);
}
#endif

#endif
