/*
 * bench/export_gen.c: a resolved trace for bench/export: CALLS allocations
 * (never freed, so -l keeps them all as samples) over STACKS backtraces of
 * 4 to 20 frames, drawn from 2000 functions in 200 files, the first
 * stacks used most (as in real programs); one stack in ten recurses.
 * Deterministic.
 *
 *   export_gen CALLS STACKS > trace
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state = 7;

static uint64_t rnd(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "--help") == 0) {
        fputs("usage: export_gen CALLS STACKS > trace\n", argc == 3 ? stdout : stderr);
        return argc == 3 ? 0 : 2;
    }
    unsigned long calls = strtoul(argv[1], NULL, 10), nstacks = strtoul(argv[2], NULL, 10);
    if (!calls || !nstacks) {
        fputs("export_gen: CALLS and STACKS must be positive\n", stderr);
        return 2;
    }
    char **stacks = calloc(nstacks, sizeof *stacks);
    for (unsigned long s = 0; s < nstacks; s++) {
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        unsigned depth = 4 + (unsigned)(rnd() % 17);
        unsigned recurse = s % 10 == 0 ? 1 + (unsigned)(rnd() % (depth - 2)) : 0;
        unsigned f = (unsigned)(rnd() % 2000);
        for (unsigned i = 0; i < depth; i++) {
            if (!recurse || i < recurse || i > recurse + 2)
                f = i + 1 == depth ? 0 : (unsigned)(rnd() % 2000);
            fprintf(m, "\t0x%llx fn%u() at /src/mod%u/file%u.c:%u\n",
                    0x400000ull + f * 0x100 + i, f, f % 7, f % 200, 10 + (unsigned)(rnd() % 500));
        }
        fclose(m);
        stacks[s] = text;
    }
    printf("version=2.0, arch=x86_64, timestamp=2026.11.22 10:00:00, process=bench, pid=1, "
           "filter=resolve, origin=alloctrace 0.1.0, \n<1> : memory (memory allocation in bytes)\n"
           ": /usr/bin/bench => 0x400000-0x600000\n");
    static const char *const fns[] = { "malloc", "calloc", "realloc", "malloc" };
    for (unsigned long c = 0; c < calls; c++) {
        uint64_t r = rnd();
        unsigned long s = (r % 4 ? r % (nstacks / 8 + 1) : r % nstacks);
        printf("%lu. %s(%llu) = 0x%lx\n%s\n", c + 1, fns[(r >> 20) % 4],
               (unsigned long long)(16 + (r >> 32) % 4096), 0x10000000ul + c * 16, stacks[s]);
    }
    return 0;
}
