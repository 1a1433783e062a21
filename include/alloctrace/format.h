/*
 * alloctrace/format.h: what the tracer and the post-processor share about
 * the trace text format (protocol 2.0, see docs/TEXT_FORMAT.md,
 * "The exact rules"). Only constants and the record syntax live
 * here; each side has its own code to write and read it.
 */
#ifndef ALLOCTRACE_FORMAT_H
#define ALLOCTRACE_FORMAT_H

#define AT_PROTOCOL_VERSION "2.0"
#define AT_ORIGIN_NAME "alloctrace"

/* Header keys, in the order they are written. Each field is written
 * "key=value, ", the last one too. */
#define AT_HDR_VERSION   "version"
#define AT_HDR_ARCH      "arch"
#define AT_HDR_TIMESTAMP "timestamp"       /* yyyy.mm.dd HH:MM:SS, local */
#define AT_HDR_PROCESS   "process"
#define AT_HDR_PID       "pid"
#define AT_HDR_FILTER    "filter"          /* subset of leaks|compress|resolve */
#define AT_HDR_DEPTH     "backtrace depth"
#define AT_HDR_ORIGIN    "origin"
/* A forked child's trace (after origin): its parent's pid, and in full mode
 * the index of the parent's last call before the fork (the parent's blocks
 * alive then are the child's too: postproc/read/tree.c). */
#define AT_HDR_PPID       "ppid"
#define AT_HDR_FORK_INDEX "fork index"
/* Sampled traces only (ALLOCTRACE_SAMPLE): the sampling interval in
 * bytes, after the depth. Its calls are a Poisson sample by bytes
 * (docs/TEXT_FORMAT.md, "Sampled traces"). */
#define AT_HDR_SAMPLE    "sampling interval"
/* Full mode's default (after origin): a call line without a time took
 * place in the same millisecond as the last time written before it in
 * index order; readers give it that time (docs/TEXT_FORMAT.md, "Calls"). */
#define AT_HDR_TIME      "time"
#define AT_TIME_ON_CHANGE "on change"
#define AT_HDR_FIELD_END ", "

#define AT_FILTER_LEAKS    "leaks"
#define AT_FILTER_COMPRESS "compress"
#define AT_FILTER_RESOLVE  "resolve"

/* The resource the tracer registers: bit 1, always. */
#define AT_RES_MEMORY_BIT  0x1u
#define AT_RES_MEMORY_NAME "memory"
#define AT_RES_MEMORY_DESC "memory allocation in bytes"

/* Line prefixes. */
#define AT_MAP_PREFIX      ": "           /* ": PATH => 0xSTART-0xEND" */
#define AT_MAP_ARROW       " => "
#define AT_BUILD_ID_PREFIX "## build-id: " /* "## build-id: PATH => HEX" */
#define AT_CTX_PREFIX      "@ "           /* "@ BIT : NAME" */
#define AT_ATTACH_PREFIX   "& "           /* "& NAME : PATH" */
#define AT_TEMP_COMMENT    "# "           /* dropped by readers */
#define AT_ALLOC_SUMMARY   "# allocation summary: "
/* After each chunk of a full trace, the tracer's writer: every call up to
 * INDEX is in the file above. Calls after the last mark are from a chunk
 * a SIGKILL cut short (docs/TEXT_FORMAT.md, "Cut traces"). */
#define AT_CHUNK_END       "# chunk end: "
/* The tracer's last line when it could not write the whole trace: a
 * signal ended the program, the disk was full, ... (docs/TEXT_FORMAT.md). */
#define AT_CUT_PREFIX      "## trace cut: "
#define AT_EXEC_PREFIX     "## exec: "      /* "## exec: PATH": the process exec'd PATH here */

/* Leaks mode: a persistent comment before a leaked block's call line (or
 * before a compressed group's first one) giving memcheck's leak kind of
 * the calls that follow, up to the end of their record. Readers of
 * sp-rtrace's time take it for a comment. */
#define AT_LEAK_KIND_PREFIX "## leak kind: "
#define AT_KIND_NAME_DEFINITE  "definite"
#define AT_KIND_NAME_INDIRECT  "indirect"
#define AT_KIND_NAME_POSSIBLE  "possible"
#define AT_KIND_NAME_REACHABLE "reachable"
#define AT_KIND_NAME_LIBC      "libc"        /* glibc's caches, freed by valgrind's freeres */

