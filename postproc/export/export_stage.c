/*
 * postproc/export/export_stage.c: the export as the pipeline's last stage
 * (export_stage.h).
 *
 * Samples are the allocations of the memory resource (or of the only
 * resource when none is registered) that reach this stage, one per call,
 * also inside compressed groups, so KiB rounding stays per block. The
 * report and the stats are not exports of samples: they are printed from
 * the analyses (analyze/analyze.h), which need every call in index order.
 * In a sampled trace a sample carries the blocks its call stands for and
 * their bytes (sampling.h), so every format below shows estimates; the
 * formats with room for it say so, folded stacks (no room) on stderr.
 */
#include "export_stage.h"
#include "leakkind.h"
#include "outfile.h"
#include "runtime.h"
#include "sampling.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <alloctrace/format.h>

typedef struct exporter {
    at_stage stage;
    at_export_opts o;
    at_trace *t;
    at_diag *d;
    at_sample *samples;
    size_t n, cap;
    at_runtime *runtime;
} exporter;

int at_format_parse(const char *s, at_format *f)
{
    static const char *const names[] = { "text",  "callgrind",  "webgrind", "folded", "report",
                                         "stats", "flamegraph", "html",     "pprof" };
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (strcmp(s, names[i]) == 0) {
            *f = (at_format)i;
            return 0;
        }
    return -1;
}

bool at_format_analysed(at_format f)
{
    return f == AT_FORMAT_REPORT || f == AT_FORMAT_STATS || f == AT_FORMAT_HTML ||
           f == AT_FORMAT_PPROF;
}

int at_cost_parse(const char *s, at_cost *c)
{
    if (strcmp(s, "bytes") == 0)
        *c = AT_COST_BYTES;
    else if (strcmp(s, "blocks") == 0)
        *c = AT_COST_BLOCKS;
    else
        return -1;
    return 0;
}

static bool counted(const exporter *e, const at_call *c)
{
    const at_resource *r = at_trace_resource(e->t, c->res);
    return !r || e->t->nresources <= 1 || strcmp(r->name, AT_RES_MEMORY_NAME) == 0;
}

/* Of leaked blocks (-l, a leaks-mode trace), those that are the runtime's
 * own caches (runtime.h) are a category of their own: their allocation
 * function reads "malloc [libc's caches]", a tower apart in the flame
 * graph, never mistaken for the program's leak. */
