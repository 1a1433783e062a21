/*
 * postproc/gate/gate_run.c: `alloctrace-postproc --gate [OPTIONS] TRACE...`, the
 * judging half of `alloctrace --check` (scripts/alloctrace-check runs the
 * program and calls this). For each trace: read, pair leaks, resolve every
 * leaked stack (the -r stage, so maps and build ids are handled as in any
 * run), hand the blocks to the gate; then judge all of them at
 * once, report, and exit 0/1/2/3 (gate.h).
 *
 * Decisions:
 * - A full-mode trace is paired (the leaks stage), so it can be judged
 *   too. A leaks-mode trace (its header's filter has "leaks") is paired
 *   already, every allocation in it a leak: it goes to resolving as read,
 *   in any order (the tracer writes it compressed, grouped by site), since
 *   the gate groups the blocks itself and pairing would only copy and
 *   sort them all, which was most of the gate's time on 200,000 blocks.
 * - A trace is trusted only when it is whole. A leaks-mode trace ends with
 *   the tracer's leak summary ("# N block(s) leaked with total size of S
 *   bytes"), written last at exit: without it, or with numbers that differ
 *   from what was read, the process died before it finished writing (a
 *   signal, _exit from a forked child that never flushed, a full disk).
 *   A full-mode trace must at least end with a whole line. A trace that
 *   ends with the tracer's cut line (a signal, a full disk) is never
 *   judged, whatever it holds: "the trace was cut (REASON)".
 * - Each trace gets its own trace model, resolver and stack table, freed
 *   after its leaks are handed over: memory stays bounded on a test suite
 *   of thousands of processes. The resolver's module cache is rebuilt per
 *   trace; its disk cache (--cache-dir) keeps the answers across traces
 *   and runs, so the same libc frames are not looked up again.
 */
#include "gate_run.h"
#include "outfile.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <alloctrace/format.h>

#include "diag.h"
#include "gate.h"
#include "gate_supp.h"
#include "leaks.h"
#include "reader.h"
#include "resolve_stage.h"
#include "trace.h"


typedef struct gate_opts {
    at_gate_options gate;
    const char **supps;
    size_t nsupps;
    const char *default_supp;
    const char *baseline, *json, *junit, *log_file, *output;
    const char *process_re; /* --process: judge only programs matching it */
    bool all_children;      /* --all-children: a wrapper's forked children too */
    bool update_baseline, quiet;
    bool check_config; /* --check-config: check files and options, judge nothing */
    const char *convert; /* --convert-suppressions FILE */
    const char *cache_dir_given; /* --cache-dir */
    bool no_cache;               /* --no-cache */
    char *cache_dir;             /* the resolver's (at_resolve_cache_dir) */
    char **traces;
    size_t ntraces;
    const char **removes;   /* --remove: files to delete when done */
    size_t nremoves;
} gate_opts;

enum {
    O_SUPP = 256, O_DEFAULT_SUPP, O_LEAK_EXIT, O_FAIL_PROG, O_IGNORE_PROG, O_FAIL_UNUSED, O_GEN, O_MAX_GROUPS,
    O_BASELINE, O_UPDATE_BASELINE, O_JSON, O_JUNIT, O_PROG_STATUS, O_PROG_SIGNAL, O_PROCESS,
    O_CACHE_DIR, O_NO_CACHE, O_REMOVE, O_LEAK_KINDS, O_LOG_FILE, O_CHECK_CONFIG, O_CONVERT,
    O_NAME, O_NO_TRACE_REASON, O_ALL_CHILDREN,
};

