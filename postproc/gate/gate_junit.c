/*
 * postproc/gate/gate_junit.c: the gate's result as JUnit XML (--junit FILE):
 * one test case per traced process, named by its program (not its pid, so
 * CI keeps a test's history across runs), a <failure> per leak group that gates,
 * an <error> for a process (or a run) that could not be judged. Several
 * failures in one test case are what Jenkins and GitLab show as separate
 * items; the strict XSD allows one, which no CI system enforces.
 * Characters XML 1.0 cannot carry (control characters, bytes that are not
 * valid UTF-8) become '?'.
 */
#include "gate.h"
#include "json.h"

#include <inttypes.h>
#include <string.h>

static void esc(FILE *f, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if ((*c < 0x20 && *c != '\n' && *c != '\t') || *c == 0x7f)
                fputc('?', f);
            else if (*c < 0x80)
                fputc(*c, f);
            else if (at_utf8_len(c)) {
                fwrite(c, 1, at_utf8_len(c), f);
                c += at_utf8_len(c) - 1;
            } else
                fputc('?', f);
        }
    }
}

static void frame_text(FILE *f, unsigned i, const at_frame_info *fr)
{
    fprintf(f, "#%u ", i);
    if (strcmp(fr->function, AT_UNKNOWN) != 0)
        esc(f, fr->function);
    else
        fprintf(f, "0x%" PRIx64, fr->addr);
    if (strcmp(fr->file, AT_UNKNOWN) != 0) {
        fputs(" at ", f);
        esc(f, fr->file);
        fprintf(f, ":%u", fr->line);
    } else if (strcmp(fr->module, AT_UNKNOWN) != 0) {
        fputs(" from ", f);
        esc(f, fr->module);
    }
    fputc('\n', f);
}

/* The message names where the leak was made (gate_site.c), not the
 * allocation wrapper: "leaked in dup_name (names.c:20)". */
static void failure(FILE *f, const at_gate_group *g)
{
    fprintf(f, "      <failure type=\"%s\" message=\"%" PRIu64 " byte(s) in %" PRIu64
               " block(s) leaked in ",
            g->base == AT_BASE_GROWN ? "grown-leak" : g->base == AT_BASE_NEW ? "new-leak" : "leak",
            g->bytes, g->blocks);
    at_gate_print_site(f, at_gate_alloc_site(g->frames, g->nframes), esc);
    if (g->kind != AT_LEAK_UNKNOWN)
        fprintf(f, " (%s)", at_leak_kind_words(g->kind));
    fputs("\">", f);
    for (uint32_t i = 0; i < g->nframes; i++)
        frame_text(f, i, &g->frames[i]);
    fputs("</failure>\n", f);
}

static void testcase(FILE *f, const at_gate_proc *p)
{
    fputs("    <testcase classname=\"alloctrace.leaks\" name=\"", f);
    esc(f, p->process);
    if (p->trace_path) {
        fputs("\" file=\"", f);
        esc(f, p->trace_path);
    }
    fputs("\">\n", f);
    if (p->problem) {
        fputs("      <error type=\"untrusted\" message=\"", f);
        esc(f, p->problem);
        fputs("\"/>\n", f);
    }
    for (size_t i = 0; i < p->ngroups; i++)
        if (p->groups[i].base != AT_BASE_KNOWN)
            failure(f, &p->groups[i]);
    fprintf(f, "      <system-out>pid %ld; %" PRIu64 " byte(s) in %" PRIu64
               " block(s) suppressed</system-out>\n",
            p->pid, p->suppressed_bytes, p->suppressed_blocks);
    fputs("    </testcase>\n", f);
}

static void document(FILE *f, const at_gate *g)
{
    size_t tests = 0, failures = 0, errors = 0;
    for (size_t i = 0; i < g->nprocs; i++) {
        if (g->procs[i].exec_into || g->procs[i].stopped)
            continue; /* a wrapper (the program it exec'd is the test), a stopped worker */
        tests++;
        failures += g->procs[i].gating_groups > 0;
        errors += g->procs[i].problem != NULL;
    }
    /* A run-wide reason (no trace at all, the program killed) is its own case. */
    bool run_error = g->untrusted && errors == 0;
    tests += run_error;
    errors += run_error;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    fprintf(f, "<testsuites name=\"alloctrace\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\">\n",
            tests, failures, errors);
    fprintf(f, "  <testsuite name=\"alloctrace leak gate\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\">\n",
            tests, failures, errors);
    if (run_error) {
        fputs("    <testcase classname=\"alloctrace.leaks\" name=\"program\">\n"
              "      <error type=\"untrusted\" message=\"", f);
        esc(f, g->untrusted);
        fputs("\"/>\n    </testcase>\n", f);
    }
    for (size_t i = 0; i < g->nprocs; i++)
        if (!g->procs[i].exec_into && !g->procs[i].stopped)
            testcase(f, &g->procs[i]);
    fputs("  </testsuite>\n</testsuites>\n", f);
}

int at_gate_write_junit(const at_gate *g, const char *path)
{
    return at_gate_write_file(g, path, document);
}
