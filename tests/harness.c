/* tests/harness.c: process spawning and file reading for integration tests. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_TMPDIRS 64
static char *tmpdirs[MAX_TMPDIRS];
static int ntmpdirs;

const char *h_root(void) { return AT_BUILD_ROOT; }

char *h_fmt(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    va_end(ap);
    return s;
}

char *h_path(const char *relative) { return h_fmt("%s/%s", h_root(), relative); }

char *h_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char *dir = h_fmt("%s/alloctrace-test.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir))
        abort();
    if (ntmpdirs < MAX_TMPDIRS)
        tmpdirs[ntmpdirs++] = dir;
    return dir;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

void h_cleanup(void)
{
    /* Keep the files of a failed run for a look: ALLOCTRACE_KEEP_TEST_FILES=1. */
    const char *keep = getenv("ALLOCTRACE_KEEP_TEST_FILES");
    for (int i = 0; i < ntmpdirs; i++) {
        if (!keep || !*keep)
            nftw(tmpdirs[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(tmpdirs[i]);
    }
    ntmpdirs = 0;
}

int h_teardown(void **state)
{
    (void)state;
    h_cleanup();
    return 0;
}

/* Appends what is readable on fd to *buf. Returns 0 at end of file. */
static int drain(int fd, char **buf, size_t *len)
{
    char chunk[65536];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : 0;
    if (n == 0)
        return 0;
    *buf = realloc(*buf, *len + (size_t)n + 1);
    memcpy(*buf + *len, chunk, (size_t)n);
    *len += (size_t)n;
    (*buf)[*len] = '\0';
    return 1;
}

/* Tests never share the resolver's disk cache with each other or with the
 * user: it is off unless a test names a directory of its own. */
#define NO_CACHE "ALLOCTRACE_CACHE_DIR="

static char **merged_env(const char *const extra[])
{
    size_t n = 0, m = 0;
    while (environ[n])
        n++;
    while (extra && extra[m])
        m++;
    char **env = calloc(n + m + 2, sizeof *env);
    size_t k = 0;
    int own_cache = 0;
    for (size_t i = 0; i < m; i++) {
        env[k++] = (char *)extra[i];
        own_cache |= strncmp(extra[i], NO_CACHE, strlen(NO_CACHE)) == 0;
    }
    if (!own_cache)
        env[k++] = NO_CACHE;
    for (size_t i = 0; i < n; i++) {
        /* An extra entry replaces the inherited one of the same name. */
        const char *eq = strchr(environ[i], '=');
        size_t len = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
        int shadowed = strncmp(environ[i], NO_CACHE, strlen(NO_CACHE)) == 0;
        for (size_t j = 0; j < m; j++)
            if (strncmp(extra[j], environ[i], len) == 0)
                shadowed = 1;
        if (!shadowed)
            env[k++] = environ[i];
    }
    return env;
}

h_result h_run(const char *const argv[], const char *const env[], const char *cwd)
{
    h_result r = { .status = -1, .out = calloc(1, 1), .err = calloc(1, 1) };
    int outp[2], errp[2];
    if (pipe(outp) || pipe(errp))
        abort();
    char **envp = merged_env(env);
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        dup2(outp[1], 1);
        dup2(errp[1], 2);
        close(outp[0]); close(errp[0]); close(outp[1]); close(errp[1]);
        if (cwd && chdir(cwd) != 0)
            _exit(126);
        execve(argv[0], (char *const *)argv, envp);
        execvpe(argv[0], (char *const *)argv, envp);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    free(envp);
    close(outp[1]);
    close(errp[1]);
    size_t outlen = 0, errlen = 0;
    struct pollfd fds[2] = { { outp[0], POLLIN, 0 }, { errp[0], POLLIN, 0 } };
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd >= 0 && fds[i].revents) {
                int more = i == 0 ? drain(fds[i].fd, &r.out, &outlen) : drain(fds[i].fd, &r.err, &errlen);
                if (!more) {
                    close(fds[i].fd);
                    fds[i].fd = -1;
                    open_fds--;
                }
            }
        }
    }
    int ws;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    return r;
}

h_result h_sh(const char *fmt, ...)
{
    va_list ap;
    char *cmd = NULL;
    va_start(ap, fmt);
    if (vasprintf(&cmd, fmt, ap) < 0)
        abort();
    va_end(ap);
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    h_result r = h_run(argv, NULL, NULL);
    free(cmd);
    return r;
}

h_result h_trace(const char *trace_path, const char *const argv[], const char *const env[])
{
    char *lib = h_fmt("LD_PRELOAD=%s/preload/liballoctrace.so", h_root());
    char *out = h_fmt("ALLOCTRACE_OUTPUT=%s", trace_path);
    size_t m = 0;
    while (env && env[m])
        m++;
    const char **all = calloc(m + 3, sizeof *all);
    all[0] = lib;
    all[1] = out;
    for (size_t i = 0; i < m; i++)
        all[2 + i] = env[i];
    h_result r = h_run(argv, all, NULL);
    free(all);
    free(lib);
    free(out);
    return r;
}

