/*
 * postproc/gate/gate_supp_valgrind.c: valgrind suppression files translated to
 * the filter language, with memcheck's meaning.
 *
 *   {
 *      NAME
 *      Memcheck:Leak
 *      match-leak-kinds: definite,possible
 *      fun:malloc
 *      fun:xstrdup
 *      ...
 *      obj:/usr/lib/libfoo.so*
 *   }
 *
 * How memcheck matches, and how each point is kept:
 * - Frames are listed innermost first and match a prefix of the stack,
 *   starting at the allocation function (frame 0 is memcheck's malloc,
 *   calloc, operator new... replacement). The filter language lists
 *   outermost first and matches the whole stack: the translation reverses
 *   the lines and opens with "..." (the callers the suppression leaves
 *   out).
 * - The tracer's stacks start at the allocation function's caller: the
 *   first line, when it names a C allocation function (malloc, calloc,
 *   realloc, memalign, ...), is dropped. operator new is not interposed:
 *   libstdc++'s operator new is the innermost frame here, so a first line
 *   naming it becomes an "operator new" frame (one, or two for the nothrow
 *   and aligned forms, which call the plain one). A glob that names both
 *   kinds gives a filter for each; a first line that names no allocation
 *   function never matches a leak in memcheck, and here neither.
 * - fun: globs match mangled names in memcheck (gen-suppressions writes
 *   them so). The resolver here writes demangled names: a mangled name
 *   without wildcards is demangled and matched exactly; a wildcard in a
 *   mangled name cannot be translated and is an error. A C name also
 *   matches the name with "__" in front: glibc's DWARF names its
 *   functions __strdup, __libc_calloc..., where valgrind shows the alias
 *   strdup from the symbol table. A symbol version (fun:dlopen@@GLIBC_2.2.5)
 *   is optional: the resolver names functions without one.
 * - obj: globs match the object's path, src:FILE[:LINE] the source file
 *   (its name or a trailing part of its path) and line. A suppression
 *   with several kinds of lines becomes one list per kind joined by &&,
 *   each with a one-frame wildcard (#"^"#) where another kind's line is.
 *   Without "..." between them the frames stay aligned; with "..." the
 *   lists are matched each on its own, so such a suppression can take a
 *   stack whose fun: and obj: lines match at different depths (docs/gate.md).
 * - match-leak-kinds: the entry takes leaks of those kinds only (the
 *   tracer classifies blocks as memcheck does); a block of unknown kind
 *   (a trace without kinds) counts as definite. The filter language has
 *   no kind condition, so the printed translation says it in a comment.
 *   Without the line a suppression takes every kind, as in memcheck.
 * - Suppressions for other tools or other memcheck errors (Memcheck:Cond,
 *   Memcheck:Param, Helgrind:Race...) suppress nothing the gate reports:
 *   they are read, checked for a closing "}", and skipped.
 */
#include "gate_supp_foreign.h"
#include "demangle.h"
#include "leakkind.h"
#include "xalloc.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PLACEHOLDER "<insert_a_suppression_name_here>"

/* memcheck's replacements, what frame 0 of a leak's stack names. */
static const char *const c_allocators[] = {
    "malloc", "calloc", "realloc", "memalign", "posix_memalign", "aligned_alloc", "valloc",
    "pvalloc",
};
static const char *const new_allocators[] = {
    "_Znwm", "_Znam", "_Znwj", "_Znaj", "builtin_new", "__builtin_new", "builtin_vec_new",
    "__builtin_vec_new",
};
/* The nothrow and aligned forms: libstdc++'s may call the plain one. */
static const char *const new_wrapper_allocators[] = {
    "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
};
static const char *const preload_objects[] = {
    "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so",
    "/usr/lib/x86_64-linux-gnu/valgrind/vgpreload_memcheck-amd64-linux.so",
    "/usr/lib/valgrind/vgpreload_memcheck-amd64-linux.so",
};

typedef enum { E_ANY_RUN, E_FUN, E_OBJ, E_SRC } elem_kind;

/* One line of the frame list, innermost first. */
typedef struct elem {
    elem_kind kind;
    char *re;      /* the regex of the filter element, NULL for "..." */
    unsigned line; /* src:FILE:LINE; 0: any */
    bool exact;    /* fun: without wildcards: never operator new unless named so */
} elem;

typedef struct supp {
    elem *v;
    size_t n;
    const char *first_text; /* the first frame line's glob, for allocator checks */
    size_t first_len;
    elem_kind first_kind;
} supp;

