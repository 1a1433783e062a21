/*
 * tests/integration/test_sample.c: sampling by bytes (--sample) from the
 * tracer to every output, and --format pprof.
 *
 * tests/programs/sample_sites runs five sites of known sizes; a full trace
 * of it is the truth the estimates are held to. The seed is fixed
 * (ALLOCTRACE_SAMPLE_SEED), so every run samples the same calls.
 *
 * pprof files are read back twice: by `go tool pprof` (Debian's golang-go,
 * skipped when missing) and by the small protobuf reader below, written
 * from the wire format alone (varints and length-delimited fields), so it
 * shares nothing with the libprotobuf-c code that wrote them.
 */
#include "harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SEED "ALLOCTRACE_SAMPLE_SEED=24"

static char *prog(void) { return h_path("build/tests/programs/sample_sites"); }
static char *postproc(void) { return h_path("postproc/alloctrace-postproc"); }

/* Traces sample_sites (args: up to 2) into DIR/NAME with extra env. */
static char *trace(const char *dir, const char *name, const char *arg, const char *const env[])
{
    char *p = prog(), *path = h_fmt("%s/%s", dir, name);
    const char *argv[] = { p, arg, NULL };
    h_result r = h_trace(path, argv, env);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    free(p);
    return path;
}

/* alloctrace-postproc ARGS... TRACE, its result. */
static h_result pp(const char *args, const char *trace_path)
{
    char *p = postproc();
    h_result r = h_sh("%s %s %s", p, args, trace_path);
    free(p);
    return r;
}

/* The bytes of every folded line holding ";SITE;", from -r --format folded. */
static uint64_t site_bytes(const char *folded, const char *site)
{
    char *needle = h_fmt(";%s;", site);
    uint64_t sum = 0;
    for (const char *l = folded; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char *line = strndup(l, len);
        const char *sp = strrchr(line, ' ');
        if (strstr(line, needle) && sp)
            sum += strtoull(sp + 1, NULL, 10);
        free(line);
        l = end ? end + 1 : NULL;
    }
    free(needle);
    return sum;
}

static uint64_t json_u64(const char *json, const char *key)
{
    char *k = h_fmt("\"%s\": ", key);
    const char *p = strstr(json, k);
    assert_non_null(p);
    uint64_t v = strtoull(p + strlen(k), NULL, 10);
    free(k);
    return v;
}

static void test_header_says_the_interval_and_the_trace_is_small(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    const char *full_env[] = { "ALLOCTRACE_COMPRESS=none", NULL };
    const char *env[] = { "ALLOCTRACE_COMPRESS=none", "ALLOCTRACE_SAMPLE=512k", SEED, NULL };
    char *full = trace(dir, "full.txt", NULL, full_env);
    char *sampled = trace(dir, "sampled.txt", NULL, env);
    char *ft = h_read_file(full, NULL), *st = h_read_file(sampled, NULL);
    h_has(st, ", sampling interval=524288, ");
    h_lacks(ft, "sampling interval");
    size_t fn = h_count_lines(ft, "^[0-9]+\\. "), sn = h_count_lines(st, "^[0-9]+\\. ");
    /* ~146 MB allocated: about 280 picks and their releases of 390000 calls. */
    assert_true(sn > 100 && sn * 100 < fn);
    free(ft);
    free(st);
    free(full);
    free(sampled);
    h_cleanup();
}

/* Every site holding at least 5% of the bytes within 15% of the truth, at
 * an interval that takes more than 1000 samples. */
static void test_sites_estimated_within_15_percent_of_full_mode(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    const char *full_env[] = { NULL };
    const char *env[] = { "ALLOCTRACE_SAMPLE=32k", SEED, NULL };
    char *full = trace(dir, "full.txt", NULL, full_env);
    char *sampled = trace(dir, "sampled.txt", NULL, env);
    h_result f = pp("-r --format folded", full), s = pp("-r --format folded", sampled);
    assert_int_equal(f.status, 0);
    assert_int_equal(s.status, 0);
    h_has(s.err, "the costs are estimated from a sample, one in 32768 bytes on average");
    char *st = h_read_file(sampled, NULL);
    size_t picks = h_count_lines(st, "^[0-9]+\\. [^(]*\\([0-9]+\\) = ");   /* allocations */
    assert_true(picks >= 1000);
    const char *sites[] = { "site_small", "site_medium", "site_large", "site_calloc",
                            "site_realloc" };
    uint64_t total = 0;
    for (size_t i = 0; i < 5; i++)
        total += site_bytes(f.out, sites[i]);
    size_t checked = 0;
    for (size_t i = 0; i < 5; i++) {
        uint64_t truth = site_bytes(f.out, sites[i]), est = site_bytes(s.out, sites[i]);
        if (truth * 20 < total)
            continue;
        double err = ((double)est - (double)truth) / (double)truth;
        printf("%s: %llu estimated, %llu true (%+.1f%%)\n", sites[i], (unsigned long long)est,
               (unsigned long long)truth, 100 * err);
        assert_true(err < 0.15 && err > -0.15);
        checked++;
    }
    assert_int_equal(checked, 4);   /* site_small holds ~3%: not held to it */
    free(st);
    h_result_free(&f);
    h_result_free(&s);
    free(full);
    free(sampled);
    h_cleanup();
}

