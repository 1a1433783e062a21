/*
 * postproc/export/callgrind.c: the profile in Callgrind format, in the one layout
 * that callgrind_annotate, KCachegrind and webgrind all read the same
 * (docs/exports.md rule 2):
 *
 *   - header, "events:" last; "summary:" and "totals:" at the very end;
 *   - one block per function: "fl=", "fn=", one self-cost line "LINE B N",
 *     then its calls, each the full "cfl= cfn= calls=COUNT LINE" and the
 *     cost line at the caller's line;
 *   - leaves first: a function's block comes before any call naming it
 *     (webgrind looks the callee up by name when it reads the call). The
 *     blocks are a depth-first post-order over the calls; a function on a
 *     cycle (a calls b calls a, from different stacks) that is called
 *     before its block gets a zero-cost declaration block first, which
 *     webgrind counts as a second invocation and the others sum away;
 *   - name compression, "(ID) name" on first use, "(ID)" after.
 *
 * The bytes event is in KiB (each sample rounded up) when a number webgrind
 * would store does not fit in 31 bits; deciding that needs webgrind's own
 * sums, so in doubt the file is preprocessed once in memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "frame.h"
#include "xalloc.h"

#define NO_ALLOC_NAME "(no allocations)"
#define NO_ALLOC_FILE "[alloctrace]"
#define WEBGRIND_MAX 0x7fffffffull

typedef struct writer {
    FILE *out;
    const at_profile *p;
    bool kib;
    uint32_t *fn_id;  /* per function: its compression id, 0 until first use */
    uint32_t *fl_id;  /* per file */
    uint32_t next_fn, next_fl;
    unsigned char *state; /* per function, see below */
} writer;

enum { WHITE, GRAY, DONE };
#define DECLARED 4u

static void name_ref(writer *w, const char *key, uint32_t *ids, uint32_t *next, uint32_t i,
                     const char *name)
{
    if (ids[i]) {
        fprintf(w->out, "%s=(%u)\n", key, ids[i]);
    } else {
        ids[i] = ++*next;
        fprintf(w->out, "%s=(%u) %s\n", key, ids[i], name);
    }
}

static void file_ref(writer *w, const char *key, uint32_t f)
{
    const at_pfunc *fn = &w->p->funcs[f];
    name_ref(w, key, w->fl_id, &w->next_fl, fn->file_id, fn->file);
}

static void func_ref(writer *w, const char *key, uint32_t f)
{
    name_ref(w, key, w->fn_id, &w->next_fn, f, w->p->funcs[f].name);
}

static uint64_t first_event(const writer *w, const at_pcost *c)
{
    return w->kib ? c->kib : c->bytes;
}

static void block_head(writer *w, uint32_t f)
{
    fputc('\n', w->out);
    file_ref(w, "fl", f);
    func_ref(w, "fn", f);
}

/* A zero-cost block that defines a function called before its own block. */
static void declare(writer *w, uint32_t f)
{
    block_head(w, f);
    fprintf(w->out, "%u 0 0\n", w->p->funcs[f].line);
    w->state[f] |= DECLARED;
}

static void block(writer *w, uint32_t f)
{
    const at_profile *p = w->p;
    const at_pfunc *fn = &p->funcs[f];
    for (uint32_t i = 0; i < fn->nout; i++) {
        uint32_t g = p->edges[p->out[fn->out_first + i]].callee;
        if (g != f && (w->state[g] & 3) != DONE && !(w->state[g] & DECLARED))
            declare(w, g);
    }
    block_head(w, f);
    fprintf(w->out, "%u %llu %llu\n", fn->line, (unsigned long long)first_event(w, &fn->self),
            (unsigned long long)fn->self.blocks);
    for (uint32_t i = 0; i < fn->nout; i++) {
        const at_pedge *e = &p->edges[p->out[fn->out_first + i]];
        file_ref(w, "cfl", e->callee);
        func_ref(w, "cfn", e->callee);
        fprintf(w->out, "calls=%llu %u\n%u %llu %llu\n",
                (unsigned long long)(e->cost.blocks ? e->cost.blocks : 1), p->funcs[e->callee].line,
                e->line, (unsigned long long)first_event(w, &e->cost),
                (unsigned long long)e->cost.blocks);
    }
    w->state[f] = (unsigned char)((w->state[f] & DECLARED) | DONE);
}

/* Depth-first post-order from every function in number order, with an
 * explicit stack (call chains can be deep). */
static void blocks(writer *w)
{
    const at_profile *p = w->p;
    uint32_t *stack = at_xcalloc(p->nfuncs + 1, sizeof *stack);
    uint32_t *next = at_xcalloc(p->nfuncs + 1, sizeof *next);
    for (uint32_t root = 0; root < p->nfuncs; root++) {
        if ((w->state[root] & 3) != WHITE)
            continue;
        uint32_t depth = 0;
        stack[depth++] = root;
        next[root] = 0;
        w->state[root] |= GRAY;
        while (depth) {
            uint32_t f = stack[depth - 1];
            const at_pfunc *fn = &p->funcs[f];
            if (next[f] < fn->nout) {
                uint32_t g = p->edges[p->out[fn->out_first + next[f]++]].callee;
                if ((w->state[g] & 3) == WHITE) {
                    w->state[g] |= GRAY;
                    next[g] = 0;
                    stack[depth++] = g;
                }
                continue;
            }
            block(w, f);
            depth--;
        }
    }
    free(stack);
    free(next);
}

