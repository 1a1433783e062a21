/*
 * postproc/filter/filter_parse.c: the filter language of docs/filters.md, text to
 * at_filter (filter_impl.h). A hand-written scanner over one line, so every
 * error carries the exact column of the token at fault.
 *
 * Decisions the spec leaves to the parser:
 * - Everything parsed from one call is built aside and appended only when
 *   the whole input parsed: a filter file is never half-applied.
 * - Outside callstack lists ':' belongs to literals (C++ names "ns::f"),
 *   but a single ':' that ends a literal or precedes a digit, '_', '+' or
 *   '[' reads as an attempted line spec ("main.c:12" in a string list) and
 *   is reported as such rather than silently never matching.
 * - "missing ']'" points just past the last non-blank character, where the
 *   ']' should be; "inverted range" points at its '['.
 */
#include "filter_impl.h"
#include "diag.h"
#include "xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- the scanner -------------------------------------------------------- */

typedef struct parser {
    const char *p;      /* the line (not NUL-terminated) */
    size_t len;
    size_t pos;
    const char *origin; /* "--filter" or the file's path */
    size_t lineno;      /* 0 for an expression */
    at_filter_error *err;
} parser;

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static bool is_ident(char c)
{
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool at_end(const parser *ps)
{
    return ps->pos >= ps->len;
}

static char peek(const parser *ps, size_t ahead)
{
    return ps->pos + ahead < ps->len ? ps->p[ps->pos + ahead] : '\0';
}

static void skip_ws(parser *ps)
{
    while (!at_end(ps) && is_ws(ps->p[ps->pos]))
        ps->pos++;
}

/* Length of the run of characters from pos up to white space or a stop
 * character: what an error quotes as "the token". */
static int token_len(const parser *ps, size_t pos, const char *stops)
{
    size_t e = pos;
    while (e < ps->len && !is_ws(ps->p[e]) && !strchr(stops, ps->p[e]))
        e++;
    if (e == pos && pos < ps->len)
        e++;
    return (int)(e - pos);
}

static bool fail(parser *ps, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(parser *ps, size_t pos, const char *fmt, ...)
{
    at_filter_error *err = ps->err;
    int column = (int)pos + 1;
    if (ps->lineno)
        err->location = at_xasprintf("%s:%zu:%d", ps->origin, ps->lineno, column);
    else
        err->location = at_xasprintf("%s: column %d", ps->origin, column);
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&err->message, fmt, ap) < 0)
        abort();
    va_end(ap);
    err->source_line = at_xstrndup(ps->p, ps->len);
    err->column = column;
    return false;
}

/* Column just past the last non-blank character: where a missing closer goes. */
static size_t content_end(const parser *ps)
{
    size_t e = ps->len;
    while (e > 0 && is_ws(ps->p[e - 1]))
        e--;
    return e;
}

/* ---- elements ----------------------------------------------------------- */

static const char *kind_name(at_fkind k)
{
    static const char *const names[] = { "callstack", "string", "functions", "modules" };
    return names[k];
}

static bool is_elem_delim(char c)
{
    return c == '\0' || is_ws(c) || c == ']';
}

/* A bound or a line number: optional '+', digits. Sets *open for '_'. */
static bool parse_line_number(parser *ps, const char *stops, uint32_t *out, bool *open)
{
    size_t start = ps->pos;
    *open = false;
    if (peek(ps, 0) == '_') {
        ps->pos++;
        char c = peek(ps, 0);
        if (c == '\0' || is_ws(c) || strchr(stops, c)) {
            *open = true;
            return true;
        }
        ps->pos = start;
    } else {
        if (peek(ps, 0) == '+')
            ps->pos++;
        uint64_t v = 0;
        size_t digits = 0;
        while (is_digit(peek(ps, 0))) {
            v = v * 10 + (uint64_t)(peek(ps, 0) - '0');
            if (v >= AT_LINE_ANY_HI)
                return fail(ps, start, "line number '%.*s' is too large", token_len(ps, start, stops),
                            ps->p + start);
            ps->pos++;
            digits++;
        }
        char c = peek(ps, 0);
        if (digits && (c == '\0' || is_ws(c) || strchr(stops, c))) {
            *out = (uint32_t)v;
            return true;
        }
    }
    if (at_end(ps) || strchr(stops, ps->p[start]))
        return fail(ps, start, "bad line spec: expected a line number or _");
    return fail(ps, start, "bad line spec '%.*s' (expected _, a line number or [LO, HI])",
                token_len(ps, start, stops), ps->p + start);
}

