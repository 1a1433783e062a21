# The post-processor's core: record model, reader, writer, leaks, compress,
# selection, diagnostics (postproc/main.c is built by the top Makefile).
POSTPROC_SRCS += postproc/trace.c postproc/diag.c postproc/reader.c postproc/writer.c \
                 postproc/leaks.c postproc/compress.c postproc/select.c