static const struct option long_opts[] = {
    { "suppressions", required_argument, NULL, O_SUPP },
    { "default-suppressions", required_argument, NULL, O_DEFAULT_SUPP },
    { "leak-exitcode", required_argument, NULL, O_LEAK_EXIT },
    { "fail-on-program-error", no_argument, NULL, O_FAIL_PROG },
    { "ignore-program-status", no_argument, NULL, O_IGNORE_PROG },
    { "fail-on-unused-suppressions", no_argument, NULL, O_FAIL_UNUSED },
    { "gen-suppressions", no_argument, NULL, O_GEN },
    { "max-groups", required_argument, NULL, O_MAX_GROUPS },
    { "baseline", required_argument, NULL, O_BASELINE },
    { "update-baseline", no_argument, NULL, O_UPDATE_BASELINE },
    { "json", required_argument, NULL, O_JSON },
    { "junit", required_argument, NULL, O_JUNIT },
    { "log-file", required_argument, NULL, O_LOG_FILE },
    { "program-status", required_argument, NULL, O_PROG_STATUS },
    { "program-signal", required_argument, NULL, O_PROG_SIGNAL },
    { "process", required_argument, NULL, O_PROCESS },
    { "cache-dir", required_argument, NULL, O_CACHE_DIR },
    { "no-cache", no_argument, NULL, O_NO_CACHE },
    { "remove", required_argument, NULL, O_REMOVE },
    { "leak-kinds", required_argument, NULL, O_LEAK_KINDS },
    { "check-config", no_argument, NULL, O_CHECK_CONFIG },
    { "convert-suppressions", required_argument, NULL, O_CONVERT },
    { "output", required_argument, NULL, 'o' },
    { "quiet", no_argument, NULL, 'q' },
    { "name", required_argument, NULL, O_NAME },
    { "no-trace-reason", required_argument, NULL, O_NO_TRACE_REASON },
    { "all-children", no_argument, NULL, O_ALL_CHILDREN },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
    fputs("Usage: " AT_PROGRAM " --gate [OPTIONS] TRACE...\n"
          "\n"
          "Judges the leaks of traced processes (the judging half of alloctrace --check):\n"
          "groups them by stack, applies suppressions, prints a report and exits\n"
          "0 (no leak left), 1 (leaks left), 2 (usage error, bad suppression or baseline\n"
          "file) or 3 (nothing trustworthy to judge: no trace, a truncated trace, the\n"
          "program killed by a signal).\n"
          "\n"
          "      --suppressions FILE       leaks to ignore (repeatable): filters, or valgrind's\n"
          "                                or LeakSanitizer's suppression files\n"
          "      --default-suppressions FILE\n"
          "                                the shipped defaults (not listed when unused)\n"
          "      --leak-exitcode N         exit status when leaks are left (default 1)\n"
          "      --leak-kinds LIST         the leak kinds that fail: definite, indirect,\n"
          "                                possible, reachable, libc, all, none (default\n"
          "                                definite,indirect, as valgrind's\n"
          "                                --errors-for-leak-kinds and LSan)\n"
          "      --ignore-program-status   exit 0 when no leak fails the gate, whatever the\n"
          "                                program's status (default: the program's own\n"
          "                                non-zero status, as valgrind; leaks win)\n"
          "      --fail-on-program-error   the default; undoes --ignore-program-status\n"
          "      --fail-on-unused-suppressions\n"
          "                                a suppression that took nothing fails the gate\n"
          "      --gen-suppressions        print a suppression line per leak group left\n"
          "      --max-groups N            show at most N groups per process\n"
          "      --baseline FILE           fail only on groups new or grown against FILE\n"
          "      --update-baseline         write the groups left into the --baseline FILE\n"
          "      --json FILE               write the result as JSON (alloctrace-gate/1)\n"
          "      --junit FILE              write the result as JUnit XML\n"
          "      --log-file FILE           write the leaks as a valgrind memcheck log (what\n"
          "                                ctest -T memcheck reads)\n"
          "      --program-status N        the program's exit status, for the report\n"
          "      --program-signal N        the signal that killed the program\n"
          "      --process REGEX           judge only processes whose program (the trace\n"
          "                                header's process=) matches REGEX (POSIX ERE)\n"
          "      --cache-dir DIR           keep resolved addresses in DIR across runs (default\n"
          "                                $ALLOCTRACE_CACHE_DIR, else $XDG_CACHE_HOME/alloctrace,\n"
          "                                else ~/.cache/alloctrace; empty: off); skipped when\n"
          "                                it cannot be written (it only saves time)\n"
          "      --no-cache                no cache directory\n"
          "      --remove FILE             delete FILE when done, whatever the verdict\n"
          "                                (repeatable; the gate's temporary files)\n"
          "      --check-config            check the suppression and baseline files, that\n"
          "                                the output files can be written and the options;\n"
          "                                judge nothing: exit 0, or 2 with one line (what\n"
          "                                alloctrace --check runs before the program)\n"
          "      --convert-suppressions FILE\n"
          "                                print a valgrind or LeakSanitizer suppression file\n"
          "                                translated to the filter language, and exit\n"
          "  -o, --output FILE             write the report to FILE (default: stdout)\n"
          "  -q, --quiet                   no warnings about the traces\n"
          "      --name NAME               start messages with NAME (alloctrace --check:\n"
          "                                alloctrace)\n"
          "  -h, --help                    this text\n"
          "  -V, --version                 the version\n",
          f);
}

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", at_program_name);
    fprintf(stderr, fmt, arg);
    fputs(" (see --help)\n", stderr);
    exit(AT_GATE_USAGE);
}

