/*
 * postproc/read/reorder.h: the calls of a compressed-form input (filter=compress:
 * calls grouped by backtrace, TEXT_FORMAT.md) put back into index order,
 * so that every later stage, and the text written, see calls as the
 * program made them. Other inputs pass through untouched.
 */
#ifndef AT_REORDER_H
#define AT_REORDER_H

#include "diag.h"
#include "trace.h"

/* Sets t->calls_in_order: the stages after it may rely on index order.
 * The calls of a chunk cut short are dropped with one warning on `d`. */
at_stage *at_reorder_new(at_stage *next, at_trace *t, at_diag *d);
void at_reorder_free(at_stage *s);

/* A call of a "time=on change" trace (TEXT_FORMAT.md, "Calls"), given in
 * index order: one without a time gets *last, the last time before it;
 * one with a time sets *last. Start *last at AT_NO_TIME. */
#define AT_NO_TIME UINT64_MAX
void at_carry_time(uint64_t *last, at_call *c);

#endif
