/*
 * postproc/gate/gate.c: the leak gate's judging: grouping leaked blocks by
 * stack, suppression accounting, baseline comparison, the verdict, the
 * text report and generated suppressions.
 *
 * Decisions:
 * - Blocks are sorted by (stack, size) so each distinct stack is read once
 *   and each distinct (stack, size) asked of the suppressions once: a
 *   program leaking a million blocks from ten sites costs ten stack reads.
 * - A group is one interned stack and one leak kind, and only kinds that
 *   fail (--leak-kinds, default definite and indirect, like valgrind's
 *   --errors-for-leak-kinds and LSan) make groups: the others are counted
 *   for the LEAK SUMMARY and are not shown, judged or put in baselines.
 *   Suppressions apply to every kind, as in valgrind.
 * - Baselines key groups by a normalised
 *   stack without lines, so several groups of a process can share a key
 *   (two mallocs in one function); they are compared with the baseline as
 *   one sum.
 * - When no leak fails the gate, the program's own non-zero exit status
 *   is the gate's (as valgrind does): used as a test wrapper, a failing
 *   test stays a failure, and 77 (automake's skip) stays a skip. Leaks
 *   take precedence with the leak exit code; 3 (nothing trustworthy)
 *   before both. --ignore-program-status turns the pass-through off.
 * - Unused suppressions with --fail-on-unused-suppressions exit with the
 *   leak exit code, or 1 when that was set to 0: asking for the failure
 *   means wanting one.
 */
#include "gate.h"
#include "outfile.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static const char *keep(at_gate *g, const char *s)
{
    if (!s)
        return NULL;
    if (strcmp(s, AT_UNKNOWN) == 0)
        return AT_UNKNOWN;
    return at_stacks_strdup(g->arena, s, strlen(s));
}

void at_gate_options_init(at_gate_options *o)
{
    *o = (at_gate_options){ .leak_exitcode = AT_GATE_LEAKS, .program_status = -1,
                            .fail_kinds = AT_LEAK_DEFAULT_FAIL };
}

at_gate *at_gate_new(const at_gate_options *opt, const at_gate_matcher *m, const at_baseline *b)
{
    at_gate *g = at_xrealloc(NULL, sizeof *g);
    *g = (at_gate){ .opt = *opt, .baseline = b, .arena = at_stacks_new() };
    if (m) {
        g->nsupps = m->count;
        g->supps = at_xrealloc(NULL, (m->count ? m->count : 1) * sizeof *g->supps);
        for (size_t i = 0; i < m->count; i++)
            g->supps[i] = (at_gate_supp_use){ .label = keep(g, m->label(m->ctx, i)),
                                               .is_default = i < m->ndefault };
        g->matcher = *m;
        g->has_matcher = true;
    }
    return g;
}

void at_gate_free(at_gate *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nprocs; i++) {
        at_gate_proc *p = &g->procs[i];
        for (size_t j = 0; j < p->ngroups; j++) {
            free(p->groups[j].frames);
            free(p->groups[j].key);
        }
        free(p->groups);
    }
    free(g->procs);
    free(g->supps);
    at_stacks_free(g->arena);
    free(g);
}

at_gate_proc *at_gate_add_process(at_gate *g, const char *trace_path, const char *process, long pid)
{
    if (g->nprocs == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 8;
        g->procs = at_xrealloc(g->procs, g->cap * sizeof *g->procs);
    }
    at_gate_proc *p = &g->procs[g->nprocs++];
    *p = (at_gate_proc){ .trace_path = keep(g, trace_path),
                         .process = keep(g, process && *process ? process : AT_UNKNOWN),
                         .pid = pid };
    return p;
}

void at_gate_set_problem(at_gate *g, at_gate_proc *p, const char *why)
{
    if (!p->problem)
        p->problem = keep(g, why);
}

