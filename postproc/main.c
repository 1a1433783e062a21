/*
 * postproc/main.c: alloctrace-postproc's options and the order of its
 * stages (LAYOUT.md):
 *
 *   read -> pair leaks -> select -> resolve -> filter -> compress -> write/export
 *
 * The reader hands records to the first stage of a chain; build_pipeline()
 * puts the chain together back to front, one clearly separated step per
 * stage. A new stage adds its options to `options`, long_options, usage()
 * and parse_options(), and its step to build_pipeline().
 *
 * Leaks are paired before any selection so that selecting a free away
 * never turns a freed block into a leak (the fix over sp-rtrace).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze.h"
#include "outfile.h"
#include "outputs.h"
#include "compress.h"
#include "diag.h"
#include "export_stage.h"
#include "filter_stage.h"
#include "gate_run.h"
#include "html.h"
#include "html_diff.h"
#include "pprof.h"
#include "leakkind.h"
#include "leaks.h"
#include "progress.h"
#include "reorder.h"
#include "tree.h"
#include "reader.h"
#include "resolve_stage.h"
#include "select.h"
#include "snapmark.h"
#include "trace.h"
#include "writer.h"
#include "xalloc.h"

typedef struct options {
    const char *input;  /* NULL or "-": stdin */
    const char *const *tree; /* the other traces of input's process tree */
    size_t ntree;
    const char *output; /* NULL or "-": stdout */
    bool leaks;
    bool compress;
    at_sort sort;
    unsigned depth;     /* 0: keep whole backtraces */
    bool quiet;
    bool strict;
    at_select_opts select;
    /* resolve */
    bool resolve;
    at_resolve_options resolve_opts; /* debug_dirs: malloc'ed array of argv strings;
                                        cache_dir: malloc'ed (at_resolve_cache_dir) */
    const char *cache_dir_given;     /* --cache-dir */
    bool no_cache;                   /* --no-cache */
    /* callstack filters */
    at_filter_opts filter;
    bool check_filters;
    /* export */
    at_export_opts export_opts; /* format, --cost, --top */
    bool cost_given, top_given;
    at_an_print_opts print_opts; /* report and stats: filled by build_pipeline */
    at_html_opts html_opts;      /* html: filled by build_pipeline */
    at_pprof_opts pprof_opts;    /* pprof: the same */
    const char *diff_old;        /* --diff OLD: compare with the input */
    at_an_output analysis_out;   /* --diff: where each run's analysis goes */
    void *analysis_arg;
    at_snap_diff *snap_diff;     /* --diff: the blocks of snapshots (diff.c) */
    int snap_which;              /* 0 OLD, 1 NEW */
    const char *snapshot;        /* --snapshot N: the trace up to its mark N */
} options;

enum {
    OPT_INCLUDE = 256,
    OPT_EXCLUDE,
    OPT_CALL_ADDRESS,
    OPT_STRICT,
    OPT_RE_RESOLVE,
    OPT_DEBUG_DIR,
    OPT_SYSROOT,
    OPT_CACHE_DIR,
    OPT_NO_CACHE,
    OPT_FILTER,
    OPT_FILTER_FILE,
    OPT_EXCLUDE_FILTER,
    OPT_SUPPRESSIONS,
    OPT_CHECK_FILTERS,
    OPT_FORMAT,
    OPT_COST,
    OPT_TOP,
    OPT_SHORT_NAMES,
    OPT_DIFF,
    OPT_LEAK_KINDS,
    OPT_SNAPSHOT,
};

