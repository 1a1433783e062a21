/*
 * postproc/leaks.h: the leaks filter (-l). Pairs each release with the
 * allocation of the same (resource type, id) in index order and keeps the
 * allocations left unpaired at the end: the leaks. Memory grows with the
 * live blocks only; the kept records go on at the end of input, in index
 * order, with the comments and other records placed where they were.
 */
#ifndef AT_LEAKS_H
#define AT_LEAKS_H

#include "trace.h"

at_stage *at_leaks_new(at_stage *next, at_trace *t);
void at_leaks_free(at_stage *s);

#endif