static long number(const char *opt, const char *arg, long max)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || end == arg || *end || v < 0 || v > max) {
        fprintf(stderr, "%s: %s: not a number from 0 to %ld: '%s'\n", at_program_name, opt, max, arg);
        exit(AT_GATE_USAGE);
    }
    return v;
}

static void parse(int argc, char **argv, gate_opts *o)
{
    *o = (gate_opts){ .supps = at_xcalloc((size_t)argc + 1, sizeof *o->supps),
                      .removes = at_xcalloc((size_t)argc + 1, sizeof *o->removes) };
    at_gate_options_init(&o->gate);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "o:qhV", long_opts, NULL)) != -1) {
        switch (c) {
        case O_SUPP: o->supps[o->nsupps++] = optarg; break;
        case O_DEFAULT_SUPP: o->default_supp = optarg; break;
        case O_LEAK_EXIT: o->gate.leak_exitcode = (int)number("--leak-exitcode", optarg, 255); break;
        case O_LEAK_KINDS:
            if (at_leak_kinds_parse(optarg, &o->gate.fail_kinds) != 0)
                usage_error("--leak-kinds: unknown kind in '%s' (" AT_LEAK_KINDS_WORDS ")", optarg);
            break;
        case O_FAIL_PROG: o->gate.ignore_program_status = false; break;
        case O_IGNORE_PROG: o->gate.ignore_program_status = true; break;
        case O_FAIL_UNUSED: o->gate.fail_on_unused = true; break;
        case O_GEN: o->gate.gen_suppressions = true; break;
        case O_MAX_GROUPS: o->gate.max_groups = (size_t)number("--max-groups", optarg, 1L << 30); break;
        case O_BASELINE: o->baseline = optarg; break;
        case O_UPDATE_BASELINE: o->update_baseline = true; break;
        case O_JSON: o->json = optarg; break;
        case O_JUNIT: o->junit = optarg; break;
        case O_LOG_FILE: o->log_file = optarg; break;
        case O_PROG_STATUS: o->gate.program_status = (int)number("--program-status", optarg, 255); break;
        case O_PROG_SIGNAL: o->gate.program_signal = (int)number("--program-signal", optarg, 128); break;
        case O_PROCESS: o->process_re = optarg; break;
        case O_CACHE_DIR: o->cache_dir_given = optarg; break;
        case O_NO_CACHE: o->no_cache = true; break;
        case O_REMOVE: o->removes[o->nremoves++] = optarg; break;
        case O_CHECK_CONFIG: o->check_config = true; break;
        case O_CONVERT: o->convert = optarg; break;
        case 'o': o->output = optarg; break;
        case 'q': o->quiet = true; break;
        case O_NAME: at_program_name = optarg; break;
        /* The script's finding (an ASan build, a static program), for
         * the verdict when no trace was written. */
        case O_NO_TRACE_REASON: o->gate.no_trace_reason = optarg; break;
        case O_ALL_CHILDREN: o->all_children = true; break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("%s %s\n", AT_PROGRAM, AT_VERSION); exit(0);
        default:
            if (optopt && optopt < 256)
                fprintf(stderr, "%s: bad option -%c (see --help)\n", at_program_name, optopt);
            else
                fprintf(stderr, "%s: bad option '%s' (see --help)\n", at_program_name, argv[optind - 1]);
            exit(AT_GATE_USAGE);
        }
    }
    if (o->update_baseline && !o->baseline)
        usage_error("%s needs --baseline FILE", "--update-baseline");
    o->traces = argv + optind;
    o->ntraces = (size_t)(argc - optind);
    o->gate.baseline_label = o->update_baseline ? NULL : o->baseline;
    o->cache_dir = at_resolve_cache_dir(o->cache_dir_given, o->no_cache);
}

/* ---- reading one trace --------------------------------------------------- */

/* The last stage of the chain: keeps the leaked blocks, their stacks
 * already resolved by the stage before. */
typedef struct collector {
    at_stage stage;
    at_gate_block *blocks;
    size_t n, cap;
    uint64_t bytes;
} collector;

static void collect_put(at_stage *self, const at_record *rec)
{
    collector *c = (collector *)self;
    if (rec->kind == AT_REC_CALL && rec->u.call->is_alloc) {
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 256;
            c->blocks = at_xreallocarray(c->blocks, c->cap, sizeof *c->blocks);
        }
        c->blocks[c->n++] = (at_gate_block){ rec->u.call->stack, rec->u.call->size,
                                             rec->u.call->kind };
        c->bytes += rec->u.call->size;
    }
}

