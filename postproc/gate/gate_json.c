/*
 * postproc/gate/gate_json.c: the gate's result as JSON (--json FILE), schema
 * "alloctrace-gate/1". CI systems read it instead of parsing the text
 * report; docs/gate.md describes every field. Unknown values are null
 * rather than "??" or 0, so a consumer cannot mistake them for data.
 * Field names only ever get added under this schema version.
 */
#include "gate.h"
#include "json.h"

#include <inttypes.h>
#include <string.h>

#define SCHEMA "alloctrace-gate/1"

static const char *known(const char *s) { return strcmp(s, AT_UNKNOWN) == 0 ? NULL : s; }

static const char *base_state(at_gate_base_state s)
{
    switch (s) {
    case AT_BASE_NEW: return "new";
    case AT_BASE_GROWN: return "grown";
    case AT_BASE_KNOWN: return "known";
    default: return NULL;
    }
}

static void frame(FILE *f, const at_frame_info *fr)
{
    fprintf(f, "{\"address\": \"0x%" PRIx64 "\", \"function\": ", fr->addr);
    at_json_str(f, known(fr->function));
    fputs(", \"file\": ", f);
    at_json_str(f, known(fr->file));
    if (fr->line)
        fprintf(f, ", \"line\": %u", fr->line);
    else
        fputs(", \"line\": null", f);
    fputs(", \"module\": ", f);
    at_json_str(f, known(fr->module));
    fprintf(f, ", \"inlined\": %s}", fr->inlined ? "true" : "false");
}

/* A leak kind's keyword, null when the trace had none. */
static const char *kind_name(at_leak_kind k)
{
    return k == AT_LEAK_UNKNOWN ? NULL : at_leak_kind_name(k);
}

/* {"definite": {"bytes": N, "blocks": M}, ...}: valgrind's LEAK SUMMARY. */
static void leak_kinds(FILE *f, const at_gate *g, const at_gate_proc *only)
{
    fputs("{", f);
    for (int k = AT_LEAK_DEFINITE; k <= AT_LEAK_NKINDS; k++) {
        at_leak_kind kind = k == AT_LEAK_NKINDS ? AT_LEAK_UNKNOWN : (at_leak_kind)k;
        uint64_t bytes = 0, blocks = 0;
        for (size_t i = 0; i < g->nprocs; i++)
            if (!only || only == &g->procs[i]) {
                bytes += g->procs[i].kinds[kind].bytes;
                blocks += g->procs[i].kinds[kind].blocks;
            }
        fprintf(f, "%s\"%s\": {\"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"fails\": %s}",
                k == AT_LEAK_DEFINITE ? "" : ", ", at_leak_kind_name(kind), bytes, blocks,
                g->opt.fail_kinds & AT_LEAK_BIT(kind) ? "true" : "false");
    }
    fputs("}", f);
}

static void group(FILE *f, const at_gate_group *g)
{
    fprintf(f, "{\"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"kind\": ", g->bytes, g->blocks);
    at_json_str(f, kind_name(g->kind));
    fprintf(f, ", \"gating\": %s, \"baseline\": ", g->base == AT_BASE_KNOWN ? "false" : "true");
    at_json_str(f, base_state(g->base));
    if (g->base == AT_BASE_GROWN || g->base == AT_BASE_KNOWN)
        fprintf(f, ", \"baseline_bytes\": %" PRIu64 ", \"baseline_blocks\": %" PRIu64,
                g->base_bytes, g->base_blocks);
    fputs(", \"key\": ", f);
    at_json_str(f, g->key);
    fputs(", \"stack\": [", f);
    for (uint32_t i = 0; i < g->nframes; i++) {
        fputs(i ? ",\n          " : "\n          ", f);
        frame(f, &g->frames[i]);
    }
    fputs("]}", f);
}

