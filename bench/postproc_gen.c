/*
 * bench/postproc_gen.c: writes a synthetic trace of about SIZE megabytes in
 * the tracer's own form, for bench/postproc. Allocations come from a pool
 * of STACKS backtraces (6 to 24 frames over five modules, the common ones
 * used most, as in real programs), releases carry no backtrace (the
 * tracer's default), about 5% of the blocks are never freed, and a few
 * thousand stay live at any time. Deterministic for a given seed. Prints
 * the number of call records on stderr.
 *
 *   postproc_gen SIZE_MB [STACKS] [SEED] > trace
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc < 2 ? stderr : stdout, "usage: postproc_gen SIZE_MB [STACKS] [SEED]\n");
        return argc < 2 ? 2 : 0;
    }
    uint64_t target = strtoull(argv[1], NULL, 10) << 20;
    unsigned nstacks = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 5000;
    rng_state = argc > 3 ? strtoull(argv[3], NULL, 10) : 42;
    if (!target || !nstacks) {
        fputs("postproc_gen: SIZE_MB and STACKS must be positive\n", stderr);
        return 2;
    }
    static char obuf[1 << 20];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);

    static const char *mods[] = { "/usr/bin/server", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                                  "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
                                  "/usr/lib/libapp core.so", "/usr/lib/libxml2.so.2" };
    uint64_t bases[5];
    uint64_t written = 0;
    written += (uint64_t)printf("version=2.0, arch=x86_64, timestamp=2026.11.22 10:00:00, "
                                "process=/usr/bin/server, pid=4242, backtrace depth=32, "
                                "origin=alloctrace 0.1.0, \n"
                                "<1> : memory (memory allocation in bytes)\n");
    for (int m = 0; m < 5; m++) {
        bases[m] = m == 0 ? 0x55d0c2f00000ull : 0x7f3a12000000ull + (uint64_t)m * 0x1000000;
        written += (uint64_t)printf(": %s => 0x%llx-0x%llx\n", mods[m],
                                    (unsigned long long)bases[m],
                                    (unsigned long long)(bases[m] + 0x400000));
    }

    /* the stack pool: frame 0 in the program or a library, outer frames
     * shared more and more (main, start) like real call trees */
    uint64_t (*stacks)[24] = malloc(sizeof *stacks * nstacks);
    int *depth = malloc(sizeof *depth * nstacks);
    for (unsigned s = 0; s < nstacks; s++) {
        depth[s] = 6 + (int)(rnd() % 19);
        for (int f = 0; f < depth[s]; f++) {
            int m = (int)(rnd() % 5);
            uint64_t off = f >= depth[s] - 3 ? 0x1000 + (uint64_t)f * 0x40
                                             : (rnd() % 0x3fff00) + 1;
            stacks[s][f] = bases[m] + off;
        }
    }

    enum { LIVE_MAX = 4096 };
    uint64_t live[LIVE_MAX];
    int nlive = 0;
    uint64_t next_id = 0x55d0c3a00000ull, index = 0, us = 10ull * 3600 * 1000000;
    while (written < target) {
        us += 1 + rnd() % 50;
        uint64_t t = us % (24ull * 3600 * 1000000);
        char ts[32];
        snprintf(ts, sizeof ts, "[%02u:%02u:%02u.%06u]", (unsigned)(t / 3600000000ull),
                 (unsigned)(t / 60000000 % 60), (unsigned)(t / 1000000 % 60),
                 (unsigned)(t % 1000000));
        uint64_t r = rnd();
        if (nlive == LIVE_MAX || (nlive > 64 && r % 100 < 47)) {
            /* release a random live block; 5% of them are "forgotten" */
            int k = (int)((r >> 8) % (uint64_t)nlive);
            uint64_t id = live[k];
            live[k] = live[--nlive];
            if ((r >> 40) % 100 < 5)
                continue;
            written += (uint64_t)printf("%llu. %s free(0x%llx)\n\n", (unsigned long long)++index,
                                        ts, (unsigned long long)id);
            continue;
        }
        /* Zipf-ish: low stack numbers are used far more often */
        unsigned s = (unsigned)(((r >> 8) % nstacks) * ((r >> 24) % nstacks) / nstacks);
        uint64_t size = 8 + (r >> 32) % 512;
        uint64_t id = next_id;
        next_id += (size + 31) & ~15ull;
        live[nlive++] = id;
        written += (uint64_t)printf("%llu. %s malloc(%llu) = 0x%llx\n", (unsigned long long)++index,
                                    ts, (unsigned long long)size, (unsigned long long)id);
        for (int f = 0; f < depth[s]; f++)
            written += (uint64_t)printf("\t0x%llx\n", (unsigned long long)stacks[s][f]);
        written += (uint64_t)printf("\n");
    }
    fflush(stdout);
    fprintf(stderr, "%llu\n", (unsigned long long)index);
    free(stacks);
    free(depth);
    return 0;
}
