/*
 * postproc/json.c: JSON strings (json.h). Control characters are escaped,
 * \n and \t in their short forms; valid UTF-8 passes as it is; for HTML,
 * '<' is escaped too. The UTF-8 check lives here, in the core, because the
 * gate's JUnit writer needs it as well.
 */
#include "json.h"

#include <stdbool.h>

size_t at_utf8_len(const unsigned char *s)
{
    size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || s[0] > 0xf4)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* Overlong forms, surrogates, code points above U+10FFFF. */
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

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
        else if (at_utf8_len(c)) {
            size_t n = at_utf8_len(c);
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
