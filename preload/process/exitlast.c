/*
 * preload/process/exitlast.c: one function run after every exit handler
 * and every destructor of every loaded object, where memcheck looks for
 * leaks (it looks when the process is gone).
 *
 * Why not the tracer's destructor or an exit handler: glibc's exit() runs
 * the atexit and __cxa_atexit handlers (the program's, and the C++ static
 * objects of libraries, registered while they started, some before the
 * tracer), then _dl_fini, which runs the ELF destructors of every object,
 * the program first, then the tracer (preloaded, so next in line), then
 * the libraries the program uses. A scan from either place ran before a
 * library's destructor freed its block: "still reachable" where valgrind
 * saw it freed.
 *
 * How: after all of them exit() calls _IO_cleanup, which flushes every
 * stdio stream with output pending. A stream of our own (fopencookie: no
 * descriptor, a static buffer, so no allocation and nothing the program
 * sees) holding one byte is flushed there, and its write function is the
 * hook. It is armed only once the process is exiting (the tracer's
 * destructor or its last exit handler, whichever comes first): a
 * program's fflush(NULL) before that finds nothing pending. A destructor
 * that runs later and flushes every stream fires it early, where it is no
 * worse than before. The byte is never written anywhere.
 *
 * When the stream cannot be made (no memory) the caller runs its
 * function at once, as before.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <sys/types.h>

#include "tracer.h"

static void (*last_fn)(void);
static atomic_int fired;
static FILE *stream;
static char buf[64];

static ssize_t on_flush(void *cookie, const char *data, size_t size)
{
    (void)cookie;
    (void)data;
    if (!atomic_exchange(&fired, 1) && last_fn)
        last_fn();
    return (ssize_t)size;
}

static int on_close(void *cookie)
{
    (void)cookie;
    /* fcloseall() by a destructor, or the stream flushed on close. */
    if (!atomic_exchange(&fired, 1) && last_fn)
        last_fn();
    return 0;
}

int at_exit_last(void (*fn)(void))
{
    if (stream)
        return 0;
    last_fn = fn;
    cookie_io_functions_t io = { .write = on_flush, .close = on_close };
    FILE *f = fopencookie(NULL, "w", io);
    if (!f)
        return -1;
    if (setvbuf(f, buf, _IOFBF, sizeof buf) != 0 || fputc('.', f) == EOF) {
        atomic_store(&fired, 1);   /* closing it must not run fn */
        fclose(f);
        return -1;
    }
    stream = f;
    return 0;
}

int at_exit_last_done(void)
{
    return atomic_load(&fired);
}
