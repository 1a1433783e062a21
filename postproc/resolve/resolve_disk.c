/*
 * postproc/resolve/resolve_disk.c: the resolver's persistent cache files
 * (resolve_disk.h). One file per module key:
 *
 *     alloctrace-resolve-cache 1<TAB>KEY
 *     ADDR<TAB>TEXT[<TAB>TEXT...]        one line per address, ADDR in hex
 *     end COUNT
 *
 * KEY and TEXTs escape '\\', tab and newline as \\ \t \n. The closing
 * "end COUNT" line makes a cut file (a full disk, a copy interrupted)
 * detectable; a file is trusted whole or not at all: any line that does
 * not parse, a duplicate address, another version or key, or a count that
 * differs, and the file is ignored (and replaced by the next write).
 *
 * Writers never modify a file in place: they write a temporary file in the
 * same directory and rename() it over the old one, so concurrent readers
 * see the old file or the new one. Two concurrent writers each merge with
 * what was there when they read it; the later rename wins and the other's
 * new entries are lost, which costs a lookup later and nothing else.
 */
#include "resolve_disk.h"
#include "xalloc.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "frame.h"
#include "resolve_cache.h"

#define MAGIC "alloctrace-resolve-cache"
#define VERSION 1
/* A file larger than this is not read (a cap of 100k entries stays far
 * below it); it is replaced by the next write. */
#define MAX_FILE_BYTES (128u << 20)

struct at_rdisk {
    char *path, *dir, *key;
    size_t cap;
    at_rcache *table; /* (addr, 0) -> at_rtexts */
    uint64_t *addrs;  /* in the order they were added */
    size_t n, capaddrs;
    size_t nread;     /* addrs[0..nread) came from the file, the rest are new */
};

/* ---- entries ------------------------------------------------------------- */

at_rtexts *at_rtexts_new(uint32_t n)
{
    at_rtexts *e = at_xcalloc(1, sizeof *e + (size_t)n * sizeof(char *));
    e->n = n;
    return e;
}

at_rtexts *at_rtexts_copy(const at_rtexts *e)
{
    at_rtexts *c = at_rtexts_new(e->n);
    for (uint32_t i = 0; i < e->n; i++)
        c->texts[i] = at_xstrdup(e->texts[i]);
    return c;
}

void at_rtexts_free(void *p)
{
    at_rtexts *e = p;
    if (!e)
        return;
    for (uint32_t i = 0; i < e->n; i++)
        free(e->texts[i]);
    free(e);
}

/* Takes e; false (e freed) when addr has an entry or the cap is reached. */
static bool add(at_rdisk *d, uint64_t addr, at_rtexts *e)
{
    if (d->n >= d->cap || at_rcache_get(d->table, addr, 0)) {
        at_rtexts_free(e);
        return false;
    }
    if (d->n == d->capaddrs) {
        d->capaddrs = d->capaddrs ? 2 * d->capaddrs : 64;
        d->addrs = at_xreallocarray(d->addrs, d->capaddrs, sizeof *d->addrs);
    }
    d->addrs[d->n++] = addr;
    at_rcache_put(d->table, addr, 0, e);
    return true;
}

const at_rtexts *at_rdisk_get(const at_rdisk *d, uint64_t addr) { return at_rcache_get(d->table, addr, 0); }

void at_rdisk_put(at_rdisk *d, uint64_t addr, const at_rtexts *e)
{
    if (d->n < d->cap && !at_rdisk_get(d, addr))
        add(d, addr, at_rtexts_copy(e));
}

size_t at_rdisk_count(const at_rdisk *d) { return d->n; }

/* ---- text ---------------------------------------------------------------- */

