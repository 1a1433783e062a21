/*
 * tests/fuzz/fuzz_analyze.c: libFuzzer target for the analyses. The input
 * is a trace, read through the analysis stage (grouped by -c when the first
 * byte is odd, so the out-of-order replay is fuzzed too); the report, the
 * stats, the pprof profile and a diff of the run with itself are written
 * to /dev/null. Any
 * crash, leak or sanitizer report is a bug, and so is a diff of a run with
 * itself that finds a change.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "outputs.h"
#include "compress.h"
#include "diag.h"
#include "pprof.h"
#include "reader.h"
#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *null_f;

static int outputs(void *arg, const at_analysis *an, at_trace *t)
{
    (void)arg;
    at_an_write_report(null_f, an, t, 3);
    at_an_write_stats(null_f, an, t, 3);
    at_export_pprof(null_f, an, t);
    at_an_diff *d = at_an_diff_new();
    at_an_diff_add(d, 0, an, t);
    at_an_diff_add(d, 1, an, t);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    at_an_diff_write(f, d, "a", "b", 3);
    fclose(f);
    if (!strstr(text, "sites that changed: 0 of "))
        abort();
    free(text);
    at_an_diff_free(d);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!null_f)
        null_f = fopen("/dev/null", "w");
    bool grouped = size && (data[0] & 1);
    if (size) {
        data++;
        size--;
    }
    at_diag d;
    at_diag_init(&d, "fuzz");
    d.out = null_f;
    at_trace *t = at_trace_new();
    at_stage *an = at_analyze_stage_new(t, &d, outputs, NULL), *head = an, *c = NULL;
    if (grouped)
        head = c = at_compress_new(an, t, &d, true, AT_SORT_NONE, 0);
    if (at_read_mem((const char *)data, size, t, head, &d) == 0)
        at_stage_finish(head);
    at_compress_free(c);
    at_analyze_stage_free(an);
    at_trace_free(t);
    return 0;
}