void at_gate_set_exec(at_gate *g, at_gate_proc *p, const char *program)
{
    p->exec_into = keep(g, program && *program ? program : AT_UNKNOWN);
}

void at_gate_set_stopped(at_gate *g, at_gate_proc *p, const char *why)
{
    p->stopped = keep(g, why);
}

/* Whether the process has a verdict of its own (not a wrapper that
 * exec'd, not a worker its program stopped). */
static bool judged(const at_gate_proc *p) { return !p->exec_into && !p->stopped; }

/* ---- grouping and suppressions ------------------------------------------ */

static int by_stack_kind_size(const void *a, const void *b)
{
    const at_gate_block *x = a, *y = b;
    if (x->stack->id != y->stack->id)
        return x->stack->id < y->stack->id ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return (x->size > y->size) - (x->size < y->size);
}

static at_gate_group *new_group(at_gate *g, at_gate_proc *p, const at_frame_info *frames,
                                uint32_t n, at_leak_kind kind)
{
    if (p->ngroups == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->groups = at_xrealloc(p->groups, p->cap * sizeof *p->groups);
    }
    at_gate_group *grp = &p->groups[p->ngroups++];
    *grp = (at_gate_group){ .kind = kind, .nframes = n,
                            .frames = at_xrealloc(NULL, (n ? n : 1) * sizeof *frames) };
    for (uint32_t i = 0; i < n; i++) {
        grp->frames[i] = frames[i];
        grp->frames[i].function = keep(g, frames[i].function);
        grp->frames[i].file = keep(g, frames[i].file);
        grp->frames[i].module = keep(g, frames[i].module);
    }
    grp->key = at_baseline_key(grp->frames, n);
    return grp;
}

/* Blocks [0, n) share one stack; sorted by kind, then size. */
static void add_stack_run(at_gate *g, at_gate_proc *p, const at_gate_block *run, size_t n,
                          const at_frame_info *frames)
{
    const at_stack *stack = run[0].stack;
    at_gate_group *grp = NULL;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint64_t bytes = 0;
        at_leak_kind kind = run[i].kind < AT_LEAK_NKINDS ? run[i].kind : AT_LEAK_UNKNOWN;
        if (grp && grp->kind != kind)
            grp = NULL;
        while (j < n && run[j].size == run[i].size && run[j].kind == run[i].kind)
            bytes += run[j++].size;
        uint64_t count = j - i;
        long s = g->has_matcher
                     ? g->matcher.first_match(g->matcher.ctx, stack, frames, run[i].size, kind)
                     : -1;
        if (s >= 0 && (size_t)s < g->nsupps) {
            g->supps[s].blocks += count;
            g->supps[s].bytes += bytes;
            p->suppressed_blocks += count;
            p->suppressed_bytes += bytes;
        } else {
            p->kinds[kind].blocks += count;
            p->kinds[kind].bytes += bytes;
            if (g->opt.fail_kinds & AT_LEAK_BIT(kind)) {
                if (!grp)
                    grp = new_group(g, p, frames, stack->nframes, kind);
                grp->blocks += count;
                grp->bytes += bytes;
                p->blocks += count;
                p->bytes += bytes;
            }
        }
        i = j;
    }
}

void at_gate_add_leaks(at_gate *g, at_gate_proc *p, const at_gate_block *blocks, size_t n,
                       const at_maps *maps, at_stack_table *stacks)
{
    if (n == 0)
        return;
    at_gate_block *sorted = at_xrealloc(NULL, n * sizeof *sorted);
    memcpy(sorted, blocks, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, by_stack_kind_size);
    at_frame_info *frames = NULL;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && sorted[j].stack == sorted[i].stack)
            j++;
        const at_stack *stack = sorted[i].stack;
        frames = at_xrealloc(frames, (stack->nframes ? stack->nframes : 1) * sizeof *frames);
        at_frame_read_stack(stack, maps, stacks, frames);
        add_stack_run(g, p, sorted + i, j - i, frames);
        i = j;
    }
    free(frames);
    free(sorted);
}