static void collect_finish(at_stage *self) { (void)self; }

/* The last cap-1 bytes of the trace, NUL-terminated, into buf; their
 * length, or 0 when the file is empty or its last line is cut. */
static size_t read_tail(int fd, char *buf, size_t cap)
{
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)cap - 1 ? size - (off_t)cap + 1 : 0;
    ssize_t n = pread(fd, buf, cap - 1, from);
    if (n <= 0 || buf[n - 1] != '\n')
        return 0;
    buf[n] = '\0';
    return (size_t)n;
}

/* The tracer's leak summary at the end of a leaks-mode trace, summed over
 * resource types. Returns false when the trace does not end with one. */
static bool read_leak_summary(int fd, uint64_t *blocks, uint64_t *bytes)
{
    char buf[8192];
    if (!read_tail(fd, buf, sizeof buf))
        return false;
    *blocks = *bytes = 0;
    bool found = false, tail_ok = true;
    for (char *line = buf, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0';
        unsigned long long bl, by;
        int end = 0;
        if (sscanf(line, "# %llu block(s) leaked with total size of %llu bytes%n", &bl, &by, &end) == 2 &&
            line[end] == '\0') {
            *blocks += bl;
            *bytes += by;
            found = tail_ok = true;
        } else if (found && strncmp(line, "# Resource - ", 13) != 0) {
            tail_ok = false; /* something after the summary: not the end */
        }
    }
    return found && tail_ok;
}

static bool ends_with_newline(int fd)
{
    char last;
    off_t size = lseek(fd, 0, SEEK_END);
    return size > 0 && pread(fd, &last, 1, size - 1) == 1 && last == '\n';
}

/* The value of `key` in the header line at the start of fd (a new
 * string), or NULL. Read from the file because the leaks stage adds
 * "leaks" to the in-memory header's filter. */
static char *header_field(int fd, const char *key)
{
    char buf[4096];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    char *nl = strchr(buf, '\n');
    if (nl)
        *nl = '\0';
    size_t klen = strlen(key);
    for (char *p = buf; (p = strstr(p, key)); p += klen) {
        if ((p == buf || p[-1] == ' ') && p[klen] == '=') {
            char *v = p + klen + 1, *end = strstr(v, AT_HDR_FIELD_END);
            return end ? strndup(v, (size_t)(end - v)) : strdup(v);
        }
    }
    return NULL;
}

/* Whether the trace was written in leaks mode (its own header says so). */
static bool leaks_mode(int fd)
{
    char *filter = header_field(fd, AT_HDR_FILTER);
    bool yes = false;
    for (char *w = filter ? strtok(filter, "|") : NULL; w; w = strtok(NULL, "|"))
        yes |= strcmp(w, AT_FILTER_LEAKS) == 0;
    free(filter);
    return yes;
}

/* What follows `prefix` on the trace's last line, as a new string, or
 * NULL when the last line does not start with it. */
static char *last_line_after(int fd, const char *prefix)
{
    char buf[1024];
    size_t n = read_tail(fd, buf, sizeof buf);
    if (!n)
        return NULL;
    buf[n - 1] = '\0';
    char *last = strrchr(buf, '\n');
    last = last ? last + 1 : buf;
    size_t plen = strlen(prefix);
    return strncmp(last, prefix, plen) == 0 ? strdup(last + plen) : NULL;
}

/* The reason on the tracer's cut line ("## trace cut: REASON", written
 * last when a signal ended the program or the disk was full). */
static char *cut_reason(int fd)
{
    return last_line_after(fd, AT_CUT_PREFIX);
}

/* The program on the tracer's exec line ("## exec: PATH", written before
 * an exec) when it is the trace's last line. */
static char *exec_line(int fd)
{
    return last_line_after(fd, AT_EXEC_PREFIX);
}

/* Why the trace is not whole, or NULL. */
static char *completeness(int fd, const at_trace *t, const collector *c)
{
    char *why = NULL;
    if (!t->header.present)
        return strdup("empty or unreadable trace (no header line): the process died at start?");
    /* The gate stays exact: a sample cannot say that nothing leaked. */
    if (t->header.sample_interval)
        return strdup("a sampled trace (alloctrace --sample): the gate judges every block, "
                      "never a sample");
    char *cut = cut_reason(fd);
    if (cut) {
        if (asprintf(&why, "the trace was cut (%s)", cut) < 0)
            why = NULL;
        free(cut);
        return why ? why : strdup("the trace was cut");
    }
    if (leaks_mode(fd)) {
        uint64_t blocks, bytes;
        if (!read_leak_summary(fd, &blocks, &bytes)) {
            why = strdup("truncated trace (no leak summary at its end): the process did not "
                         "finish writing it");
        } else if (blocks != c->n || bytes != c->bytes) {
            if (asprintf(&why, "incomplete trace: its summary says %" PRIu64 " block(s), %" PRIu64
                               " bytes; %zu block(s), %" PRIu64 " bytes were read",
                         blocks, bytes, c->n, c->bytes) < 0)
                why = NULL;
        }
    } else if (!ends_with_newline(fd)) {
        why = strdup("truncated trace (its last line is cut)");
    }
    return why;
}