/* Resolved frame text forms (section 5). */
#define AT_FRAME_AT       " at "
#define AT_FRAME_FROM     "from "
#define AT_FRAME_UNKNOWN  "in ??"
#define AT_FRAME_INLINED  " [inlined]"

/* The allocation functions, as written in call records. */
#define AT_FN_MALLOC         "malloc"
#define AT_FN_CALLOC         "calloc"
#define AT_FN_REALLOC        "realloc"
#define AT_FN_REALLOCARRAY   "reallocarray"
#define AT_FN_FREE           "free"
#define AT_FN_POSIX_MEMALIGN "posix_memalign"
#define AT_FN_ALIGNED_ALLOC  "aligned_alloc"
#define AT_FN_MEMALIGN       "memalign"
#define AT_FN_VALLOC         "valloc"
#define AT_FN_PVALLOC        "pvalloc"

/* Limits both sides agree on. */
#define AT_DEFAULT_DEPTH 128
#define AT_MAX_DEPTH     256
#define AT_MAX_CONTEXTS  32   /* context bits 0x1 .. 0x80000000 */

/* Environment variables the tracer reads (the launcher sets them). */
#define AT_ENV_OUTPUT      "ALLOCTRACE_OUTPUT"
#define AT_ENV_DEPTH       "ALLOCTRACE_DEPTH"
#define AT_ENV_TIMESTAMPS  "ALLOCTRACE_TIMESTAMPS"
#define AT_ENV_FREE_BT     "ALLOCTRACE_FREE_BACKTRACES"
#define AT_ENV_START       "ALLOCTRACE_START"        /* enabled|disabled */
#define AT_ENV_TOGGLE_SIG  "ALLOCTRACE_TOGGLE_SIGNAL"
#define AT_ENV_FOLLOW_FORK "ALLOCTRACE_FOLLOW_FORK"
#define AT_ENV_FOLLOW_EXEC "ALLOCTRACE_FOLLOW_EXEC"
#define AT_ENV_EXEC_CHAIN  "ALLOCTRACE_EXEC_CHAIN"   /* PID: with follow-exec, only programs exec'd by PID are traced */
#define AT_ENV_MODE        "ALLOCTRACE_MODE"         /* full|leaks */
#define AT_ENV_LEAK_KINDS  "ALLOCTRACE_LEAK_KINDS"   /* leaks mode: scan for leak kinds (default 1) */
#define AT_ENV_KEEPER      "ALLOCTRACE_KEEPER"       /* leaks mode: live blocks kept on a thread of the tracer's (default 0) */
#define AT_ENV_EXIT_THREADS "ALLOCTRACE_EXIT_THREADS" /* leaks mode: the report at exit on two threads: 1, 0 (default: when a core looks free) */
#define AT_ENV_DIR         "ALLOCTRACE_DIR"          /* where relative trace names are resolved (default: the start directory) */
#define AT_ENV_TRACE_LIST  "ALLOCTRACE_TRACE_LIST"   /* the launcher's list: every trace created, exec and message */
#define AT_ENV_COMPRESS    "ALLOCTRACE_COMPRESS"     /* none|zstd */
#define AT_ENV_CONTROL     "ALLOCTRACE_CONTROL"      /* 0: no control socket, no control thread (default 1) */
#define AT_ENV_SNAPSHOT_SIG "ALLOCTRACE_SNAPSHOT_SIGNAL" /* a snapshot on this signal (default none) */

/* The control path (docs/tracer.md, "Talking to a running tracer"): the
 * abstract Unix datagram socket "@alloctrace.PID" of every traced process. */
#define AT_CONTROL_NAME    "alloctrace."
#define AT_CONTROL_MAX     4096   /* a request or an answer, at most */

/* A snapshot (docs/TEXT_FORMAT.md, "Snapshots"): in a full trace the mark
 * of the moment it was taken, in a snapshot file the line after the
 * header naming it: "## snapshot: N[ LABEL]". */
#define AT_SNAPSHOT_PREFIX "## snapshot: "
#define AT_ENV_SAMPLE      "ALLOCTRACE_SAMPLE"       /* full mode: sampling interval, bytes (512k, 2M) */
#define AT_ENV_SAMPLE_SEED "ALLOCTRACE_SAMPLE_SEED"  /* the sampler's random seed (tests) */

#endif
