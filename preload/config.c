/*
 * preload/config.c: the environment (names in alloctrace/format.h).
 *
 * Read once at start-up. A bad value is reported in one line on stderr and
 * the program then runs untraced: the tracer never breaks its host.
 * Booleans take 1/0, yes/no, on/off, true/false.
 *
 * Output path: ALLOCTRACE_OUTPUT, where "%p" becomes the pid and "%%" a
 * "%"; by default alloctrace.PROCESS.PID.txt in the working directory
 * (PROCESS: the program's base name), with ".zst" added when the trace is
 * compressed. ALLOCTRACE_COMPRESS=none|zstd; by default full mode
 * compresses (its traces are large) and leaks mode does not (its traces
 * are small and read by people). A forked child needs a name of its
 * own: a path with %p gets the child's pid, the default name too, and a
 * fixed path gets ".PID" appended.
 *
 * A relative name is resolved against ALLOCTRACE_DIR, else the working
 * directory at start-up, once: a daemon's child that does chdir("/")
 * before its first write, or an exec'd program (with follow-exec, which
 * gets ALLOCTRACE_DIR from lifecycle.c), still writes where the user ran
 * the launcher, never into "/".
 *
 * ALLOCTRACE_TRACE_LIST (set by the launcher) names a file each process
 * appends a line to when it creates a trace, execs, or warns
 * (process/tracelist.c), so the launcher can name every trace of a tree.
 *
 * The tracer may start before libc has set up environ and
 * program_invocation_name (its first allocation can come from a preinit
 * function of the program): then the environment and argv[0] are read
 * where the loader keeps them, after the argument vector it exports as
 * _dl_argv.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tracer.h"

struct at_config at_cfg = {
    .depth = AT_DEFAULT_DEPTH,
    .timestamps = AT_TIMES_ON_CHANGE,
    .free_backtraces = 0,
    .start_enabled = 1,
    .toggle_signal = 0,
    .follow_fork = 1,
    .follow_exec = 0,
    .leaks_mode = 0,
    .leak_kinds = 1,
    .keeper = 0,
    .exit_threads = -1,
    .compress = -1,
    .control = 1,
    .snapshot_signal = 0,
};

static int bad(const char *name, const char *value, const char *want)
{
    char msg[512];
    size_t n = 0;
    const char *parts[] = { name, "=", value, ": ", want, "; running untraced" };
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        size_t l = strlen(parts[i]);
        if (n + l >= sizeof msg)
            l = sizeof msg - 1 - n;
        memcpy(msg + n, parts[i], l);
        n += l;
    }
    msg[n] = '\0';
    at_warn(msg, "", "");
    return -1;
}

/* The loader's argument vector (environment after it), or NULL. */
static char **loader_argv(void)
{
    char ***p = dlsym(RTLD_DEFAULT, "_dl_argv");
    return p ? *p : NULL;
}

/* An attach's settings, "NAME=VALUE" lines (process/attach.c); NULL: the
 * environment. */
static const char *source;

void at_config_source(const char *lines)
{
    source = lines;
}

/* NAME's value in the attach's lines, copied to a buffer of its own (a
 * value is read while the lines stay). */
static const char *source_get(const char *name)
{
    static char vals[16][PATH_MAX];
    static unsigned next;
    size_t n = strlen(name);
    for (const char *p = source; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > n && strncmp(p, name, n) == 0 && p[n] == '=') {
            char *v = vals[next++ % 16];
            size_t vl = len - n - 1 < PATH_MAX - 1 ? len - n - 1 : PATH_MAX - 1;
            memcpy(v, p + n + 1, vl);
            v[vl] = '\0';
            return v;
        }
        p += len + (e != NULL);
    }
    return NULL;
}

const char *at_getenv(const char *name)
{
    if (source && strncmp(name, "ALLOCTRACE_", 11) == 0)   /* TZ stays the program's */
        return source_get(name);
    extern char **environ;
    char **env = environ;
    if (!env) {
        env = loader_argv();
        while (env && *env)
            env++;
        if (env)
            env++;
    }
    size_t n = strlen(name);
    for (; env && *env; env++)
        if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
            return *env + n + 1;
    return NULL;
}

