/*
 * postproc/filter_report.c: what filters tell a user about a run
 * (FILTERS.md section 7): how much each suppression hid, which hid
 * nothing, and a suppression written from a leak's stack.
 *
 * A suggested suppression names functions, not lines, so that it survives
 * edits elsewhere in the files; it is led by "..." so a deeper call path
 * (or a stack truncated at the depth limit) to the same code still
 * matches. Names a literal cannot hold (C++ names with spaces or brackets)
 * become an anchored regex with every ASCII punctuation escaped.
 */
#include "filter_impl.h"

#include <inttypes.h>
#include <string.h>

void at_filter_report_tally(FILE *out, const at_filter_set *s, const at_filter_tally *tally)
{
    size_t unused = 0;
    for (size_t i = 0; i < s->count; i++) {
        if (tally[i].blocks == 0) {
            unused++;
            continue;
        }
        fprintf(out, "suppressed %" PRIu64 " block(s), %" PRIu64 " bytes: %s\n", tally[i].blocks,
                tally[i].bytes, s->filters[i].label);
    }
    for (size_t i = 0; i < s->count && unused; i++)
        if (tally[i].blocks == 0)
            fprintf(out, "suppression matched nothing: %s\n", s->filters[i].label);
}

static bool literal_ok(const char *s)
{
    if (!*s || strcmp(s, "...") == 0 || strcmp(s, "**") == 0 || (s[0] == '#' && s[1] == '"'))
        return false;
    /* A lone ':' could read as a line spec; "::" is fine. */
    for (const char *p = s; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '[' || *p == ']' || *p == '\n' || *p == '\r' ||
            (*p == ':' && p[1] != ':' && (p == s || p[-1] != ':')))
            return false;
    return true;
}

static void print_escaped_regex(FILE *out, const char *s)
{
    fputs("#\"^", out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x80 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'))
            fputc('\\', out);
        fputc(c, out);
    }
    fputs("$\"#", out);
}

static bool known(const char *s)
{
    return s && strcmp(s, AT_UNKNOWN) != 0;
}

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

void at_filter_suggest(FILE *out, const at_frame_info *frames, size_t nframes)
{
    bool named = false;
    for (size_t i = 0; i < nframes; i++)
        named |= known(frames[i].function);
    fputs(named ? "functions contains [ ..." : "modules contains [ ...", out);
    bool last_wild = true;
    for (size_t j = nframes; j-- > 0;) {
        const char *s = named ? frames[j].function : frames[j].module;
        if (!known(s)) {
            if (!last_wild)
                fputs(" ...", out);
            last_wild = true;
            continue;
        }
        if (!named)
            s = basename_of(s);
        fputc(' ', out);
        if (literal_ok(s))
            fputs(s, out);
        else
            print_escaped_regex(out, s);
        last_wild = false;
    }
    fputs(" ]", out);
}