/* A sampled process has no backtrace taken at start (libunwind's first
 * call, its cache and its checks, are left to the first pick): the first
 * pick, here the program's first call, still unwinds from the program's
 * own frame. */
static void test_first_pick_unwinds_from_the_programs_frame(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    const char *env[] = { "ALLOCTRACE_SAMPLE=1", SEED, NULL };
    char *sampled = trace(dir, "first.txt", NULL, env);
    h_result r = pp("-r", sampled);
    assert_int_equal(r.status, 0);
    const char *first = strstr(r.out, "\n1. ");
    assert_non_null(first);
    const char *end = strstr(first + 1, "\n\n");
    assert_non_null(end);
    char *record = strndup(first + 1, (size_t)(end - first - 1));
    h_has(record, "] calloc(80000) = 0x");   /* all_sites' array of blocks */
    h_has(record, "\n\t0x");
    char *frame0 = strchr(record, '\t'), *frame1 = strchr(frame0, '\n');
    assert_non_null(frame1);
    *frame1++ = '\0';
    h_has(frame0, " all_sites() at ");
    h_has(frame0, "tests/programs/sample_sites.c:89");
    char *main_at = strstr(frame1, " main() at ");
    assert_true(strncmp(frame1, "\t0x", 3) == 0 && main_at && main_at < strchr(frame1, '\n'));
    free(record);
    h_result_free(&r);
    free(sampled);
    h_cleanup();
}

/* Little-endian, N bytes at P. */
static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The type of the first block of the zstd frame at F (RFC 8878: 0 raw,
 * 2 compressed), and in *END where the frame ends. */
static unsigned first_block_type(const unsigned char *f, const unsigned char **end)
{
    assert_int_equal(le(f, 4), 0xFD2FB528u);
    unsigned fhd = f[4], single = fhd >> 5 & 1, fcs = fhd >> 6;
    size_t fcs_bytes = fcs == 0 ? single : 1u << fcs, did = (1u << (fhd & 3)) >> 1;
    const unsigned char *b = f + 5 + !single + did + fcs_bytes;
    unsigned type = (unsigned)(le(b, 3) >> 1 & 3);
    for (;;) {
        uint64_t h = le(b, 3);
        size_t size = (h >> 1 & 3) == 1 ? 1 : h >> 3;   /* an RLE block stores one byte */
        b += 3 + size;
        if (h & 1)
            break;
    }
    *end = b + (fhd >> 2 & 1) * 4;   /* the checksum */
    return type;
}

/* A file's bytes as they are on disk (h_read_file decompresses). */
static unsigned char *disk_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *b = malloc(1 << 20);
    assert_non_null(b);
    *n = fread(b, 1, 1 << 20, f);
    assert_true(*n > 0 && *n < 1 << 20);
    fclose(f);
    return b;
}

/* Most short processes never pick a block: a sampled trace's start (its
 * header and maps) is written as a raw frame, and libzstd's context is
 * made only for what comes after it, compressed as in full mode. */
static void test_sampled_start_is_raw_and_the_picks_compressed(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    const char *env[] = { "ALLOCTRACE_COMPRESS=zstd", "ALLOCTRACE_SAMPLE=512k", SEED, NULL };
    char *sampled = trace(dir, "sampled.txt.zst", NULL, env);
    size_t n;
    unsigned char *f = disk_bytes(sampled, &n);
    const unsigned char *second, *end;
    assert_int_equal(first_block_type(f, &second), 0);
    h_has((const char *)f + 12, "sampling interval=524288, ");   /* readable: raw */
    assert_true(second < f + n);
    assert_int_equal(first_block_type(second, &end), 2);
    h_result r = pp("--format stats", sampled);
    assert_int_equal(r.status, 0);
    assert_int_equal(json_u64(r.out, "unknown_releases"), 0);
    assert_true(json_u64(r.out, "allocations") > 100);
    h_result_free(&r);
    free(f);
    free(sampled);
    h_cleanup();
}