const char *at_argv0(void)
{
    if (program_invocation_name && program_invocation_name[0])
        return program_invocation_name;
    char **argv = loader_argv();
    return argv && argv[0] ? argv[0] : "";
}

/* The program's base name, kept at start-up: a service that rewrites its
 * argv for ps ("nginx: worker process") would otherwise name its
 * children's traces after a piece of its title. */
static char base_name[256];

static void keep_base_name(void)
{
    const char *a = at_argv0(), *slash = strrchr(a, '/');
    a = slash ? slash + 1 : a;
    size_t n = strlen(a);
    if (n >= sizeof base_name)
        n = sizeof base_name - 1;
    memcpy(base_name, a, n);
    base_name[n] = '\0';
}

static const char *argv0_base(void)
{
    if (!base_name[0])
        keep_base_name();
    return base_name;
}

/* 1 or 0 for a boolean's spellings, -1 for anything else. */
static int bool_value(const char *v)
{
    static const char *yes[] = { "1", "yes", "on", "true" }, *no[] = { "0", "no", "off", "false" };
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return 1;
        if (strcasecmp(v, no[i]) == 0)
            return 0;
    }
    return -1;
}

static int parse_bool(const char *name, int *out)
{
    const char *v = at_getenv(name);
    if (!v)
        return 0;
    int b = bool_value(v);
    if (b < 0)
        return bad(name, v, "expected 1 or 0 (yes/no, on/off, true/false)");
    *out = b;
    return 0;
}

/* ALLOCTRACE_TIMESTAMPS: a boolean (on: a full-mode call's time only when
 * its millisecond moves on, chunk.c), or "all": on every call, as before. */
static int parse_timestamps(void)
{
    const char *v = at_getenv(AT_ENV_TIMESTAMPS);
    if (!v)
        return 0;
    int b = bool_value(v);
    if (b < 0 && strcasecmp(v, "all") != 0)
        return bad(AT_ENV_TIMESTAMPS, v,
                   "expected 1, 0 (yes/no, on/off, true/false) or all (a time on every call)");
    at_cfg.timestamps = b < 0 ? AT_TIMES_ALL : b ? AT_TIMES_ON_CHANGE : AT_TIMES_NONE;
    return 0;
}

static int parse_depth(void)
{
    const char *v = at_getenv(AT_ENV_DEPTH);
    if (!v)
        return 0;
    char *end;
    long d = strtol(v, &end, 10);
    if (!*v || *end || d < 0 || d > AT_MAX_DEPTH)
        return bad(AT_ENV_DEPTH, v, "expected a number from 0 to 256");
    at_cfg.depth = (int)d;
    return 0;
}

/* ALLOCTRACE_EXEC_CHAIN=PID (the gate's default): the program the gate
 * started and what it execs in place (a wrapper's `exec "$@"`) are traced;
 * a program exec'd by another process (a forked child running a tool)
 * runs untraced, as memcheck's children do without --trace-children. */
static int parse_exec_chain(void)
{
    const char *v = at_getenv(AT_ENV_EXEC_CHAIN);
    if (!v || !*v)
        return 0;
    char *end;
    long pid = strtol(v, &end, 10);
    if (*end || pid <= 0)
        return bad(AT_ENV_EXEC_CHAIN, v, "expected a process id");
    at_cfg.exec_chain = pid;
    return 0;
}

/* A signal setting (the toggle signal, the snapshot signal) into *out. */
static int parse_signal_named(const char *env, int *out)
{
    const char *v = at_getenv(env);
    if (!v || !*v)
        return 0;
    const char *s = strncasecmp(v, "SIG", 3) == 0 ? v + 3 : v;
    static const struct { const char *name; int sig; } names[] = {
        { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP }, { "PROF", SIGPROF },
        { "WINCH", SIGWINCH }, { "URG", SIGURG }, { "PWR", SIGPWR },
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].sig;
            return 0;
        }
    if (strncasecmp(s, "RTMIN+", 6) == 0 || (*s >= '0' && *s <= '9')) {
        char *end;
        long n = strtol(*s >= '0' && *s <= '9' ? s : s + 6, &end, 10);
        if (!*end) {
            long sig = (*s >= '0' && *s <= '9') ? n : SIGRTMIN + n;
            if (sig > 0 && sig <= SIGRTMAX && sig != SIGKILL && sig != SIGSTOP &&
                sig != SIGSEGV && sig != SIGBUS && sig != SIGABRT) {
                *out = (int)sig;
                return 0;
            }
        }
    }
    return bad(env, v, "expected a signal such as USR2, SIGUSR1, RTMIN+3 or a number");
}

