/*
 * postproc/gate/gate_vglog.c: the gate's leaks as a valgrind memcheck log
 * (--log-file FILE), so that `ctest -T memcheck` with
 * MEMORYCHECK_TYPE=Valgrind and the gate as MEMORYCHECK_COMMAND counts
 * them: ctest reads the file it named with valgrind's --log-file= and
 * counts one defect per "... bytes in ... blocks are definitely lost in
 * loss record I of N" line.
 *
 * Decisions:
 * - One loss record per leak group that fails the gate, so ctest's defect
 *   count equals the gate's group count. Groups within a baseline do not
 *   fail and are not written. A record says its group's kind in valgrind's
 *   words, but an indirect one (see record_words).
 * - Each process's records carry its own pid as valgrind's "==PID==", and
 *   are numbered per process, as valgrind numbers them per process.
 * - Numbers use valgrind's thousands separators ("1,024 bytes"); frames
 *   read "at 0xADDR: FUNCTION (FILE:LINE)" or "(in MODULE)", "???" for an
 *   unknown function. The allocation function itself is not a frame here
 *   (the tracer's stacks start at its caller), so frame 0 is the caller.
 * - A run that could not be judged writes no record: ctest then shows no
 *   defect, and the gate's exit status (3) fails the test.
 * - "%p" in the path gives one file per process, named by its pid, as
 *   valgrind's --log-file=NAME.%p does (scripts written for valgrind).
 */
#include "gate.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* n with a ',' every three digits, as valgrind writes counts. */
static void thousands(FILE *f, uint64_t n)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%" PRIu64, n);
    for (int i = 0; i < len; i++) {
        fputc(digits[i], f);
        if (i < len - 1 && (len - 1 - i) % 3 == 0)
            fputc(',', f);
    }
}

static void frame(FILE *f, long pid, unsigned i, const at_frame_info *fr)
{
    fprintf(f, "==%ld==    %s 0x%" PRIX64 ": %s", pid, i == 0 ? "at" : "by", fr->addr,
            strcmp(fr->function, AT_UNKNOWN) != 0 ? fr->function : "???");
    if (strcmp(fr->file, AT_UNKNOWN) != 0)
        fprintf(f, " (%s:%u)\n", at_path_base(fr->file), fr->line);
    else if (strcmp(fr->module, AT_UNKNOWN) != 0)
        fprintf(f, " (in %s)\n", fr->module);
    else
        fputc('\n', f);
}

/* The words of a loss record for a group of this kind: ones ctest counts.
 * ctest does not count "indirectly lost" records (valgrind folds indirect
 * bytes into the definite record of their root); the gate fails on an
 * indirect group of its own, so it is written as definitely lost, with
 * a line saying what it is. */
static const char *record_words(at_leak_kind k)
{
    switch (k) {
    case AT_LEAK_POSSIBLE: return "possibly lost";
    case AT_LEAK_REACHABLE:
    case AT_LEAK_LIBC: return "still reachable";
    default: return "definitely lost";
    }
}

static void amount(FILE *f, long pid, const char *words, uint64_t bytes, uint64_t blocks)
{
    fprintf(f, "==%ld== %18s: ", pid, words);
    thousands(f, bytes);
    fputs(" bytes in ", f);
    thousands(f, blocks);
    fputs(" blocks\n", f);
}

static void leak_summary(FILE *f, long pid, const at_gate_proc *p)
{
    fprintf(f, "==%ld== LEAK SUMMARY:\n", pid);
    amount(f, pid, "definitely lost", p->kinds[AT_LEAK_DEFINITE].bytes + p->kinds[AT_LEAK_UNKNOWN].bytes,
           p->kinds[AT_LEAK_DEFINITE].blocks + p->kinds[AT_LEAK_UNKNOWN].blocks);
    amount(f, pid, "indirectly lost", p->kinds[AT_LEAK_INDIRECT].bytes, p->kinds[AT_LEAK_INDIRECT].blocks);
    amount(f, pid, "possibly lost", p->kinds[AT_LEAK_POSSIBLE].bytes, p->kinds[AT_LEAK_POSSIBLE].blocks);
    amount(f, pid, "still reachable", p->kinds[AT_LEAK_REACHABLE].bytes,
           p->kinds[AT_LEAK_REACHABLE].blocks);
    amount(f, pid, "suppressed", p->suppressed_bytes, p->suppressed_blocks);
    fprintf(f, "==%ld== \n", pid);
}