/* ---- verdict -------------------------------------------------------------- */

static bool gates(const at_gate_group *grp) { return grp->base != AT_BASE_KNOWN; }

/* Gating groups first, then largest first; ties by key for a stable report. */
static int group_order(const void *a, const void *b)
{
    const at_gate_group *x = a, *y = b;
    if (gates(x) != gates(y))
        return gates(x) ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->blocks != y->blocks)
        return x->blocks > y->blocks ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* Sums a process's groups per key and sets each group's baseline state. */
static void compare_with_baseline(const at_gate *g, at_gate_proc *p)
{
    const char *name = at_baseline_process_name(p->process);
    for (size_t i = 0; i < p->ngroups; i++) {
        at_gate_group *grp = &p->groups[i];
        if (!g->baseline) {
            grp->base = AT_BASE_NONE;
            continue;
        }
        uint64_t bytes = 0, blocks = 0;
        for (size_t j = 0; j < p->ngroups; j++)
            if (strcmp(p->groups[j].key, grp->key) == 0) {
                bytes += p->groups[j].bytes;
                blocks += p->groups[j].blocks;
            }
        if (!at_baseline_get(g->baseline, name, grp->key, &grp->base_bytes, &grp->base_blocks))
            grp->base = AT_BASE_NEW;
        else if (bytes > grp->base_bytes || blocks > grp->base_blocks)
            grp->base = AT_BASE_GROWN;
        else
            grp->base = AT_BASE_KNOWN;
    }
}

static size_t unused_user_suppressions(const at_gate *g)
{
    size_t n = 0;
    for (size_t i = 0; i < g->nsupps; i++)
        n += !g->supps[i].is_default && g->supps[i].blocks == 0;
    return n;
}

/* The program's own failure is the gate's (unless --ignore-program-status). */
static bool program_fails(const at_gate *g)
{
    return !g->opt.ignore_program_status && g->opt.program_status > 0;
}

static int failure_code(const at_gate *g)
{
    return g->opt.leak_exitcode ? g->opt.leak_exitcode : AT_GATE_LEAKS;
}

int at_gate_finish(at_gate *g)
{
    uint64_t gating = 0;
    g->untrusted = NULL;
    for (size_t i = 0; i < g->nprocs; i++) {
        at_gate_proc *p = &g->procs[i];
        p->gating_groups = 0;
        p->gating_bytes = p->gating_blocks = 0;
        compare_with_baseline(g, p);
        if (p->ngroups)
            qsort(p->groups, p->ngroups, sizeof *p->groups, group_order);
        for (size_t j = 0; j < p->ngroups; j++)
            if (gates(&p->groups[j])) {
                p->gating_groups++;
                p->gating_bytes += p->groups[j].bytes;
                p->gating_blocks += p->groups[j].blocks;
            }
        gating += p->gating_blocks;
        if (p->problem && !g->untrusted)
            g->untrusted = p->problem;
    }
    size_t njudged = 0;
    for (size_t i = 0; i < g->nprocs; i++)
        njudged += judged(&g->procs[i]);
    if (g->opt.program_signal > 0)
        g->untrusted = "the program was killed by a signal before it exited";
    else if (njudged == 0 && g->nskipped > 0)
        g->untrusted = "no traced process was one to judge (--process)";
    else if (njudged == 0 && g->opt.no_trace_reason)
        g->untrusted = g->opt.no_trace_reason;
    else if (njudged == 0)
        g->untrusted = "no trace was written: the tracer was not loaded "
                       "(static or setuid program?)";

    if (g->untrusted)
        g->verdict = AT_GATE_UNTRUSTED;
    else if (gating > 0)
        g->verdict = g->opt.leak_exitcode;
    else if (program_fails(g))
        g->verdict = g->opt.program_status;
    else if (g->opt.fail_on_unused && unused_user_suppressions(g) > 0)
        g->verdict = failure_code(g);
    else
        g->verdict = AT_GATE_PASS;
    return g->verdict;
}