static long header_pid(const at_trace *t)
{
    if (!t->header.pid)
        return -1;
    char *end;
    long pid = strtol(t->header.pid, &end, 10);
    return *end || end == t->header.pid ? -1 : pid;
}

/* Whether path is one of the files to delete when done (--remove). */
static bool removed(const gate_opts *o, const char *path)
{
    for (size_t i = 0; i < o->nremoves; i++)
        if (strcmp(o->removes[i], path) == 0)
            return true;
    return false;
}

/* The header's pid of the trace at path, or -1. */
static long file_pid(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *v = fd >= 0 ? header_field(fd, AT_HDR_PID) : NULL;
    char *end = NULL;
    long pid = v ? strtol(v, &end, 10) : -1;
    if (!v || *end || end == v)
        pid = -1;
    free(v);
    if (fd >= 0)
        close(fd);
    return pid;
}

/* Whether trace b was written after trace a by the same process: an exec'd
 * program that keeps the pid gets the same name with ".N" added, so the
 * longer name (then the larger, for ".10" after ".9") is the later one. */
static bool later_name(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    return lb != la ? lb > la : strcmp(b, a) > 0;
}

/* The program trace i's process exec'd into (a new string), or NULL: the
 * next trace of the same pid, when there is one. */
static char *exec_successor(const gate_opts *o, const long *pids, size_t i)
{
    const char *best = NULL;
    for (size_t j = 0; j < o->ntraces; j++)
        if (j != i && pids[i] >= 0 && pids[j] == pids[i] && later_name(o->traces[i], o->traces[j]) &&
            (!best || later_name(o->traces[j], best)))
            best = o->traces[j];
    if (!best)
        return NULL;
    int fd = open(best, O_RDONLY | O_CLOEXEC);
    char *process = fd >= 0 ? header_field(fd, AT_HDR_PROCESS) : NULL;
    if (fd >= 0)
        close(fd);
    return process ? process : strdup(AT_UNKNOWN);
}

/* The header's process= of the trace at path (a new string), or NULL. */
static char *file_process(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *v = fd >= 0 ? header_field(fd, AT_HDR_PROCESS) : NULL;
    if (fd >= 0)
        close(fd);
    return v;
}

/*
 * Whether trace i is of a process a wrapper forked before it exec'd the
 * program (libtool's bash wrapper runs $(...) subshells, then execs the
 * test): such a child is a copy of the wrapper, so its program is the
 * name of one of the main pid's images that exec'd away (not the last
 * one's). Those are the wrapper's, not the test's: not judged unless
 * --follow-children. A child the test forks carries the test's name.
 */
static bool forked_by_wrapper(const gate_opts *o, const long *pids, char *const *names, size_t i)
{
    if (o->all_children || pids[i] < 0 || pids[i] == pids[0] || !names[i])
        return false;
    const char *last = NULL;
    for (size_t j = 0; j < o->ntraces; j++)
        if (pids[j] == pids[0] && (!last || later_name(last, o->traces[j])))
            last = o->traces[j];
    bool wrapper_name = false, final_name = false;
    for (size_t j = 0; j < o->ntraces; j++) {
        if (pids[j] != pids[0] || !names[j] || strcmp(names[j], names[i]) != 0)
            continue;
        if (o->traces[j] == last)
            final_name = true;
        else
            wrapper_name = true;
    }
    return wrapper_name && !final_name;
}

/* Whether a cut reason ("killed by signal 15 (SIGTERM)") names a signal
 * one process sends another to stop it - a pool terminating its workers,
 * a test stopping its server child - rather than a crash. */
static bool stopped_by_another(const char *cut)
{
    static const char *const sent[] = { "(SIGTERM)", "(SIGINT)", "(SIGHUP)", "(SIGQUIT)",
                                        "(SIGPIPE)", "(SIGALRM)", "(SIGUSR1)", "(SIGUSR2)" };
    if (strncmp(cut, "killed by signal ", 17) != 0)
        return false;
    for (size_t i = 0; i < sizeof sent / sizeof *sent; i++)
        if (strstr(cut, sent[i]))
            return true;
    return false;
}