static const struct option long_options[] = {
    { "filter-leaks", no_argument, NULL, 'l' },
    { "compress", no_argument, NULL, 'c' },
    { "sort", required_argument, NULL, 's' },
    { "backtrace-depth", required_argument, NULL, 'b' },
    { "context", required_argument, NULL, 'C' },
    { "resource", required_argument, NULL, 'R' },
    { "include", required_argument, NULL, OPT_INCLUDE },
    { "exclude", required_argument, NULL, OPT_EXCLUDE },
    { "call-address", required_argument, NULL, OPT_CALL_ADDRESS },
    { "output", required_argument, NULL, 'o' },
    { "quiet", no_argument, NULL, 'q' },
    { "strict", no_argument, NULL, OPT_STRICT },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { "resolve", no_argument, NULL, 'r' },
    { "re-resolve", no_argument, NULL, OPT_RE_RESOLVE },
    { "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
    { "sysroot", required_argument, NULL, OPT_SYSROOT },
    { "cache-dir", required_argument, NULL, OPT_CACHE_DIR },
    { "no-cache", no_argument, NULL, OPT_NO_CACHE },
    { "filter", required_argument, NULL, OPT_FILTER },
    { "filter-file", required_argument, NULL, OPT_FILTER_FILE },
    { "exclude-filter", required_argument, NULL, OPT_EXCLUDE_FILTER },
    { "suppressions", required_argument, NULL, OPT_SUPPRESSIONS },
    { "check-filters", no_argument, NULL, OPT_CHECK_FILTERS },
    { "format", required_argument, NULL, OPT_FORMAT },
    { "cost", required_argument, NULL, OPT_COST },
    { "top", required_argument, NULL, OPT_TOP },
    { "short-names", no_argument, NULL, OPT_SHORT_NAMES },
    { "diff", required_argument, NULL, OPT_DIFF },
    { "leak-kinds", required_argument, NULL, OPT_LEAK_KINDS },
    { "snapshot", required_argument, NULL, OPT_SNAPSHOT },
    { NULL, 0, NULL, 0 },
};

static const char short_options[] = "lcs:b:C:R:o:qhVr";

static void usage(FILE *f)
{
    fputs("Usage: " AT_PROGRAM " [OPTIONS] [INPUT [OTHER...]]\n"
          "       " AT_PROGRAM " --diff OLD [OPTIONS] NEW\n"
          "       " AT_PROGRAM " --gate [GATE OPTIONS] TRACE...   (see --gate --help)\n"
          "\n"
          "Reads an alloctrace (or sp-rtrace 2.0) text trace from INPUT (default: stdin),\n"
          "plain or zstd-compressed (told by content, not by name), and writes it back,\n"
          "filtered, in normal form. OTHER...: the other traces of INPUT's process tree\n"
          "(its parent's, its children's): with -l, a block inherited across fork is\n"
          "reported by the process that still holds it at its end; with --snapshot N,\n"
          "the blocks INPUT inherited at the fork are in its snapshot.\n"
          "\n"
          "  -l, --filter-leaks          keep only allocations never freed (leaks)\n"
          "  -c, --compress              group calls by backtrace\n"
          "  -s, --sort ORDER            with -c: size, size-asc, count, count-asc\n"
          "  -b, --backtrace-depth N     cut backtraces to N frames (merging groups)\n"
          "  -C, --context MASK          keep calls in one of the contexts of MASK\n"
          "  -R, --resource MASK         keep calls of the resource types of MASK\n"
          "      --include FILE          keep only the calls whose indices FILE lists\n"
          "      --exclude FILE          drop the calls whose indices FILE lists\n"
          "      --leak-kinds LIST       keep the leaked blocks of these kinds: definite,\n"
          "                              indirect, possible, reachable, libc, all (blocks of\n"
          "                              no kind always stay)\n"
          "      --call-address MODULE:START+SIZE\n"
          "                              keep calls with a frame in that range of MODULE\n"
          "  -o, --output FILE           write to FILE instead of stdout\n"
          "  -q, --quiet                 no warnings, no progress line\n"
          "      --strict                a malformed input line, an input that is no trace\n"
          "                              (binary, empty, CR-only) or a filter regex past its\n"
          "                              match limit is an error (exit 2)\n"
          "  -r, --resolve               resolve frames to FUNC() at FILE:LINE (libdw)\n"
          "      --re-resolve            resolve frames that already have text too\n"
          "      --debug-dir DIR         with -r: look for debug info in DIR first\n"
          "                              (DIR/.build-id/xx/yyyy.debug, debuglink); repeatable\n"
          "      --sysroot DIR           with -r: module files are under DIR (a trace\n"
          "                              from another machine)\n"
          "      --cache-dir DIR         with -r: keep resolved addresses in DIR across runs\n"
          "                              (default $ALLOCTRACE_CACHE_DIR, else\n"
          "                              $XDG_CACHE_HOME/alloctrace, else ~/.cache/alloctrace;\n"
          "                              an empty value turns it off). Only an optimisation:\n"
          "                              a directory that cannot be written is skipped\n"
          "      --no-cache              with -r: no cache directory\n"
          "      --filter EXPR           keep allocations the callstack filter EXPR\n"
          "                              matches (alloctrace-filters(7), docs/filters.md);\n"
          "                              repeatable: any may match\n"
          "      --filter-file FILE      more --filter filters, one a line\n"
          "      --exclude-filter EXPR   drop allocations EXPR matches; repeatable\n"
          "      --suppressions FILE     drop what the filters of FILE match; report on\n"
          "                              stderr the blocks and bytes each one took\n"
          "      --check-filters         print the filters in normal form, warn about any\n"
          "                              that never or always match, and exit\n"
          "                              (filters on functions or files imply -r)\n"
          "      --format FORMAT         text (the trace, default), callgrind, webgrind,\n"
          "                              folded, report, stats, flamegraph (an SVG) or\n"
          "                              html (one self-contained page) or pprof (pprof's\n"
          "                              profile.proto, gzip'd: -o FILE.pb.gz) (docs/exports.md);\n"
          "                              report, stats and html: peak, temporaries, sizes,\n"
          "                              memory over time and the top sites; callgrind and\n"
          "                              webgrind without -o write cachegrind.out.PROCESS.PID\n"
          "                              (and .webgrind) in the current directory\n"
          "      --cost bytes|blocks     with --format folded or flamegraph: the cost\n"
          "                              (default bytes)\n"
          "      --short-names           with --format folded, flamegraph or html: C++\n"
          "                              template arguments shortened to <>\n"
          "      --top N                 with --format report or stats, or --diff: sites\n"
          "                              shown per ranking (10); with --format html, per\n"
          "                              table (25)\n"
          "      --diff OLD              compare trace OLD with INPUT (NEW): totals, and the\n"
          "                              sites that grew or shrank in calls, bytes, peak\n"
          "                              and leaks, matched by function and file from main\n"
          "                              inwards, frames without names by module+offset\n"
          "                              (use -r on unresolved traces); with --format html,\n"
          "                              one page comparing the two runs.\n"
          "                              Two snapshots (alloctrace --snapshot) compare by\n"
          "                              block: per site what is new and still live since\n"
          "                              OLD, and which leaks are new\n"
          "      --snapshot N            the blocks live at snapshot N of a full trace (its\n"
          "                              mark \"## snapshot: N\"), as a snapshot file: the\n"
          "                              trace up to the mark, with -l implied\n"
          "      --gate ... TRACE...     the leak gate's judging (see --gate --help)\n"
          "  -h, --help                  this text\n"
          "  -V, --version               the version\n"
          "\n"
          "Short options bundle: -lcr is -l -c -r. Stages run in this order: read,\n"
          "reorder (compressed input), pair leaks, select, resolve, filter, compress,\n"
          "write. On a terminal, a large INPUT file shows its progress on stderr.\n"
          "Exit status: 0 ok, 1 a file could not be read or written, 2 usage error or\n"
          "a --strict error.\n",
          f);
}

static void option_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", at_program_name);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(AT_EXIT_USAGE);
}

