/*
 * postproc/gate/gate_supp_lsan.c: LeakSanitizer suppression files translated
 * to the filter language, with LSan's meaning.
 *
 *   # comment
 *   leak:libfontconfig.so
 *   leak:^xstrdup$
 *   leak:third_party
 *
 * How LSan matches, and how each point is kept:
 * - A leak is suppressed when PATTERN matches the function name, the
 *   source file name or the module name of any frame of its stack. The
 *   filter language has no "or": each line becomes three filters,
 *   `functions`, `string` and `modules contains [ ... #"RE"# ... ]`, one
 *   entry of the report.
 * - PATTERN is searched anywhere in the name; '*' matches any run, a
 *   leading '^' anchors it at the start and a trailing '$' at the end.
 *   Everything else is literal (the regex escapes it).
 * - LSan's stacks start inside the sanitizer's malloc; the tracer's at
 *   its caller. A pattern that only matches the allocation function
 *   (leak:malloc) suppresses every leak in LSan and nothing here; the
 *   translation says so.
 * - Lines of the other sanitizers' types (interceptor_via_fun, race, ...)
 *   suppress nothing the gate reports and are skipped.
 */
#include "gate_supp_foreign.h"
#include "xalloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The regex of an LSan pattern (see above). */
static char *pattern_regex(const char *p, size_t len)
{
    char *re;
    FILE *out = at_supp_open_text(&re);
    if (len && p[0] == '^') {
        fputc('^', out);
        p++;
        len--;
    }
    bool end = len && p[len - 1] == '$';
    if (end)
        len--;
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '*' && i && p[i - 1] == '*')
            continue; /* a run of stars is one ".*" */
        if (p[i] == '*')
            fputs(".*", out);
        else
            at_supp_regex_escape(out, p + i, 1);
    }
    if (end)
        fputc('$', out);
    fclose(out);
    return re;
}

static bool names_an_allocator(const char *p, size_t len)
{
    static const char *const names[] = { "malloc", "calloc", "realloc", "operator new" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (len == strlen(names[i]) && memcmp(p, names[i], len) == 0)
            return true;
    return false;
}

int at_supp_read_lsan(const char *path, const char *text, size_t len, at_supp_list *out,
                      char **err)
{
    *out = (at_supp_list){ .path = path, .format = AT_SUPP_LSAN };
    if (memchr(text, '\0', len)) {
        *err = at_xasprintf("%s: a NUL byte: not a text file", path);
        return -1;
    }
    size_t pos = 0;
    at_supp_line l = { 0 };
    while (at_supp_next_line(text, len, &pos, &l)) {
        at_supp_trim(&l);
        if (l.len == 0 || l.s[0] == '#')
            continue;
        const char *colon = memchr(l.s, ':', l.len);
        if (!colon || colon - l.s != 4 || memcmp(l.s, "leak", 4) != 0)
            continue; /* another sanitizer's type (at_supp_detect checked the form) */
        const char *p = colon + 1;
        size_t plen = l.len - 5;
        if (plen == 0) {
            *err = at_supp_error(path, l.number, "'leak:': no pattern after the type");
            at_supp_list_free(out);
            return -1;
        }
        char *label = at_xasprintf("%s:%zu", path, l.number);
        char *source = at_xasprintf("%s: %.*s", label, (int)l.len, l.s);
        at_supp_entry *e = at_supp_add_entry(out, label, source);
        char *re = pattern_regex(p, plen);
        static const char *const kinds[] = { "functions", "string", "modules" };
        for (size_t k = 0; k < 3; k++)
            at_supp_add_filter(e, at_xasprintf("%s contains [ ... #\"%s\"# ... ]", kinds[k], re));
        if (names_an_allocator(p, plen))
            e->note = at_xstrdup("in LSan this suppresses every leak (its stacks hold its own "
                                 "malloc); here only stacks with such a name in them (the "
                                 "tracer's start at the caller)");
        free(re);
        free(source);
        free(label);
    }
    return 0;
}
