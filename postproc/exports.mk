# Exports: the cost graph and the Callgrind, webgrind, folded and flame
# graph formats, the HTML report, and the pipeline stage that writes the
# exports (--format).
POSTPROC_SRCS += postproc/profile.c postproc/callgrind.c postproc/webgrind.c \
                 postproc/folded.c postproc/export_stage.c \
                 postproc/flame.c postproc/flamegraph.c postproc/markup.c postproc/assets.c \
                 postproc/html.c
# assets.c copies these in with .incbin, which the compiler's -MMD does not see.
AT_ASSET_FILES := $(wildcard postproc/assets/*)
$(B)/postproc/assets.o $(B)/san/postproc/assets.o: $(AT_ASSET_FILES)
