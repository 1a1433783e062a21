/*
 * postproc/export/markup.c: escaping and numbers for SVG and HTML (markup.h). Names
 * come from debug info and user programs, so every character is handled:
 * nothing a function name holds can break the markup around it.
 */
#include "markup.h"

#include <stdbool.h>

static bool xml_plain(char c)
{
    return (unsigned char)c >= 0x20 && c != '&' && c != '<' && c != '>' && c != '"';
}

void at_xml_put(FILE *out, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i]) {
        size_t run = i;
        while (run < n && s[run] && xml_plain(s[run]))
            run++;
        fwrite_unlocked(s + i, 1, run - i, out); /* the plain stretch at once */
        if (run == n || !s[run])
            break;
        switch (s[run]) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc('?', out);
        }
        i = run + 1;
    }
}

void at_put_u64(FILE *out, uint64_t v)
{
    char buf[24];
    size_t n = sizeof buf;
    do
        buf[--n] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    fwrite_unlocked(buf + n, 1, sizeof buf - n, out); /* one thread writes */
}

void at_put_fixed2(FILE *out, double v)
{
    uint64_t hundredths = v > 0 ? (uint64_t)(v * 100 + 0.5) : 0;
    at_put_u64(out, hundredths / 100);
    char frac[3] = { '.', (char)('0' + hundredths / 10 % 10), (char)('0' + hundredths % 10) };
    fwrite_unlocked(frac, 1, 3, out);
}

void at_put_grouped(FILE *out, uint64_t v)
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0)
            fputc(',', out);
        fputc(digits[i], out);
    }
}
