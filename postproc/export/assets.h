/*
 * postproc/export/assets.h: the browser-side code the SVG flame graph and the
 * HTML report carry inside them (postproc/export/assets/), NUL-terminated.
 */
#ifndef AT_ASSETS_H
#define AT_ASSETS_H

extern const char at_asset_flamegraph_js[]; /* zoom, search, details of the SVG */
extern const char at_asset_report_js[];     /* the HTML report's rendering */
extern const char at_asset_report_css[];    /* the HTML report's style */
extern const char at_asset_diff_js[];       /* the page comparing two runs (--diff --format html) */

#endif
