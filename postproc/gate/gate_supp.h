/*
 * postproc/gate/gate_supp.h: suppression files (the filter language) behind the
 * gate's matcher interface.
 */
#ifndef AT_GATE_SUPP_H
#define AT_GATE_SUPP_H

#include <stdbool.h>
#include <stdio.h>

#include "filter.h"
#include "gate.h"

typedef struct at_gate_supp at_gate_supp;

at_gate_supp *at_gate_supp_new(void);
void at_gate_supp_free(at_gate_supp *s);

/* Adds a suppression file: the filter language, or valgrind's or
 * LeakSanitizer's, told by content; the default file must come before any
 * other. On an error prints "FILE:LINE[:COLUMN]: message" to stderr (and
 * for the filter language the line with a caret on a terminal), adds
 * nothing and returns -1. */
int at_gate_supp_add_file(at_gate_supp *s, const char *path, bool is_default);

/* Prints the translation of a valgrind or LSan file to the filter
 * language (a filter file: its filters in normal form); 0, or -1 with
 * the error printed on stderr. */
int at_gate_supp_convert(const char *path, FILE *out);

/* The matcher over the files added so far; valid while s lives. */
at_gate_matcher at_gate_supp_matcher(at_gate_supp *s);

#endif