/* ---- text report ---------------------------------------------------------- */

static void print_frame(FILE *out, unsigned i, const at_frame_info *f)
{
    bool fn = strcmp(f->function, AT_UNKNOWN) != 0;
    bool file = strcmp(f->file, AT_UNKNOWN) != 0;
    bool mod = strcmp(f->module, AT_UNKNOWN) != 0;
    fprintf(out, "    #%u ", i);
    if (!fn)
        fprintf(out, "0x%" PRIx64 " ", f->addr);
    else
        fprintf(out, "%s ", f->function);
    if (file)
        fprintf(out, "at %s:%u", f->file, f->line);
    else if (mod)
        fprintf(out, "from %s", f->module);
    else
        fputs("in ??", out);
    fputs(f->inlined ? " [inlined]\n" : "\n", out);
}

static void put_plain(FILE *out, const char *s) { fputs(s, out); }

/* "Leak of B byte(s) in K block(s) in SITE, allocated from:" and the
 * stack; SITE is the first frame that is not an allocation wrapper. */
static void print_group(FILE *out, const at_gate_group *grp)
{
    fprintf(out, "Leak of %" PRIu64 " byte(s) in %" PRIu64 " block(s) in ", grp->bytes, grp->blocks);
    at_gate_print_site(out, at_gate_alloc_site(grp->frames, grp->nframes), put_plain);
    fputs(", allocated from:", out);
    if (grp->kind != AT_LEAK_UNKNOWN)
        fprintf(out, " [%s]", at_leak_kind_words(grp->kind));
    if (grp->base == AT_BASE_NEW)
        fputs(" [new]", out);
    else if (grp->base == AT_BASE_GROWN)
        fprintf(out, " [grown: baseline %" PRIu64 " byte(s) in %" PRIu64 " block(s)]",
                grp->base_bytes, grp->base_blocks);
    else if (grp->base == AT_BASE_KNOWN)
        fputs(" [in baseline]", out);
    fputc('\n', out);
    for (uint32_t i = 0; i < grp->nframes; i++)
        print_frame(out, i, &grp->frames[i]);
    if (grp->nframes == 0)
        fputs("    (no backtrace)\n", out);
    fputc('\n', out);
}

static void print_process(FILE *out, const at_gate *g, const at_gate_proc *p)
{
    fprintf(out, "== process %s", p->process);
    if (p->pid >= 0)
        fprintf(out, " (pid %ld)", p->pid);
    if (p->trace_path) /* none when the trace is a temporary file, deleted when done */
        fprintf(out, ", trace %s", p->trace_path);
    fputc('\n', out);
    if (p->exec_into) {
        fprintf(out, "exec'd %s: not judged itself; the program it became is judged below\n\n",
                p->exec_into);
        return;
    }
    if (p->stopped) {
        fprintf(out, "not judged: %s\n\n", p->stopped);
        return;
    }
    /* A trace that cannot be trusted has no leaks added (gate_run.c): what
     * it holds was never judged, so no "Leak of" line may suggest it was. */
    if (p->problem)
        fprintf(out, "alloctrace: not judged: %s\n", p->problem);
    size_t shown = p->ngroups;
    if (g->opt.max_groups && shown > g->opt.max_groups)
        shown = g->opt.max_groups;
    if (p->ngroups == 0 && !p->problem)
        fputs("no leaks left after suppressions\n", out);
    fputc('\n', out);
    for (size_t i = 0; i < shown; i++)
        print_group(out, &p->groups[i]);
    if (shown < p->ngroups) {
        uint64_t bytes = 0, blocks = 0;
        for (size_t i = shown; i < p->ngroups; i++) {
            bytes += p->groups[i].bytes;
            blocks += p->groups[i].blocks;
        }
        fprintf(out, "%zu more group(s) not shown (%" PRIu64 " byte(s) in %" PRIu64 " block(s))\n\n",
                p->ngroups - shown, bytes, blocks);
    }
}

