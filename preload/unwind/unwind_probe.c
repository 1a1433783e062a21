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

/* ---- libunwind's slots (hook/got.c rewrites them) ----------------------- */

static int redirect_slot(const struct at_got *g, void **slot, const char *name, void *arg)
{
    (void)arg;
    void *fn = redirect_for(name);
    return fn && at_got_store(g, slot, fn) != 0 ? -1 : 0;
}

static int process_vm_readv_works(void)
{
    static const char here = 1;
    return probe_byte(&here) == 1;
}

int at_unwind_probe_install(void *handle)
{
    struct link_map *lm;
    struct at_got g;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || at_got_open_base(&g, lm->l_addr) != 0 ||
        !process_vm_readv_works())
        return -1;
    return at_got_each(&g, redirect_slot, NULL) != 0 ? -1 : 0;
}