/* valgrind's globs: '*' any run, '?' one character, nothing else special.
 * Iterative, going back only to the last '*': linear in practice, never
 * exponential on a line of many stars. */
static bool glob_match(const char *p, size_t plen, const char *s)
{
    size_t i = 0, star = (size_t)-1;
    const char *mark = NULL;
    while (*s) {
        if (i < plen && (p[i] == '?' || p[i] == *s)) {
            i++;
            s++;
        } else if (i < plen && p[i] == '*') {
            star = i++;
            mark = s;
        } else if (mark) {
            i = star + 1;
            s = ++mark;
        } else {
            return false;
        }
    }
    while (i < plen && p[i] == '*')
        i++;
    return i == plen;
}

static bool glob_matches_any(const char *p, size_t plen, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (glob_match(p, plen, names[i]))
            return true;
    return false;
}

#define GLOB_ANY(p, len, names) glob_matches_any(p, len, names, sizeof names / sizeof *names)

static bool has_wildcard(const char *p, size_t len)
{
    return memchr(p, '*', len) || memchr(p, '?', len);
}

/* A run of stars is one ".*": the regex never backtracks over empty runs. */
static void glob_regex(FILE *out, const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '*' && i && p[i - 1] == '*')
            continue;
        if (p[i] == '*')
            fputs(".*", out);
        else if (p[i] == '?')
            fputc('.', out);
        else
            at_supp_regex_escape(out, p + i, 1);
    }
}

/* A C identifier followed by exactly "()": the resolver writes C++
 * functions without parameters so and frame.c drops the "()". */
static size_t without_empty_parens(const char *d)
{
    size_t len = strlen(d);
    if (len < 3 || strcmp(d + len - 2, "()") != 0)
        return len;
    for (size_t i = 0; i + 2 < len; i++)
        if (!(isalnum((unsigned char)d[i]) || d[i] == '_' || d[i] == '.' || d[i] == '$'))
            return len;
    return len - 2;
}

/* before + the glob as a regex + "$", a new string. */
static char *glob_to_regex(const char *before, const char *p, size_t len)
{
    char *re;
    FILE *out = at_supp_open_text(&re);
    fputs(before, out);
    glob_regex(out, p, len);
    fputc('$', out);
    fclose(out);
    return re;
}

/* The regex for a fun: glob; NULL and *err for what cannot be translated. */
static char *fun_regex(const char *p, size_t len, at_demangler *dm, const char *path, size_t line,
                       char **err)
{
    if (!(len > 2 && p[0] == '_' && p[1] == 'Z')) { /* __: glibc's DWARF name of valgrind's alias */
        const char *at = memchr(p, '@', len);
        if (!at)
            return glob_to_regex(isalpha((unsigned char)p[0]) ? "^(?:__)?" : "^", p, len);
        /* dlopen@@GLIBC_2.2.5: the resolver names functions without a version */
        char *re;
        FILE *out = at_supp_open_text(&re);
        fputs(isalpha((unsigned char)p[0]) ? "^(?:__)?" : "^", out);
        glob_regex(out, p, (size_t)(at - p));
        fputs("(?:", out);
        glob_regex(out, at, len - (size_t)(at - p));
        fputs(")?$", out);
        fclose(out);
        return re;
    }
    if (has_wildcard(p, len)) {
        *err = at_supp_error(path, line,
                             "fun:%.*s: a wildcard in a mangled C++ name cannot be translated "
                             "(alloctrace matches demangled names); list the mangled names "
                             "without wildcards, or write the suppression as a filter",
                             (int)len, p);
        return NULL;
    }
    char *name = at_xstrndup(p, len), *d = at_demangle(dm, name), *re;
    FILE *out = at_supp_open_text(&re);
    fputc('^', out);
    if (d)
        at_supp_regex_escape(out, d, without_empty_parens(d));
    else
        at_supp_regex_escape(out, name, len);
    fputc('$', out);
    fclose(out);
    free(d);
    free(name);
    return re;
}

/* src:FILE or src:FILE:LINE: the file's name or a trailing part of its path. */
static char *src_regex(const char *p, size_t len, unsigned *line)
{
    const char *colon = memrchr(p, ':', len);
    *line = 0;
    if (colon && colon + 1 < p + len) {
        bool digits = true;
        for (const char *c = colon + 1; c < p + len; c++)
            digits &= isdigit((unsigned char)*c) != 0;
        if (digits) {
            *line = (unsigned)strtoul(colon + 1, NULL, 10);
            len = (size_t)(colon - p);
        }
    }
    return glob_to_regex("(?:^|/)", p, len);
}

