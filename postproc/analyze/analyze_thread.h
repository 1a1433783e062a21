/*
 * postproc/analyze/analyze_thread.h: the analyzer on a thread of its own,
 * fed calls through a bounded queue (analyze_thread.c).
 */
#ifndef AT_ANALYZE_THREAD_H
#define AT_ANALYZE_THREAD_H

#include "analyze.h"

typedef struct at_an_thread at_an_thread;

/* Starts analysing on a second thread; without one (it could not be
 * started) every call is analysed at once on the caller's thread. The
 * analyzer must not be used by anyone else until at_an_thread_join. */
at_an_thread *at_an_thread_start(at_analyzer *a);

/* One call, in index order. Copied (without its arguments, which the
 * analyzer does not read): what it points to (its stack and name) must
 * stay as it is until the join, as the trace's interned data does. */
void at_an_thread_call(at_an_thread *q, const at_call *c);

/* Waits until every call handed on is analysed, ends the thread and frees
 * q (NULL: nothing). The analyzer is the caller's again. */
void at_an_thread_join(at_an_thread *q);

#endif
