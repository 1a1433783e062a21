/*
 * postproc/analyze/site_name.c: what a table row calls a site (outputs.h,
 * at_an_site_names).
 *
 * Decisions:
 *   - A site is named by the first frame, innermost first, outside the
 *     allocator and the standard library (the gate's at_gate_alloc_site:
 *     operator new, std::, __gnu_cxx::, strdup, xmalloc...), as the gate
 *     names a leak: "operator new <- std::vector<>::_M_realloc_insert" reads
 *     the same for every vector of a program, the code that grew it does not.
 *   - Two rows of one table that would read the same get their callers
 *     added, one frame at a time outwards, until they differ or their frames
 *     run out: enough frames to tell rows apart, no more.
 *   - An unnamed frame reads as its module and offset (at_frame_place), the
 *     same in every run, never an absolute address.
 */
#include "outputs.h"
#include "gate.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

/* "fn (file.c:12)", "fn (libx.so)", "libx.so+0x1a2b": one frame. */
static void put_one(FILE *f, const at_frame_info *fi)
{
    if (strcmp(fi->function, AT_UNKNOWN) == 0) {
        char place[512];
        fputs(at_frame_place(fi, place, sizeof place), f);
        return;
    }
    fputs(fi->function, f);
    if (strcmp(fi->file, AT_UNKNOWN) != 0 && fi->line)
        fprintf(f, " (%s:%u)", at_path_base(fi->file), fi->line);
    else if (strcmp(fi->file, AT_UNKNOWN) != 0)
        fprintf(f, " (%s)", at_path_base(fi->file));
    else if (strcmp(fi->module, AT_UNKNOWN) != 0)
        fprintf(f, " (%s)", at_path_base(fi->module));
}

typedef struct row {
    at_frame_info *fi;
    uint32_t n, first; /* frames to main; the named frame */
    uint32_t extra;    /* callers added */
    char *name;
} row;

static char *name_of(const row *r)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        at_oom();
    if (r->n == 0) {
        fputs("(no backtrace)", f);
    } else {
        put_one(f, &r->fi[r->first]);
        for (uint32_t k = 1; k <= r->extra && r->first + k < r->n; k++) {
            fputs(" <- ", f);
            put_one(f, &r->fi[r->first + k]);
        }
    }
    if (fclose(f) != 0)
        at_oom();
    return s;
}

char **at_an_site_names(const at_an_site *const *sites, size_t n, at_trace *t)
{
    row *rows = at_xcalloc(n ? n : 1, sizeof *rows);
    for (size_t i = 0; i < n; i++) {
        row *r = &rows[i];
        r->fi = at_xcalloc(sites[i]->stack->nframes + 1, sizeof *r->fi);
        r->n = at_an_site_frames(sites[i], t, r->fi);
        const at_frame_info *site = at_gate_alloc_site(r->fi, r->n);
        r->first = site ? (uint32_t)(site - r->fi) : 0;
        r->name = name_of(r);
    }
    /* Rows that read alike get one more caller each round; a round that
     * changes nothing ends it (the frames ran out). */
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < n; i++) {
            bool dup = false;
            for (size_t j = 0; j < n && !dup; j++)
                dup = j != i && strcmp(rows[i].name, rows[j].name) == 0;
            if (dup && rows[i].first + rows[i].extra + 1 < rows[i].n) {
                rows[i].extra++;
                changed = true;
            }
        }
        for (size_t i = 0; changed && i < n; i++) {
            free(rows[i].name);
            rows[i].name = name_of(&rows[i]);
        }
    }
    char **names = at_xcalloc(n ? n : 1, sizeof *names);
    for (size_t i = 0; i < n; i++) {
        names[i] = rows[i].name;
        free(rows[i].fi);
    }
    free(rows);
    return names;
}

void at_an_site_names_free(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}