/* Only releases of picked blocks are in the trace: each finds its
 * allocation, and the live blocks at the end are estimated too. */
static void test_only_sampled_blocks_are_released(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    const char *env[] = { "ALLOCTRACE_SAMPLE=32k", SEED, NULL };
    char *sampled = trace(dir, "sampled.txt", NULL, env);
    h_result s = pp("--format stats", sampled);
    assert_int_equal(s.status, 0);
    assert_int_equal(json_u64(s.out, "unknown_releases"), 0);
    assert_int_equal(json_u64(s.out, "lost_releases"), 0);
    h_has(s.out, "\"estimated\": true, \"sample_interval\": 32768, ");
    h_has(s.out, "\"temporary_allocations\": null");
    /* site_medium keeps 10000 blocks of ~2 KB: ~20 MB live at the end. */
    uint64_t leaked = json_u64(s.out, "leaked_bytes");
    assert_true(leaked > 17000000 && leaked < 23500000);
    h_result_free(&s);
    free(sampled);
    h_cleanup();
}

/* tests/programs/sample_layouts MODE traced with sampling at INTERVAL: its
 * stdout, after checking it ran clean and every release paired. */
static char *run_layouts(const char *dir, const char *mode, const char *interval,
                         h_result *stats)
{
    char *p = h_path("build/tests/programs/sample_layouts");
    char *path = h_fmt("%s/%s.txt", dir, mode), *env_sample = h_fmt("ALLOCTRACE_SAMPLE=%s", interval);
    const char *argv[] = { p, mode, NULL };
    const char *env[] = { env_sample, SEED, NULL };
    h_result r = h_trace(path, argv, env);
    if (r.status != 0)
        fail_msg("sample_layouts %s: status %d: %s", mode, r.status, r.err);
    *stats = pp("--format stats", path);
    assert_int_equal(stats->status, 0);
    assert_int_equal(json_u64(stats->out, "unknown_releases"), 0);
    assert_int_equal(json_u64(stats->out, "lost_releases"), 0);
    char *out = strdup(r.out);
    h_result_free(&r);
    free(env_sample);
    free(path);
    free(p);
    return out;
}

/* Picked blocks carry a header the program must never see: each
 * function's block keeps its size, alignment and contents (filled to its
 * malloc_usable_size, which glibc's free would catch overrunning), the
 * failures are glibc's, and every block is recorded and released. */
static void test_picked_blocks_of_every_function_are_the_programs(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    h_result s;
    char *out = run_layouts(dir, "all", "1", &s);
    unsigned blocks = 0;
    char how[16] = "";
    assert_int_equal(sscanf(out, "ok %u %15s", &blocks, how), 2);
    assert_int_equal(blocks, 14);   /* the last released by glibc's old cfree */
    assert_string_equal(how, "tagged");   /* glibc's allocator: the header is on */
    /* and stdout's buffer, allocated by the printf of the result */
    assert_int_equal(json_u64(s.out, "allocations"), blocks + 1);
    assert_int_equal(json_u64(s.out, "releases"), blocks);
    assert_int_equal(json_u64(s.out, "leaked_blocks"), 1);
    h_result_free(&s);
    free(out);
    h_cleanup();
}

/* Blocks go from picked to not and back through realloc (a copy each
 * time the header comes or goes): contents follow, releases pair. */
static void test_realloc_between_picked_and_unpicked_keeps_contents(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    h_result s;
    char *out = run_layouts(dir, "mix", "4k", &s);
    assert_string_equal(out, "ok\n");
    /* Nothing left but stdout's buffer, if it was picked. */
    assert_true(json_u64(s.out, "leaked_blocks") <= 1);
    /* Blocks of 1 to 4096 bytes at 4k: about two in five picked. */
    char *path = h_fmt("%s/mix.txt", dir);
    h_result r = pp("", path);
    free(path);
    size_t picked = 0;
    for (const char *l = r.out; (l = strstr(l, ") = 0x")); l++)
        picked++;
    assert_true(picked > 100000 && picked < 250000);
    h_result_free(&r);
    h_result_free(&s);
    free(out);
    h_cleanup();
}

/* Four threads, each its own countdown, one set of picked blocks: every
 * release finds its allocation, and the total is estimated as well. */
