/*
 * postproc/gate/gate_supp_foreign.c: what the readers of other tools'
 * suppression files share: telling the three languages apart by content,
 * the list of translated entries, lines, errors, regex escaping, and the
 * printed translation (--convert-suppressions).
 *
 * Decisions:
 * - By content, not by file name: projects name their files anything
 *   (valgrind.supp, lsan.txt, tests/leaks.supp). A file whose first line
 *   that is not blank or a '#' comment is "{" is valgrind's; a file whose
 *   every such line is "TYPE:PATTERN" with a sanitizer suppression type is
 *   a sanitizer's, unless the text after the colon reads as a filter (the
 *   filter language's "NAME: FILTER" could be named "leak"); anything else
 *   is the filter language, whose parser then reports what is wrong.
 */
#include "gate_supp_foreign.h"
#include "xalloc.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int at_supp_next_line(const char *text, size_t len, size_t *pos, at_supp_line *line)
{
    if (*pos >= len)
        return 0;
    const char *s = text + *pos, *nl = memchr(s, '\n', len - *pos);
    size_t n = nl ? (size_t)(nl - s) : len - *pos;
    line->s = s;
    line->len = n;
    line->number++;
    *pos += n + (nl != NULL);
    return 1;
}

void at_supp_trim(at_supp_line *line)
{
    while (line->len && isspace((unsigned char)line->s[0])) {
        line->s++;
        line->len--;
    }
    while (line->len && isspace((unsigned char)line->s[line->len - 1]))
        line->len--;
}

static bool is_comment_or_blank(const at_supp_line *l)
{
    return l->len == 0 || l->s[0] == '#';
}

/* Sanitizer suppression types (LSan's "leak" and the other sanitizers'
 * that share its files). */
static bool sanitizer_type(const char *s, size_t len)
{
    static const char *const types[] = {
        "leak", "interceptor_name", "interceptor_via_fun", "interceptor_via_lib",
        "odr_violation", "race", "race_top", "mutex", "thread", "signal", "deadlock",
        "called_from_lib",
    };
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (strlen(types[i]) == len && memcmp(types[i], s, len) == 0)
            return true;
    return false;
}

/* Does text (after a "NAME:") start like a filter of the filter language? */
static bool reads_as_filter(const char *s, size_t len)
{
    static const char *const kinds[] = { "callstack", "string", "functions", "modules", "size" };
    while (len && isspace((unsigned char)*s)) {
        s++;
        len--;
    }
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        size_t k = strlen(kinds[i]);
        if (len > k && memcmp(s, kinds[i], k) == 0 && (isspace((unsigned char)s[k]) || s[k] == '['))
            return true;
    }
    return false;
}

at_supp_format at_supp_detect(const char *text, size_t len)
{
    size_t pos = 0, content = 0;
    bool sanitizer = true;
    at_supp_line l = { 0 };
    while (at_supp_next_line(text, len, &pos, &l)) {
        at_supp_trim(&l);
        if (is_comment_or_blank(&l))
            continue;
        if (content++ == 0 && l.len == 1 && l.s[0] == '{')
            return AT_SUPP_VALGRIND;
        const char *colon = memchr(l.s, ':', l.len);
        if (!colon || !sanitizer_type(l.s, (size_t)(colon - l.s)) ||
            reads_as_filter(colon + 1, l.len - (size_t)(colon + 1 - l.s)))
            sanitizer = false;
    }
    return content && sanitizer ? AT_SUPP_LSAN : AT_SUPP_FILTERS;
}

char *at_supp_error(const char *path, size_t line, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        at_oom();
    va_end(ap);
    char *full = at_xasprintf("%s:%zu: %s", path, line, msg);
    free(msg);
    return full;
}

FILE *at_supp_open_text(char **buf)
{
    static size_t ignored;
    *buf = NULL;
    FILE *out = open_memstream(buf, &ignored);
    if (!out)
        at_oom();
    return out;
}

void at_supp_regex_escape(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (strchr("\\^$.|?*+()[]{}\"#", s[i]))
            fputc('\\', out);
        fputc(s[i], out);
    }
}

/* The label as a NAME of the filter language. */
static char *name_of(const char *label)
{
    char *n = at_xstrdup(label);
    for (char *c = n; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '-'))
            *c = '-';
    return n;
}

at_supp_entry *at_supp_add_entry(at_supp_list *l, const char *label, const char *source)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = at_xreallocarray(l->v, l->cap, sizeof *l->v);
    }
    at_supp_entry *e = &l->v[l->n++];
    *e = (at_supp_entry){ .label = at_xstrdup(label), .name = name_of(label),
                          .source = at_xstrdup(source), .kinds = AT_LEAK_ALL };
    return e;
}

void at_supp_add_filter(at_supp_entry *e, char *filter)
{
    e->filters = at_xreallocarray(e->filters, e->nfilters + 1, sizeof *e->filters);
    e->filters[e->nfilters++] = filter;
}

void at_supp_list_free(at_supp_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        at_supp_entry *e = &l->v[i];
        for (size_t j = 0; j < e->nfilters; j++)
            free(e->filters[j]);
        free(e->filters);
        free(e->label);
        free(e->name);
        free(e->source);
        free(e->note);
    }
    free(l->v);
    *l = (at_supp_list){ 0 };
}

void at_supp_list_print(FILE *out, const at_supp_list *l)
{
    fprintf(out, "# alloctrace filters translated from the %s suppressions of %s\n",
            l->format == AT_SUPP_VALGRIND ? "valgrind" : "LeakSanitizer", l->path);
    for (size_t i = 0; i < l->n; i++) {
        const at_supp_entry *e = &l->v[i];
        fprintf(out, "\n# %s\n", e->source);
        if (e->note)
            fprintf(out, "# %s\n", e->note);
        for (size_t j = 0; j < e->nfilters; j++)
            fprintf(out, "%s: %s\n", e->name, e->filters[j]);
    }
}
