/*
 * bench/export_time.c: the exports alone, in process, for bench/export:
 * SAMPLES samples over STACKS interned stacks shaped like export_gen's
 * (4 to 20 resolved frames from 2000 functions, one stack in ten
 * recursing), then the profile is built and every format written to
 * /dev/null. Prints one line per step: "NAME SECONDS".
 *
 *   export_time SAMPLES STACKS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export.h"

static uint64_t state = 7;

static uint64_t rnd(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fputs("usage: export_time SAMPLES STACKS\n", stderr);
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 10), nstacks = strtoul(argv[2], NULL, 10);
    if (!n || !nstacks) {
        fputs("export_time: SAMPLES and STACKS must be positive\n", stderr);
        return 2;
    }
    at_stack_table *t = at_stacks_new();
    const at_stack **stacks = calloc(nstacks, sizeof *stacks);
    for (size_t s = 0; s < nstacks; s++) {
        at_frame frames[20];
        char texts[20][96];
        unsigned depth = 4 + (unsigned)(rnd() % 17);
        unsigned recurse = s % 10 == 0 ? 1 + (unsigned)(rnd() % (depth - 2)) : 0;
        unsigned f = (unsigned)(rnd() % 2000);
        for (unsigned i = 0; i < depth; i++) {
            if (!recurse || i < recurse || i > recurse + 2)
                f = i + 1 == depth ? 0 : (unsigned)(rnd() % 2000);
            snprintf(texts[i], sizeof texts[i], "fn%u() at /src/mod%u/file%u.c:%u", f, f % 7,
                     f % 200, 10 + (unsigned)(rnd() % 500));
            frames[i] = (at_frame){ 0x400000ull + f * 0x100 + i, texts[i] };
        }
        stacks[s] = at_stacks_intern(t, frames, depth);
    }
    at_sample *samples = calloc(n, sizeof *samples);
    static const char *const fns[] = { "malloc", "calloc", "realloc", "malloc" };
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        size_t s = r % 4 ? r % (nstacks / 8 + 1) : r % nstacks;
        samples[i] = (at_sample){ stacks[s], fns[(r >> 20) % 4], 16 + (r >> 32) % 4096, 1 };
    }
    FILE *null = fopen("/dev/null", "w");
    at_export_meta meta = { "bench", "1", NULL, true };
    double t0 = now();
    at_profile *p = at_profile_build(samples, n, NULL, t);
    double t1 = now();
    at_export_callgrind(null, p, &meta);
    double t2 = now();
    at_export_webgrind(null, p, &meta);
    double t3 = now();
    at_export_folded(null, p, AT_COST_BYTES);
    double t4 = now();
    at_export_report(null, NULL, p, &meta, 10, NULL, t);
    double t5 = now();
    printf("profile %.3f\ncallgrind %.3f\nwebgrind %.3f\nfolded %.3f\nreport %.3f\n", t1 - t0,
           t2 - t1, t3 - t2, t4 - t3, t5 - t4);
    at_profile_free(p);
    fclose(null);
    free(samples);
    free(stacks);
    at_stacks_free(t);
    return 0;
}