static void supp_free(supp *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].re);
    free(s->v);
    *s = (supp){ 0 };
}

/* One frame line into s; -1 with *err when it is not one. */
static int add_frame_line(supp *s, const at_supp_line *l, at_demangler *dm, const char *path,
                          char **err)
{
    elem e = { 0 };
    const char *p = l->s + 4;
    size_t len = l->len >= 4 ? l->len - 4 : 0;
    if (l->len == 3 && memcmp(l->s, "...", 3) == 0) {
        e.kind = E_ANY_RUN;
    } else if (l->len > 4 && memcmp(l->s, "fun:", 4) == 0) {
        e.kind = E_FUN;
        e.exact = !has_wildcard(p, len) && !GLOB_ANY(p, len, new_allocators) &&
                  !GLOB_ANY(p, len, new_wrapper_allocators);
        if (!(e.re = fun_regex(p, len, dm, path, l->number, err)))
            return -1;
    } else if (l->len > 4 && memcmp(l->s, "obj:", 4) == 0) {
        e.kind = E_OBJ;
        e.re = glob_to_regex("^", p, len);
    } else if (l->len > 4 && memcmp(l->s, "src:", 4) == 0) {
        e.kind = E_SRC;
        e.re = src_regex(p, len, &e.line);
    } else {
        *err = at_supp_error(path, l->number,
                             "'%.*s': not a frame line (fun:NAME, obj:PATH, src:FILE[:LINE] or ...)",
                             (int)l->len, l->s);
        return -1;
    }
    if (s->n == 0 || (s->n == 1 && s->v[0].kind == E_ANY_RUN)) {
        s->first_text = p;
        s->first_len = len;
        s->first_kind = e.kind;
    }
    s->v = at_xreallocarray(s->v, s->n + 1, sizeof *s->v);
    s->v[s->n++] = e;
    return 0;
}

/* Which allocation functions the first frame line may name: C ones, the
 * plain operator new, its nothrow and aligned forms. */
static void first_frame_names(const supp *s, bool *c, bool *cxx, bool *cxx_forms)
{
    const char *p = s->first_text;
    size_t len = s->first_len;
    *c = *cxx = *cxx_forms = false;
    if (s->first_kind == E_FUN) {
        *c = GLOB_ANY(p, len, c_allocators);
        *cxx = GLOB_ANY(p, len, new_allocators);
        *cxx_forms = GLOB_ANY(p, len, new_wrapper_allocators);
    } else if (s->first_kind == E_OBJ) {
        *c = *cxx = *cxx_forms = GLOB_ANY(p, len, preload_objects);
    } else if (s->first_kind == E_SRC) {
        const char *colon = memrchr(p, ':', len);
        size_t flen = colon && isdigit((unsigned char)colon[1]) ? (size_t)(colon - p) : len;
        *c = *cxx = *cxx_forms = glob_match(p, flen, "vg_replace_malloc.c") ||
                                 glob_match(p, flen, "*/vg_replace_malloc.c");
    }
}

#define NEW_RE "^operator new(?:\\[\\])?\\("

/* One list of the filter: kind k's elements (others as one-frame
 * wildcards), outermost first, after `news` operator new frames. */
static void print_list(FILE *out, const char *name, elem_kind k, const elem *v, size_t from,
                       size_t n, int news)
{
    fprintf(out, "%s contains [ ...", name);
    for (size_t i = n; i-- > from;) {
        if (v[i].kind == E_ANY_RUN)
            fputs(" ...", out);
        else if (v[i].kind != k)
            fputs(" #\"^\"#", out);
        else {
            fprintf(out, " #\"%s\"#", v[i].re);
            if (v[i].line)
                fprintf(out, " : %u", v[i].line);
        }
    }
    for (int i = 0; i < news; i++)
        fputs(k == E_FUN ? " #\"" NEW_RE "\"#" : " #\"^\"#", out);
    fputs(" ]", out);
}

/* The filter for the frames v[from..n) after `news` operator new frames;
 * `not_new`: the innermost frame must not be operator new (memcheck's
 * frame 0 was a C allocation function, not operator new). */