/* One line, for the header. */
static void put_line_text(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc((unsigned char)*s < 0x20 ? ' ' : *s, out);
}

static bool all_digits(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static void header(FILE *out, const at_export_meta *m, bool kib)
{
    const char *what = m->leaks ? "Leaked" : "Alloc";
    const char *verb = m->leaks ? "leaked" : "allocated";
    fputs("# callgrind format\nversion: 1\ncreator: alloctrace " AT_VERSION "\n", out);
    if (all_digits(m->pid))
        fprintf(out, "pid: %s\n", m->pid);
    fputs("cmd: ", out);
    const char *cmd = m->cmd && *m->cmd ? m->cmd : m->process && *m->process ? m->process : "(unknown)";
    put_line_text(out, cmd);
    if (m->sample_interval)
        fprintf(out, "\ndesc: Estimates: every cost is estimated from a sample, one in %llu bytes "
                     "on average",
                (unsigned long long)m->sample_interval);
    fputs("\npositions: line\n", out);
    if (kib)
        fprintf(out, "event: %sKiB : KiB %s (each block rounded up)\n", what, verb);
    else
        fprintf(out, "event: %sBytes : bytes %s\n", what, verb);
    fprintf(out, "event: %sBlocks : blocks %s\n", what, verb);
    fprintf(out, "events: %s%s %sBlocks\n", what, kib ? "KiB" : "Bytes", what);
}

static int render(FILE *out, const at_profile *p, const at_export_meta *m, bool kib)
{
    header(out, m, kib);
    if (p->nfuncs == 0) {
        fputs("\nfl=(1) " NO_ALLOC_FILE "\nfn=(1) " NO_ALLOC_NAME "\n0 0 0\n", out);
    } else {
        writer w = { .out = out, .p = p, .kib = kib };
        w.fn_id = at_xcalloc(p->nfuncs, sizeof *w.fn_id);
        w.fl_id = at_xcalloc(p->nfiles, sizeof *w.fl_id);
        w.state = at_xcalloc(p->nfuncs, 1);
        blocks(&w);
        free(w.fn_id);
        free(w.fl_id);
        free(w.state);
    }
    unsigned long long total = kib ? p->total.kib : p->total.bytes;
    fprintf(out, "\nsummary: %llu %llu\ntotals: %llu %llu\n", total,
            (unsigned long long)p->total.blocks, total, (unsigned long long)p->total.blocks);
    return ferror(out) ? -1 : 0;
}

int at_callgrind_render(const at_profile *p, const at_export_meta *m, bool kib, char **text,
                        size_t *len)
{
    FILE *mem = open_memstream(text, len);
    if (!mem)
        return -1;
    int rc = render(mem, p, m, kib);
    if (fclose(mem) != 0)
        rc = -1;
    if (rc != 0) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

/* The largest number webgrind would store for this file, in bytes. */
static int webgrind_max(const at_profile *p, const at_export_meta *m, bool kib, uint64_t *max)
{
    char *text = NULL;
    size_t len = 0;
    if (at_callgrind_render(p, m, kib, &text, &len) != 0)
        return -1;
    unsigned char *bin = NULL;
    size_t blen = 0;
    char err[256];
    int rc = at_webgrind_preprocess(text, len, &bin, &blen, max, err, sizeof err);
    free(text);
    free(bin);
    if (rc != 0)
        errno = EINVAL;
    return rc;
}

int at_callgrind_unit(const at_profile *p, const at_export_meta *m, bool *kib)
{
    /* webgrind's numbers are sums of self and call costs: when all of them
     * together fit, every one does. */
    uint64_t bound = p->total.bytes;
    for (uint32_t e = 0; e < p->nedges && bound <= WEBGRIND_MAX; e++)
        bound += p->edges[e].cost.bytes;
    *kib = false;
    if (bound <= WEBGRIND_MAX)
        return 0;
    uint64_t max = 0;
    if (webgrind_max(p, m, false, &max) != 0)
        return -1;
    *kib = max > WEBGRIND_MAX;
    return 0;
}

int at_export_callgrind(FILE *out, const at_profile *p, const at_export_meta *meta)
{
    at_export_meta none = { 0 };
    const at_export_meta *m = meta ? meta : &none;
    bool kib;
    if (at_callgrind_unit(p, m, &kib) != 0)
        return -1;
    return render(out, p, m, kib);
}

/* PROCESS is the process's base name with anything but [A-Za-z0-9._+-]
 * made '_', so the name is one safe path component that webgrind lists. */
char *at_export_default_name(const at_export_meta *meta, bool webgrind)
{
    const char *proc = meta && meta->process && *meta->process ? meta->process : "unknown";
    proc = at_path_base(proc);
    size_t n = strlen(proc) + 64;
    char *name = at_xmalloc(n);
    size_t o = (size_t)snprintf(name, n, "cachegrind.out.");
    for (const char *c = proc; *c; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                  *c == '.' || *c == '_' || *c == '+' || *c == '-';
        name[o++] = ok ? *c : '_';
    }
    name[o] = 0;
    if (meta && all_digits(meta->pid))
        snprintf(name + o, n - o, ".%.20s", meta->pid);
    if (webgrind)
        strcat(name, ".webgrind");
    return name;
}