/* Reads one trace into the gate. Returns -1 when it cannot be opened.
 * A trace that is deleted when done is not named in the reports.
 * exec_into: the program the process became by exec, when a trace of the
 * same pid follows; a leaks-mode trace that then ends without its summary
 * (the tracer writes it at exit, and the process never exited) is that
 * wrapper's, not judged, not a problem. main_chain: the trace is of the
 * pid the gate started (the first trace's), whose exec'd programs must be
 * traced: one that left no trace is a process that could not be judged. */
static int judge_trace(at_gate *g, const char *path, const gate_opts *o, const char *exec_into,
                       bool main_chain)
{
    bool quiet = o->quiet;
    const char *cache_dir = o->cache_dir;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "%s: %s: %s\n", at_program_name, path, strerror(errno));
        return -1;
    }
    at_diag diag;
    at_diag_init(&diag, path);
    diag.quiet = quiet;
    at_resolve_options ro = { .quiet = quiet, .cache_dir = cache_dir };
    at_trace *t = at_trace_new();
    collector c = { .stage = { collect_put, collect_finish, NULL } };
    at_stage *resolve = at_resolve_stage_new(&c.stage, t, &ro);
    if (!resolve)
        abort(); /* only bad --debug-dir/--sysroot fail, and the gate has neither */
    /* A leaks-mode trace is paired already: pairing it again would copy,
     * hash and sort every block only to keep them all. */
    at_stage *leaks = leaks_mode(fd) ? NULL : at_leaks_new(resolve, t);
    at_stage *head = leaks ? leaks : resolve;
    int rc = at_read_fd(fd, t, head, &diag, NULL);
    if (rc == 0)
        at_stage_finish(head);

    at_gate_proc *p = at_gate_add_process(g, removed(o, path) ? NULL : path, t->header.process,
                                          header_pid(t));
    /* (An empty or garbage file stops the reader at once: said as such.) */
    char *why = rc != 0 && t->header.present ? strdup("the trace could not be read to its end")
                                              : completeness(fd, t, &c);
    uint64_t summary_blocks, summary_bytes;
    char *cut = why ? cut_reason(fd) : NULL;
    char *execd = why && !cut ? exec_line(fd) : NULL;
    bool wrapper = why && !cut && leaks_mode(fd) && (execd || exec_into) &&
                   !read_leak_summary(fd, &summary_blocks, &summary_bytes);
    if (wrapper && exec_into) {
        at_gate_set_exec(g, p, exec_into);
    } else if (wrapper && !main_chain) {
        /* A child that exec'd a program the gate does not follow (the
         * tools a test runs, as memcheck without --trace-children). */
        char *what = NULL;
        if (asprintf(&what, "%s (not traced: --follow-children judges it)", execd) < 0)
            what = NULL;
        at_gate_set_exec(g, p, what ? what : execd);
        free(what);
    } else if (wrapper) {
        char *what = NULL;
        if (asprintf(&what, "it exec'd %s, which left no trace (a static or setuid program?)",
                     execd) < 0)
            what = NULL;
        at_gate_set_problem(g, p, what ? what : "it exec'd a program that left no trace");
        free(what);
    } else if (cut && !main_chain && stopped_by_another(cut)) {
        char *what = NULL;
        if (asprintf(&what, "%s before it exited; its program stopped it (a pool's worker?)", cut) < 0)
            what = NULL;
        at_gate_set_stopped(g, p, what ? what : cut);
        free(what);
    } else if (why) {
        /* Not judged: its blocks are not added, so no report, JSON or
         * log shows a leak the gate did not judge (a crashed test's). */
        at_gate_set_problem(g, p, why);
    } else if (!t->header.sample_interval) {
        /* A sample's blocks are not leaks to list one by one: each stands
         * for many, and the gate counts only exact ones. */
        at_gate_add_leaks(g, p, c.blocks, c.n, t->maps, t->stacks);
    }
    free(execd);
    free(cut);
    free(why);

    free(c.blocks);
    at_leaks_free(leaks);
    at_resolve_stage_free(resolve);
    at_trace_free(t);
    close(fd);
    return 0;
}

/* Whether the trace's program (its header's process=) matches re. Read
 * from the first line, so a trace not to judge is not parsed at all. An
 * unreadable header is judged: the gate then says what is wrong with it. */