static int parse_signal(void)
{
    if (parse_signal_named(AT_ENV_TOGGLE_SIG, &at_cfg.toggle_signal) ||
        parse_signal_named(AT_ENV_SNAPSHOT_SIG, &at_cfg.snapshot_signal))
        return -1;
    if (at_cfg.snapshot_signal && at_cfg.snapshot_signal == at_cfg.toggle_signal)
        return bad(AT_ENV_SNAPSHOT_SIG, at_getenv(AT_ENV_SNAPSHOT_SIG),
                   "is the toggle signal too; give them different signals");
    return 0;
}

static int parse_start(void)
{
    const char *v = at_getenv(AT_ENV_START);
    if (!v)
        return 0;
    if (strcasecmp(v, "enabled") == 0 || strcmp(v, "1") == 0)
        at_cfg.start_enabled = 1;
    else if (strcasecmp(v, "disabled") == 0 || strcmp(v, "0") == 0)
        at_cfg.start_enabled = 0;
    else
        return bad(AT_ENV_START, v, "expected enabled or disabled");
    return 0;
}

static int parse_mode(void)
{
    const char *v = at_getenv(AT_ENV_MODE);
    if (!v)
        return 0;
    if (strcmp(v, "full") == 0)
        at_cfg.leaks_mode = 0;
    else if (strcmp(v, "leaks") == 0)
        at_cfg.leaks_mode = 1;
    else
        return bad(AT_ENV_MODE, v, "expected full or leaks");
    return 0;
}

static int parse_compress(void)
{
    const char *v = at_getenv(AT_ENV_COMPRESS);
    if (!v || !*v)
        at_cfg.compress = !at_cfg.leaks_mode;
    else if (strcasecmp(v, "zstd") == 0)
        at_cfg.compress = 1;
    else if (strcasecmp(v, "none") == 0)
        at_cfg.compress = 0;
    else
        return bad(AT_ENV_COMPRESS, v, "expected none or zstd");
    return 0;
}

/* "524288", "512k", "2M", "1G" (binary units; "KiB", "kb", "B" too), from
 * 1 byte to 1 TiB. */
static int parse_sample(void)
{
    const char *v = at_getenv(AT_ENV_SAMPLE);
    if (!v || !*v)
        return 0;
    const char *want = "expected a size in bytes such as 524288, 512k or 2M (1 byte to 1T)";
    uint64_t n = 0;
    const char *p = v;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (1ull << 40))
            return bad(AT_ENV_SAMPLE, v, want);
        n = n * 10 + (uint64_t)(*p - '0');
    }
    if (p == v)
        return bad(AT_ENV_SAMPLE, v, want);
    unsigned shift = 0;
    switch (*p | 0x20) {
    case 'k': shift = 10; p++; break;
    case 'm': shift = 20; p++; break;
    case 'g': shift = 30; p++; break;
    case 't': shift = 40; p++; break;
    }
    if (shift && (*p | 0x20) == 'i')
        p++;
    if ((*p | 0x20) == 'b')
        p++;
    if (*p || n == 0 || n > (1ull << 40) >> shift)
        return bad(AT_ENV_SAMPLE, v, want);
    at_cfg.sample = n << shift;
    return 0;
}

static int parse_sample_seed(void)
{
    const char *v = at_getenv(AT_ENV_SAMPLE_SEED);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    unsigned long long s = strtoull(v, &end, 0);
    if (*end || errno || *v == '-')
        return bad(AT_ENV_SAMPLE_SEED, v, "expected a number");
    at_cfg.sample_seed = s;
    at_cfg.sample_seed_set = 1;
    return 0;
}

static int parse_output(void)
{
    const char *v = at_getenv(AT_ENV_OUTPUT);
    if (!v)
        return 0;
    if (!*v)
        return bad(AT_ENV_OUTPUT, v, "expected a file name");
    if (strlen(v) >= sizeof at_cfg.output - 32)
        return bad(AT_ENV_OUTPUT, v, "name too long");
    for (const char *p = v; *p; p++)
        if (*p == '%' && p[1] != 'p' && p[1] != '%')
            return bad(AT_ENV_OUTPUT, v, "only %p (the pid) and %% may follow a %");
        else if (*p == '%')
            p++;
    strcpy(at_cfg.output, v);
    return 0;
}

