/*
 * postproc/export/html_diff.h: --diff OLD NEW --format html, one page
 * comparing two runs: the totals of both, and the sites that changed, with
 * their frames, drawn by assets/diff.js from the comparison's data
 * (analyze/outputs.h, at_an_diff_rows).
 */
#ifndef AT_HTML_DIFF_H
#define AT_HTML_DIFF_H

#include <stdio.h>

#include "outputs.h"

/* Writes the page; `top` changed sites at most. Returns 0, or -1 with
 * errno set on a write error. */
int at_html_diff_write(FILE *out, const at_an_diff *d, const char *old_name, const char *new_name,
                       unsigned top);

#endif
