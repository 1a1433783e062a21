/*
 * tests/unit/webgrind_reader.h: the tests' own view of webgrind's
 * preprocessed format (version 7), written independently of
 * postproc/export/webgrind.c:
 *
 *   wg_parse     decodes a preprocessed file and checks its structure (the
 *                address table, each record ending where the next begins,
 *                the header position);
 *   wg_expected  builds the bytes webgrind 1.9's PHP preprocessor would
 *                write for a Callgrind text, from the published description
 *                of its algorithm, step by step as PHP runs it (a whole
 *                Callgrind parse first, then the sums), using linear
 *                searches instead of hashing.
 * Header-only and static: one test program includes it.
 */
#ifndef WEBGRIND_READER_H
#define WEBGRIND_READER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct wg_call {
    uint32_t nr, line, count, cost;
} wg_call;

typedef struct wg_func {
    uint32_t line, self, inclusive, invocations, ncalled_from, nsub_calls;
    wg_call *called_from, *sub_calls;
    char *file, *name;
} wg_func;

typedef struct wg_file {
    uint32_t version, headers_pos, nfuncs;
    wg_func *funcs;
    char *headers; /* the header lines, verbatim */
} wg_file;

static uint32_t wg_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static char *wg_strndup(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    memcpy(c, s, n);
    c[n] = 0;
    return c;
}

/* Decodes `data`; returns NULL (and says why on stderr) if the structure
 * is wrong. */
static wg_file *wg_parse(const unsigned char *data, size_t len)
{
    if (len < 12) {
        fprintf(stderr, "wg_parse: %zu bytes\n", len);
        return NULL;
    }
    wg_file *f = calloc(1, sizeof *f);
    f->version = wg_u32(data);
    f->headers_pos = wg_u32(data + 4);
    f->nfuncs = wg_u32(data + 8);
    size_t pos = 12 + 4 * (size_t)f->nfuncs;
    if (pos > len) {
        fprintf(stderr, "wg_parse: table beyond the end\n");
        return NULL;
    }
    f->funcs = calloc(f->nfuncs + 1, sizeof *f->funcs);
    for (uint32_t i = 0; i < f->nfuncs; i++) {
        wg_func *fn = &f->funcs[i];
        if (wg_u32(data + 12 + 4 * i) != pos || pos + 24 > len) {
            fprintf(stderr, "wg_parse: function %u at %u, expected %zu\n", i,
                    wg_u32(data + 12 + 4 * i), pos);
            return NULL;
        }
        const unsigned char *r = data + pos;
        fn->line = wg_u32(r);
        fn->self = wg_u32(r + 4);
        fn->inclusive = wg_u32(r + 8);
        fn->invocations = wg_u32(r + 12);
        fn->ncalled_from = wg_u32(r + 16);
        fn->nsub_calls = wg_u32(r + 20);
        pos += 24;
        size_t ncalls = (size_t)fn->ncalled_from + fn->nsub_calls;
        if (pos + 16 * ncalls > len) {
            fprintf(stderr, "wg_parse: calls of function %u beyond the end\n", i);
            return NULL;
        }
        fn->called_from = calloc(fn->ncalled_from + 1, sizeof *fn->called_from);
        fn->sub_calls = calloc(fn->nsub_calls + 1, sizeof *fn->sub_calls);
        for (size_t k = 0; k < ncalls; k++, pos += 16) {
            wg_call *c = k < fn->ncalled_from ? &fn->called_from[k] : &fn->sub_calls[k - fn->ncalled_from];
            c->nr = wg_u32(data + pos);
            c->line = wg_u32(data + pos + 4);
            c->count = wg_u32(data + pos + 8);
            c->cost = wg_u32(data + pos + 12);
        }
        for (int s = 0; s < 2; s++) {
            const unsigned char *nl = memchr(data + pos, '\n', len - pos);
            if (!nl) {
                fprintf(stderr, "wg_parse: unterminated name in function %u\n", i);
                return NULL;
            }
            char *text = wg_strndup((const char *)data + pos, (size_t)(nl - data) - pos);
            if (s == 0)
                fn->file = text;
            else
                fn->name = text;
            pos = (size_t)(nl - data) + 1;
        }
    }
    if (f->headers_pos != pos) {
        fprintf(stderr, "wg_parse: headers at %u, functions end at %zu\n", f->headers_pos, pos);
        return NULL;
    }
    f->headers = wg_strndup((const char *)data + pos, len - pos);
    return f;
}