/* ALLOCTRACE_DIR (absolute), else the working directory now. */
static int parse_dir(void)
{
    const char *v = at_getenv(AT_ENV_DIR);
    if (v && *v) {
        if (v[0] != '/')
            return bad(AT_ENV_DIR, v, "expected an absolute directory");
        if (strlen(v) >= sizeof at_cfg.dir)
            return bad(AT_ENV_DIR, v, "name too long");
        strcpy(at_cfg.dir, v);
    } else if (!getcwd(at_cfg.dir, sizeof at_cfg.dir)) {
        at_cfg.dir[0] = '\0';   /* relative names stay relative */
    }
    return 0;
}

static void parse_trace_list(void)
{
    const char *v = at_getenv(AT_ENV_TRACE_LIST);
    at_cfg.trace_list[0] = '\0';
    if (v && v[0] == '/' && strlen(v) < sizeof at_cfg.trace_list)
        strcpy(at_cfg.trace_list, v);
}

int at_config_load(void)
{
    keep_base_name();
    parse_trace_list();
    if (parse_output() || parse_dir() || parse_depth() || parse_timestamps() ||
        parse_bool(AT_ENV_FREE_BT, &at_cfg.free_backtraces) || parse_start() ||
        parse_bool(AT_ENV_LEAK_KINDS, &at_cfg.leak_kinds) ||
        parse_bool(AT_ENV_KEEPER, &at_cfg.keeper) ||
        parse_bool(AT_ENV_EXIT_THREADS, &at_cfg.exit_threads) ||
        parse_bool(AT_ENV_CONTROL, &at_cfg.control) ||
        parse_signal() || parse_bool(AT_ENV_FOLLOW_FORK, &at_cfg.follow_fork) ||
        parse_bool(AT_ENV_FOLLOW_EXEC, &at_cfg.follow_exec) || parse_exec_chain() || parse_mode() ||
        parse_compress() || parse_sample() || parse_sample_seed())
        return -1;
    /* The leak report and the gate count every block: they stay exact. */
    if (at_cfg.leaks_mode && at_cfg.sample)
        return bad(AT_ENV_SAMPLE, at_getenv(AT_ENV_SAMPLE),
                   "sampling is for full mode; leaks mode stays exact (unset one of "
                   AT_ENV_SAMPLE " and " AT_ENV_MODE "=leaks)");
    return 0;
}

/* Appends s, bounded. */
static char *add(char *p, char *end, const char *s)
{
    while (*s && p < end)
        *p++ = *s++;
    return p;
}

/* The pid in decimal: by hand, so the configuration (a bottom layer) needs
 * nothing of format.c, which reads it. */
static void pid_text(char *num, pid_t pid)
{
    char rev[16];
    int n = 0;
    unsigned v = (unsigned)pid;
    do
        rev[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n > 0)
        *num++ = rev[--n];
    *num = '\0';
}

void at_config_output_path(char *out, size_t cap, pid_t pid, int child)
{
    char *p = out, *end = out + cap - 24;
    char num[24];
    pid_text(num, pid);
    if (at_cfg.output[0] != '/' && at_cfg.dir[0]) {
        p = add(p, end, at_cfg.dir);
        if (p > out && p[-1] != '/')
            p = add(p, end, "/");
    }
    if (!at_cfg.output[0]) {
        p = add(p, end, "alloctrace.");
        p = add(p, end, argv0_base());
        p = add(p, end, ".");
        p = add(p, end, num);
        p = add(p, end, at_cfg.compress ? ".txt.zst" : ".txt");
        *p = '\0';
        return;
    }
    int had_pid = 0;
    for (const char *s = at_cfg.output; *s && p < end; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            p = add(p, end, num);
            had_pid = 1;
            s++;
        } else if (s[0] == '%' && s[1] == '%') {
            *p++ = '%';
            s++;
        } else {
            *p++ = *s;
        }
    }
    if (child && !had_pid) {
        p = add(p, end, ".");
        p = add(p, end, num);
    }
    *p = '\0';
}
