/*
 * postproc/export/markup.h: writing text into SVG and HTML: escaping, numbers
 * with thousands separators and numbers without printf. Shared by the SVG
 * flame graph and the HTML report (its JSON strings are json.h's).
 */
#ifndef AT_MARKUP_H
#define AT_MARKUP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The first n characters of s (fewer at a NUL) with & < > " escaped;
 * control characters, which XML 1.0 forbids, become '?'. */
void at_xml_put(FILE *out, const char *s, size_t n);

/* 1234567 as "1,234,567". */
void at_put_grouped(FILE *out, uint64_t v);

/* v in decimal; v >= 0 with two decimals ("786.67"), rounded. Quicker
 * than printf, which the SVG and the HTML call for every frame. */
void at_put_u64(FILE *out, uint64_t v);
void at_put_fixed2(FILE *out, double v);

#endif