static const char *cache_name(exporter *e, const at_call *c)
{
    if (!(e->t->header.filter & AT_F_LEAKS))
        return c->name;
    if (!e->runtime)
        e->runtime = at_runtime_new(e->t->maps, e->t->stacks);
    if (c->kind != AT_LEAK_LIBC && !at_runtime_cache(e->runtime, c->stack))
        return c->name;
    char buf[256];
    int n = snprintf(buf, sizeof buf, "%s [" AT_RUNTIME_WORDS "]", c->name ? c->name : "?");
    return at_trace_name(e->t, buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void take(exporter *e, const at_call *c)
{
    if (!counted(e, c))
        return;
    if (!c->is_alloc)
        return;
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 4096;
        e->samples = at_xrealloc(e->samples, e->cap * sizeof *e->samples);
    }
    uint64_t w = at_sampling_weight(at_sampling_interval(e->t), c->size, c->index);
    e->samples[e->n++] = (at_sample){ c->stack, cache_name(e, c), c->size * w, w };
}

static void put(at_stage *self, const at_record *r)
{
    exporter *e = (exporter *)self;
    if (r->kind == AT_REC_CALL)
        take(e, r->u.call);
    else if (r->kind == AT_REC_GROUP)
        for (size_t i = 0; i < r->u.group->ncalls; i++)
            take(e, r->u.group->calls[i]);
}

static FILE *open_out(exporter *e, const char *path)
{
    FILE *f = at_outfile_fopen(path);
    if (!f)
        at_diag_error(e->d, AT_EXIT_FAIL, "%s: %s", path, strerror(errno));
    return f;
}

/* Closes f and reports what went wrong writing path, if anything; says
 * where a Callgrind or webgrind file went (announce). */
static void close_out(exporter *e, FILE *f, const char *path, int rc, bool announce)
{
    int err = rc != 0 ? (errno ? errno : EIO) : 0;
    /* A named file is renamed into place only when whole (outfile.c). */
    if (at_outfile_fclose(f, err == 0) != 0 && !err)
        err = errno ? errno : EIO;
    if (err == EOVERFLOW)
        at_diag_error(e->d, AT_EXIT_FAIL, "%s: costs too large for webgrind even in KiB", path);
    else if (err)
        at_diag_error(e->d, AT_EXIT_FAIL, "%s: %s", path, strerror(err));
    else if (announce && !e->d->quiet)
        fprintf(stderr, AT_PROGRAM ": wrote %s\n", path);
}

/* Where -o points: a FILE on a copy of out_fd, so main still closes its own. */
static FILE *fd_out(exporter *e)
{
    int fd = dup(e->o.out_fd);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        at_diag_error(e->d, AT_EXIT_FAIL, "%s: %s", e->o.output ? e->o.output : "<stdout>",
                      strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    return f;
}

static bool to_stdout(const exporter *e)
{
    return !e->o.output || strcmp(e->o.output, "-") == 0;
}

static const char *out_name(const exporter *e)
{
    return to_stdout(e) ? "<stdout>" : e->o.output;
}

static void write_callgrind_files(exporter *e, const at_profile *p, const at_export_meta *m)
{
    bool webgrind = e->o.format == AT_FORMAT_WEBGRIND;
    /* No -o: the default name here. "-o -": stdout, for Callgrind alone. */
    bool named = !e->o.output || (webgrind && strcmp(e->o.output, "-") == 0);
    char *cg_name = named ? at_export_default_name(m, false) : strdup(out_name(e));
    if (!cg_name)
        at_oom();
    FILE *f = named ? open_out(e, cg_name) : fd_out(e);
    if (f) {
        errno = 0;
        close_out(e, f, cg_name, at_export_callgrind(f, p, m), !to_stdout(e) || named);
    }
    if (webgrind && !e->d->failed) {
        /* After the Callgrind file is complete, so webgrind never finds its
         * preprocessed copy older than the original. */
        char *wg_name = at_xrealloc(NULL, strlen(cg_name) + sizeof ".webgrind");
        strcpy(wg_name, cg_name);
        strcat(wg_name, ".webgrind");
        if ((f = open_out(e, wg_name)) != NULL) {
            errno = 0;
            close_out(e, f, wg_name, at_export_webgrind(f, p, m), true);
        }
        free(wg_name);
    }
    free(cg_name);
}

static void finish(at_stage *self)
{
    exporter *e = (exporter *)self;
    const at_header *h = &e->t->header;
    at_export_meta m = { .process = h->process, .pid = h->pid, .cmd = h->process,
                         .leaks = (h->filter & AT_F_LEAKS) != 0,
                         .sample_interval = h->sample_interval };
    if (m.sample_interval && e->o.format == AT_FORMAT_FOLDED && !e->d->quiet)
        fprintf(stderr, AT_PROGRAM ": note: the costs are %s\n",
                at_sampling_note(m.sample_interval));
    at_profile *p = at_profile_build(e->samples, e->n, e->t->maps, e->t->stacks);
    if (e->o.format == AT_FORMAT_CALLGRIND || e->o.format == AT_FORMAT_WEBGRIND) {
        write_callgrind_files(e, p, &m);
    } else {
        FILE *f = fd_out(e);
        if (f) {
            errno = 0;
            int rc = e->o.format == AT_FORMAT_FLAMEGRAPH
                         ? at_export_flamegraph(f, p, &m, e->o.cost, e->o.short_names)
                         : at_export_folded(f, p, e->o.cost, e->o.short_names);
            close_out(e, f, out_name(e), rc, false);
        }
    }
    at_profile_free(p);
}

at_stage *at_export_stage_new(const at_export_opts *o, at_trace *t, at_diag *d)
{
    exporter *e = calloc(1, sizeof *e);
    if (!e)
        at_oom();
    e->stage = (at_stage){ .put = put, .finish = finish, .next = NULL };
    e->o = *o;
    e->t = t;
    e->d = d;
    return &e->stage;
}

void at_export_stage_free(at_stage *s)
{
    exporter *e = (exporter *)s;
    if (!e)
        return;
    free(e->samples);
    at_runtime_free(e->runtime);
    free(e);
}