/* After "FILE :" in a callstack list: _, N or [LO, HI]. */
static bool parse_line_spec(parser *ps, size_t colon, at_felem *e)
{
    skip_ws(ps);
    if (at_end(ps) || peek(ps, 0) == ']')
        return fail(ps, colon, "':' without a line spec (expected _, a line number or [LO, HI])");
    bool open;
    uint32_t v = 0;
    if (peek(ps, 0) != '[') {
        if (!parse_line_number(ps, "]", &v, &open))
            return false;
        e->line_lo = open ? 0 : v;
        e->line_hi = open ? AT_LINE_ANY_HI : v;
        return true;
    }
    size_t bracket = ps->pos++;
    uint32_t lo = 0, hi = AT_LINE_ANY_HI;
    skip_ws(ps);
    if (!parse_line_number(ps, ",]", &v, &open))
        return false;
    if (!open)
        lo = v;
    skip_ws(ps);
    if (peek(ps, 0) != ',')
        return fail(ps, ps->pos, "bad line spec: expected ',' in the range [LO, HI]");
    ps->pos++;
    skip_ws(ps);
    if (!parse_line_number(ps, ",]", &v, &open))
        return false;
    if (!open)
        hi = v;
    skip_ws(ps);
    if (peek(ps, 0) != ']')
        return fail(ps, ps->pos, "bad line spec: expected ']' to end the range [LO, HI]");
    ps->pos++;
    if (lo > hi)
        return fail(ps, bracket, "inverted line range [%u, %u]", lo, hi);
    e->line_lo = lo;
    e->line_hi = hi;
    return true;
}

static bool parse_regex(parser *ps, at_felem *e)
{
    size_t start = ps->pos;
    size_t k = start + 2;
    for (;; k++) {
        if (k + 1 >= ps->len)
            return fail(ps, start, "unclosed regex: no '\"#' ends the one opened here");
        if (ps->p[k] == '"' && ps->p[k + 1] == '#') {
            char after = k + 2 < ps->len ? ps->p[k + 2] : '\0';
            if (is_elem_delim(after) || after == ':')
                break;
        }
    }
    size_t src = start + 2, len = k - src;
    int code;
    PCRE2_SIZE offset;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)(ps->p + src), len, 0, &code, &offset, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        if (pcre2_get_error_message(code, msg, sizeof msg) < 0)
            strcpy((char *)msg, "unknown error");
        return fail(ps, src + offset, "invalid regex: %s (at offset %zu)", (const char *)msg, (size_t)offset);
    }
    /* JIT when the platform has it; the interpreter is the fallback. */
    e->jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
    e->type = AT_EL_REGEX;
    e->re = re;
    e->text = at_xstrndup(ps->p + src, len);
    e->len = len;
    ps->pos = k + 2;
    return true;
}

/* Outside callstack lists: the position of a ':' that reads as a line
 * spec, or (size_t)-1. */
static size_t stray_colon(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != ':' || (i > 0 && s[i - 1] == ':') || (i + 1 < n && s[i + 1] == ':'))
            continue;
        char next = i + 1 < n ? s[i + 1] : '\0';
        if (next == '\0' || is_digit(next) || next == '_' || next == '+' || next == '[')
            return i;
    }
    return (size_t)-1;
}

static bool line_spec_not_here(parser *ps, size_t pos, at_fkind kind)
{
    return fail(ps, pos, "a line spec is only allowed in a callstack list, not in a %s list",
                kind_name(kind));
}

static bool parse_literal(parser *ps, at_fkind kind, at_felem *e)
{
    size_t start = ps->pos;
    while (!at_end(ps)) {
        char c = ps->p[ps->pos];
        if (is_ws(c) || c == '[' || c == ']' || (c == ':' && kind == AT_FK_CALLSTACK))
            break;
        ps->pos++;
    }
    size_t n = ps->pos - start;
    if (n == 0) {
        if (peek(ps, 0) == ':')
            return fail(ps, start, "empty file name before ':'");
        return fail(ps, start, "unexpected '[' inside a list (a regex is written #\"...\"#)");
    }
    const char *s = ps->p + start;
    if ((n == 3 && memcmp(s, "...", 3) == 0) || (n == 2 && memcmp(s, "**", 2) == 0)) {
        e->type = AT_EL_WILD;
        return true;
    }
    if (kind != AT_FK_CALLSTACK) {
        size_t colon = stray_colon(s, n);
        if (colon != (size_t)-1)
            return line_spec_not_here(ps, start + colon, kind);
    }
    e->type = AT_EL_LITERAL;
    e->text = at_xstrndup(s, n);
    e->len = n;
    e->dir = s[n - 1] == '/';
    return true;
}