static void test_threads_share_the_picked_blocks(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *p = prog(), *path = h_fmt("%s/t.txt", dir);
    const char *argv[] = { p, "threads", "4", NULL };
    const char *env[] = { "ALLOCTRACE_SAMPLE=64k", SEED, NULL };
    h_result r = h_trace(path, argv, env);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    h_result s = pp("--format stats", path);
    assert_int_equal(s.status, 0);
    assert_int_equal(json_u64(s.out, "unknown_releases"), 0);
    assert_int_equal(json_u64(s.out, "lost_releases"), 0);
    /* Each thread: 146,155,096 bytes (the full trace of one run's sites,
     * its puts aside), less the 4096 of stdout's buffer: 4 x 146,071,000. */
    uint64_t bytes = json_u64(s.out, "allocated_bytes");
    printf("4 threads: %llu bytes estimated\n", (unsigned long long)bytes);
    assert_true(bytes > 0.9 * 4 * 146071000.0 && bytes < 1.1 * 4 * 146071000.0);
    assert_true(json_u64(s.out, "leaked_bytes") < 2000000);   /* all freed */
    h_result_free(&s);
    free(path);
    free(p);
    h_cleanup();
}

/* fork beside threads: the set's lock is held across it; each child writes
 * its own sampled trace and nobody hangs. */
static void test_fork_beside_threads(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *p = prog(), *path = h_fmt("%s/t.%%p.txt", dir);
    const char *argv[] = { p, "fork", NULL };
    const char *env[] = { "ALLOCTRACE_SAMPLE=16k", "ALLOCTRACE_COMPRESS=none", SEED, NULL };
    h_result r = h_trace(path, argv, env);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    r = h_sh("cat %s/t.*.txt | grep -c '^version=.*sampling interval=16384, '", dir);
    assert_int_equal(atoi(r.out), 21);
    h_result_free(&r);
    free(path);
    free(p);
    h_cleanup();
}

static void test_bad_sample_refused_before_the_program_runs(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *p = prog(), *launcher = h_path("scripts/alloctrace");
    const char *bad[] = { "0", "12q", "2T", "k", "-5" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *argv[] = { launcher, "--sample", bad[i], p, NULL };
        h_result r = h_run(argv, NULL, dir);
        assert_int_equal(r.status, 2);
        h_lacks(r.out, "done");   /* the program never ran */
        char *want = h_fmt("alloctrace: --sample %s: expected a size in bytes such as 524288, "
                           "512k or 2M (1 byte to 1T)\n", bad[i]);
        assert_string_equal(r.err, want);
        free(want);
        h_result_free(&r);
    }
    /* The tracer's own check, set by hand: one line, the program runs untraced. */
    const char *argv[] = { p, NULL };
    const char *env[] = { "ALLOCTRACE_SAMPLE=12q", NULL };
    char *path = h_fmt("%s/t.txt", dir);
    h_result r = h_trace(path, argv, env);
    assert_int_equal(r.status, 0);
    h_has(r.out, "done");
    assert_int_equal(h_count_lines(r.err, "^alloctrace: ALLOCTRACE_SAMPLE=12q: expected a size"), 1);
    assert_int_equal(access(path, F_OK), -1);
    h_result_free(&r);
    free(path);
    free(launcher);
    free(p);
    h_cleanup();
}

static void test_leak_gate_and_leaks_mode_refuse_sampling(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *p = prog(), *launcher = h_path("scripts/alloctrace");
    const char *check[] = { launcher, "--check", "--sample", "1M", "--", p, NULL };
    h_result r = h_run(check, NULL, dir);
    assert_int_equal(r.status, 2);
    h_lacks(r.out, "done");
    assert_string_equal(r.err, "alloctrace: --check with --sample: the leak gate counts every "
                               "block and stays exact; it cannot sample\n");
    h_result_free(&r);
    const char *leaks[] = { launcher, "-m", "leaks", "--sample", "1M", p, NULL };
    r = h_run(leaks, NULL, dir);
    assert_int_equal(r.status, 2);
    h_lacks(r.out, "done");
    assert_string_equal(r.err, "alloctrace: --sample with -m leaks: leaks mode counts every "
                               "block and stays exact; it cannot sample\n");
    h_result_free(&r);
    const char *env_check[] = { "ALLOCTRACE_SAMPLE=1M", NULL };
    const char *check2[] = { launcher, "--check", "--", p, NULL };
    r = h_run(check2, env_check, dir);
    assert_int_equal(r.status, 2);
    h_has(r.err, "ALLOCTRACE_SAMPLE=1M is set: the leak gate counts every block and stays exact");
    h_result_free(&r);
    /* The tracer by hand: leaks mode with a sampling interval runs untraced. */
    const char *argv[] = { p, NULL };
    const char *env[] = { "ALLOCTRACE_SAMPLE=1M", "ALLOCTRACE_MODE=leaks", NULL };
    char *path = h_fmt("%s/t.txt", dir);
    r = h_trace(path, argv, env);
    assert_int_equal(r.status, 0);
    h_has(r.err, "ALLOCTRACE_SAMPLE=1M: sampling is for full mode; leaks mode stays exact");
    assert_int_equal(access(path, F_OK), -1);
    h_result_free(&r);
    free(path);
    free(launcher);
    free(p);
    h_cleanup();
}

