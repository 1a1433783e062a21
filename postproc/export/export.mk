# Exports: the cost graph and the Callgrind, webgrind, folded and flame
# graph formats, the HTML report, and the pipeline stage that writes the
# exports (--format).
POSTPROC_SRCS += postproc/export/profile.c postproc/export/callgrind.c postproc/export/webgrind.c \
                 postproc/export/folded.c postproc/export/export_stage.c \
                 postproc/export/flame.c postproc/export/flamegraph.c postproc/export/markup.c postproc/export/assets.c \
                 postproc/export/html.c postproc/export/html_diff.c
# assets.c copies these in with .incbin, which the compiler's -MMD does not see.
AT_ASSET_FILES := $(wildcard postproc/export/assets/*)
$(B)/postproc/export/assets.o $(B)/san/postproc/export/assets.o: $(AT_ASSET_FILES)
