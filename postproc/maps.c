/*
 * postproc/maps.c: the map table. Lookups scan newest first: traces carry
 * tens to a few hundred objects, and callers cache per address or stack,
 * so a sorted index would buy little.
 */
#include "maps.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pending_id {
    char *path, *hex;
} pending_id;

struct at_maps {
    at_map *maps;
    size_t n, cap;
    pending_id *pending;
    size_t npending;
};

at_maps *at_maps_new(void)
{
    return memset(at_xrealloc(NULL, sizeof(at_maps)), 0, sizeof(at_maps));
}

void at_maps_free(at_maps *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free((char *)m->maps[i].path);
        free((char *)m->maps[i].build_id);
    }
    for (size_t i = 0; i < m->npending; i++) {
        free(m->pending[i].path);
        free(m->pending[i].hex);
    }
    free(m->pending);
    free(m->maps);
    free(m);
}

const at_map *at_maps_add(at_maps *m, const char *path, uint64_t start, uint64_t end)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->maps = at_xrealloc(m->maps, m->cap * sizeof *m->maps);
    }
    at_map *e = &m->maps[m->n];
    *e = (at_map){ .path = at_xstrdup(path), .start = start, .end = end, .seq = (uint32_t)m->n };
    for (size_t i = 0; i < m->npending; i++) {
        if (strcmp(m->pending[i].path, path) == 0) {
            e->build_id = m->pending[i].hex;
            free(m->pending[i].path);
            m->pending[i] = m->pending[--m->npending];
            break;
        }
    }
    m->n++;
    return e;
}

void at_maps_set_build_id(at_maps *m, const char *path, const char *hex)
{
    for (size_t i = m->n; i-- > 0;) {
        if (strcmp(m->maps[i].path, path) == 0) {
            free((char *)m->maps[i].build_id);
            m->maps[i].build_id = at_xstrdup(hex);
            return;
        }
    }
    m->pending = at_xrealloc(m->pending, (m->npending + 1) * sizeof *m->pending);
    m->pending[m->npending++] = (pending_id){ at_xstrdup(path), at_xstrdup(hex) };
}

const at_map *at_maps_find(const at_maps *m, uint64_t addr)
{
    for (size_t i = m->n; i-- > 0;)
        if (addr >= m->maps[i].start && addr < m->maps[i].end)
            return &m->maps[i];
    return NULL;
}

size_t at_maps_count(const at_maps *m) { return m->n; }

const at_map *at_maps_get(const at_maps *m, size_t i) { return i < m->n ? &m->maps[i] : NULL; }

/* Parses "0x" HEX; returns the number of characters used, 0 if none. */
static size_t parse_hex(const char *s, size_t len, uint64_t *out)
{
    if (len < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
        return 0;
    uint64_t v = 0;
    size_t i = 2;
    for (; i < len; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            break;
        if (i >= 18) /* more than 16 digits: does not fit */
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    if (i == 2)
        return 0;
    *out = v;
    return i;
}

int at_maps_parse_line(const char *line, size_t len, const char **path, size_t *path_len,
                       uint64_t *start, uint64_t *end)
{
    const char *arrow = NULL;
    for (size_t i = 0; i + 4 <= len; i++)
        if (memcmp(line + i, " => ", 4) == 0)
            arrow = line + i;
    if (!arrow || arrow == line)
        return -1;
    const char *range = arrow + 4;
    size_t rlen = len - (size_t)(range - line);
    size_t a = parse_hex(range, rlen, start);
    if (!a || a >= rlen || range[a] != '-')
        return -1;
    size_t b = parse_hex(range + a + 1, rlen - a - 1, end);
    if (!b || a + 1 + b != rlen || *end < *start)
        return -1;
    *path = line;
    *path_len = (size_t)(arrow - line);
    return 0;
}