static unsigned long parse_number(const char *opt, const char *arg, unsigned long max)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 0);
    if (errno || end == arg || *end || arg[0] == '-' || v > max) {
        fprintf(stderr, "%s: %s: not a number in range: '%s'\n", at_program_name, opt, arg);
        exit(AT_EXIT_USAGE);
    }
    return v;
}

static void parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->sort = AT_SORT_NONE;
    at_select_init(&o->select);
    o->export_opts.top = 10;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, short_options, long_options, NULL)) != -1) {
        switch (c) {
        case 'l':
            o->leaks = true;
            break;
        case 'c':
            o->compress = true;
            break;
        case 's':
            if (at_sort_parse(optarg, &o->sort) != 0)
                option_error("--sort: unknown order '%s' (size, size-asc, count, count-asc)",
                             optarg);
            break;
        case 'b':
            o->depth = (unsigned)parse_number("--backtrace-depth", optarg, 1u << 20);
            if (o->depth == 0)
                option_error("--backtrace-depth: must be at least 1, not '%s'", optarg);
            break;
        case 'C':
            o->select.context_mask = (uint32_t)parse_number("--context", optarg, 0xffffffffu);
            o->select.use_context = true;
            break;
        case 'R':
            o->select.resource_mask = (uint32_t)parse_number("--resource", optarg, 0xffffffffu);
            o->select.use_resource = true;
            break;
        case OPT_INCLUDE:
            o->select.include_file = optarg;
            break;
        case OPT_EXCLUDE:
            o->select.exclude_file = optarg;
            break;
        case OPT_LEAK_KINDS:
            if (at_leak_kinds_parse(optarg, &o->select.kinds) != 0)
                option_error("--leak-kinds: unknown kind in '%s' (" AT_LEAK_KINDS_WORDS ")", optarg);
            o->select.use_kinds = true;
            break;
        case OPT_CALL_ADDRESS:
            if (at_select_parse_address(&o->select, optarg) != 0)
                option_error("--call-address: expected MODULE:START+SIZE, not '%s'", optarg);
            break;
        case 'o':
            o->output = optarg;
            break;
        case 'q':
            o->quiet = true;
            break;
        case OPT_STRICT:
            o->strict = true;
            break;
        case 'h':
            usage(stdout);
            exit(AT_EXIT_OK);
        case 'V':
            puts(AT_PROGRAM " " AT_VERSION);
            exit(AT_EXIT_OK);
        case 'r':
            o->resolve = true;
            break;
        case OPT_RE_RESOLVE:
            o->resolve = true;
            o->resolve_opts.re_resolve = true;
            break;
        case OPT_DEBUG_DIR: {
            at_resolve_options *ro = &o->resolve_opts;
            const char **dirs = at_xreallocarray((void *)ro->debug_dirs, ro->ndebug_dirs + 1, sizeof *dirs);
            dirs[ro->ndebug_dirs++] = optarg;
            ro->debug_dirs = dirs;
            break;
        }
        case OPT_SYSROOT:
            o->resolve_opts.sysroot = optarg;
            break;
        case OPT_CACHE_DIR:
            o->cache_dir_given = optarg;
            break;
        case OPT_NO_CACHE:
            o->no_cache = true;
            break;
        case OPT_FILTER:
        case OPT_FILTER_FILE:
        case OPT_EXCLUDE_FILTER:
        case OPT_SUPPRESSIONS: {
            at_filter_opt which = c == OPT_FILTER        ? AT_FOPT_FILTER
                                  : c == OPT_FILTER_FILE ? AT_FOPT_FILTER_FILE
                                  : c == OPT_EXCLUDE_FILTER ? AT_FOPT_EXCLUDE
                                                            : AT_FOPT_SUPPRESSIONS;
            if (at_filter_opts_add(&o->filter, which, optarg) != 0)
                exit(AT_EXIT_USAGE); /* the syntax error is printed */
            break;
        }
        case OPT_CHECK_FILTERS:
            o->check_filters = true;
            break;
        case OPT_FORMAT:
            if (at_format_parse(optarg, &o->export_opts.format) != 0)
                option_error("--format: unknown format '%s' (text, callgrind, webgrind, folded, "
                             "report, stats, flamegraph, html, pprof)", optarg);
            break;
        case OPT_COST:
            if (at_cost_parse(optarg, &o->export_opts.cost) != 0)
                option_error("--cost: expected bytes or blocks, not '%s'", optarg);
            o->cost_given = true;
            break;
        case OPT_SHORT_NAMES:
            o->export_opts.short_names = true;
            break;
        case OPT_DIFF:
            o->diff_old = optarg;
            break;
        case OPT_SNAPSHOT:
            parse_number("--snapshot", optarg, 1u << 30);
            o->snapshot = optarg;
            o->leaks = true;
            break;
        case OPT_TOP:
            o->export_opts.top = (unsigned)parse_number("--top", optarg, 1u << 20);
            o->top_given = true;
            break;
        case '?':
        default:
            if (optopt && optopt < 256 && strchr(short_options, optopt))
                fprintf(stderr, AT_PROGRAM ": option -%c needs an argument (see --help)\n",
                        optopt);
            else if (optopt && optopt < 256)
                fprintf(stderr, AT_PROGRAM ": unknown option -%c (see --help)\n", optopt);
            else
                fprintf(stderr, AT_PROGRAM ": bad option '%s' (see --help)\n",
                        argv[optind - 1]);
            exit(AT_EXIT_USAGE);
        }
    }
    if (optind < argc)
        o->input = argv[optind++];
    /* More inputs: the other traces of the input's process tree (tree.h). */
    o->tree = (const char *const *)argv + optind;
    o->ntree = (size_t)(argc - optind);
    if (o->ntree && (o->diff_old || !o->input || strcmp(o->input, "-") == 0))
        option_error("extra argument '%s': more traces (of one process tree) follow a trace file, "
                     "not stdin or --diff", argv[optind]);
    /* A trace is never typed in: waiting on a terminal would look like a hang. */
    if (!o->input && !o->check_filters && isatty(0))
        option_error("no INPUT given and standard input is a terminal%s (see --help)", "");
    if (o->sort != AT_SORT_NONE && !o->compress)
        option_error("%s needs -c/--compress", "--sort");
    if (!o->resolve && (o->resolve_opts.ndebug_dirs || o->resolve_opts.sysroot))
        option_error("%s need -r/--resolve", "--debug-dir and --sysroot");
    if (o->cost_given && o->export_opts.format != AT_FORMAT_FOLDED &&
        o->export_opts.format != AT_FORMAT_FLAMEGRAPH)
        option_error("%s needs --format folded or flamegraph", "--cost");
    if (o->export_opts.short_names && o->export_opts.format != AT_FORMAT_FOLDED &&
        o->export_opts.format != AT_FORMAT_FLAMEGRAPH && o->export_opts.format != AT_FORMAT_HTML)
        option_error("%s needs --format folded, flamegraph or html", "--short-names");
    if (o->snapshot && o->diff_old)
        option_error("%s makes one snapshot: drop --diff", "--snapshot");
    if (o->diff_old && o->export_opts.format != AT_FORMAT_TEXT &&
        o->export_opts.format != AT_FORMAT_HTML)
        option_error("%s prints its own comparison, as text or --format html", "--diff");
    if (o->diff_old && (!o->input || strcmp(o->input, "-") == 0) &&
        strcmp(o->diff_old, "-") == 0)
        option_error("%s: OLD and NEW cannot both be stdin", "--diff");
    if (o->top_given && !at_format_analysed(o->export_opts.format) && !o->diff_old)
        option_error("%s needs --format report, stats or html, or --diff", "--top");
    if (o->check_filters && !at_filter_opts_active(&o->filter))
        option_error("%s needs --filter, --filter-file, --exclude-filter or --suppressions",
                     "--check-filters");
    /* Filters on functions or files need names: resolve first, as -r would. */
    if (at_filter_opts_needs_names(&o->filter))
        o->resolve = true;
    o->resolve_opts.quiet = o->quiet;
    if (o->resolve)
        o->resolve_opts.cache_dir = at_resolve_cache_dir(o->cache_dir_given, o->no_cache);
}