/* A snapshot of a sampled run is a sampled trace: its live blocks are
 * estimates, and its report says so. */
static void test_snapshot_of_a_sampled_run_is_estimated(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *p = prog(), *launcher = h_path("scripts/alloctrace");
    const char *argv[] = { launcher, "--sample", "16k", "--snapshot-signal", "USR1", "-o",
                           "s.trace", p, "snapshot", NULL };
    const char *env[] = { SEED, NULL };
    h_result r = h_run(argv, env, dir);
    assert_int_equal(r.status, 0);
    /* the trace named as -o gave it, as for a full run, and said sampled */
    h_has(r.err, "alloctrace: trace: s.trace (");
    h_has(r.err, "sampled: one in 16k bytes on average)");
    h_result_free(&r);
    char *snap = h_fmt("%s/s.trace.snap1.txt", dir);
    char *text = h_read_file(snap, NULL);
    assert_non_null(text);
    h_has(text, ", sampling interval=16384, ");
    h_result s = pp("--format stats", snap);
    assert_int_equal(s.status, 0);
    h_has(s.out, "\"estimated\": true");
    /* 10000 blocks of 1.5 to 2.5 KB live at the snapshot: ~20 MB. */
    uint64_t live = json_u64(s.out, "leaked_bytes");
    printf("live at the snapshot: %llu bytes estimated\n", (unsigned long long)live);
    assert_true(live > 17000000 && live < 23000000);
    h_result_free(&s);
    free(text);
    free(snap);
    free(launcher);
    free(p);
    h_cleanup();
}

/* The gate's judging, given a sampled trace by hand: nothing to judge. */
static void test_gate_does_not_judge_a_sampled_trace(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    const char *env[] = { "ALLOCTRACE_SAMPLE=64k", SEED, NULL };
    char *sampled = trace(dir, "sampled.txt", NULL, env);
    h_result r = pp("--gate", sampled);
    assert_int_equal(r.status, 3);
    h_has(r.out, "nothing trustworthy to judge: a sampled trace (alloctrace --sample): the gate "
                 "judges every block, never a sample");
    h_lacks(r.out, "site_medium");   /* no sampled block listed as a leak */
    h_result_free(&r);
    free(sampled);
    h_cleanup();
}

static void test_toggle_signal_switches_sampling_off_and_on(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    const char *env[] = { "ALLOCTRACE_SAMPLE=4k", "ALLOCTRACE_TOGGLE_SIGNAL=USR2", SEED, NULL };
    char *sampled = trace(dir, "toggled.txt", "toggle", env);
    h_result s = pp("-r --format folded", sampled);
    assert_int_equal(s.status, 0);
    assert_true(site_bytes(s.out, "site_small") > 0);
    assert_true(site_bytes(s.out, "site_calloc") > 0);
    assert_int_equal(site_bytes(s.out, "site_off"), 0);   /* 20 MB while off: none of it */
    h_result_free(&s);
    free(sampled);
    h_cleanup();
}

