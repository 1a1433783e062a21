/*
 * postproc/read/tree.h: the other traces of one process tree, read with the
 * trace being processed (`alloctrace-postproc [OPTIONS] TRACE OTHER...`).
 */
#ifndef AT_TREE_H
#define AT_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "trace.h"

/* A stage in front of `next` for the trace at `main_path`, read beside the
 * traces `others[0..n)` of its process tree (its parent, its children,
 * their parents...): the blocks it inherited at fork and still held at
 * its end are added to it (allocation calls with the parent's stacks, at
 * its end), and the blocks a child still held at the child's end are
 * taken out of it (the child reports them). Only when `leaks` (-l) or the
 * trace is leaks mode's. `first` (a snapshot, `--snapshot N`): the
 * inherited blocks alive at the fork come before the trace's calls,
 * numbered 1 to K, the calls' numbers shifted by K, and nothing is taken
 * out. NULL after an error said through d (a trace that cannot be read). */
at_stage *at_tree_new(at_stage *next, at_trace *t, const char *main_path,
                      const char *const *others, size_t n, bool leaks, bool first, at_diag *d);
void at_tree_free(at_stage *s);

#endif