/* The stages of one run, owned here so that they are freed in one place. */
typedef struct pipeline {
    at_stage *head;
    at_stage *stages[16];
    void (*frees[16])(at_stage *);
    int n;
} pipeline;

static at_stage *push(pipeline *p, at_stage *s, void (*free_fn)(at_stage *))
{
    p->stages[p->n] = s;
    p->frees[p->n] = free_fn;
    p->n++;
    p->head = s;
    return s;
}

/* Built back to front: each stage is given the one after it. */
static int build_pipeline(pipeline *p, options *o, at_trace *t, at_diag *d, int out_fd)
{
    memset(p, 0, sizeof *p);
    bool analysed = at_format_analysed(o->export_opts.format) || o->analysis_out;

    /* write, analyse or export, as --format asks */
    if (o->analysis_out) {
        push(p, at_analyze_stage_new(t, d, o->analysis_out, o->analysis_arg),
             at_analyze_stage_free);
        if (o->snap_diff)
            push(p, at_snap_diff_stage_new(o->snap_diff, o->snap_which, t, p->head),
                 at_snap_diff_stage_free);
    } else if (o->export_opts.format == AT_FORMAT_HTML) {
        o->html_opts = (at_html_opts){ .fd = out_fd, .short_names = o->export_opts.short_names,
                                       .top = o->top_given ? o->export_opts.top : AT_HTML_TOP };
        push(p, at_analyze_stage_new(t, d, at_html_print, &o->html_opts), at_analyze_stage_free);
    } else if (o->export_opts.format == AT_FORMAT_PPROF) {
        o->pprof_opts = (at_pprof_opts){ .fd = out_fd };
        push(p, at_analyze_stage_new(t, d, at_pprof_print, &o->pprof_opts), at_analyze_stage_free);
    } else if (analysed) {
        o->print_opts = (at_an_print_opts){ .fd = out_fd, .top = o->export_opts.top,
                                            .stats = o->export_opts.format == AT_FORMAT_STATS };
        push(p, at_analyze_stage_new(t, d, at_an_print, &o->print_opts), at_analyze_stage_free);
    } else if (o->export_opts.format != AT_FORMAT_TEXT) {
        at_export_opts eo = o->export_opts;
        eo.output = o->output;
        eo.out_fd = out_fd;
        push(p, at_export_stage_new(&eo, t, d), at_export_stage_free);
    } else {
        push(p, at_writer_new(out_fd, t, d), at_writer_free);
    }

    /* compress; the analyses are per stack already, and grouping would only
     * make them wait for every call (the depth cut still applies) */
    bool grouping = o->compress && !analysed;
    if (grouping || o->depth)
        push(p, at_compress_new(p->head, t, d, grouping, o->sort, o->depth), at_compress_free);

    /* filter */
    if (at_filter_opts_active(&o->filter))
        push(p, at_filter_stage_new(p->head, t, &o->filter, d, stderr), at_filter_stage_free);

    /* resolve */
    if (o->resolve) {
        at_stage *s = at_resolve_stage_new(p->head, t, &o->resolve_opts);
        if (!s)
            return -1;
        push(p, s, at_resolve_stage_free);
    }

    /* select */
    if (at_select_active(&o->select)) {
        at_stage *s = at_select_new(p->head, t, &o->select, d);
        if (!s)
            return -1;
        push(p, s, at_select_free);
    }

    /* pair leaks */
    if (o->leaks)
        push(p, at_leaks_new(p->head, t), at_leaks_free);

    /* --snapshot N: the input ends at snapshot N's mark */
    if (o->snapshot)
        push(p, at_snapmark_new(p->head, t, d, o->snapshot), at_snapmark_free);

    /* compressed-form calls back into index order, first of all */
    push(p, at_reorder_new(p->head, t, d), at_reorder_free);

    /* before them, what the rest of the process tree holds (tree.h) */
    if (o->ntree) {
        at_stage *s = at_tree_new(p->head, t, o->input, o->tree, o->ntree, o->leaks,
                                  o->snapshot != NULL, d);
        if (!s)
            return -1;
        push(p, s, at_tree_free);
    }
    return 0;
}

