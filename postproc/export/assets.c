/*
 * postproc/export/assets.c: the JavaScript and CSS of the SVG and HTML outputs
 * (assets.h).
 *
 * They live as files of their own under postproc/export/assets/, so they read,
 * diff and lint as JavaScript and CSS, and the assembler's .incbin copies
 * them into the program unchanged: no generator step, no C escaping, and
 * nothing to read at run time (the outputs must be self-contained and the
 * program installable as one file). AT_BUILD_ROOT, the source tree's
 * absolute path, makes the paths independent of the compiler's directory;
 * the make fragment lists the files as prerequisites, since the compiler's
 * dependency output does not see .incbin.
 */
#include "assets.h"

#define AT_ASSET(sym, file)                                                                         \
    __asm__(".pushsection .rodata\n"                                                               \
            ".globl " #sym "\n"                                                                    \
            ".hidden " #sym "\n"                                                                   \
            ".type " #sym ", @object\n" #sym ":\n"                                                 \
            ".incbin \"" AT_BUILD_ROOT "/postproc/export/assets/" file "\"\n"                             \
            ".byte 0\n"                                                                            \
            ".size " #sym ", . - " #sym "\n"                                                       \
            ".popsection\n")

AT_ASSET(at_asset_flamegraph_js, "flamegraph.js");
AT_ASSET(at_asset_report_js, "report.js");
AT_ASSET(at_asset_report_css, "report.css");
AT_ASSET(at_asset_diff_js, "diff.js");