static void elem_free(at_felem *e)
{
    free(e->text);
    free(e->memo);
    if (e->re)
        pcre2_code_free(e->re);
}

static bool parse_element(parser *ps, at_fkind kind, at_felem *e)
{
    *e = (at_felem){ .line_lo = 0, .line_hi = AT_LINE_ANY_HI };
    bool ok = peek(ps, 0) == '#' && peek(ps, 1) == '"' ? parse_regex(ps, e) : parse_literal(ps, kind, e);
    if (!ok)
        return false;
    if (kind != AT_FK_CALLSTACK) {
        if (peek(ps, 0) == ':')
            return line_spec_not_here(ps, ps->pos, kind);
        return true;
    }
    size_t after = ps->pos;
    skip_ws(ps);
    if (peek(ps, 0) != ':') {
        ps->pos = after;
        return true;
    }
    size_t colon = ps->pos++;
    if (e->type == AT_EL_WILD)
        return fail(ps, colon, "a wildcard takes no line spec");
    return parse_line_spec(ps, colon, e);
}

/* ---- sub-filters -------------------------------------------------------- */

static bool word_is(const char *s, size_t n, const char *w)
{
    return strlen(w) == n && memcmp(s, w, n) == 0;
}

static bool parse_predicate(parser *ps, at_fsub *sub)
{
    skip_ws(ps);
    size_t start = ps->pos;
    while (is_ident(peek(ps, 0)))
        ps->pos++;
    const char *w = ps->p + start;
    size_t n = ps->pos - start;
    if (n == 0 && (at_end(ps) || peek(ps, 0) == '['))
        return fail(ps, start, "missing predicate after '%s' (expected contains or excludes)",
                    kind_name(sub->kind));
    if (word_is(w, n, "contains") || word_is(w, n, "contain") || word_is(w, n, "listcontains") ||
        word_is(w, n, "listcontain"))
        sub->negate = false;
    else if (word_is(w, n, "excludes") || word_is(w, n, "exclude") || word_is(w, n, "listexcludes"))
        sub->negate = true;
    else
        return fail(ps, start, "unknown predicate '%.*s' (expected contains or excludes)",
                    n ? (int)n : token_len(ps, start, "["), w);
    return true;
}

static bool parse_list(parser *ps, at_fsub *sub)
{
    if (!parse_predicate(ps, sub))
        return false;
    skip_ws(ps);
    if (peek(ps, 0) != '[')
        return fail(ps, ps->pos, "missing '[' to open the %s list", kind_name(sub->kind));
    size_t open = ps->pos++;
    size_t cap = 0;
    for (;;) {
        skip_ws(ps);
        if (at_end(ps))
            return fail(ps, content_end(ps), "missing ']' to close the list opened at column %zu", open + 1);
        if (peek(ps, 0) == ']') {
            ps->pos++;
            return true;
        }
        if (sub->nelems == cap) {
            cap = cap ? 2 * cap : 8;
            sub->elems = at_xrealloc(sub->elems, cap * sizeof *sub->elems);
        }
        at_felem *e = &sub->elems[sub->nelems];
        if (!parse_element(ps, sub->kind, e)) {
            elem_free(e);
            return false;
        }
        sub->nelems++;
    }
}

/* N with an optional k, M or G suffix (powers of 1024). */
static bool parse_size_number(parser *ps, const char *stops, uint64_t *out, bool allow_open, bool *open)
{
    size_t start = ps->pos;
    if (allow_open && peek(ps, 0) == '_') {
        char c = peek(ps, 1);
        if (c == '\0' || is_ws(c) || strchr(stops, c)) {
            ps->pos++;
            *open = true;
            return true;
        }
    }
    if (open)
        *open = false;
    uint64_t v = 0;
    size_t digits = 0;
    bool overflow = false;
    while (is_digit(peek(ps, 0))) {
        unsigned d = (unsigned)(peek(ps, 0) - '0');
        if (v > (UINT64_MAX - d) / 10)
            overflow = true;
        v = v * 10 + d;
        ps->pos++;
        digits++;
    }
    unsigned shift = 0;
    switch (peek(ps, 0)) {
    case 'k': case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    }
    if (shift && digits)
        ps->pos++;
    char c = peek(ps, 0);
    if (!digits || !(c == '\0' || is_ws(c) || strchr(stops, c)))
        return fail(ps, start, "bad size '%.*s' (expected a number of bytes, with an optional k, M or G suffix%s)",
                    token_len(ps, start, stops), ps->p + start, allow_open ? ", or _" : "");
    if (overflow || (shift && v > (UINT64_MAX >> shift)))
        return fail(ps, start, "size '%.*s' is too large", token_len(ps, start, stops), ps->p + start);
    *out = v << shift;
    return true;
}