static bool wanted(const char *path, const regex_t *re)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *process = fd >= 0 ? header_field(fd, AT_HDR_PROCESS) : NULL;
    bool yes = !process || regexec(re, process, 0, NULL, 0) == 0;
    free(process);
    if (fd >= 0)
        close(fd);
    return yes;
}

/* ---- the run ------------------------------------------------------------- */

/* Whether path can be written as an output, checked before the program
 * runs (a typo in --json must not cost a whole test suite). An existing
 * file is opened without truncating it; a missing one is created and
 * removed again. O_NONBLOCK: a FIFO without a reader must not hang. */
static int check_writable(const char *opt, const char *path)
{
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0666);
        if (fd >= 0)
            unlink(path);
    }
    if (fd < 0 && errno != ENXIO) { /* ENXIO: a FIFO with no reader yet is fine */
        fprintf(stderr, "%s: %s %s: cannot be written: %s\n", at_program_name, opt, path, strerror(errno));
        return -1;
    }
    if (fd >= 0)
        close(fd);
    return 0;
}

/* --check-config: every file and option the judging will need, before
 * the program runs (the suppression and baseline files were read by the
 * caller already). */
static int check_config(const gate_opts *o)
{
    if (o->json && check_writable("--json", o->json) != 0)
        return AT_GATE_USAGE;
    if (o->junit && check_writable("--junit", o->junit) != 0)
        return AT_GATE_USAGE;
    if (o->log_file && check_writable("--log-file", o->log_file) != 0)
        return AT_GATE_USAGE;
    if (o->output && strcmp(o->output, "-") != 0 && check_writable("--output", o->output) != 0)
        return AT_GATE_USAGE;
    if (o->update_baseline && check_writable("--baseline", o->baseline) != 0)
        return AT_GATE_USAGE;
    regex_t re;
    if (o->process_re) {
        if (regcomp(&re, o->process_re, REG_EXTENDED | REG_NOSUB) != 0) {
            fprintf(stderr, "%s: --process: bad regular expression '%s'\n", at_program_name, o->process_re);
            return AT_GATE_USAGE;
        }
        regfree(&re);
    }
    return AT_GATE_PASS;
}

static at_gate_supp *load_suppressions(const gate_opts *o)
{
    at_gate_supp *s = at_gate_supp_new();
    if (o->default_supp && at_gate_supp_add_file(s, o->default_supp, true) != 0)
        goto bad;
    for (size_t i = 0; i < o->nsupps; i++)
        if (at_gate_supp_add_file(s, o->supps[i], false) != 0)
            goto bad;
    return s;
bad:
    at_gate_supp_free(s);
    return NULL;
}

static int write_results(const gate_opts *o, const at_gate *g)
{
    int rc = 0;
    if (o->json && at_gate_write_json(g, o->json) != 0) {
        fprintf(stderr, "%s: %s: %s\n", at_program_name, o->json, strerror(errno));
        rc = -1;
    }
    if (o->junit && at_gate_write_junit(g, o->junit) != 0) {
        fprintf(stderr, "%s: %s: %s\n", at_program_name, o->junit, strerror(errno));
        rc = -1;
    }
    if (o->log_file && at_gate_write_valgrind_log(g, o->log_file) != 0) {
        fprintf(stderr, "%s: %s: %s\n", at_program_name, o->log_file, strerror(errno));
        rc = -1;
    }
    return rc;
}

/* Writes the baseline of what was judged, then judges again against it:
 * every group is then known, so only what is not a leak (the program's
 * error, unused suppressions) can still fail. Not when nothing could be
 * judged: a partial baseline would hide real leaks later. The baseline is
 * returned to live as long as the gate. */
static int update_baseline(const gate_opts *o, at_gate *g, at_baseline **written)
{
    if (g->verdict == AT_GATE_UNTRUSTED)
        return 0;
    at_baseline *b = at_baseline_from_gate(g);
    if (at_baseline_write(b, o->baseline) != 0) {
        fprintf(stderr, "%s: %s: %s\n", at_program_name, o->baseline, strerror(errno));
        at_baseline_free(b);
        return -1;
    }
    g->baseline = b;
    g->opt.baseline_label = o->baseline;
    at_gate_finish(g);
    *written = b;
    return 0;
}

static void print_update(const gate_opts *o, const at_gate *g, bool written, FILE *out)
{
    size_t groups = 0;
    for (size_t i = 0; i < g->nprocs; i++)
        groups += g->procs[i].ngroups;
    if (written)
        fprintf(out, "alloctrace: baseline %s updated: %zu leak group(s)\n", o->baseline, groups);
    else
        fprintf(out, "alloctrace: baseline %s not updated: nothing trustworthy to judge\n",
                o->baseline);
}