void h_result_free(h_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* A compressed trace (zstd frames, by content as the post-processor
 * decides) as its text, so that every test reads both kinds alike. A
 * stream cut inside a frame yields the text of its whole frames. */
static char *unzstd(char *z, size_t zn, size_t *len)
{
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    size_t cap = zn * 8 + 65536, n = 0;
    char *out = malloc(cap + 1);
    ZSTD_inBuffer in = { z, zn, 0 };
    while (in.pos < in.size) {
        if (cap - n < 65536) {
            cap *= 2;
            out = realloc(out, cap + 1);
        }
        ZSTD_outBuffer o = { out + n, cap - n, 0 };
        size_t rc = ZSTD_decompressStream(dc, &o, &in);
        n += o.pos;
        if (ZSTD_isError(rc))
            break;
    }
    ZSTD_freeDCtx(dc);
    free(z);
    out[n] = '\0';
    if (len)
        *len = n;
    return out;
}

static int is_zstd(const char *p, size_t n)
{
    return n >= 4 && memcmp(p, "\x28\xb5\x2f\xfd", 4) == 0;
}

char *h_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = (cap + 65536) * 2;
            buf = realloc(buf, cap);
        }
        size_t got = fread(buf + n, 1, 65536, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    if (is_zstd(buf, n))
        return unzstd(buf, n, len);
    if (len)
        *len = n;
    return buf;
}

/* Calls fn on each line of text until it returns nonzero. */
static const char *each_line(const char *text, const regex_t *re, size_t *count)
{
    const char *p = text;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char *line = strndup(p, len);
        int hit = regexec(re, line, 0, NULL, 0) == 0;
        free(line);
        if (hit) {
            if (!count)
                return p;
            (*count)++;
        }
        p = nl ? nl + 1 : NULL;
    }
    return NULL;
}

static regex_t compile(const char *re)
{
    regex_t rx;
    if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) != 0) {
        fprintf(stderr, "harness: bad regex %s\n", re);
        abort();
    }
    return rx;
}

size_t h_count_lines(const char *text, const char *re)
{
    regex_t rx = compile(re);
    size_t n = 0;
    each_line(text, &rx, &n);
    regfree(&rx);
    return n;
}

void h_has(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("missing:\n%s\n--- in ---\n%s", needle, text);
}

void h_lacks(const char *text, const char *needle)
{
    if (strstr(text, needle))
        fail_msg("unexpected:\n%s\n--- in ---\n%s", needle, text);
}

int h_have(const char *tool)
{
    h_result r = h_sh("command -v '%s' >/dev/null", tool);
    int yes = r.status == 0;
    h_result_free(&r);
    if (!yes)
        print_message("skipped: %s is not installed\n", tool);
    return yes;
}

#define CHROMIUM "/usr/bin/chromium"

int h_have_chromium(void)
{
    if (access(CHROMIUM, X_OK) == 0)
        return 1;
    print_message("skipped: " CHROMIUM " is not installed\n");
    return 0;
}

char *h_chromium_dom(const char *dir, const char *page, const char *view)
{
    char *dir_arg = h_fmt("--user-data-dir=%s/chromium-%d", dir, rand());
    char *url = h_fmt("file://%s%s", page, view ? view : "");
    const char *argv[] = { CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-quic", "--no-first-run", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", dir_arg,
                           "--window-size=1280,1024", "--virtual-time-budget=5000", "--dump-dom",
                           url, NULL };
    h_result r = h_run(argv, NULL, NULL);
    assert_int_equal(r.status, 0);
    char *dom = r.out;
    r.out = NULL;
    h_result_free(&r);
    free(url);
    free(dir_arg);
    return dom;
}

int h_nobody_runs_the_tree(void)
{
    if (geteuid() != 0 || !h_have("setpriv")) {
        print_message("skipped: needs root and setpriv to act as another user\n");
        return 0;
    }
    h_result r = h_sh("setpriv --reuid=65534 --regid=65534 --clear-groups "
                      "test -r '%s/scripts/alloctrace'", h_root());
    int yes = r.status == 0;
    h_result_free(&r);
    if (!yes)
        print_message("skipped: uid 65534 cannot read %s/scripts/alloctrace "
                      "(a private directory above the tree)\n", h_root());
    return yes;
}

char *h_find_line(const char *text, const char *re)
{
    regex_t rx = compile(re);
    const char *p = each_line(text, &rx, NULL);
    regfree(&rx);
    if (!p)
        return NULL;
    const char *nl = strchr(p, '\n');
    return strndup(p, nl ? (size_t)(nl - p) : strlen(p));
}