static bool parse_size(parser *ps, at_fsub *sub)
{
    sub->is_size = true;
    skip_ws(ps);
    size_t start = ps->pos;
    if (peek(ps, 0) == 'i' && peek(ps, 1) == 'n' && (is_ws(peek(ps, 2)) || peek(ps, 2) == '[')) {
        ps->pos += 2;
        skip_ws(ps);
        if (peek(ps, 0) != '[')
            return fail(ps, ps->pos, "missing '[' after 'size in'");
        size_t bracket = ps->pos++;
        sub->op = AT_SZ_IN;
        skip_ws(ps);
        if (!parse_size_number(ps, ",]", &sub->lo, true, &sub->lo_open))
            return false;
        skip_ws(ps);
        if (peek(ps, 0) != ',')
            return fail(ps, ps->pos, "expected ',' in the size range [LO, HI]");
        ps->pos++;
        skip_ws(ps);
        if (!parse_size_number(ps, ",]", &sub->hi, true, &sub->hi_open))
            return false;
        skip_ws(ps);
        if (peek(ps, 0) != ']')
            return fail(ps, ps->pos, "expected ']' to end the size range [LO, HI]");
        ps->pos++;
        if (sub->lo_open)
            sub->lo = 0;
        if (sub->hi_open)
            sub->hi = UINT64_MAX;
        if (sub->lo > sub->hi)
            return fail(ps, bracket, "inverted size range");
        return true;
    }
    static const struct { const char *s; at_size_op op; } ops[] = {
        { "<=", AT_SZ_LE }, { ">=", AT_SZ_GE }, { "==", AT_SZ_EQ },
        { "=", AT_SZ_EQ },  { "<", AT_SZ_LT },  { ">", AT_SZ_GT },
    };
    size_t i;
    for (i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        size_t n = strlen(ops[i].s);
        if (ps->len - ps->pos >= n && memcmp(ps->p + ps->pos, ops[i].s, n) == 0)
            break;
    }
    if (i == sizeof ops / sizeof ops[0])
        return fail(ps, start, "expected =, <, <=, >, >= or 'in' after 'size'");
    sub->op = ops[i].op;
    ps->pos += strlen(ops[i].s);
    skip_ws(ps);
    return parse_size_number(ps, "&", &sub->n, false, NULL);
}

static void sub_free(at_fsub *sub)
{
    for (size_t i = 0; i < sub->nelems; i++)
        elem_free(&sub->elems[i]);
    free(sub->elems);
}

static bool parse_sub(parser *ps, at_fsub *sub)
{
    size_t start = ps->pos;
    while (is_ident(peek(ps, 0)))
        ps->pos++;
    const char *w = ps->p + start;
    size_t n = ps->pos - start;
    static const char *const kinds[] = { "callstack", "string", "functions", "modules" };
    for (int k = 0; k < 4; k++)
        if (word_is(w, n, kinds[k])) {
            sub->kind = (at_fkind)k;
            return parse_list(ps, sub);
        }
    if (word_is(w, n, "size"))
        return parse_size(ps, sub);
    return fail(ps, start, "unknown list kind '%.*s' (expected callstack, string, functions, modules or size)",
                n ? (int)n : token_len(ps, start, "["), w);
}

/* NAME: at the start of the line (after blanks), NAME of [A-Za-z0-9_.-]. */
static char *parse_name(parser *ps)
{
    size_t start = ps->pos, e = start;
    while (e < ps->len && (is_ident(ps->p[e]) || ps->p[e] == '.' || ps->p[e] == '-'))
        e++;
    if (e == start || e >= ps->len || ps->p[e] != ':')
        return NULL;
    ps->pos = e + 1;
    return at_xstrndup(ps->p + start, e - start);
}

