# The post-processor's core: record model, diagnostics, leak kinds, JSON
# strings, and the one-file stages (writer, leaks, compress, selection);
# postproc/main.c is built by the top Makefile.
POSTPROC_SRCS += postproc/trace.c postproc/diag.c postproc/writer.c \
                 postproc/leaks.c postproc/compress.c postproc/select.c \
                 postproc/leakkind.c postproc/json.c postproc/outfile.c postproc/runtime.c \
                 postproc/sampling.c
