/*
 * postproc/outfile.c: outputs written beside their name and renamed over
 * it when complete (outfile.h).
 *
 * Decisions:
 * - The temporary file is ".NAME.XXXXXX" in NAME's own directory, so the
 *   rename is atomic (same file system) and a reader of NAME sees the old
 *   file or the new one, never a part. A symbolic link is followed: the
 *   file it points to is replaced, the link stays.
 * - Only a regular file (or a missing name) gets a temporary file. A FIFO,
 *   a terminal or /dev/null is written in place: there is nothing to keep.
 * - A directory where no temporary file can be made is an error, not a
 *   reason to write in place: writing in place is what destroyed files.
 * - The new file gets the old one's permission bits (a rename would
 *   otherwise change them), or 0666 less the umask for a new name, as
 *   open(2) with O_CREAT would give.
 * - SIGINT, SIGTERM and SIGHUP: a handler removes every temporary file
 *   still open, says in one line that the old file was left as it was,
 *   then dies of the same signal (the caller's shell sees the signal).
 *   The table it reads is fixed-size and filled before a slot is marked
 *   used, so the handler needs no lock and calls only unlink and write.
 */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"

#define MAX_OPEN 16

typedef struct slot {
    volatile sig_atomic_t used;
    int fd;
    bool existed;          /* the name held a file before */
    char tmp[PATH_MAX];    /* empty: written in place */
    char name[PATH_MAX];   /* what the temporary file becomes */
} slot;

static slot slots[MAX_OPEN];

static void say(const char *s)
{
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

/* Async-signal-safe: unlink, write, sigaction, raise. */
static void on_signal(int sig)
{
    for (int i = 0; i < MAX_OPEN; i++) {
        if (!slots[i].used || !slots[i].tmp[0])
            continue;
        unlink(slots[i].tmp);
        say(at_program_name);
        say(": interrupted: ");
        say(slots[i].name);
        say(slots[i].existed ? " left as it was (partial output removed)\n"
                             : " not written (partial output removed)\n");
    }
    struct sigaction dfl = { .sa_handler = SIG_DFL };
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
}

static void install_handlers(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old, sa = { .sa_handler = on_signal };
        sigemptyset(&sa.sa_mask);
        /* An ignored signal stays ignored (nohup, a shell's background job). */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

static mode_t new_file_mode(void)
{
    mode_t mask = umask(022);
    umask(mask);
    return 0666 & ~mask;
}

static slot *free_slot(void)
{
    for (int i = 0; i < MAX_OPEN; i++)
        if (!slots[i].used)
            return &slots[i];
    return NULL;
}

/* A temporary file beside name, into s; its descriptor or -1. */
static int open_beside(slot *s, const char *name, mode_t mode)
{
    size_t len = strlen(name);
    const char *slash = strrchr(name, '/');
    size_t dirlen = slash ? (size_t)(slash - name) + 1 : 0;
    if (len + 9 >= sizeof s->tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(s->tmp, name, dirlen);
    s->tmp[dirlen] = '.';
    memcpy(s->tmp + dirlen + 1, name + dirlen, len - dirlen);
    memcpy(s->tmp + len + 1, ".XXXXXX", 8);
    int fd = mkostemp(s->tmp, O_CLOEXEC);
    if (fd < 0) {
        s->tmp[0] = '\0';
        return -1;
    }
    if (fchmod(fd, mode) != 0) {
        int e = errno;
        close(fd);
        unlink(s->tmp);
        s->tmp[0] = '\0';
        errno = e;
        return -1;
    }
    return fd;
}

int at_outfile_open(const char *path)
{
    slot *s = free_slot();
    if (!s) {
        errno = EMFILE;
        return -1;
    }
    install_handlers();
    struct stat st;
    bool exists = stat(path, &st) == 0;
    char *target = NULL;
    int fd;
    if (exists && !S_ISREG(st.st_mode)) {
        /* A FIFO, a device: written in place, nothing to keep. */
        s->tmp[0] = '\0';
        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    } else {
        /* The file a symbolic link points to is what gets replaced. */
        struct stat lst;
        if (exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
            target = realpath(path, NULL);
        const char *name = target ? target : path;
        if (strlen(name) >= sizeof s->name) {
            free(target);
            errno = ENAMETOOLONG;
            return -1;
        }
        strcpy(s->name, name);
        fd = open_beside(s, name, exists ? st.st_mode & 07777 : new_file_mode());
    }
    if (fd < 0) {
        int e = errno;
        free(target);
        errno = e;
        return -1;
    }
    if (!s->tmp[0]) {
        size_t n = strlen(path);
        memcpy(s->name, path, n < sizeof s->name ? n + 1 : sizeof s->name);
        s->name[sizeof s->name - 1] = '\0';
    }
    free(target);
    s->fd = fd;
    s->existed = exists;
    s->used = 1;
    return fd;
}

static slot *slot_of(int fd)
{
    for (int i = 0; i < MAX_OPEN; i++)
        if (slots[i].used && slots[i].fd == fd)
            return &slots[i];
    return NULL;
}

/* After the descriptor was closed (closed_ok: without an error). */
static int finish(slot *s, bool closed_ok, bool ok, int err)
{
    int rc = 0;
    if (s->tmp[0]) {
        if (ok && closed_ok && rename(s->tmp, s->name) != 0) {
            err = errno;
            closed_ok = false;
        }
        if (!ok || !closed_ok) {
            unlink(s->tmp);
            fprintf(stderr, "%s: %s %s (partial output removed)\n", at_program_name, s->name,
                    s->existed ? "left as it was" : "not written");
        }
    }
    if (!closed_ok) {
        errno = err ? err : EIO;
        rc = -1;
    }
    s->used = 0;
    s->tmp[0] = '\0';
    return rc;
}

int at_outfile_close(int fd, bool ok)
{
    slot *s = slot_of(fd);
    int closed = close(fd);
    int err = errno;
    if (!s)
        return closed;
    /* Mark it unused for the handler before the name is taken away. */
    return finish(s, closed == 0, ok, err);
}

FILE *at_outfile_fopen(const char *path)
{
    int fd = at_outfile_open(path);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        at_outfile_close(fd, false);
        errno = e;
    }
    return f;
}

int at_outfile_fclose(FILE *f, bool ok)
{
    slot *s = slot_of(fileno(f));
    bool had_error = ferror(f) != 0;
    int closed = fclose(f);
    int err = closed != 0 ? errno : had_error ? EIO : 0;
    if (!s)
        return closed != 0 || had_error ? (errno = err, -1) : 0;
    return finish(s, closed == 0 && !had_error, ok, err);
}
