/*
 * postproc/writer.h: the trace text format out, as the last stage. It
 * writes every record in normal form (TEXT_FORMAT.md), groups in the
 * compressed form, and at the end the leak summary when the header's
 * filter has `leaks`. The normal form is what the tracer writes, so a
 * traced file comes back byte for byte, and writing is idempotent.
 */
#ifndef AT_WRITER_H
#define AT_WRITER_H

#include "diag.h"
#include "trace.h"

/* A stage writing to fd (not closed). Write errors are reported through d
 * once, and later output is discarded. */
at_stage *at_writer_new(int fd, at_trace *t, at_diag *d);
void at_writer_free(at_stage *w);

#endif