static char *filter_of(const supp *s, size_t from, int news, bool not_new)
{
    bool fun = news > 0, obj = false, src = false;
    for (size_t i = from; i < s->n; i++) {
        fun |= s->v[i].kind == E_FUN;
        obj |= s->v[i].kind == E_OBJ;
        src |= s->v[i].kind == E_SRC;
    }
    char *f;
    FILE *out = at_supp_open_text(&f);
    if (fun || (!obj && !src))
        print_list(out, "functions", E_FUN, s->v, from, s->n, news);
    if (obj) {
        fputs(fun ? " && " : "", out);
        print_list(out, "modules", E_OBJ, s->v, from, s->n, news);
    }
    if (src) {
        fputs(fun || obj ? " && " : "", out);
        print_list(out, "callstack", E_SRC, s->v, from, s->n, news);
    }
    if (not_new && !(from < s->n && s->v[from].exact))
        fputs(" && functions excludes [ ... #\"" NEW_RE "\"# ]", out);
    fclose(out);
    return f;
}

/* The filters of a Memcheck:Leak suppression (see the opening comment). */
static void translate(const supp *s, at_supp_entry *e)
{
    size_t first = s->n && s->v[0].kind == E_ANY_RUN ? 1 : 0;
    bool c, cxx, cxx_forms;
    first_frame_names(s, &c, &cxx, &cxx_forms);
    if (first == 1) {
        /* "... fun:malloc ...": the allocation function can only be frame 0. */
        bool only_alloc = first < s->n && s->v[1].kind == E_FUN &&
                          !has_wildcard(s->first_text, s->first_len) && (c || cxx || cxx_forms);
        if (!only_alloc) {
            at_supp_add_filter(e, filter_of(s, 0, 0, false));
            return;
        }
    }
    if (c)
        at_supp_add_filter(e, filter_of(s, first + 1, 0, !(cxx || cxx_forms)));
    if (cxx || cxx_forms)
        at_supp_add_filter(e, filter_of(s, first + 1, 1, false));
    if (cxx_forms)
        at_supp_add_filter(e, filter_of(s, first + 1, 2, false));
    if (!c && !cxx && !cxx_forms) {
        e->note = at_xasprintf("never matches a leak, in memcheck as here: its first frame line "
                               "(%.*s) names no allocation function",
                               (int)s->first_len, s->first_text);
        at_supp_add_filter(e, at_xstrdup("size < 0"));
    }
}

/* The kinds one of memcheck's words names; false for a word it does not
 * know. A block of unknown kind (a trace without them) counts as
 * definitely lost, as the gate judges it. */
static bool kinds_word(const char *w, size_t n, unsigned *set)
{
    static const struct {
        const char *word;
        unsigned set;
    } words[] = {
        { "definite", AT_LEAK_BIT(AT_LEAK_DEFINITE) | AT_LEAK_BIT(AT_LEAK_UNKNOWN) },
        { "indirect", AT_LEAK_BIT(AT_LEAK_INDIRECT) },
        { "possible", AT_LEAK_BIT(AT_LEAK_POSSIBLE) },
        { "reachable", AT_LEAK_BIT(AT_LEAK_REACHABLE) },
        { "all", AT_LEAK_ALL },
        { "none", 0 },
    };
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i].word) == n && memcmp(words[i].word, w, n) == 0) {
            *set |= words[i].set;
            return true;
        }
    return false;
}

/* "match-leak-kinds: definite,possible" into *set; -1 with *err on a word
 * memcheck does not know. */
static int read_kinds(const at_supp_line *l, const char *path, unsigned *set, char **err)
{
    const char *p = l->s + strlen("match-leak-kinds:"), *end = l->s + l->len;
    while (p < end && isspace((unsigned char)*p))
        p++;
    if (p == end) {
        *err = at_supp_error(path, l->number, "match-leak-kinds: no kinds listed");
        return -1;
    }
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *w_end = comma ? comma : end;
        if (!kinds_word(p, (size_t)(w_end - p), set)) {
            *err = at_supp_error(path, l->number,
                                 "match-leak-kinds: '%.*s' is not a leak kind (definite, indirect, "
                                 "possible, reachable, all or none)",
                                 (int)(w_end - p), p);
            return -1;
        }
        p = comma ? comma + 1 : end;
    }
    return 0;
}

/* "Tool[,Tool]:Kind": is it memcheck's Leak? -1 with *err when the line
 * is not of that form. */
