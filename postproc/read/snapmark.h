/*
 * postproc/read/snapmark.h: `--snapshot N`, the input ended at snapshot
 * N's mark ("## snapshot: N LABEL", written into a full trace by
 * alloctrace --snapshot): with -l (which --snapshot implies) what is left
 * are the blocks live at that moment, a snapshot file.
 */
#ifndef AT_SNAPMARK_H
#define AT_SNAPMARK_H

#include "diag.h"
#include "trace.h"

/* `n`: the snapshot's number as given (checked to be a number). */
at_stage *at_snapmark_new(at_stage *next, at_trace *t, at_diag *d, const char *n);
void at_snapmark_free(at_stage *s);

/* Whether r is a snapshot's mark, of any number. */
bool at_is_snapshot_mark(const at_record *r);

#endif