static void process_records(FILE *f, const at_gate_proc *p)
{
    long pid = p->pid >= 0 ? p->pid : 0;
    if (p->stopped) {
        fprintf(f, "==%ld== alloctrace: not judged: %s\n==%ld== \n", pid, p->stopped, pid);
        return;
    }
    if (p->exec_into) { /* a wrapper: its pid's records are the exec'd program's */
        fprintf(f, "==%ld== alloctrace: exec'd %s, judged as that program\n==%ld== \n", pid,
                p->exec_into, pid);
        return;
    }
    size_t n = p->gating_groups, k = 0;
    for (size_t i = 0; i < p->ngroups; i++) {
        const at_gate_group *grp = &p->groups[i];
        if (grp->base == AT_BASE_KNOWN)
            continue;
        fprintf(f, "==%ld== ", pid);
        thousands(f, grp->bytes);
        fputs(" bytes in ", f);
        thousands(f, grp->blocks);
        fprintf(f, " blocks are %s in loss record %zu of %zu\n", record_words(grp->kind), ++k, n);
        if (grp->kind == AT_LEAK_INDIRECT)
            fprintf(f, "==%ld==    (indirectly lost: reached only through lost blocks; the gate "
                       "fails on it)\n", pid);
        for (uint32_t j = 0; j < grp->nframes; j++)
            frame(f, pid, j, &grp->frames[j]);
        fprintf(f, "==%ld== \n", pid);
    }
    bool any = p->suppressed_blocks > 0;
    for (int kind = 0; kind < AT_LEAK_NKINDS; kind++)
        any |= p->kinds[kind].blocks > 0;
    if (any)
        leak_summary(f, pid, p);
    else if (p->problem)
        fprintf(f, "==%ld== alloctrace: not judged: %s\n==%ld== \n", pid, p->problem, pid);
    else
        fprintf(f, "==%ld== All heap blocks were freed -- no leaks are possible\n==%ld== \n", pid, pid);
    fprintf(f, "==%ld== ERROR SUMMARY: %zu errors from %zu contexts\n", pid, n, n);
}

static void untrusted(FILE *f, const at_gate *g)
{
    if (g->untrusted)
        fprintf(f, "==0== alloctrace: nothing trustworthy to judge: %s\n", g->untrusted);
}

static void document(FILE *f, const at_gate *g)
{
    for (size_t i = 0; i < g->nprocs; i++)
        process_records(f, &g->procs[i]);
    untrusted(f, g);
}

/* One process's file of a "%p" log (at_gate_write_file takes a gate). */
static const at_gate_proc *the_proc;

static void one_process(FILE *f, const at_gate *g)
{
    if (the_proc)
        process_records(f, the_proc);
    untrusted(f, g);
}

/* path with every "%p" replaced by pid, a new string. */
static char *with_pid(const char *path, long pid)
{
    char *out;
    size_t len;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    for (const char *c = path; *c; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            fprintf(f, "%ld", pid);
            c++;
        } else {
            fputc(*c, f);
        }
    }
    fclose(f);
    return out;
}

/* As valgrind's --log-file=NAME.%p: one file per process, %p its pid. */
static int write_per_process(const at_gate *g, const char *path)
{
    size_t n = g->nprocs ? g->nprocs : 1;
    for (size_t i = 0; i < n; i++) {
        the_proc = g->nprocs ? &g->procs[i] : NULL;
        char *file = with_pid(path, the_proc && the_proc->pid >= 0 ? the_proc->pid : 0);
        int rc = file ? at_gate_write_file(g, file, one_process) : -1;
        free(file);
        if (rc != 0)
            return -1;
    }
    return 0;
}

int at_gate_write_valgrind_log(const at_gate *g, const char *path)
{
    if (strstr(path, "%p"))
        return write_per_process(g, path);
    return at_gate_write_file(g, path, document);
}
