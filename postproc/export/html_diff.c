/*
 * postproc/export/html_diff.c: the page comparing two runs (html_diff.h).
 *
 * As the report (html.c): one file, nothing fetched, the numbers one JSON
 * object the script (assets/diff.js) draws from, the style the report's.
 * Sites are --diff's: matched by function and file from main inwards, by
 * module and offset where a frame has no name, and the page says how many
 * sites of each run had such frames.
 */
#include "html_diff.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "assets.h"
#include "gate.h"
#include "xalloc.h"
#include "json.h"
#include "markup.h"
#include "runtime.h"

static void put_run(FILE *out, const at_an_diff *d, int which)
{
    at_an_summary s;
    at_an_peak p;
    uint64_t unnamed;
    at_an_diff_run(d, which, &s, &p, &unnamed);
    fprintf(out,
            "{\"allocations\":%llu,\"allocated_bytes\":%llu,\"temporary\":%llu,"
            "\"leaked_bytes\":%llu,\"leaked_blocks\":%llu,\"cached_bytes\":%llu,"
            "\"cached_blocks\":%llu,\"peak\":%llu,\"leaks_only\":%s,\"unnamed\":%llu}",
            (unsigned long long)s.allocations, (unsigned long long)s.allocated_bytes,
            (unsigned long long)s.temporary, (unsigned long long)s.leaked_bytes,
            (unsigned long long)s.leaked_blocks, (unsigned long long)s.cached_bytes,
            (unsigned long long)s.cached_blocks, (unsigned long long)p.bytes,
            s.leaks_only ? "true" : "false", (unsigned long long)unnamed);
}

static void put_cost(FILE *out, const at_an_cost *c)
{
    fprintf(out, ",%llu,%llu,%llu,%llu,%llu", (unsigned long long)c->calls,
            (unsigned long long)c->bytes, (unsigned long long)c->peak,
            (unsigned long long)c->leaked, (unsigned long long)c->cached);
}

/* The row's name: its innermost frame (the key's last) that is no
 * allocation wrapper nor the standard library, as the report names sites. */
static void put_name(FILE *out, const char *key)
{
    const char *sep = " -> ", *end = key + strlen(key);
    while (end > key) {
        const char *start = end;
        while (start > key && strncmp(start - strlen(sep), sep, strlen(sep)) != 0)
            start--;
        char *frame = at_xstrndup(start, (size_t)(end - start));
        char *at = strrchr(frame, '@');
        char *fn = at_xstrndup(frame, at ? (size_t)(at - frame) : strlen(frame));
        bool wrapper = at_gate_is_wrapper(fn);
        free(fn);
        if (!wrapper || start == key) {
            at_json_str_html(out, frame);
            free(frame);
            return;
        }
        free(frame);
        end = start - strlen(sep);
    }
    at_json_str_html(out, "(no backtrace)");
}

static void data(FILE *out, const at_an_diff *d, const char *old_name, const char *new_name,
                 unsigned top)
{
    size_t n, changed, sites;
    at_an_diff_row *rows = at_an_diff_rows(d, top, &n, &changed, &sites);
    fputs("{\"old\":", out);
    at_json_str_html(out, old_name);
    fputs(",\"new\":", out);
    at_json_str_html(out, new_name);
    fputs(",\"runs\":[", out);
    put_run(out, d, 0);
    fputc(',', out);
    put_run(out, d, 1);
    fprintf(out, "],\"changed\":%zu,\"sites\":%zu,\"rows\":[", changed, sites);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",[" : "[", out);
        at_json_str_html(out, rows[i].key);
        fprintf(out, ",%d,%d", rows[i].seen[0], rows[i].seen[1]);
        put_cost(out, &rows[i].cost[0]);
        put_cost(out, &rows[i].cost[1]);
        fputc(',', out);
        put_name(out, rows[i].key);
        fputc(']', out);
    }
    fputs("]}", out);
    free(rows);
}

int at_html_diff_write(FILE *out, const at_an_diff *d, const char *old_name, const char *new_name,
                       unsigned top)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"alloctrace " AT_VERSION "\">\n"
          "<title>alloctrace: ", out);
    at_xml_put(out, old_name, strlen(old_name));
    fputs(" compared with ", out);
    at_xml_put(out, new_name, strlen(new_name));
    fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>Comparison of two runs</h1>\n"
                 "<noscript><p>This page draws its tables with JavaScript; please allow it for "
                 "this file.</p></noscript>\n<div id=\"report\"></div>\n"
                 "<script id=\"data\" type=\"application/json\">",
            at_asset_report_css);
    data(out, d, old_name, new_name, top);
    fprintf(out, "</script>\n<script>\n%s</script>\n</body>\n</html>\n", at_asset_diff_js);
    if (ferror(out)) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}
