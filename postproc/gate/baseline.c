/*
 * postproc/gate/baseline.c: leak baselines. A baseline lists, per process name
 * and normalised stack key, the bytes and blocks that are allowed to leak;
 * the gate then fails only on groups that are new or have grown.
 *
 * The key keeps what survives a rebuild and another checkout directory:
 * function names and the last component of file names (or of the module
 * for frames without a file), outermost first, joined by " -> ". Lines are
 * left out on purpose: an edit above a leak moves it but does not make it
 * new. Processes are filed under their program's base name, not their pid.
 *
 * The file is text, one entry a line, fields separated by tabs (no name
 * contains a tab): "PROCESS\tBYTES\tBLOCKS\tKEY", after a version line, so
 * it diffs well under version control.
 */
#include "gate.h"
#include "outfile.h"
#include "xalloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define BASELINE_MAGIC "# alloctrace baseline 1"
#define KEY_SEP " -> "

typedef struct entry {
    char *process, *key;
    uint64_t bytes, blocks;
} entry;

struct at_baseline {
    entry *v;
    size_t n, cap;
};

const char *at_baseline_process_name(const char *process)
{
    return at_path_base(process);
}

uint32_t at_gate_frames_to_main(const at_frame_info *frames, uint32_t n)
{
    for (uint32_t i = n; i-- > 0;)
        if (strcmp(frames[i].function, "main") == 0)
            return i + 1;
    return n;
}

char *at_baseline_key(const at_frame_info *frames, uint32_t n)
{
    n = at_gate_frames_to_main(frames, n);
    size_t len = 1;
    for (uint32_t i = 0; i < n; i++)
        len += strlen(frames[i].function) + strlen(frames[i].file) + strlen(frames[i].module) +
               strlen(KEY_SEP) + 1;
    char *key = at_xrealloc(NULL, len), *w = key;
    *w = '\0';
    for (uint32_t i = n; i-- > 0;) {
        const at_frame_info *f = &frames[i];
        const char *where = strcmp(f->file, AT_UNKNOWN) != 0 ? f->file : f->module;
        w += sprintf(w, "%s%s@%s", i + 1 < n ? KEY_SEP : "", f->function, at_path_base(where));
    }
    return key;
}

at_baseline *at_baseline_new(void)
{
    at_baseline *b = at_xrealloc(NULL, sizeof *b);
    *b = (at_baseline){ 0 };
    return b;
}

void at_baseline_free(at_baseline *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        free(b->v[i].process);
        free(b->v[i].key);
    }
    free(b->v);
    free(b);
}

static entry *find(const at_baseline *b, const char *process, const char *key)
{
    for (size_t i = 0; i < b->n; i++)
        if (strcmp(b->v[i].key, key) == 0 && strcmp(b->v[i].process, process) == 0)
            return &b->v[i];
    return NULL;
}

void at_baseline_put(at_baseline *b, const char *process, const char *key, uint64_t bytes,
                     uint64_t blocks)
{
    entry *e = find(b, process, key);
    if (!e) {
        if (b->n == b->cap) {
            b->cap = b->cap ? 2 * b->cap : 32;
            b->v = at_xrealloc(b->v, b->cap * sizeof *b->v);
        }
        e = &b->v[b->n++];
        *e = (entry){ .process = at_xstrdup(process), .key = at_xstrdup(key) };
    }
    if (bytes > e->bytes)
        e->bytes = bytes;
    if (blocks > e->blocks)
        e->blocks = blocks;
}

bool at_baseline_get(const at_baseline *b, const char *process, const char *key, uint64_t *bytes,
                     uint64_t *blocks)
{
    const entry *e = find(b, process, key);
    if (!e)
        return false;
    *bytes = e->bytes;
    *blocks = e->blocks;
    return true;
}

/* Groups of one process sharing a key are summed (the gate compares sums);
 * several processes of one program keep the largest sum. */
at_baseline *at_baseline_from_gate(const at_gate *g)
{
    at_baseline *b = at_baseline_new();
    for (size_t i = 0; i < g->nprocs; i++) {
        const at_gate_proc *p = &g->procs[i];
        const char *name = at_baseline_process_name(p->process);
        for (size_t j = 0; j < p->ngroups; j++) {
            bool seen = false;
            for (size_t k = 0; k < j && !seen; k++)
                seen = strcmp(p->groups[k].key, p->groups[j].key) == 0;
            if (seen)
                continue;
            uint64_t bytes = 0, blocks = 0;
            for (size_t k = j; k < p->ngroups; k++)
                if (strcmp(p->groups[k].key, p->groups[j].key) == 0) {
                    bytes += p->groups[k].bytes;
                    blocks += p->groups[k].blocks;
                }
            at_baseline_put(b, name, p->groups[j].key, bytes, blocks);
        }
    }
    return b;
}

int at_baseline_write(const at_baseline *b, const char *path)
{
    FILE *f = at_outfile_fopen(path); /* renamed into place when whole */
    if (!f)
        return -1;
    fprintf(f, "%s\n# process\tbytes\tblocks\tstack (outermost first)\n", BASELINE_MAGIC);
    for (size_t i = 0; i < b->n; i++)
        fprintf(f, "%s\t%" PRIu64 "\t%" PRIu64 "\t%s\n", b->v[i].process, b->v[i].bytes,
                b->v[i].blocks, b->v[i].key);
    return at_outfile_fclose(f, true);
}

static bool parse_u64(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* "PROCESS\tBYTES\tBLOCKS\tKEY"; returns a reason on error. */
static const char *parse_entry(at_baseline *b, char *line)
{
    char *f[4];
    f[0] = line;
    for (int i = 1; i < 4; i++) {
        char *tab = strchr(f[i - 1], '\t');
        if (!tab)
            return "expected PROCESS<TAB>BYTES<TAB>BLOCKS<TAB>STACK";
        *tab = '\0';
        f[i] = tab + 1;
    }
    uint64_t bytes, blocks;
    if (!*f[0])
        return "empty process name";
    if (!parse_u64(f[1], strlen(f[1]), &bytes))
        return "bytes is not a decimal number";
    if (!parse_u64(f[2], strlen(f[2]), &blocks))
        return "blocks is not a decimal number";
    if (strchr(f[3], '\t'))
        return "too many fields";
    at_baseline_put(b, f[0], f[3], bytes, blocks);
    return NULL;
}

at_baseline *at_baseline_read(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    at_baseline *b = at_baseline_new();
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    unsigned long lineno = 0;
    const char *why = NULL;
    while (!why && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (lineno == 1)
            why = strcmp(line, BASELINE_MAGIC) == 0 ? NULL : "not an alloctrace baseline "
                                                             "(first line must be \"" BASELINE_MAGIC "\")";
        else if (len > 0 && line[0] != '#')
            why = parse_entry(b, line);
    }
    if (!why && lineno == 0)
        why = "empty file, not an alloctrace baseline";
    free(line);
    fclose(f);
    if (why) {
        snprintf(err, errlen, "%s:%lu: %s", path, lineno ? lineno : 1, why);
        at_baseline_free(b);
        return NULL;
    }
    return b;
}
