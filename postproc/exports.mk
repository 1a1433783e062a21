# Exports: the cost graph and the Callgrind, webgrind, folded and report formats.
POSTPROC_SRCS += postproc/profile.c postproc/callgrind.c postproc/webgrind.c \
                 postproc/folded.c postproc/report.c
