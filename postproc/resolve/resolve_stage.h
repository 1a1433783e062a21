/*
 * postproc/resolve/resolve_stage.h: -r/--resolve as a stage of alloctrace-postproc
 * (trace.h): every call's (and group's) stack comes out resolved, the
 * header's filter gains "resolve", every other record passes unchanged.
 */
#ifndef AT_RESOLVE_STAGE_H
#define AT_RESOLVE_STAGE_H

#include "resolve.h"
#include "trace.h"

/* NULL (after a message on stderr) when the options cannot be used. */
at_stage *at_resolve_stage_new(at_stage *next, at_trace *t, const at_resolve_options *opts);
void at_resolve_stage_free(at_stage *s);

#endif