static void free_pipeline(pipeline *p)
{
    for (int i = p->n; i-- > 0;)
        p->frees[i](p->stages[i]);
}

/* One input through the pipeline to out_fd. Returns the exit status. */
static int run(options *o, const char *input, int out_fd)
{
    bool from_stdin = !input || strcmp(input, "-") == 0;
    at_diag diag;
    at_diag_init(&diag, from_stdin ? "<stdin>" : input);
    diag.quiet = o->quiet;
    diag.strict = o->strict;

    int in_fd = 0;
    if (!from_stdin && (in_fd = open(input, O_RDONLY | O_CLOEXEC)) < 0) {
        fprintf(stderr, AT_PROGRAM ": %s: %s\n", input, strerror(errno));
        return AT_EXIT_FAIL;
    }
    at_trace *t = at_trace_new();
    pipeline p;
    int status = AT_EXIT_OK;
    if (build_pipeline(&p, o, t, &diag, out_fd) != 0) {
        status = diag.failed ? diag.status : AT_EXIT_USAGE;
    } else {
        /* Progress only for a large input and when someone watches. */
        at_read_opts ropts = { 0 };
        at_progress prog;
        struct stat st;
        bool regular = fstat(in_fd, &st) == 0 && S_ISREG(st.st_mode);
        if (at_progress_wanted(stderr, o->quiet, regular, regular ? (uint64_t)st.st_size : 0)) {
            at_progress_init(&prog, stderr, (uint64_t)st.st_size);
            ropts.progress = at_progress_update;
            ropts.progress_arg = &prog;
        }
        if (at_read_fd(in_fd, t, p.head, &diag, &ropts) == 0)
            at_stage_finish(p.head);
        if (ropts.progress)
            at_progress_end(&prog);
        if (diag.failed)
            status = diag.status;
    }
    free_pipeline(&p);
    at_trace_free(t);
    if (in_fd != 0)
        close(in_fd);
    return status;
}