static int leak_kind(const at_supp_line *l, const char *path, bool *leak, char **err)
{
    const char *colon = memchr(l->s, ':', l->len);
    if (!colon || colon == l->s || colon + 1 == l->s + l->len) {
        *err = at_supp_error(path, l->number, "'%.*s': expected TOOL:KIND (Memcheck:Leak) "
                                              "after the suppression's name",
                             (int)l->len, l->s);
        return -1;
    }
    bool memcheck = false;
    for (const char *t = l->s; t < colon;) {
        const char *comma = memchr(t, ',', (size_t)(colon - t));
        const char *t_end = comma ? comma : colon;
        memcheck |= t_end - t == 8 && memcmp(t, "Memcheck", 8) == 0;
        t = comma ? comma + 1 : colon;
    }
    *leak = memcheck && l->s + l->len - (colon + 1) == 4 && memcmp(colon + 1, "Leak", 4) == 0;
    return 0;
}

typedef struct reader {
    const char *path, *text;
    size_t len, pos;
    at_supp_line l;
    at_demangler *dm;
    at_supp_list *out;
    char **err;
} reader;

/* The next line that is not blank or a comment, trimmed; false at the end. */
static bool next_content(reader *r)
{
    while (at_supp_next_line(r->text, r->len, &r->pos, &r->l)) {
        at_supp_trim(&r->l);
        if (r->l.len && r->l.s[0] != '#')
            return true;
    }
    return false;
}

static bool is_close(const at_supp_line *l) { return l->len == 1 && l->s[0] == '}'; }

/* One "{ ... }" block, its "{" just read. */
static int read_block(reader *r)
{
    size_t open = r->l.number;
    char *name = NULL, *source = NULL, *kinds = NULL;
    unsigned kind_set = 0;
    bool leak = false;
    supp s = { 0 };
    int rc = -1;
    if (!next_content(r) || is_close(&r->l))
        goto unclosed;
    name = at_xstrndup(r->l.s, r->l.len);
    if (!next_content(r) || is_close(&r->l))
        goto unclosed;
    if (leak_kind(&r->l, r->path, &leak, r->err) != 0)
        goto done;
    source = at_xasprintf("%s:%zu: { %s  %.*s", r->path, open, name, (int)r->l.len, r->l.s);
    for (;;) {
        if (!next_content(r))
            goto unclosed;
        if (is_close(&r->l))
            break;
        if (!leak)
            continue;
        if (r->l.len >= 17 && memcmp(r->l.s, "match-leak-kinds:", 17) == 0 && s.n == 0 && !kinds) {
            if (read_kinds(&r->l, r->path, &kind_set, r->err) != 0)
                goto done;
            kinds = at_xstrndup(r->l.s, r->l.len);
            continue;
        }
        if (add_frame_line(&s, &r->l, r->dm, r->path, r->err) != 0)
            goto done;
    }
    if (leak && s.n == 0) {
        *r->err = at_supp_error(r->path, open, "suppression '%s' has no frame lines", name);
        goto done;
    }
    if (leak) {
        char *label = strcmp(name, PLACEHOLDER) != 0 ? at_xstrdup(name)
                                                     : at_xasprintf("%s:%zu", r->path, open);
        char *full = at_xasprintf("%s%s%s }", source, kinds ? "  " : "", kinds ? kinds : "");
        at_supp_entry *e = at_supp_add_entry(r->out, label, full);
        translate(&s, e);
        if (kinds) {
            e->kinds = kind_set;
            if (!e->note)
                e->note = at_xasprintf("%s: the gate applies it to leaks of those kinds only; "
                                       "the filters below alone take every kind",
                                       kinds);
        }
        free(full);
        free(label);
    }
    rc = 0;
    goto done;
unclosed:
    *r->err = at_supp_error(r->path, open, "the suppression opened here has no closing '}'");
done:
    supp_free(&s);
    free(name);
    free(source);
    free(kinds);
    return rc;
}

int at_supp_read_valgrind(const char *path, const char *text, size_t len, at_supp_list *out,
                          char **err)
{
    *out = (at_supp_list){ .path = path, .format = AT_SUPP_VALGRIND };
    reader r = { .path = path, .text = text, .len = len, .dm = at_demangler_new(), .out = out,
                 .err = err };
    int rc = 0;
    if (memchr(text, '\0', len)) {
        *err = at_xasprintf("%s: a NUL byte: not a text file", path);
        rc = -1;
    }
    while (rc == 0 && next_content(&r)) {
        if (!(r.l.len == 1 && r.l.s[0] == '{')) {
            *err = at_supp_error(path, r.l.number, "'%.*s': expected '{' to open a suppression",
                                 (int)r.l.len, r.l.s);
            rc = -1;
        } else {
            rc = read_block(&r);
        }
    }
    at_demangler_free(r.dm);
    if (rc != 0)
        at_supp_list_free(out);
    return rc;
}