/* Each output of a sampled trace says its numbers are estimates. */
static void test_sampled_trace_through_every_output(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    const char *env[] = { "ALLOCTRACE_SAMPLE=64k", SEED, NULL };
    const char *full_env[] = { NULL };
    char *sampled = trace(dir, "sampled.txt", NULL, env);
    char *full = trace(dir, "full.txt", NULL, full_env);
    struct { const char *args, *says; int out; } outs[] = {
        { "-r --format report", "estimates:    every count and size below is estimated from a "
                                "sample, one in 65536 bytes on average", 1 },
        { "-r --format report", "temporary:    not estimated from a sampled trace", 1 },
        { "-r --format stats", "\"estimated\": true", 1 },
        { "-r --format html", "<p id=\"estimates\"><strong>Estimates:</strong>", 1 },
        { "-r --format flamegraph", "(bytes, estimated from a sample)", 1 },
        { "-r --format folded", "the costs are estimated from a sample", 0 },
        { "-r --format callgrind -o -", "desc: Estimates: every cost is estimated from a sample",
          1 },
        { "-r -l --format callgrind -o -", "desc: Estimates:", 1 },
    };
    for (size_t i = 0; i < sizeof outs / sizeof *outs; i++) {
        h_result r = pp(outs[i].args, sampled);
        assert_int_equal(r.status, 0);
        h_has(outs[i].out ? r.out : r.err, outs[i].says);
        h_result_free(&r);
    }
    char *wg = h_fmt("-r --format webgrind -o %s/cg.out", dir);
    h_result r = pp(wg, sampled);
    assert_int_equal(r.status, 0);
    char *cg = h_fmt("%s/cg.out.webgrind", dir);
    assert_int_equal(access(cg, F_OK), 0);
    h_result_free(&r);
    char *pb = h_fmt("-r --format pprof -o %s/s.pb.gz", dir);
    r = pp(pb, sampled);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    /* --diff: two sampled traces compare; a sampled and an exact one do not. */
    char *d = h_fmt("-r --diff %s", sampled);
    r = pp(d, sampled);
    assert_int_equal(r.status, 0);
    h_has(r.out, "estimates: both traces are sampled");
    h_result_free(&r);
    char *d2 = h_fmt("-r --diff %s", full);
    r = pp(d2, sampled);
    assert_int_equal(r.status, 2);
    h_has(r.err, "NEW is a sampled trace (--sample) and OLD is not: estimates and exact counts "
                 "are not compared");
    h_lacks(r.out, "allocations");
    h_result_free(&r);
    free(d);
    free(d2);
    free(pb);
    free(cg);
    free(wg);
    free(sampled);
    free(full);
    h_cleanup();
}

/* ---- a protobuf reader of our own, for profile.proto ------------------- */

typedef struct pb {
    const uint8_t *p, *end;
} pb;