static void print_suppression_use(FILE *out, const at_gate *g)
{
    bool any = false;
    for (size_t i = 0; i < g->nsupps; i++) {
        const at_gate_supp_use *s = &g->supps[i];
        if (s->blocks == 0)
            continue;
        if (!any)
            fputs("Suppressions used:\n", out);
        any = true;
        fprintf(out, "  %s: %" PRIu64 " leak(s), %" PRIu64 " byte(s)\n", s->label, s->blocks,
                s->bytes);
    }
    if (unused_user_suppressions(g) == 0)
        return;
    fputs("Unused suppressions:\n", out);
    for (size_t i = 0; i < g->nsupps; i++)
        if (!g->supps[i].is_default && g->supps[i].blocks == 0)
            fprintf(out, "  %s\n", g->supps[i].label);
}

static void print_program_status(FILE *out, const at_gate *g)
{
    if (g->opt.program_signal > 0)
        fprintf(out, "alloctrace: the program was killed by signal %d (%s)\n", g->opt.program_signal,
                strsignal(g->opt.program_signal));
    else if (g->opt.program_status > 0)
        fprintf(out, "alloctrace: the program exited with status %d\n", g->opt.program_status);
}

/* Why the gate fails (nothing when it passes: --leak-exitcode 0 included). */
static void print_verdict(FILE *out, const at_gate *g)
{
    if (g->untrusted) {
        fprintf(out, "alloctrace: nothing trustworthy to judge: %s\n", g->untrusted);
        return;
    }
    if (g->verdict == AT_GATE_PASS)
        return;
    size_t groups = 0;
    for (size_t i = 0; i < g->nprocs; i++)
        groups += g->procs[i].gating_groups;
    if (groups)
        fprintf(out, "alloctrace: %zu leak group(s)%s fail the gate\n", groups,
                g->baseline ? " new or grown against the baseline" : "");
    else if (program_fails(g))
        fprintf(out, "alloctrace: no leak fails the gate; exiting with the program's own status %d "
                     "(--ignore-program-status to exit 0)\n", g->opt.program_status);
    else if (g->opt.fail_on_unused && unused_user_suppressions(g))
        fputs("alloctrace: unused suppressions fail the gate (--fail-on-unused-suppressions)\n", out);
}

/* A number as valgrind writes it: thousands separated by commas. */
static void print_count(FILE *out, uint64_t v)
{
    if (v >= 1000) {
        print_count(out, v / 1000);
        fprintf(out, ",%03u", (unsigned)(v % 1000));
    } else {
        fprintf(out, "%u", (unsigned)v);
    }
}

static void summary_line(FILE *out, const char *words, uint64_t bytes, uint64_t blocks)
{
    fprintf(out, "%*s: ", 18, words);
    print_count(out, bytes);
    fputs(" bytes in ", out);
    print_count(out, blocks);
    fputs(" blocks\n", out);
}

/* valgrind's LEAK SUMMARY over every judged process: each kind left after
 * suppressions, then what suppressions took. */
static void print_leak_summary(FILE *out, const at_gate *g)
{
    if (g->nprocs == 0)
        return;
    static const at_leak_kind order[] = { AT_LEAK_DEFINITE,  AT_LEAK_INDIRECT, AT_LEAK_POSSIBLE,
                                          AT_LEAK_REACHABLE, AT_LEAK_LIBC,     AT_LEAK_UNKNOWN };
    fputs("LEAK SUMMARY:\n", out);
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        uint64_t bytes = 0, blocks = 0;
        for (size_t i = 0; i < g->nprocs; i++) {
            bytes += g->procs[i].kinds[order[k]].bytes;
            blocks += g->procs[i].kinds[order[k]].blocks;
        }
        if ((order[k] != AT_LEAK_UNKNOWN && order[k] != AT_LEAK_LIBC) || blocks)
            summary_line(out, at_leak_kind_words(order[k]), bytes, blocks);
    }
    uint64_t bytes = 0, blocks = 0;
    for (size_t i = 0; i < g->nprocs; i++) {
        bytes += g->procs[i].suppressed_bytes;
        blocks += g->procs[i].suppressed_blocks;
    }
    summary_line(out, "suppressed", bytes, blocks);
}