/* --diff: the comparison, and which run is being read (0 OLD, 1 NEW). */
typedef struct diff_run {
    at_an_diff *d;
    int which;
} diff_run;

static int add_to_diff(void *arg, const at_analysis *an, at_trace *t)
{
    diff_run *r = arg;
    at_an_diff_add(r->d, r->which, an, t);
    return 0;
}

/* --diff OLD NEW: both runs through the same stages, then the comparison. */
static int run_diff(options *o, int out_fd)
{
    diff_run r = { at_an_diff_new(), 0 };
    o->analysis_out = add_to_diff;
    o->analysis_arg = &r;
    o->snap_diff = at_snap_diff_new();
    o->snap_which = 0;
    const char *new_name = o->input && strcmp(o->input, "-") != 0 ? o->input : "<stdin>";
    int status = run(o, o->diff_old, out_fd);
    if (status == AT_EXIT_OK) {
        r.which = 1;
        o->snap_which = 1;
        status = run(o, o->input, out_fd);
    }
    const char *mixed = status == AT_EXIT_OK ? at_an_diff_mixed(r.d) : NULL;
    if (mixed) {
        fprintf(stderr, AT_PROGRAM ": --diff %s %s: %s\n", o->diff_old, new_name, mixed);
        status = AT_EXIT_USAGE;
    }
    if (status == AT_EXIT_OK && at_snap_diff_ready(o->snap_diff) &&
        o->export_opts.format == AT_FORMAT_HTML) {
        fprintf(stderr, AT_PROGRAM ": --diff %s %s: two snapshots compare as text only; "
                        "drop --format html\n", o->diff_old, new_name);
        status = AT_EXIT_USAGE;
    }
    if (status == AT_EXIT_OK) {
        int fd = dup(out_fd);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        int rc = !f ? -1
                 : at_snap_diff_ready(o->snap_diff)
                     ? at_snap_diff_write(f, o->snap_diff, o->diff_old, new_name,
                                          o->export_opts.top)
                 : o->export_opts.format == AT_FORMAT_HTML
                     ? at_html_diff_write(f, r.d, o->diff_old, new_name,
                                          o->top_given ? o->export_opts.top : AT_HTML_TOP)
                     : at_an_diff_write(f, r.d, o->diff_old, new_name, o->export_opts.top);
        if ((f && fclose(f) != 0) || rc != 0) {
            fprintf(stderr, AT_PROGRAM ": %s: %s\n", o->output ? o->output : "<stdout>",
                    strerror(errno));
            status = AT_EXIT_FAIL;
        }
        if (!f && fd >= 0)
            close(fd);
    }
    at_an_diff_free(r.d);
    at_snap_diff_free(o->snap_diff);
    o->snap_diff = NULL;
    return status;
}