static uint64_t varint(pb *b)
{
    uint64_t v = 0;
    for (int shift = 0; b->p < b->end && shift < 64; shift += 7) {
        uint8_t c = *b->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
    fail_msg("truncated varint");
    return 0;
}

/* The next field: its number, wire type, and for length-delimited ones
 * the bytes (else the value). 0 at the end. */
static int field(pb *b, int *wt, pb *sub, uint64_t *val)
{
    if (b->p >= b->end)
        return 0;
    uint64_t key = varint(b);
    *wt = (int)(key & 7);
    if (*wt == 0) {
        *val = varint(b);
    } else if (*wt == 2) {
        uint64_t n = varint(b);
        assert_true(n <= (uint64_t)(b->end - b->p));
        *sub = (pb){ b->p, b->p + n };
        b->p += n;
    } else {
        fail_msg("wire type %d not in profile.proto", *wt);
    }
    return (int)(key >> 3);
}

/* A repeated integer field, packed or not. */
static size_t ints(int wt, pb *sub, uint64_t val, uint64_t *out, size_t max)
{
    if (wt == 0) {
        out[0] = val;
        return 1;
    }
    size_t n = 0;
    while (sub->p < sub->end && n < max)
        out[n++] = varint(sub);
    return n;
}

typedef struct profile {
    char *strings[4096];
    size_t nstrings;
    int64_t type[4], total[4];
    size_t ntypes, nsamples, nlocations, lines_with_number;
    size_t inlined_locations;   /* locations of more than one line */
    uint64_t period, period_type;
    uint64_t fn_names[4096];   /* function id -> name's string index */
} profile;

static void read_profile(const uint8_t *data, size_t len, profile *pr)
{
    memset(pr, 0, sizeof *pr);
    pb b = { data, data + len }, sub;
    int wt, f;
    uint64_t v;
    while ((f = field(&b, &wt, &sub, &v)) != 0) {
        int wt2, f2;
        pb s2;
        uint64_t v2;
        if (f == 1) {   /* sample_type */
            while ((f2 = field(&sub, &wt2, &s2, &v2)) != 0)
                if (f2 == 1)
                    pr->type[pr->ntypes] = (int64_t)v2;
            pr->ntypes++;
        } else if (f == 2) {   /* sample */
            pr->nsamples++;
            while ((f2 = field(&sub, &wt2, &s2, &v2)) != 0)
                if (f2 == 2) {
                    uint64_t vals[8];
                    size_t n = ints(wt2, &s2, v2, vals, 8);
                    for (size_t i = 0; i < n && i < 4; i++)
                        pr->total[i] += (int64_t)vals[i];
                }
        } else if (f == 4) {   /* location: its lines */
            pr->nlocations++;
            size_t lines = 0;
            while ((f2 = field(&sub, &wt2, &s2, &v2)) != 0)
                if (f2 == 4 && ++lines) {
                    pb s3;
                    int wt3, f3;
                    uint64_t v3;
                    while ((f3 = field(&s2, &wt3, &s3, &v3)) != 0)
                        if (f3 == 2 && v3 > 0)
                            pr->lines_with_number++;
                }
            pr->inlined_locations += lines > 1;
        } else if (f == 5) {   /* function */
            uint64_t id = 0, name = 0;
            while ((f2 = field(&sub, &wt2, &s2, &v2)) != 0) {
                if (f2 == 1)
                    id = v2;
                else if (f2 == 2)
                    name = v2;
            }
            if (id < 4096)
                pr->fn_names[id] = name;
        } else if (f == 6 && pr->nstrings < 4096) {
            pr->strings[pr->nstrings++] = strndup((const char *)sub.p, (size_t)(sub.end - sub.p));
        } else if (f == 11) {
            while ((f2 = field(&sub, &wt2, &s2, &v2)) != 0)
                if (f2 == 1)
                    pr->period_type = v2;
        } else if (f == 12) {
            pr->period = v;
        }
    }
}

static bool has_function(const profile *pr, const char *name)
{
    for (size_t i = 1; i < 4096; i++)
        if (pr->fn_names[i] && pr->fn_names[i] < pr->nstrings &&
            strcmp(pr->strings[pr->fn_names[i]], name) == 0)
            return true;
    return false;
}

static void free_profile(profile *pr)
{
    for (size_t i = 0; i < pr->nstrings; i++)
        free(pr->strings[i]);
}

/* pprof of TRACE read back by our reader and by go tool pprof: the four
 * sample types, totals equal to --format stats, functions and lines. */
static void check_pprof(const char *dir, const char *trace_path, uint64_t period)
{
    char *gz = h_fmt("%s/p.pb.gz", dir), *raw = h_fmt("%s/p.pb", dir);
    char *args = h_fmt("-r --format pprof -o %s", gz);
    h_result r = pp(args, trace_path);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    r = pp("-r --format stats", trace_path);
    assert_int_equal(r.status, 0);
    int64_t want[4] = { (int64_t)json_u64(r.out, "allocations"),
                        (int64_t)json_u64(r.out, "allocated_bytes"),
                        /* in use at the end: the leaks and libc's caches */
                        (int64_t)(json_u64(r.out, "leaked_blocks") +
                                  json_u64(r.out, "cached_blocks")),
                        (int64_t)(json_u64(r.out, "leaked_bytes") +
                                  json_u64(r.out, "cached_bytes")) };
    h_result_free(&r);
    r = h_sh("gzip -dc %s > %s", gz, raw);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    size_t len;
    char *data = h_read_file(raw, &len);
    assert_non_null(data);
    static profile pr;
    read_profile((const uint8_t *)data, len, &pr);
    const char *types[4] = { "alloc_objects", "alloc_space", "inuse_objects", "inuse_space" };
    assert_int_equal(pr.ntypes, 4);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(pr.strings[pr.type[i]], types[i]);
        assert_int_equal(pr.total[i], want[i]);
    }
    assert_string_equal(pr.strings[pr.period_type], "space");
    assert_int_equal(pr.period, period);
    assert_true(has_function(&pr, "site_medium"));
    assert_true(has_function(&pr, "main"));
    assert_true(has_function(&pr, "malloc"));
    assert_true(pr.lines_with_number > 3);
    free_profile(&pr);
    free(data);
    /* go tool pprof, when installed */
    if (h_have("go")) {
        for (int i = 0; i < 4; i++) {
            r = h_sh("HOME=%s go tool pprof -top -unit=byte -sample_index=%s %s 2>&1", dir,
                     types[i], gz);
            assert_int_equal(r.status, 0);
            char *line = h_find_line(r.out, "Total samples = ");
            assert_non_null(line);
            long long total = atoll(strstr(line, "= ") + 2);
            assert_int_equal(total, want[i]);
            if (want[0])
                h_has(r.out, "site_");
            free(line);
            h_result_free(&r);
        }
    }
    free(args);
    free(raw);
    free(gz);
}

static void test_pprof_of_full_leaks_and_sampled_traces_reads_back(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    const char *full_env[] = { NULL };
    const char *leaks_env[] = { "ALLOCTRACE_MODE=leaks", NULL };
    const char *sample_env[] = { "ALLOCTRACE_SAMPLE=64k", SEED, NULL };
    char *full = trace(dir, "full.txt", NULL, full_env);
    char *leaks = trace(dir, "leaks.txt", NULL, leaks_env);
    char *sampled = trace(dir, "sampled.txt", NULL, sample_env);
    check_pprof(dir, full, 1);
    check_pprof(dir, leaks, 1);
    check_pprof(dir, sampled, 65536);
    free(full);
    free(leaks);
    free(sampled);
    h_cleanup();
}