static void process(FILE *f, const at_gate *g, const at_gate_proc *p)
{
    fputs("{\"process\": ", f);
    at_json_str(f, known(p->process));
    if (p->pid >= 0)
        fprintf(f, ", \"pid\": %ld", p->pid);
    else
        fputs(", \"pid\": null", f);
    fputs(", \"trace\": ", f);
    at_json_str(f, p->trace_path);
    fputs(", \"problem\": ", f);
    at_json_str(f, p->problem);
    fputs(", \"exec\": ", f);
    at_json_str(f, p->exec_into);
    fputs(", \"stopped\": ", f);
    at_json_str(f, p->stopped);
    fprintf(f, ",\n      \"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"gating_bytes\": %" PRIu64
               ", \"gating_blocks\": %" PRIu64 ", \"suppressed_bytes\": %" PRIu64
               ", \"suppressed_blocks\": %" PRIu64 ",",
            p->bytes, p->blocks, p->gating_bytes, p->gating_blocks, p->suppressed_bytes,
            p->suppressed_blocks);
    fputs("\n      \"leak_kinds\": ", f);
    leak_kinds(f, g, p);
    fputs(",\n      \"groups\": [", f);
    for (size_t i = 0; i < p->ngroups; i++) {
        fputs(i ? ",\n        " : "\n        ", f);
        group(f, &p->groups[i]);
    }
    fputs("]}", f);
}

static const char *verdict_name(const at_gate *g, uint64_t gating)
{
    if (g->untrusted)
        return "untrusted";
    if (gating)
        return "leaks";
    return g->verdict == AT_GATE_PASS ? "pass" : "fail";
}

static void document(FILE *f, const at_gate *g)
{
    uint64_t bytes = 0, blocks = 0, groups = 0, sbytes = 0, sblocks = 0;
    for (size_t i = 0; i < g->nprocs; i++) {
        bytes += g->procs[i].gating_bytes;
        blocks += g->procs[i].gating_blocks;
        groups += g->procs[i].gating_groups;
        sbytes += g->procs[i].suppressed_bytes;
        sblocks += g->procs[i].suppressed_blocks;
    }
    fprintf(f, "{\n  \"schema\": \"%s\",\n  \"verdict\": \"%s\",\n  \"exit_code\": %d,\n  \"reason\": ",
            SCHEMA, verdict_name(g, blocks), g->verdict);
    at_json_str(f, g->untrusted);
    fputs(",\n  \"program\": {\"exit_status\": ", f);
    if (g->opt.program_status >= 0 && g->opt.program_signal <= 0)
        fprintf(f, "%d", g->opt.program_status);
    else
        fputs("null", f);
    if (g->opt.program_signal > 0)
        fprintf(f, ", \"signal\": %d", g->opt.program_signal);
    else
        fputs(", \"signal\": null", f);
    fputs("},\n  \"baseline\": ", f);
    at_json_str(f, g->opt.baseline_label);
    fprintf(f, ",\n  \"summary\": {\"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"groups\": %" PRIu64
               ", \"suppressed_bytes\": %" PRIu64 ", \"suppressed_blocks\": %" PRIu64 ",\n"
               "              \"leak_kinds\": ",
            bytes, blocks, groups, sbytes, sblocks);
    leak_kinds(f, g, NULL);
    fputs("},\n", f);
    fputs("  \"processes\": [", f);
    for (size_t i = 0; i < g->nprocs; i++) {
        fputs(i ? ",\n    " : "\n    ", f);
        process(f, g, &g->procs[i]);
    }
    fputs("],\n  \"suppressions\": [", f);
    for (size_t i = 0; i < g->nsupps; i++) {
        const at_gate_supp_use *s = &g->supps[i];
        fputs(i ? ",\n    {\"label\": " : "\n    {\"label\": ", f);
        at_json_str(f, s->label);
        fprintf(f, ", \"default\": %s, \"used\": %s, \"blocks\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
                s->is_default ? "true" : "false", s->blocks ? "true" : "false", s->blocks, s->bytes);
    }
    fputs("]\n}\n", f);
}

int at_gate_write_json(const at_gate *g, const char *path)
{
    return at_gate_write_file(g, path, document);
}
