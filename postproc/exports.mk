# Exports: the cost graph and the Callgrind, webgrind and folded formats,
# and the pipeline stage that writes them (--format).
POSTPROC_SRCS += postproc/profile.c postproc/callgrind.c postproc/webgrind.c \
                 postproc/folded.c postproc/export_stage.c