static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '\t')
            fputs("\\t", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

/* The field [s, end) unescaped (a new string), or NULL when it is empty
 * or holds an unknown escape. */
static char *unescape(const char *s, const char *end)
{
    if (s == end)
        return NULL;
    char *out = at_xmalloc((size_t)(end - s) + 1), *o = out;
    for (; s < end; s++) {
        if (*s != '\\') {
            *o++ = *s;
            continue;
        }
        char c = ++s < end ? *s : '\0';
        if (c != '\\' && c != 't' && c != 'n') {
            free(out);
            return NULL;
        }
        *o++ = c == 't' ? '\t' : c == 'n' ? '\n' : '\\';
    }
    *o = '\0';
    return out;
}

static size_t count_char(const char *s, const char *end, char c)
{
    size_t n = 0;
    for (; s < end; s++)
        n += *s == c;
    return n;
}

/* One "ADDR<TAB>TEXT..." line [s, end): its entry, or NULL when malformed. */
static at_rtexts *parse_entry(const char *s, const char *end, uint64_t *addr)
{
    const char *tab = memchr(s, '\t', (size_t)(end - s));
    if (!tab || tab == s || tab - s > 16)
        return NULL;
    uint64_t a = 0;
    for (const char *p = s; p < tab; p++) {
        int v = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (v < 0)
            return NULL;
        a = a << 4 | (uint64_t)v;
    }
    at_rtexts *e = at_rtexts_new((uint32_t)count_char(tab, end, '\t'));
    const char *field = tab + 1;
    for (uint32_t i = 0; i < e->n; i++) {
        const char *next = memchr(field, '\t', (size_t)(end - field));
        if (!next)
            next = end;
        if (!(e->texts[i] = unescape(field, next))) {
            at_rtexts_free(e);
            return NULL;
        }
        field = next + 1;
    }
    *addr = a;
    return e;
}

/* Whether [s, end) is the header line of this version and d's key. */
static bool header_ok(const at_rdisk *d, const char *s, const char *end)
{
    char *want = at_xasprintf(MAGIC " %d\t", VERSION);
    size_t n = strlen(want);
    bool ok = (size_t)(end - s) > n && memcmp(s, want, n) == 0;
    free(want);
    if (!ok)
        return false;
    char *key = unescape(s + n, end);
    ok = key && strcmp(key, d->key) == 0;
    free(key);
    return ok;
}

/* Whether [s, end) is "end COUNT" with COUNT equal to n. */
static bool trailer_ok(const char *s, const char *end, size_t n)
{
    char *want = at_xasprintf("end %zu", n);
    bool ok = (size_t)(end - s) == strlen(want) && memcmp(s, want, (size_t)(end - s)) == 0;
    free(want);
    return ok;
}

/* Fills the empty t from text; 0, or -1 on any defect. */
static int parse_whole(at_rdisk *t, const char *text, size_t len)
{
    const char *p = text, *stop = text + len;
    bool header = false, trailer = false;
    while (p < stop) {
        const char *nl = memchr(p, '\n', (size_t)(stop - p));
        if (!nl || trailer || memchr(p, '\0', (size_t)(nl - p)))
            return -1; /* a cut last line, something after the trailer, a NUL */
        if (!header) {
            if (!header_ok(t, p, nl))
                return -1;
            header = true;
        } else if (nl - p > 4 && memcmp(p, "end ", 4) == 0) {
            if (!trailer_ok(p, nl, t->n))
                return -1;
            trailer = true;
        } else {
            uint64_t addr;
            at_rtexts *e = parse_entry(p, nl, &addr);
            if (!e || e->n == 0 || at_rcache_get(t->table, addr, 0)) {
                at_rtexts_free(e);
                return -1;
            }
            add(t, addr, e);
        }
        p = nl + 1;
    }
    return trailer ? 0 : -1;
}

static at_rdisk *empty_like(const at_rdisk *d, size_t cap)
{
    at_rdisk *t = at_xcalloc(1, sizeof *t);
    t->key = at_xstrdup(d->key);
    t->cap = cap;
    t->table = at_rcache_new();
    return t;
}

/* Moves the entries of t that d lacks into d (cap permitting); frees t. */
static void merge_from(at_rdisk *d, at_rdisk *t)
{
    for (size_t i = 0; i < t->n; i++)
        add(d, t->addrs[i], at_rcache_get(t->table, t->addrs[i], 0)); /* takes the entry */
    at_rcache_clear(t->table, NULL);
    at_rdisk_free(t);
}

int at_rdisk_parse(at_rdisk *d, const char *text, size_t len)
{
    /* The count check needs every line, so parse without the cap first. */
    at_rdisk *t = empty_like(d, (size_t)-1);
    if (parse_whole(t, text, len) != 0) {
        at_rdisk_free(t);
        return -1;
    }
    merge_from(d, t);
    return 0;
}

char *at_rdisk_format(const at_rdisk *d)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        at_oom();
    fprintf(f, MAGIC " %d\t", VERSION);
    put_escaped(f, d->key);
    fputc('\n', f);
    for (size_t i = 0; i < d->n; i++) {
        const at_rtexts *e = at_rdisk_get(d, d->addrs[i]);
        fprintf(f, "%llx", (unsigned long long)d->addrs[i]);
        for (uint32_t k = 0; k < e->n; k++) {
            fputc('\t', f);
            put_escaped(f, e->texts[k]);
        }
        fputc('\n', f);
    }
    fprintf(f, "end %zu\n", d->n);
    if (fclose(f) != 0)
        at_oom();
    return buf;
}

/* ---- files --------------------------------------------------------------- */