/* A resolved frame with an inlined call (two frame lines at one address,
 * TEXT_FORMAT.md section 5) is one location of two lines. */
static void test_pprof_inlined_calls_are_lines_of_one_location(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *path = h_fmt("%s/inl.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("version=2.0, arch=x86_64, process=./s, pid=1, filter=resolve, \n"
          "<1> : memory (memory allocation in bytes)\n"
          ": /tmp/s => 0x1000-0x5000\n"
          "1. malloc(48) = 0x10\n"
          "\t0x1110 helper() at /tmp/s.c:4 [inlined]\n"
          "\t0x1110 main() at /tmp/s.c:10\n"
          "\t0x1200 __libc_start_main() from /lib/libc.so.6\n\n", f);
    fclose(f);
    char *gz = h_fmt("%s/inl.pb.gz", dir), *raw = h_fmt("%s/inl.pb", dir);
    char *args = h_fmt("--format pprof -o %s", gz);
    h_result r = pp(args, path);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    r = h_sh("gzip -dc %s > %s", gz, raw);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    size_t len;
    char *data = h_read_file(raw, &len);
    static profile pr;
    read_profile((const uint8_t *)data, len, &pr);
    assert_int_equal(pr.nlocations, 3);        /* malloc, 0x1110, 0x1200 */
    assert_int_equal(pr.inlined_locations, 1);
    assert_true(has_function(&pr, "helper"));
    assert_true(has_function(&pr, "main"));
    assert_int_equal(pr.lines_with_number, 2);   /* s.c:4 and s.c:10 */
    assert_int_equal(pr.total[1], 48);
    free_profile(&pr);
    free(data);
    free(args);
    free(raw);
    free(gz);
    free(path);
    h_cleanup();
}

static void test_pprof_refuses_a_terminal(void **state)
{
    (void)state;
    if (!h_have("script")) {
        skip();
        return;
    }
    char *dir = h_tmpdir(), *p = postproc();
    const char *env[] = { NULL };
    char *full = trace(dir, "full.txt", NULL, env);
    h_result r = h_sh("script -qec '%s --format pprof %s' /dev/null", p, full);
    assert_int_not_equal(r.status, 0);
    h_has(r.out, "--format pprof writes gzip'd protobuf, not for a terminal: give -o FILE.pb.gz");
    h_result_free(&r);
    free(full);
    free(p);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_header_says_the_interval_and_the_trace_is_small, h_teardown),
        cmocka_unit_test_teardown(test_sites_estimated_within_15_percent_of_full_mode, h_teardown),
        cmocka_unit_test_teardown(test_first_pick_unwinds_from_the_programs_frame, h_teardown),
        cmocka_unit_test_teardown(test_sampled_start_is_raw_and_the_picks_compressed, h_teardown),
        cmocka_unit_test_teardown(test_only_sampled_blocks_are_released, h_teardown),
        cmocka_unit_test_teardown(test_picked_blocks_of_every_function_are_the_programs, h_teardown),
        cmocka_unit_test_teardown(test_realloc_between_picked_and_unpicked_keeps_contents, h_teardown),
        cmocka_unit_test_teardown(test_threads_share_the_picked_blocks, h_teardown),
        cmocka_unit_test_teardown(test_fork_beside_threads, h_teardown),
        cmocka_unit_test_teardown(test_bad_sample_refused_before_the_program_runs, h_teardown),
        cmocka_unit_test_teardown(test_leak_gate_and_leaks_mode_refuse_sampling, h_teardown),
        cmocka_unit_test_teardown(test_gate_does_not_judge_a_sampled_trace, h_teardown),
        cmocka_unit_test_teardown(test_snapshot_of_a_sampled_run_is_estimated, h_teardown),
        cmocka_unit_test_teardown(test_toggle_signal_switches_sampling_off_and_on, h_teardown),
        cmocka_unit_test_teardown(test_sampled_trace_through_every_output, h_teardown),
        cmocka_unit_test_teardown(test_pprof_of_full_leaks_and_sampled_traces_reads_back,
                                  h_teardown),
        cmocka_unit_test_teardown(test_pprof_inlined_calls_are_lines_of_one_location, h_teardown),
        cmocka_unit_test_teardown(test_pprof_refuses_a_terminal, h_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
