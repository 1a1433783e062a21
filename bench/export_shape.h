/*
 * bench/export_shape.h: the allocations both export benchmarks are made of,
 * so that export_gen's trace and export_time's in-process samples are the
 * same by construction: STACKS backtraces of 4 to 20 frames drawn from 2000
 * functions in 200 files (one stack in ten recursing), and calls drawn
 * mostly from the first eighth of the stacks, as in real programs.
 * Deterministic: a fixed splitmix64 sequence, consumed in the same order.
 */
#ifndef BENCH_EXPORT_SHAPE_H
#define BENCH_EXPORT_SHAPE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHAPE_MAX_DEPTH 20

static uint64_t shape_state = 7;

static uint64_t rnd(void)
{
    uint64_t z = (shape_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct shape_frame {
    uint64_t addr;
    unsigned fn, module, file, line;
};

/* Draws stack number `s` into f[SHAPE_MAX_DEPTH]; returns its depth. */
static unsigned shape_stack(unsigned long s, struct shape_frame *f)
{
    unsigned depth = 4 + (unsigned)(rnd() % 17);
    unsigned recurse = s % 10 == 0 ? 1 + (unsigned)(rnd() % (depth - 2)) : 0;
    unsigned fn = (unsigned)(rnd() % 2000);
    for (unsigned i = 0; i < depth; i++) {
        if (!recurse || i < recurse || i > recurse + 2)
            fn = i + 1 == depth ? 0 : (unsigned)(rnd() % 2000);
        f[i] = (struct shape_frame){ 0x400000ull + fn * 0x100 + i, fn, fn % 7, fn % 200,
                                     10 + (unsigned)(rnd() % 500) };
    }
    return depth;
}

struct shape_call {
    unsigned long stack;
    const char *fn;
    uint64_t size;
};

/* Draws the next call over `nstacks` stacks. */
static struct shape_call shape_call(unsigned long nstacks)
{
    static const char *const fns[] = { "malloc", "calloc", "realloc", "malloc" };
    uint64_t r = rnd();
    return (struct shape_call){ r % 4 ? r % (nstacks / 8 + 1) : r % nstacks, fns[(r >> 20) % 4],
                                16 + (r >> 32) % 4096 };
}

/* The arguments of every program here: "NAME COUNT STACKS", both
 * positive, with `usage` ("usage: NAME COUNT STACKS") for --help and
 * mistakes. Returns -1 when they are good, else the exit status. */
static inline int shape_args(int argc, char **argv, const char *usage, unsigned long *count,
                             unsigned long *nstacks)
{
    if (argc != 3 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc == 3 ? stdout : stderr, "%s\n", usage);
        return argc == 3 ? 0 : 2;
    }
    *count = strtoul(argv[1], NULL, 10);
    *nstacks = strtoul(argv[2], NULL, 10);
    if (!*count || !*nstacks) {
        fprintf(stderr, "%s: both numbers must be positive\n", argv[0]);
        return 2;
    }
    return -1;
}

/* The header, registry and map lines the generated traces start with. */
static inline void shape_trace_header(void)
{
    printf("version=2.0, arch=x86_64, timestamp=2026.11.22 10:00:00, process=bench, pid=1, "
           "filter=resolve, origin=alloctrace 0.1.0, \n<1> : memory (memory allocation in bytes)\n"
           ": /usr/bin/bench => 0x400000-0x600000\n");
}

/* Stack number `s` as a trace writes it: "\t0xADDR fnN() at FILE:LINE\n"
 * per frame, innermost first. Returns a malloc'ed string. */
static inline char *shape_stack_text(unsigned long s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    struct shape_frame f[SHAPE_MAX_DEPTH];
    unsigned depth = shape_stack(s, f);
    for (unsigned i = 0; i < depth; i++)
        fprintf(m, "\t0x%llx fn%u() at /src/mod%u/file%u.c:%u\n", (unsigned long long)f[i].addr,
                f[i].fn, f[i].module, f[i].file, f[i].line);
    fclose(m);
    return text;
}

/* The texts of stacks 0 .. nstacks-1 (shape_stack_text), in a malloc'ed
 * array. */
static inline char **shape_stack_texts(unsigned long nstacks)
{
    char **stacks = calloc(nstacks, sizeof *stacks);
    for (unsigned long s = 0; s < nstacks; s++)
        stacks[s] = shape_stack_text(s);
    return stacks;
}

#endif
