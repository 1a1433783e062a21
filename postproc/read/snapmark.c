/*
 * postproc/read/snapmark.c: `--snapshot N` (snapmark.h). Everything before
 * snapshot N's mark passes; the mark itself passes too (the snapshot file
 * names its snapshot), other snapshots' marks do not, and nothing after
 * it does. Runs right after the reorder stage, so "before" is index
 * order: the tracer writes the mark between the calls made before and
 * after it (docs/TEXT_FORMAT.md, "Snapshots"). A trace without that mark
 * is an error that names the marks it has.
 */
#include "snapmark.h"
#include "alloctrace/format.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct snapmark {
    at_stage stage;
    at_diag *d;
    const char *n;
    bool found;
    char seen[256];   /* the marks met, for the error */
} snapmark;

bool at_is_snapshot_mark(const at_record *r)
{
    size_t p = sizeof AT_SNAPSHOT_PREFIX - 1;
    return r->kind == AT_REC_COMMENT && r->u.comment.len > p &&
           memcmp(r->u.comment.text, AT_SNAPSHOT_PREFIX, p) == 0;
}

/* The number after the prefix of a mark, as text, and its length; 0: no mark. */
static size_t mark_number(const at_record *r, const char **num)
{
    size_t p = sizeof AT_SNAPSHOT_PREFIX - 1, len = r->u.comment.len;
    if (!at_is_snapshot_mark(r))
        return 0;
    *num = r->u.comment.text + p;
    size_t k = 0;
    while (p + k < len && (*num)[k] >= '0' && (*num)[k] <= '9')
        k++;
    return k;
}

static void put(at_stage *self, const at_record *r)
{
    snapmark *m = (snapmark *)self;
    if (m->found)
        return;
    const char *num;
    size_t k = mark_number(r, &num);
    if (!k) {
        at_stage_put(self->next, r);
        return;
    }
    if (k == strlen(m->n) && memcmp(num, m->n, k) == 0) {
        m->found = true;
        at_stage_put(self->next, r);
        return;
    }
    size_t used = strlen(m->seen);
    if (used + k + 3 < sizeof m->seen)
        snprintf(m->seen + used, sizeof m->seen - used, "%s%.*s", used ? ", " : "", (int)k, num);
}

static void finish(at_stage *self)
{
    snapmark *m = (snapmark *)self;
    if (!m->found)
        at_diag_error(m->d, AT_EXIT_FAIL, "%s: no snapshot %s in this trace (%s%s)", m->d->file,
                      m->n, m->seen[0] ? "its snapshots: " : "it has no snapshot marks",
                      m->seen);
    at_stage_finish(self->next);
}

at_stage *at_snapmark_new(at_stage *next, at_trace *t, at_diag *d, const char *n)
{
    (void)t;
    snapmark *m = at_xcalloc(1, sizeof *m);
    m->stage = (at_stage){ .put = put, .finish = finish, .next = next };
    m->d = d;
    m->n = n;
    return &m->stage;
}

void at_snapmark_free(at_stage *s)
{
    free(s);
}