static void wg_free(wg_file *f)
{
    if (!f)
        return;
    for (uint32_t i = 0; i < f->nfuncs; i++) {
        free(f->funcs[i].called_from);
        free(f->funcs[i].sub_calls);
        free(f->funcs[i].file);
        free(f->funcs[i].name);
    }
    free(f->funcs);
    free(f->headers);
    free(f);
}

/* ---- the PHP preprocessor's algorithm, re-done for the tests ---- */

typedef struct wg_line {
    const char *s;
    size_t n; /* with the "\n" */
} wg_line;

typedef struct wg_xcall {
    char key[64];
    int64_t nr, line, count, cost;
} wg_xcall;

typedef struct wg_xfunc {
    char *name, *file;
    int64_t line, invocations, self, inclusive;
    wg_xcall from[256], sub[256];
    int nfrom, nsub;
} wg_xfunc;

typedef struct wg_names {
    char *id[2][512];
    char *name[2][512];
    int n[2];
} wg_names;

static char *wg_trim(const char *s, size_t n)
{
    const char *ws = " \t\n\r\v";
    while (n && (strchr(ws, *s) && *s))
        s++, n--;
    while (n && strchr(ws, s[n - 1]) && s[n - 1])
        n--;
    return wg_strndup(s, n);
}

/* preg_match("/\((\d+)\)(.+)?/") and the table of compressed names. */
static char *wg_name(wg_names *t, int kind, const char *s)
{
    const char *p = s;
    while ((p = strchr(p, '(')) != NULL) {
        size_t d = strspn(p + 1, "0123456789");
        if (d > 0 && p[1 + d] == ')')
            break;
        p++;
    }
    if (!p)
        return strdup(s);
    char *id = wg_strndup(p + 1, strspn(p + 1, "0123456789"));
    const char *rest = p + 2 + strlen(id);
    int i;
    for (i = 0; i < t->n[kind] && strcmp(t->id[kind][i], id) != 0; i++)
        ;
    if (*rest) {
        if (i == t->n[kind]) {
            t->id[kind][t->n[kind]++] = id;
            id = NULL;
        } else {
            free(t->name[kind][i]);
        }
        t->name[kind][i] = wg_trim(rest, strlen(rest));
    } else if (i == t->n[kind]) {
        free(id);
        return strdup(s);
    }
    free(id);
    return strdup(t->name[kind][i]);
}

static void wg_count(wg_xcall *list, int *n, int64_t nr, int64_t line, int64_t cost)
{
    char key[64];
    snprintf(key, sizeof key, "%lld%lld", (long long)nr, (long long)line);
    int i;
    for (i = 0; i < *n && strcmp(list[i].key, key) != 0; i++)
        ;
    if (i == *n) {
        (*n)++;
        snprintf(list[i].key, sizeof list[i].key, "%s", key);
        list[i].nr = nr;
        list[i].line = line;
        list[i].count = 0;
        list[i].cost = 0;
    }
    list[i].count++;
    list[i].cost += cost;
}

static void wg_put(unsigned char **out, size_t *len, size_t *cap, const void *p, size_t n)
{
    while (*len + n > *cap) {
        *cap = *cap ? *cap * 2 : 4096;
        *out = realloc(*out, *cap);
    }
    memcpy(*out + *len, p, n);
    *len += n;
}

static void wg_put32(unsigned char **out, size_t *len, size_t *cap, int64_t v)
{
    uint32_t x = (uint32_t)v;
    unsigned char b[4] = { (unsigned char)x, (unsigned char)(x >> 8), (unsigned char)(x >> 16),
                           (unsigned char)(x >> 24) };
    wg_put(out, len, cap, b, 4);
}

/* The bytes webgrind would write for `text` (at most 256 functions with at
 * most 256 call entries each: test-sized). */