static int run(const gate_opts *o, at_gate_supp *supp, const at_baseline *base, FILE *out)
{
    at_gate_matcher m = at_gate_supp_matcher(supp);
    regex_t re;
    if (o->process_re && regcomp(&re, o->process_re, REG_EXTENDED | REG_NOSUB) != 0) {
        fprintf(stderr, "%s: --process: bad regular expression '%s'\n", at_program_name, o->process_re);
        return AT_GATE_USAGE;
    }
    at_gate *g = at_gate_new(&o->gate, &m, base);
    int status = 0;
    long *pids = at_xreallocarray(NULL, o->ntraces ? o->ntraces : 1, sizeof *pids);
    char **names = at_xreallocarray(NULL, o->ntraces ? o->ntraces : 1, sizeof *names);
    for (size_t i = 0; i < o->ntraces; i++) {
        pids[i] = file_pid(o->traces[i]);
        names[i] = file_process(o->traces[i]);
    }
    for (size_t i = 0; i < o->ntraces && status == 0; i++) {
        char *exec_into = exec_successor(o, pids, i);
        if (forked_by_wrapper(o, pids, names, i))
            g->nwrapper_children++;
        else if (o->process_re && !wanted(o->traces[i], &re))
            g->nskipped++;
        else if (judge_trace(g, o->traces[i], o, exec_into, pids[i] >= 0 && pids[i] == pids[0]) != 0)
            status = AT_GATE_USAGE;
        free(exec_into);
    }
    for (size_t i = 0; i < o->ntraces; i++)
        free(names[i]);
    free(names);
    free(pids);
    if (o->process_re)
        regfree(&re);
    at_baseline *written = NULL;
    if (status == 0) {
        at_gate_finish(g);
        if (o->update_baseline && update_baseline(o, g, &written) != 0)
            status = AT_GATE_USAGE;
    }
    if (status == 0) {
        at_gate_print_report(out, g);
        if (o->gate.gen_suppressions)
            at_gate_print_suppressions(out, g);
        if (o->update_baseline)
            print_update(o, g, written != NULL, out);
        status = g->verdict;
        if (write_results(o, g) != 0)
            status = AT_GATE_USAGE;
    }
    at_gate_free(g);
    at_baseline_free(written);
    return status;
}

/* The gate script's temporary files: removing them here spares it
 * starting rm (milliseconds a process, once per test of a suite). */
static void remove_files(const gate_opts *o)
{
    for (size_t i = 0; i < o->nremoves; i++)
        if (unlink(o->removes[i]) != 0 && errno != ENOENT)
            fprintf(stderr, "%s: cannot remove %s: %s\n", at_program_name, o->removes[i], strerror(errno));
}

int at_gate_main(int argc, char **argv)
{
    gate_opts o;
    parse(argc, argv, &o);
    if (o.convert) {
        int rc = at_gate_supp_convert(o.convert, stdout) == 0 ? AT_GATE_PASS : AT_GATE_USAGE;
        free(o.supps);
        free(o.removes);
        free(o.cache_dir);
        return rc;
    }
    at_gate_supp *supp = load_suppressions(&o);
    at_baseline *base = NULL;
    FILE *out = stdout;
    int status = AT_GATE_USAGE;
    if (!supp)
        goto done;
    if (o.baseline && !o.update_baseline) {
        char err[1024];
        if (!(base = at_baseline_read(o.baseline, err, sizeof err))) {
            fprintf(stderr, "%s: %s\n", at_program_name, err);
            goto done;
        }
    }
    if (o.check_config) {
        status = check_config(&o);
        goto done;
    }
    if (o.output && strcmp(o.output, "-") != 0 && !(out = at_outfile_fopen(o.output))) {
        fprintf(stderr, "%s: %s: %s\n", at_program_name, o.output, strerror(errno));
        out = stdout;
        goto done;
    }
    status = run(&o, supp, base, out);
done:
    if (out != stdout && at_outfile_fclose(out, status != AT_GATE_USAGE) != 0 &&
        status != AT_GATE_USAGE) {
        fprintf(stderr, "%s: %s: %s\n", at_program_name, o.output, strerror(errno));
        status = AT_GATE_USAGE;
    }
    fflush(stdout);
    remove_files(&o);
    at_baseline_free(base);
    at_gate_supp_free(supp);
    free(o.supps);
    free(o.removes);
    free(o.cache_dir);
    return status;
}