static bool parse_filter(parser *ps, at_filter *f)
{
    skip_ws(ps);
    f->name = parse_name(ps);
    skip_ws(ps);
    if (at_end(ps))
        return fail(ps, ps->pos, f->name ? "empty filter after the name" : "empty filter");
    size_t cap = 0;
    for (;;) {
        if (f->nsubs == cap) {
            cap = cap ? 2 * cap : 2;
            f->subs = at_xrealloc(f->subs, cap * sizeof *f->subs);
        }
        at_fsub *sub = &f->subs[f->nsubs];
        *sub = (at_fsub){ 0 };
        if (!parse_sub(ps, sub)) {
            sub_free(sub);
            return false;
        }
        f->nsubs++;
        if (sub->is_size)
            f->has_size = true;
        else
            f->has_list = true;
        skip_ws(ps);
        if (at_end(ps))
            return true;
        if (peek(ps, 0) != '&' || peek(ps, 1) != '&')
            return fail(ps, ps->pos, "unexpected '%.*s' after the %s filter (expected '&&' or the end)",
                        token_len(ps, ps->pos, ""), ps->p + ps->pos,
                        sub->is_size ? "size" : kind_name(sub->kind));
        size_t amp = ps->pos;
        ps->pos += 2;
        skip_ws(ps);
        if (at_end(ps))
            return fail(ps, amp, "'&&' with nothing after it");
    }
}

void at_filter_destroy(at_filter *f)
{
    for (size_t i = 0; i < f->nsubs; i++)
        sub_free(&f->subs[i]);
    free(f->subs);
    free(f->name);
    free(f->label);
    free(f->cache);
    *f = (at_filter){ 0 };
}

/* ---- sets --------------------------------------------------------------- */

/* PCRE2's limits for one test of a regex against a frame's file, function
 * or module (a few hundred bytes, rarely a few KiB): PCRE2's defaults (ten
 * million steps, 20 GB of heap) let one backtracking pattern take seconds
 * per frame. A million steps is about 1 ms with the JIT; depth and heap
 * bound the interpreter's backtracking memory. */
#define AT_REGEX_MATCH_LIMIT 1000000u
#define AT_REGEX_MATCH_LIMIT_TIGHT 10000u
#define AT_REGEX_DEPTH_LIMIT 100000u
#define AT_REGEX_HEAP_LIMIT_KIB (64u << 10)

static pcre2_match_context *limited_context(uint32_t match_limit)
{
    pcre2_match_context *c = pcre2_match_context_create(NULL);
    if (!c)
        abort();
    pcre2_set_match_limit(c, match_limit);
    pcre2_set_depth_limit(c, AT_REGEX_DEPTH_LIMIT);
    pcre2_set_heap_limit(c, AT_REGEX_HEAP_LIMIT_KIB);
    return c;
}

at_filter_set *at_filter_set_new(void)
{
    at_filter_set *s = at_xrealloc(NULL, sizeof *s);
    *s = (at_filter_set){ 0 };
    s->md = pcre2_match_data_create(1, NULL);
    s->mctx = limited_context(AT_REGEX_MATCH_LIMIT);
    s->mctx_tight = limited_context(AT_REGEX_MATCH_LIMIT_TIGHT);
    if (!s->md)
        abort();
    return s;
}

void at_filter_set_free(at_filter_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        at_filter_destroy(&s->filters[i]);
    free(s->filters);
    pcre2_match_data_free(s->md);
    pcre2_match_context_free(s->mctx);
    pcre2_match_context_free(s->mctx_tight);
    free(s->undecided.label);
    free(s->undecided.regex);
    free(s->undecided.subject);
    free(s->undecided.reason);
    free(s->st_start);
    free(s->st_len);
    free(s->pool);
    free(s->scratch);
    free(s->scratch_ids);
    at_filter_frames_free(s);
    free(s);
}

/* Filters parsed but not yet in a set. */
typedef struct pending {
    at_filter *v;
    size_t n, cap;
} pending;

static at_filter *pending_add(pending *pd)
{
    if (pd->n == pd->cap) {
        pd->cap = pd->cap ? 2 * pd->cap : 4;
        pd->v = at_xrealloc(pd->v, pd->cap * sizeof *pd->v);
    }
    at_filter *f = &pd->v[pd->n++];
    *f = (at_filter){ 0 };
    return f;
}

static void pending_drop(pending *pd)
{
    for (size_t i = 0; i < pd->n; i++)
        at_filter_destroy(&pd->v[i]);
    free(pd->v);
}

