/*
 * postproc/json.c: JSON strings (json.h). Control characters are escaped,
 * \n and \t in their short forms; valid UTF-8 passes as it is; for HTML,
 * '<' is escaped too.
 */
#include "json.h"
#include "gate.h"

#include <stdbool.h>

static void json_str(FILE *f, const char *s, bool html)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", f);
        else if (*c == '\t')
            fputs("\\t", f);
        else if (*c < 0x20 || *c == 0x7f || (html && *c == '<'))
            fprintf(f, "\\u%04x", *c);
        else if (*c < 0x80)
            fputc(*c, f);
        else if (at_gate_utf8_len(c)) {
            size_t n = at_gate_utf8_len(c);
            fwrite(c, 1, n, f);
            c += n - 1;
        } else
            fprintf(f, "\\u%04x", *c);
    }
    fputc('"', f);
}

void at_json_str(FILE *f, const char *s)
{
    json_str(f, s, false);
}

void at_json_str_html(FILE *f, const char *s)
{
    json_str(f, s, true);
}
