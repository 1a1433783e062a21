# Reading a trace: the text format in (reader.c).
POSTPROC_SRCS += postproc/read/reader.c
# Lines lexed ahead of the reader on the decompression thread.
POSTPROC_SRCS += postproc/read/scan.c
# The input layer: plain or zstd-compressed traces, told apart by content.
# libzstd's streaming decoder reads the tracer's .txt.zst files (issue 13).
POSTPROC_SRCS += postproc/read/input.c
# Compressed-form calls (filter=compress) back into index order.
POSTPROC_SRCS += postproc/read/reorder.c
# The progress line of a long read on a terminal.
POSTPROC_SRCS += postproc/read/progress.c
POSTPROC_PKGS += libzstd
# The other traces of one process tree, read with the trace processed.
POSTPROC_SRCS += postproc/read/tree.c
# --snapshot N: the input ended at a snapshot's mark.
POSTPROC_SRCS += postproc/read/snapmark.c