static void pending_commit(at_filter_set *s, pending *pd)
{
    if (s->count + pd->n > s->cap) {
        s->cap = (s->count + pd->n) * 2;
        s->filters = at_xrealloc(s->filters, s->cap * sizeof *s->filters);
    }
    if (pd->n)
        memcpy(s->filters + s->count, pd->v, pd->n * sizeof *pd->v);
    s->count += pd->n;
    /* Per-stack candidate lists name filters by index: recompute them. */
    if (pd->n)
        for (size_t i = 0; i < s->st_cap; i++)
            s->st_start[i] = UINT32_MAX;
    s->pool_len = 0;
    free(pd->v);
}

int at_filter_set_add_expr(at_filter_set *s, const char *expr, const char *origin, at_filter_error *err)
{
    *err = (at_filter_error){ 0 };
    if (!origin)
        origin = "--filter";
    parser ps = { .p = expr, .len = strlen(expr), .origin = origin, .err = err };
    pending pd = { 0 };
    at_filter *f = pending_add(&pd);
    if (!parse_filter(&ps, f)) {
        pending_drop(&pd);
        return -1;
    }
    f->label = at_xstrndup(f->name ? f->name : origin, strlen(f->name ? f->name : origin));
    pending_commit(s, &pd);
    return 0;
}

static bool is_comment_or_blank(const char *line, size_t len)
{
    size_t i = 0;
    while (i < len && is_ws(line[i]))
        i++;
    return i == len || line[i] == '#';
}

int at_filter_set_add_text(at_filter_set *s, const char *text, size_t len, const char *path,
                           at_filter_error *err)
{
    *err = (at_filter_error){ 0 };
    pending pd = { 0 };
    size_t lineno = 0;
    for (size_t off = 0; off < len;) {
        const char *line = text + off;
        const char *nl = memchr(line, '\n', len - off);
        size_t n = nl ? (size_t)(nl - line) : len - off;
        off += n + (nl ? 1 : 0);
        lineno++;
        parser ps = { .p = line, .len = n, .origin = path, .lineno = lineno, .err = err };
        const char *nul = memchr(line, '\0', n);
        if (nul) {
            fail(&ps, (size_t)(nul - line), "NUL byte in a filter file");
            pending_drop(&pd);
            return -1;
        }
        if (is_comment_or_blank(line, n))
            continue;
        at_filter *f = pending_add(&pd);
        if (!parse_filter(&ps, f)) {
            pending_drop(&pd);
            return -1;
        }
        f->label = f->name ? at_xstrndup(f->name, strlen(f->name)) : at_xasprintf("%s:%zu", path, lineno);
    }
    pending_commit(s, &pd);
    return 0;
}

int at_filter_set_add_file(at_filter_set *s, const char *path, at_filter_error *err)
{
    *err = (at_filter_error){ 0 };
    FILE *f = fopen(path, "rb");
    if (!f) {
        err->location = at_xstrndup(path, strlen(path));
        err->message = at_xasprintf("cannot open filter file: %s", strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            buf = at_xrealloc(buf, cap);
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    int saved = errno;
    fclose(f);
    if (bad) {
        free(buf);
        err->location = at_xstrndup(path, strlen(path));
        err->message = at_xasprintf("cannot read filter file: %s", strerror(saved));
        return -1;
    }
    int rc = at_filter_set_add_text(s, buf, len, path, err);
    free(buf);
    return rc;
}

void at_filter_error_clear(at_filter_error *err)
{
    free(err->location);
    free(err->message);
    free(err->source_line);
    *err = (at_filter_error){ 0 };
}

void at_filter_error_print(FILE *out, const at_filter_error *err, bool tty)
{
    fprintf(out, "%s: %s: %s\n", at_program_name, err->location ? err->location : "filter", err->message ? err->message : "error");
    if (!tty || !err->source_line || err->column <= 0)
        return;
    fprintf(out, "  %s\n  ", err->source_line);
    /* Tabs stay tabs so the caret lines up under them. */
    size_t n = strlen(err->source_line);
    for (int i = 0; i + 1 < err->column; i++)
        fputc((size_t)i < n && err->source_line[i] == '\t' ? '\t' : ' ', out);
    fputs("^\n", out);
}

size_t at_filter_set_count(const at_filter_set *s)
{
    return s->count;
}

const char *at_filter_label(const at_filter_set *s, size_t i)
{
    return i < s->count ? s->filters[i].label : NULL;
}

bool at_filter_set_needs_names(const at_filter_set *s)
{
    for (size_t i = 0; i < s->count; i++)
        for (size_t j = 0; j < s->filters[i].nsubs; j++) {
            const at_fsub *sub = &s->filters[i].subs[j];
            if (!sub->is_size && sub->kind != AT_FK_MODULES)
                return true;
        }
    return false;
}
