/*
 * postproc/export/folded.c: folded stacks for flamegraph.pl, inferno and
 * speedscope: "main;parse;xstrdup;malloc 1536", outermost frame first, the
 * allocation function last, one line per distinct stack in order of first
 * appearance. Function names are the profile's (unique, one line); a ';'
 * inside a name would split a frame, so it becomes ':'. Two stacks that
 * differ only in what the names do not show (addresses) fold into one line,
 * since the tools would merge them anyway. Recursion is kept: a flame graph
 * shows every frame. The frames and short names are flame.h's, so the
 * folded lines, the SVG and the HTML flame graphs agree.
 */
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "xalloc.h"

typedef struct line {
    char *text;
    size_t first;
    uint64_t cost;
} line;

static void put_name(FILE *mem, const char *name)
{
    for (; *name; name++)
        fputc(*name == ';' ? ':' : *name, mem);
}

static char *fold(const at_profile *p, const at_ppath *q, bool short_names, uint32_t *fids)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        at_oom();
    uint32_t n = at_flame_frames(p, q, fids);
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            fputc(';', mem);
        char *name = short_names ? at_short_name(p->funcs[fids[i]].name) : NULL;
        put_name(mem, name ? name : p->funcs[fids[i]].name);
        free(name);
    }
    fclose(mem);
    return text;
}

static int by_text(const void *a, const void *b)
{
    const line *x = a, *y = b;
    int c = strcmp(x->text, y->text);
    return c ? c : (x->first > y->first) - (x->first < y->first);
}

static int by_first(const void *a, const void *b)
{
    const line *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

int at_export_folded(FILE *out, const at_profile *p, at_cost cost, bool short_names)
{
    line *lines = at_xcalloc(p->npaths, sizeof *lines);
    uint32_t *fids = NULL, fcap = 0;
    for (size_t i = 0; i < p->npaths; i++) {
        const at_ppath *q = &p->paths[i];
        if (q->stack->nframes + 1 > fcap) {
            fcap = q->stack->nframes + 1;
            fids = at_xreallocarray(fids, fcap, sizeof *fids);
        }
        lines[i] = (line){ fold(p, q, short_names, fids), i,
                           cost == AT_COST_BLOCKS ? q->cost.blocks : q->cost.bytes };
    }
    free(fids);
    qsort(lines, p->npaths, sizeof *lines, by_text);
    size_t n = 0;
    for (size_t i = 0; i < p->npaths; i++) {
        if (n && strcmp(lines[n - 1].text, lines[i].text) == 0) {
            lines[n - 1].cost += lines[i].cost;
            free(lines[i].text);
        } else {
            lines[n++] = lines[i];
        }
    }
    qsort(lines, n, sizeof *lines, by_first);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%s %llu\n", lines[i].text, (unsigned long long)lines[i].cost);
        free(lines[i].text);
    }
    free(lines);
    return ferror(out) ? -1 : 0;
}
