/*
 * postproc/json.h: JSON text shared by the outputs that write it (the
 * gate's --json, --format stats, the data of --format html).
 */
#ifndef AT_JSON_H
#define AT_JSON_H

#include <stdio.h>

/* s as a JSON string, or null for NULL. Names and paths are bytes: a byte
 * that is not part of valid UTF-8 is written as the code point of the same
 * number (\u00XX), so the document always parses. */
void at_json_str(FILE *f, const char *s);

/* The same, for JSON inside an HTML <script> element: '<' is written
 * \u003c as well, so no name can end the element ("</script>") or open a
 * comment. */
void at_json_str_html(FILE *f, const char *s);

/* Length of the valid UTF-8 sequence starting at s (1 to 4), or 0 when
 * s[0] does not start one: names and paths in traces are bytes, JSON and
 * XML documents must be valid UTF-8. */
size_t at_utf8_len(const unsigned char *s);

#endif
