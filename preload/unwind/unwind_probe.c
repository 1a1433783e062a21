/*
 * preload/unwind/unwind_probe.c: libunwind checks memory without a descriptor.
 *
 * libunwind 1.6 (built with its default conservative checks) validates
 * every stack word it reads through a private pipe: pipe2() on its first
 * use, then per new page mincore(), read() of one byte from the pipe and
 * write() of one byte of the address into it (an unreadable address gives
 * EFAULT). Those are descriptors in the program's range that libunwind
 * keeps for the life of the process and never checks: a program that
 * closes every descriptor and opens files finds its files at the pipe's
 * numbers, and libunwind then reads its input and writes process memory
 * into its output; when its read fails, libunwind closes the old numbers
 * (by then the program's) and makes a new pipe at the lowest free ones
 * (0 and 1 in a daemon that closed its standard descriptors).
 *
 * So libunwind never gets a descriptor. After loading it, the tracer points
 * its own calls (its GOT slots; the program's calls are untouched) of
 * pipe/pipe2, read, write, close and syscall at the functions below: the
 * "pipe" is two negative numbers that no system call accepts, reading it
 * says "empty" (EAGAIN, which libunwind takes as healthy) and writing a
 * byte of an address to it asks the kernel whether the byte is readable
 * with process_vm_readv on our own pid - the same answer the pipe gave,
 * one system call fewer, and no descriptor at all. Every other call passes
 * through to libc unchanged. The same table points libunwind's mutex,
 * sigprocmask, mmap and munmap calls at unwind_locks.c and unwind_cache.c.
 *
 * If libunwind imports any of these calls and a slot cannot be rewritten,
 * or process_vm_readv is not allowed here (a seccomp filter), the tracer
 * does not use libunwind at all: glibc's backtrace() gives the same frames,
 * ~10x slower per call. A libunwind already loaded and used by the program
 * before the tracer started keeps the descriptors it made then (the
 * program's own choice).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tracer.h"

/* Negative, so no system call takes them for a descriptor, and not -1,
 * which libunwind takes for "no pipe". */
#define PROBE_RD (-1000)
#define PROBE_WR (-1001)

/* 1 when the byte at addr can be read, else -1 with EFAULT: what write()
 * of that byte into a pipe returns. */
static ssize_t probe_byte(const void *addr)
{
    char byte;
    struct iovec local = { &byte, 1 }, remote = { (void *)addr, 1 };
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1)
        return 1;
    errno = EFAULT;
    return -1;
}

static int probe_pipe(int fds[2])
{
    fds[0] = PROBE_RD;
    fds[1] = PROBE_WR;
    return 0;
}

static int probe_pipe2(int fds[2], int flags)
{
    (void)flags;
    return probe_pipe(fds);
}

static ssize_t probe_read(int fd, void *buf, size_t n)
{
    if (fd == PROBE_RD) {
        errno = EAGAIN;   /* an empty non-blocking pipe */
        return -1;
    }
    return read(fd, buf, n);
}

static ssize_t probe_write(int fd, const void *buf, size_t n)
{
    if (fd == PROBE_WR)
        return probe_byte(buf);
    return write(fd, buf, n);
}

static int probe_close(int fd)
{
    if (fd == PROBE_RD || fd == PROBE_WR)
        return 0;
    return close(fd);
}

/* libunwind writes through syscall(SYS_write, ...) so that ASan does not
 * see the read of a possibly bad address. */
static long probe_syscall(long nr, ...)
{
    va_list ap;
    long a[6];
    va_start(ap, nr);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (nr == SYS_write && (int)a[0] == PROBE_WR)
        return probe_byte((const void *)a[1]);
    return syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static const struct {
    const char *name;
    void *fn;
} redirects[] = {
    { "pipe", (void *)probe_pipe },   { "pipe2", (void *)probe_pipe2 },
    { "read", (void *)probe_read },   { "write", (void *)probe_write },
    { "close", (void *)probe_close }, { "syscall", (void *)probe_syscall },
    /* unwind_locks.c */
    { "pthread_mutex_lock", (void *)at_unwind_lock_probe },
    { "pthread_mutex_unlock", (void *)at_unwind_unlock_probe },
    { "sigprocmask", (void *)at_unwind_sigmask_probe },
    /* unwind_cache.c */
    { "mmap", (void *)at_unwind_mmap_probe }, { "munmap", (void *)at_unwind_munmap_probe },
};

static void *redirect_for(const char *name)
{
    for (size_t i = 0; i < sizeof redirects / sizeof *redirects; i++)
        if (strcmp(redirects[i].name, name) == 0)
            return redirects[i].fn;
    return NULL;
}

/* ---- the object's relocations ------------------------------------------- */

struct object {
    uintptr_t base;
    const ElfW(Sym) *symtab;
    const char *strtab;
    uintptr_t relro_lo, relro_hi;   /* read-only after relocation */
};

/* Dynamic-section addresses are relocated in place by the loader on
 * x86-64; an unrelocated one is an offset from the base. */
static uintptr_t dyn_ptr(const struct object *o, ElfW(Addr) v)
{
    return v < o->base ? o->base + v : v;
}

static int relro_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct object *o = data;
    if (info->dlpi_addr != o->base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            o->relro_lo = o->base + info->dlpi_phdr[i].p_vaddr;
            o->relro_hi = o->relro_lo + info->dlpi_phdr[i].p_memsz;
        }
    return 1;
}

static int store_slot(const struct object *o, void **slot, void *fn)
{
    uintptr_t a = (uintptr_t)slot;
    if (a < o->relro_lo || a >= o->relro_hi) {
        __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
        return 0;
    }
    uintptr_t page = a & ~(uintptr_t)4095;
    if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0)
        return -1;
    __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    return mprotect((void *)page, 4096, PROT_READ);
}

/* Rewrites the slots of `n` relocations at `rel`; -1 if one could not be. */
static int patch_relocs(const struct object *o, const ElfW(Rela) *rel, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned type = ELF64_R_TYPE(rel[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        const ElfW(Sym) *sym = &o->symtab[ELF64_R_SYM(rel[i].r_info)];
        void *fn = redirect_for(o->strtab + sym->st_name);
        if (fn && store_slot(o, (void **)(o->base + rel[i].r_offset), fn) != 0)
            return -1;
    }
    return 0;
}

static int process_vm_readv_works(void)
{
    static const char here = 1;
    return probe_byte(&here) == 1;
}

int at_unwind_probe_install(void *handle)
{
    struct link_map *lm;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm->l_ld)
        return -1;
    struct object o = { .base = lm->l_addr };
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmprel_size = 0, rela_size = 0;
    for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: o.symtab = (const ElfW(Sym) *)dyn_ptr(&o, d->d_un.d_ptr); break;
        case DT_STRTAB: o.strtab = (const char *)dyn_ptr(&o, d->d_un.d_ptr); break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_ptr(&o, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: jmprel_size = d->d_un.d_val; break;
        case DT_RELA: rela = (const ElfW(Rela) *)dyn_ptr(&o, d->d_un.d_ptr); break;
        case DT_RELASZ: rela_size = d->d_un.d_val; break;
        case DT_PLTREL:
            if (d->d_un.d_val != DT_RELA)
                return -1;
            break;
        }
    }
    if (!o.symtab || !o.strtab || !process_vm_readv_works())
        return -1;
    dl_iterate_phdr(relro_cb, &o);
    if (jmprel && patch_relocs(&o, jmprel, jmprel_size / sizeof *jmprel) != 0)
        return -1;
    if (rela && patch_relocs(&o, rela, rela_size / sizeof *rela) != 0)
        return -1;
    return 0;
}
