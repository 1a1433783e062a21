/*
 * postproc/gate/gate_supp_foreign.h: suppression files of other tools, read
 * by content and translated to the filter language (postproc/filter/filter.h):
 * valgrind memcheck's `{ ... }` blocks (gate_supp_valgrind.c) and
 * LeakSanitizer's `leak:PATTERN` lines (gate_supp_lsan.c).
 *
 * One suppression of the source file becomes one entry: its label (what
 * the gate's report names) and one or more filter expressions, any of
 * which suppresses a leak (the filter language has no "or"; an LSan
 * pattern that may name a function, a file or a module is three filters).
 */
#ifndef AT_GATE_SUPP_FOREIGN_H
#define AT_GATE_SUPP_FOREIGN_H

#include <stddef.h>
#include <stdio.h>

#include "leakkind.h"

typedef enum at_supp_format {
    AT_SUPP_FILTERS,  /* the filter language */
    AT_SUPP_VALGRIND, /* valgrind's { name  Tool:Kind  frames } blocks */
    AT_SUPP_LSAN,     /* sanitizer TYPE:PATTERN lines */
} at_supp_format;

typedef struct at_supp_entry {
    char *label;    /* the suppression's name, or FILE:LINE */
    char *name;     /* the label as a filter-language NAME ([A-Za-z0-9_.-]) */
    char *source;   /* what it was, one line, for --convert-suppressions */
    char *note;     /* NULL, or why it cannot match anything / how it maps */
    char **filters; /* filter expressions, without the NAME */
    size_t nfilters;
    unsigned kinds; /* the leak kinds it takes (AT_LEAK_BIT set): valgrind's
                       match-leak-kinds; every kind otherwise */
} at_supp_entry;

typedef struct at_supp_list {
    const char *path;
    at_supp_format format;
    at_supp_entry *v;
    size_t n, cap;
} at_supp_list;

/* Which language a suppression file is written in, from its content. */
at_supp_format at_supp_detect(const char *text, size_t len);

/* Translates a valgrind or LSan file (text of len bytes). 0, or -1 with
 * "FILE:LINE: message" naming the construct in *err (malloc'ed). */
int at_supp_read_valgrind(const char *path, const char *text, size_t len, at_supp_list *out,
                          char **err);
int at_supp_read_lsan(const char *path, const char *text, size_t len, at_supp_list *out,
                      char **err);

void at_supp_list_free(at_supp_list *l);

/* The translation as a filter file: a comment per entry, then its
 * "NAME: FILTER" lines (what --convert-suppressions prints). */
void at_supp_list_print(FILE *out, const at_supp_list *l);

/* ---- shared by the readers (gate_supp_foreign.c) ------------------------- */

/* A new entry at the end of l, labelled and named. */
at_supp_entry *at_supp_add_entry(at_supp_list *l, const char *label, const char *source);
void at_supp_add_filter(at_supp_entry *e, char *filter); /* takes filter */

/* A stream writing into a new string, *buf once closed (never NULL). */
FILE *at_supp_open_text(char **buf);

/* Writes s with every PCRE2 metacharacter escaped (and '"' and '#', so
 * the text can never form the regex's closing '"#'). */
void at_supp_regex_escape(FILE *out, const char *s, size_t len);

/* "FILE:LINE: " + message, in a new string. */
char *at_supp_error(const char *path, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The next line of text (without its '\n') from *pos; false at the end. */
typedef struct at_supp_line {
    const char *s;
    size_t len, number;
} at_supp_line;
int at_supp_next_line(const char *text, size_t len, size_t *pos, at_supp_line *line);

/* The line with blanks trimmed at both ends. */
void at_supp_trim(at_supp_line *line);

#endif
