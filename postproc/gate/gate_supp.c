/*
 * postproc/gate/gate_supp.c: suppression files as the gate's matcher: the
 * filter language (postproc/filter/filter.h), and valgrind's and LeakSanitizer's
 * files, told apart by content and translated to filters
 * (gate_supp_foreign.h). The default file is loaded first so its entries
 * are the first `ndefault` indices.
 *
 * The gate counts suppressions by entry, not by filter: an entry is one
 * filter of a filter file, or one suppression of a valgrind or LSan file,
 * which may have become several filters (any of which takes a leak). An
 * entry also has the leak kinds it takes: every kind, but for a valgrind
 * suppression's match-leak-kinds (the filter language has no kinds).
 *
 * The filter set caches list matches per stack id, which is only right
 * within one stack table; the gate judges many traces (one table each), so
 * the matcher asks through at_filter_matches_frames, which caches nothing.
 * That costs nothing extra: the gate already asks once per distinct
 * (stack, size) of a process.
 */
#include "gate_supp.h"
#include "diag.h"
#include "gate_supp_foreign.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct entry {
    char *label;    /* NULL: the label of its first filter */
    size_t first;   /* its first filter */
    unsigned kinds; /* the leak kinds it takes (AT_LEAK_BIT set) */
} entry;

struct at_gate_supp {
    at_filter_set *set;
    size_t *entry_of; /* per filter */
    size_t nfilters_mapped;
    entry *entries;
    size_t nentries, ndefault;
};

static const char *label(void *ctx, size_t i)
{
    at_gate_supp *s = ctx;
    return s->entries[i].label ? s->entries[i].label : at_filter_label(s->set, s->entries[i].first);
}

static long first_match(void *ctx, const at_stack *stack, const at_frame_info *frames,
                        uint64_t size, at_leak_kind kind)
{
    at_gate_supp *s = ctx;
    size_t n = at_filter_set_count(s->set);
    for (size_t i = 0; i < n; i++)
        if ((s->entries[s->entry_of[i]].kinds & AT_LEAK_BIT(kind)) &&
            at_filter_matches_frames(s->set, i, frames, stack->nframes, size))
            return (long)s->entry_of[i];
    return -1;
}

at_gate_supp *at_gate_supp_new(void)
{
    at_gate_supp *s = at_xcalloc(1, sizeof *s);
    s->set = at_filter_set_new();
    return s;
}

void at_gate_supp_free(at_gate_supp *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nentries; i++)
        free(s->entries[i].label);
    free(s->entries);
    free(s->entry_of);
    at_filter_set_free(s->set);
    free(s);
}

/* A new entry for the filters from the last one's up to filter n, taking
 * leaks of `kinds`. */
static void add_entry(at_gate_supp *s, const char *lbl, size_t n, unsigned kinds)
{
    s->entries = at_xreallocarray(s->entries, s->nentries + 1, sizeof *s->entries);
    s->entries[s->nentries] = (entry){ .label = lbl ? at_xstrdup(lbl) : NULL,
                                       .first = s->nfilters_mapped, .kinds = kinds };
    s->entry_of = at_xreallocarray(s->entry_of, n ? n : 1, sizeof *s->entry_of);
    for (size_t i = s->nfilters_mapped; i < n; i++)
        s->entry_of[i] = s->nentries;
    s->nfilters_mapped = n;
    s->nentries++;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    char *text = NULL;
    size_t cap = 0;
    *len = 0;
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", at_program_name, path, strerror(errno));
        return NULL;
    }
    for (;;) {
        if (*len + 4096 > cap)
            text = at_xrealloc(text, cap = 2 * cap + 4096);
        size_t got = fread(text + *len, 1, cap - *len - 1, f);
        *len += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: %s: %s\n", at_program_name, path, strerror(EIO));
        free(text);
        return NULL;
    }
    text[*len] = '\0';
    return text;
}

static int print_filter_error(at_filter_error *err)
{
    at_filter_error_print(stderr, err, isatty(2));
    at_filter_error_clear(err);
    return -1;
}

/* A file in the filter language: an entry per filter. */
static int add_filters(at_gate_supp *s, const char *path, const char *text, size_t len)
{
    at_filter_error err = { 0 };
    if (at_filter_set_add_text(s->set, text, len, path, &err) != 0)
        return print_filter_error(&err);
    while (s->nfilters_mapped < at_filter_set_count(s->set))
        add_entry(s, NULL, s->nfilters_mapped + 1, AT_LEAK_ALL);
    return 0;
}

/* Reads a valgrind or LSan file into list; prints the error. */
static int read_foreign(const char *path, const char *text, size_t len, at_supp_format fmt,
                        at_supp_list *list)
{
    char *err = NULL;
    int rc = fmt == AT_SUPP_VALGRIND ? at_supp_read_valgrind(path, text, len, list, &err)
                                     : at_supp_read_lsan(path, text, len, list, &err);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", at_program_name, err);
        free(err);
    }
    return rc;
}

/* A valgrind or LSan file: an entry per suppression. */
static int add_foreign(at_gate_supp *s, const char *path, const char *text, size_t len,
                       at_supp_format fmt)
{
    at_supp_list list;
    if (read_foreign(path, text, len, fmt, &list) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < list.n && rc == 0; i++) {
        for (size_t j = 0; j < list.v[i].nfilters && rc == 0; j++) {
            at_filter_error err = { 0 };
            if (at_filter_set_add_expr(s->set, list.v[i].filters[j], list.v[i].label, &err) != 0)
                rc = print_filter_error(&err);
        }
        if (rc == 0)
            add_entry(s, list.v[i].label, at_filter_set_count(s->set), list.v[i].kinds);
    }
    at_supp_list_free(&list);
    return rc;
}

int at_gate_supp_add_file(at_gate_supp *s, const char *path, bool is_default)
{
    size_t len;
    char *text = read_all(path, &len);
    if (!text)
        return -1;
    at_supp_format fmt = at_supp_detect(text, len);
    int rc = fmt == AT_SUPP_FILTERS ? add_filters(s, path, text, len)
                                    : add_foreign(s, path, text, len, fmt);
    free(text);
    if (rc == 0 && is_default)
        s->ndefault = s->nentries;
    return rc;
}

int at_gate_supp_convert(const char *path, FILE *out)
{
    size_t len;
    char *text = read_all(path, &len);
    if (!text)
        return -1;
    at_supp_format fmt = at_supp_detect(text, len);
    int rc = 0;
    if (fmt == AT_SUPP_FILTERS) {
        at_filter_set *set = at_filter_set_new();
        at_filter_error err = { 0 };
        if (at_filter_set_add_text(set, text, len, path, &err) != 0) {
            rc = print_filter_error(&err);
        } else {
            fprintf(out, "# %s is in the filter language already; its filters in normal form:\n",
                    path);
            for (size_t i = 0; i < at_filter_set_count(set); i++) {
                fprintf(out, "# %s\n", at_filter_label(set, i));
                at_filter_print(out, set, i);
                fputc('\n', out);
            }
        }
        at_filter_set_free(set);
    } else {
        at_supp_list list;
        rc = read_foreign(path, text, len, fmt, &list);
        if (rc == 0) {
            at_supp_list_print(out, &list);
            at_supp_list_free(&list);
        }
    }
    free(text);
    return rc;
}

at_gate_matcher at_gate_supp_matcher(at_gate_supp *s)
{
    return (at_gate_matcher){ .ctx = s, .count = s->nentries, .ndefault = s->ndefault,
                              .label = label, .first_match = first_match };
}
