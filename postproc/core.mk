# The post-processor's core: record model, reader, writer, leaks, compress,
# selection, diagnostics (postproc/main.c is built by the top Makefile).
POSTPROC_SRCS += postproc/trace.c postproc/diag.c postproc/reader.c postproc/writer.c \
                 postproc/leaks.c postproc/compress.c postproc/select.c postproc/progress.c \
                 postproc/leakkind.c
# The input layer: plain or zstd-compressed traces, told apart by content.
# libzstd's streaming decoder reads the tracer's .txt.zst files (issue 13).
POSTPROC_SRCS += postproc/input.c
# Compressed-form calls (filter=compress) back into index order.
POSTPROC_SRCS += postproc/reorder.c
POSTPROC_PKGS += libzstd