/* FNV-1a, 64 bits: file names only need to spread keys (the header holds
 * the whole key and is checked). */
static uint64_t hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

char *at_rdisk_file_name(const char *dir, const char *label, const char *key)
{
    const char *base = at_path_base(label);
    char *safe = at_xstrndup(base, strnlen(base, 64)); /* (at_xstrndup copies n bytes) */
    for (char *p = safe; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '+' || *p == '-'))
            *p = '_';
    char *s = at_xasprintf("%s/%s-%016llx.cache", dir, safe[0] == '.' ? "_" : safe,
                           (unsigned long long)hash(key));
    free(safe);
    return s;
}

/* The whole file (a new string), or NULL when missing, unreadable or too
 * large. */
static char *slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return NULL;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (off_t)MAX_FILE_BYTES) {
        buf = at_xmalloc((size_t)st.st_size + 1);
        size_t got = 0;
        ssize_t r;
        while (got < (size_t)st.st_size &&
               ((r = read(fd, buf + got, (size_t)st.st_size - got)) > 0 || (r < 0 && errno == EINTR)))
            got += r > 0 ? (size_t)r : 0;
        buf[got] = '\0';
        *len = got;
    }
    close(fd);
    return buf;
}

/* What the file holds now, into d (nothing when it is not whole). */
static void read_file(at_rdisk *d)
{
    size_t len = 0;
    char *text = slurp(d->path, &len);
    if (text)
        at_rdisk_parse(d, text, len);
    free(text);
}

at_rdisk *at_rdisk_open(const char *dir, const char *label, const char *key, size_t cap)
{
    at_rdisk *d = at_xcalloc(1, sizeof *d);
    d->dir = at_xstrdup(dir);
    d->key = at_xstrdup(key);
    d->path = at_rdisk_file_name(dir, label, key);
    d->cap = cap;
    d->table = at_rcache_new();
    read_file(d);
    d->nread = d->n;
    return d;
}

/* mkdir -p: each missing directory on the way, 0755 (before umask). */
static int make_dirs(const char *dir)
{
    char *p = at_xstrdup(dir);
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            rc = -1;
        *s = c;
        if (c == '\0' || rc != 0)
            break;
    }
    free(p);
    return rc;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

int at_rdisk_save(at_rdisk *d)
{
    if (d->n == d->nread)
        return 0;
    if (make_dirs(d->dir) != 0)
        return -1;
    read_file(d); /* others' entries written since we read it */
    char *tmp = at_xasprintf("%s.XXXXXX", d->path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    char *text = at_rdisk_format(d);
    /* mkstemp makes 0600; the cache is as readable as the directory. */
    int rc = fchmod(fd, 0644) == 0 && write_all(fd, text, strlen(text)) == 0 ? 0 : -1;
    if (close(fd) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, d->path) != 0)
        rc = -1;
    if (rc != 0)
        unlink(tmp);
    else
        d->nread = d->n;
    free(text);
    free(tmp);
    return rc;
}

void at_rdisk_free(at_rdisk *d)
{
    if (!d)
        return;
    at_rcache_free(d->table, at_rtexts_free);
    free(d->addrs);
    free(d->path);
    free(d->dir);
    free(d->key);
    free(d);
}

/* ---- where, and who ------------------------------------------------------ */

char *at_rdisk_default_dir(void)
{
    const char *own = getenv("ALLOCTRACE_CACHE_DIR");
    if (own)
        return own[0] ? at_xstrdup(own) : NULL;
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') /* the XDG spec ignores relative values */
        return at_xasprintf("%s/alloctrace", xdg);
    const char *home = getenv("HOME");
    if (home && home[0])
        return at_xasprintf("%s/.cache/alloctrace", home);
    return NULL;
}

/* dl_iterate_phdr visits the main program first: its NT_GNU_BUILD_ID. */
static int own_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    char **out = arg;
    for (int i = 0; i < info->dlpi_phnum && !*out; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *nh;
            const unsigned char *desc = (const unsigned char *)name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                (const char *)desc + nh->n_descsz <= end) {
                char *hex = at_xmalloc(2 * (size_t)nh->n_descsz + 1);
                for (size_t k = 0; k < nh->n_descsz; k++)
                    sprintf(hex + 2 * k, "%02x", desc[k]);
                hex[2 * (size_t)nh->n_descsz] = '\0';
                *out = hex;
                break;
            }
            p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 1; /* the main program only */
}

char *at_rdisk_program_id(void)
{
    char *id = NULL;
    dl_iterate_phdr(own_build_id, &id);
    char *s = at_xasprintf(AT_PROGRAM " " AT_VERSION " %s", id ? id : "(no build id)");
    free(id);
    return s;
}
