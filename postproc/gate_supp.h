/*
 * postproc/gate_supp.h: suppression files (the filter language) behind the
 * gate's matcher interface.
 */
#ifndef AT_GATE_SUPP_H
#define AT_GATE_SUPP_H

#include <stdbool.h>

#include "filter.h"
#include "gate.h"

typedef struct at_gate_supp at_gate_supp;

at_gate_supp *at_gate_supp_new(void);
void at_gate_supp_free(at_gate_supp *s);

/* Adds a suppression file; the default file must come before any other.
 * On a syntax error prints "FILE:LINE:COLUMN: message" to stderr (and the
 * line with a caret on a terminal), adds nothing and returns -1. */
int at_gate_supp_add_file(at_gate_supp *s, const char *path, bool is_default);

/* The matcher over the files added so far; valid while s lives. */
at_gate_matcher at_gate_supp_matcher(at_gate_supp *s);

#endif