void at_gate_print_report(FILE *out, const at_gate *g)
{
    print_program_status(out, g);
    for (size_t i = 0; i < g->nprocs; i++)
        print_process(out, g, &g->procs[i]);
    if (g->nskipped)
        fprintf(out, "alloctrace: %zu other process(es) not judged (--process)\n", g->nskipped);
    if (g->nwrapper_children)
        fprintf(out, "alloctrace: %zu process(es) the wrapper forked before it exec'd the program "
                     "not judged (--follow-children judges them)\n", g->nwrapper_children);
    print_suppression_use(out, g);
    print_verdict(out, g);
    print_leak_summary(out, g);
    uint64_t bytes = 0, blocks = 0;
    for (size_t i = 0; i < g->nprocs; i++) {
        bytes += g->procs[i].gating_bytes;
        blocks += g->procs[i].gating_blocks;
    }
    fprintf(out, "SUMMARY: alloctrace: %" PRIu64 " byte(s) leaked in %" PRIu64 " allocation(s).\n",
            bytes, blocks);
}

/* ---- generated suppressions ---------------------------------------------- */

typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = at_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_str(strbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

/* A literal element when the language reads it back unchanged, else an
 * anchored regex with PCRE2's metacharacters escaped, and '"' too so the
 * text can never form the closing '"#'. */
static void add_element(strbuf *b, const char *s, bool path, bool callstack)
{
    bool literal = *s && strcmp(s, "...") != 0 && strcmp(s, "**") != 0 && strncmp(s, "#\"", 2) != 0;
    for (const char *c = s; literal && *c; c++)
        if (isspace((unsigned char)*c) || *c == '[' || *c == ']' || (callstack && *c == ':'))
            literal = false;
    if (literal) {
        sb_str(b, s);
        return;
    }
    sb_str(b, path ? "#\"(^|/)" : "#\"^");
    for (const char *c = s; *c; c++) {
        if (strchr("\\^$.|?*+()[]{}\"", *c))
            sb_add(b, "\\", 1);
        sb_add(b, c, 1);
    }
    sb_str(b, "$\"#");
}

/* "functions contains [ ... outer ... inner ] && string contains [ ... ]"
 * from main on (the leading "..." takes the start-up frames); with
 * `lines`, the file list is a callstack list with each frame's line. */
static char *filter_for(const at_gate_group *grp, bool lines)
{
    strbuf b = { 0 };
    uint32_t n = at_gate_frames_to_main(grp->frames, grp->nframes);
    sb_str(&b, "functions contains [ ...");
    for (uint32_t i = n; i-- > 0;) {
        sb_add(&b, " ", 1);
        add_element(&b, grp->frames[i].function, false, false);
    }
    sb_str(&b, lines ? " ] && callstack contains [ ..." : " ] && string contains [ ...");
    for (uint32_t i = n; i-- > 0;) {
        const at_frame_info *f = &grp->frames[i];
        sb_add(&b, " ", 1);
        add_element(&b, at_path_base(f->file), true, lines);
        if (lines && f->line) {
            char num[32];
            snprintf(num, sizeof num, " : %u", f->line);
            sb_str(&b, num);
        }
    }
    sb_str(&b, " ]");
    /* Frames without names still tell their object apart. */
    bool unnamed = false;
    for (uint32_t i = 0; i < n; i++)
        unnamed |= strcmp(grp->frames[i].function, AT_UNKNOWN) == 0;
    if (unnamed) {
        sb_str(&b, " && modules contains [ ...");
        for (uint32_t i = n; i-- > 0;) {
            sb_add(&b, " ", 1);
            add_element(&b, at_path_base(grp->frames[i].module), true, false);
        }
        sb_str(&b, " ]");
    }
    return b.s;
}

/* Does another group of the gate give the same line-less filter? Then
 * only lines tell them apart. */
static bool ambiguous(const at_gate *g, const at_gate_group *grp, const char *f)
{
    for (size_t i = 0; i < g->nprocs; i++)
        for (size_t j = 0; j < g->procs[i].ngroups; j++) {
            const at_gate_group *o = &g->procs[i].groups[j];
            if (o == grp)
                continue;
            char *of = filter_for(o, false);
            bool same = strcmp(of, f) == 0;
            free(of);
            if (same)
                return true;
        }
    return false;
}

/* "NAME-leak-N: FILTER" for group i of p; `lines` when only lines tell the
 * group from another. */
static char *suppression_line(const at_gate_proc *p, size_t i, bool lines)
{
    char *f = filter_for(&p->groups[i], lines);
    strbuf b = { 0 };
    const char *name = at_baseline_process_name(p->process);
    for (const char *c = name; *c; c++) {
        bool ok = isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '-';
        sb_add(&b, ok ? c : "_", 1);
    }
    char num[64];
    snprintf(num, sizeof num, "-leak-%zu: ", i + 1);
    sb_str(&b, num);
    sb_str(&b, f);
    free(f);
    return b.s;
}

char *at_gate_suppression_line(const at_gate *g, const at_gate_proc *p, size_t i)
{
    char *f = filter_for(&p->groups[i], false);
    bool amb = ambiguous(g, &p->groups[i], f);
    free(f);
    return suppression_line(p, i, amb);
}

typedef struct gen_entry {
    char *filter; /* the line-less filter */
    const at_gate_proc *p;
    size_t i;
    bool ambiguous;
} gen_entry;

static int by_filter(const void *a, const void *b)
{
    return strcmp(((const gen_entry *)a)->filter, ((const gen_entry *)b)->filter);
}

static int by_position(const void *a, const void *b)
{
    const gen_entry *x = a, *y = b;
    if (x->p != y->p)
        return x->p < y->p ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* All groups' line-less filters sorted once, so that telling which ones
 * need lines costs n log n, not n squared. */
void at_gate_print_suppressions(FILE *out, const at_gate *g)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < g->nprocs; i++)
        n += g->procs[i].ngroups;
    if (n == 0)
        return;
    gen_entry *e = at_xrealloc(NULL, n * sizeof *e);
    for (size_t i = 0; i < g->nprocs; i++)
        for (size_t j = 0; j < g->procs[i].ngroups; j++)
            e[k++] = (gen_entry){ filter_for(&g->procs[i].groups[j], false), &g->procs[i], j, false };
    qsort(e, n, sizeof *e, by_filter);
    for (size_t i = 1; i < n; i++)
        if (strcmp(e[i - 1].filter, e[i].filter) == 0)
            e[i - 1].ambiguous = e[i].ambiguous = true;
    qsort(e, n, sizeof *e, by_position);
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (gates(&e[i].p->groups[e[i].i])) {
            if (!any)
                fputs("# Suppressions for the leak groups left (paste into a suppression file):\n",
                      out);
            any = true;
            char *line = suppression_line(e[i].p, e[i].i, e[i].ambiguous);
            fprintf(out, "%s\n", line);
            free(line);
        }
        free(e[i].filter);
    }
    free(e);
}

int at_gate_write_file(const at_gate *g, const char *path, void (*document)(FILE *, const at_gate *))
{
    FILE *f = at_outfile_fopen(path); /* renamed into place when whole */
    if (!f)
        return -1;
    document(f, g);
    return at_outfile_fclose(f, true);
}