int main(int argc, char **argv)
{
    /* The leak gate has its own options and reads many traces. */
    if (argc > 1 && strcmp(argv[1], "--gate") == 0)
        return at_gate_main(argc - 1, argv + 1);
    options o;
    parse_options(argc, argv, &o);
    if (o.check_filters) {
        at_filter_opts_check(&o.filter, stdout, stderr);
        at_filter_opts_free(&o.filter);
        free((void *)o.resolve_opts.debug_dirs);
        free((void *)o.resolve_opts.cache_dir);
        return AT_EXIT_OK;
    }

    /* A missing input is said before -o creates or truncates anything. */
    const char *inputs[] = { o.diff_old, o.input };
    for (int i = 0; i < 2; i++) {
        int fd = inputs[i] && strcmp(inputs[i], "-") != 0 ? open(inputs[i], O_RDONLY | O_CLOEXEC)
                                                           : 0;
        if (fd < 0) {
            fprintf(stderr, AT_PROGRAM ": %s: %s\n", inputs[i], strerror(errno));
            return AT_EXIT_FAIL; /* a file that cannot be read: 1, as -o's */
        }
        if (fd > 0)
            close(fd);
    }
    bool to_stdout = !o.output || strcmp(o.output, "-") == 0;
    if (o.export_opts.format == AT_FORMAT_PPROF && to_stdout && isatty(1)) {
        fprintf(stderr, AT_PROGRAM ": --format pprof writes gzip'd protobuf, not for a terminal: "
                        "give -o FILE.pb.gz\n");
        return AT_EXIT_USAGE;
    }
    /* -o FILE: written beside FILE and renamed over it when complete
     * (outfile.c): an interrupted or failed run leaves the old file. */
    int out_fd = 1;
    if (o.output && strcmp(o.output, "-") != 0 && (out_fd = at_outfile_open(o.output)) < 0) {
        fprintf(stderr, AT_PROGRAM ": %s: %s\n", o.output, strerror(errno));
        return AT_EXIT_FAIL;
    }
    int status = o.diff_old ? run_diff(&o, out_fd) : run(&o, o.input, out_fd);
    free((void *)o.resolve_opts.debug_dirs);
    free((void *)o.resolve_opts.cache_dir);
    at_filter_opts_free(&o.filter);
    if (out_fd != 1 && at_outfile_close(out_fd, status == AT_EXIT_OK) != 0 && status == AT_EXIT_OK) {
        fprintf(stderr, AT_PROGRAM ": %s: %s\n", o.output, strerror(errno));
        status = AT_EXIT_FAIL;
    }
    return status;
}
