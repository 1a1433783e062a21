/*
 * postproc/frame.c: parsing the resolved frame forms
 *   FUNC() at FILE:LINE      FUNC() from MODULE      from MODULE      in ??
 * each possibly followed by " [inlined]". C++ names contain spaces and
 * parentheses ("ns::f(int) const"), so the split is at the *last* " at "
 * whose tail is FILE:DIGITS, and at the *last* " from " otherwise; paths
 * with " at " or " from " inside them are not worth guessing about.
 */
#include "frame.h"

#include <stdio.h>
#include <string.h>

#include <alloctrace/format.h>

static const char *find_last(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = len >= n ? len - n + 1 : 0; i-- > 0;)
        if (memcmp(s + i, needle, n) == 0)
            return s + i;
    return NULL;
}

/* A C identifier followed by exactly "()": the resolver's mark of a C
 * function, which filters and exports name without it. */
static size_t function_len(const char *f, size_t len)
{
    if (len < 3 || f[len - 2] != '(' || f[len - 1] != ')')
        return len;
    for (size_t i = 0; i + 2 < len; i++) {
        char c = f[i];
        if (!(c == '_' || c == '.' || c == '$' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
              (c >= 'A' && c <= 'Z')))
            return len;
    }
    return len - 2;
}

/* FILE:LINE with LINE all digits (0: compiler-generated code of FILE, no
 * particular line). Returns whether s has that form. */
static bool split_line(const char *s, size_t len, size_t *file_len, unsigned *line)
{
    const char *colon = find_last(s, len, ":");
    if (!colon || colon == s || colon + 1 == s + len)
        return false;
    unsigned long n = 0;
    for (const char *p = colon + 1; p < s + len; p++) {
        if (*p < '0' || *p > '9' || n > 100000000ul)
            return false;
        n = n * 10 + (unsigned long)(*p - '0');
    }
    *file_len = (size_t)(colon - s);
    *line = (unsigned)n;
    return true;
}

static const char *copy(at_stack_table *arena, const char *s, size_t len)
{
    if (len == 0 || (len == 2 && memcmp(s, AT_UNKNOWN, 2) == 0))
        return AT_UNKNOWN;
    return at_stacks_strdup(arena, s, len);
}

static void read_text(const char *text, at_stack_table *arena, at_frame_info *info)
{
    size_t len = strlen(text);
    size_t inl = strlen(AT_FRAME_INLINED);
    if (len >= inl && memcmp(text + len - inl, AT_FRAME_INLINED, inl) == 0) {
        info->inlined = true;
        len -= inl;
    }
    if (len >= 5 && memcmp(text, AT_FRAME_FROM, 5) == 0) {
        info->module = copy(arena, text + 5, len - 5);
        return;
    }
    if (len == 5 && memcmp(text, AT_FRAME_UNKNOWN, 5) == 0)
        return;

    const char *at = find_last(text, len, AT_FRAME_AT);
    if (at) {
        const char *loc = at + strlen(AT_FRAME_AT);
        size_t file_len = 0;
        unsigned line = 0;
        if (split_line(loc, len - (size_t)(loc - text), &file_len, &line)) {
            info->function = copy(arena, text, function_len(text, (size_t)(at - text)));
            info->file = copy(arena, loc, file_len);
            info->line = line;
            return;
        }
    }
    const char *from = find_last(text, len, " " AT_FRAME_FROM);
    if (from) {
        info->function = copy(arena, text, function_len(text, (size_t)(from - text)));
        info->module = copy(arena, from + 6, len - (size_t)(from + 6 - text));
        return;
    }
    /* Unknown form: the whole text names the function. */
    info->function = copy(arena, text, function_len(text, len));
}

void at_frame_read(const at_frame *frame, const at_maps *maps, at_stack_table *arena, at_frame_info *info)
{
    *info = (at_frame_info){ .addr = frame->addr, .function = AT_UNKNOWN, .file = AT_UNKNOWN,
                             .module = AT_UNKNOWN };
    if (frame->text)
        read_text(frame->text, arena, info);
    if (maps) {
        const at_map *m = at_maps_find(maps, frame->addr);
        if (m && strcmp(info->module, AT_UNKNOWN) == 0)
            info->module = m->path;
        if (m && strcmp(info->module, m->path) == 0) {
            info->has_offset = true;
            info->offset = frame->addr - m->start;
        }
    }
}

const char *at_frame_place(const at_frame_info *fi, char *buf, size_t len)
{
    if (fi->has_offset)
        snprintf(buf, len, "%s+0x%llx", at_path_base(fi->module),
                 (unsigned long long)fi->offset);
    else if (strcmp(fi->module, AT_UNKNOWN) != 0) /* named by its text, not in the maps */
        snprintf(buf, len, "%s@0x%llx", at_path_base(fi->module), (unsigned long long)fi->addr);
    else
        snprintf(buf, len, "0x%llx", (unsigned long long)fi->addr);
    return buf;
}

void at_frame_read_stack(const at_stack *stack, const at_maps *maps, at_stack_table *arena,
                         at_frame_info *infos)
{
    for (uint32_t i = 0; i < stack->nframes; i++)
        at_frame_read(&stack->frames[i], maps, arena, &infos[i]);
}

const char *at_path_base(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}