static unsigned char *wg_expected(const char *text, size_t *outlen)
{
    size_t nlines = 0, cap_lines = 64;
    wg_line *lines = malloc(cap_lines * sizeof *lines);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (nlines == cap_lines)
            lines = realloc(lines, (cap_lines *= 2) * sizeof *lines);
        lines[nlines++] = (wg_line){ p, n };
        p += n;
    }
    wg_xfunc *funcs = calloc(256, sizeof *funcs);
    int nfuncs = 0, index = -1;
    wg_names names = { 0 };
    char *headers = calloc(1, 1);
    size_t hlen = 0;
    for (size_t i = 0; i < nlines; i++) {
        char *line = wg_strndup(lines[i].s, lines[i].n);
        long long lnr = 0, cost = 0;
        if (strncmp(line, "fl=", 3) == 0) {
            char *fnline = wg_strndup(lines[i + 1].s, strcspn(lines[i + 1].s, "\r\n"));
            char *function = wg_name(&names, 0, fnline + 3);
            sscanf(lines[i + 2].s, "%lld %lld", &lnr, &cost);
            i += 2;
            int f;
            for (f = 0; f < nfuncs && strcmp(funcs[f].name, function) != 0; f++)
                ;
            if (f == nfuncs) {
                char *t = wg_trim(line, strlen(line));
                funcs[f].file = wg_name(&names, 1, t + 3);
                free(t);
                funcs[f].name = function;
                funcs[f].line = lnr;
                funcs[f].invocations = 1;
                funcs[f].self = funcs[f].inclusive = cost;
                nfuncs++;
            } else {
                free(function);
                funcs[f].invocations++;
                funcs[f].self += cost;
                funcs[f].inclusive += cost;
            }
            index = f;
            free(fnline);
        } else if (strncmp(line, "cfn=", 4) == 0) {
            char *t = wg_trim(line, strlen(line));
            char *called = wg_name(&names, 0, t + 4);
            free(t);
            sscanf(lines[i + 2].s, "%lld %lld", &lnr, &cost);
            i += 2;
            int c;
            for (c = 0; c < nfuncs && strcmp(funcs[c].name, called) != 0; c++)
                ;
            free(called);
            funcs[index].inclusive += cost;
            wg_count(funcs[c].from, &funcs[c].nfrom, index, lnr, cost);
            wg_count(funcs[index].sub, &funcs[index].nsub, c, lnr, cost);
        } else if (strstr(line, ": ")) {
            headers = realloc(headers, hlen + strlen(line) + 1);
            memcpy(headers + hlen, line, strlen(line) + 1);
            hlen += strlen(line);
        }
        free(line);
    }
    unsigned char *out = NULL;
    size_t len = 0, cap = 0;
    wg_put32(&out, &len, &cap, 7);
    wg_put32(&out, &len, &cap, 0);
    wg_put32(&out, &len, &cap, nfuncs);
    for (int f = 0; f < nfuncs; f++)
        wg_put32(&out, &len, &cap, 0);
    for (int f = 0; f < nfuncs; f++) {
        uint32_t at = (uint32_t)len;
        memcpy(out + 12 + 4 * f, (unsigned char[4]){ (unsigned char)at, (unsigned char)(at >> 8),
                                                      (unsigned char)(at >> 16), (unsigned char)(at >> 24) }, 4);
        wg_xfunc *fn = &funcs[f];
        int64_t head[6] = { fn->line, fn->self, fn->inclusive, fn->invocations, fn->nfrom, fn->nsub };
        for (int k = 0; k < 6; k++)
            wg_put32(&out, &len, &cap, head[k]);
        for (int k = 0; k < fn->nfrom + fn->nsub; k++) {
            wg_xcall *c = k < fn->nfrom ? &fn->from[k] : &fn->sub[k - fn->nfrom];
            wg_put32(&out, &len, &cap, c->nr);
            wg_put32(&out, &len, &cap, c->line);
            wg_put32(&out, &len, &cap, c->count);
            wg_put32(&out, &len, &cap, c->cost);
        }
        wg_put(&out, &len, &cap, fn->file, strlen(fn->file));
        wg_put(&out, &len, &cap, "\n", 1);
        wg_put(&out, &len, &cap, fn->name, strlen(fn->name));
        wg_put(&out, &len, &cap, "\n", 1);
        free(fn->file);
        free(fn->name);
    }
    uint32_t hp = (uint32_t)len;
    memcpy(out + 4, (unsigned char[4]){ (unsigned char)hp, (unsigned char)(hp >> 8),
                                        (unsigned char)(hp >> 16), (unsigned char)(hp >> 24) }, 4);
    wg_put(&out, &len, &cap, headers, hlen);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < names.n[k]; i++) {
            free(names.id[k][i]);
            free(names.name[k][i]);
        }
    free(headers);
    free(funcs);
    free(lines);
    *outlen = len;
    return out;
}

#endif
