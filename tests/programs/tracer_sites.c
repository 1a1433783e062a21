/*
 * tests/programs/tracer_sites.c: 512 call sites (2^LEVELS; LEVELS is the
 * argument, 9 by default) that differ only in the middle of their stacks.
 * Path BITS goes down LEVELS levels, through
 * left() for a 0 bit and right() for a 1 (lowest bit first), and
 * allocates 1000 + BITS bytes at the bottom; every path runs ROUNDS times,
 * the paths interleaved, and nothing is freed. Prints "left ADDR",
 * "right ADDR" and "end ADDR" (left, right and end_marker are laid out in
 * that order, so a return address in left() lies in [left, right)).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ROUNDS 3

static int levels = 9;

static void *volatile sink;

__attribute__((noinline)) static void *step(int bits, int level);

__attribute__((noinline)) void *left(int bits, int level)
{
    void *p = step(bits, level + 1);
    sink = p;
    return p;
}

__attribute__((noinline)) void *right(int bits, int level)
{
    void *p = step(bits, level + 1);
    sink = p;
    return p;
}

__attribute__((noinline)) void end_marker(void)
{
    sink = NULL;
}

__attribute__((noinline)) static void *step(int bits, int level)
{
    if (level == levels)
        return malloc(1000 + (size_t)bits);
    return (bits >> level) & 1 ? right(bits, level) : left(bits, level);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        levels = atoi(argv[1]);
    if (levels < 1 || levels > 14)
        return 2;
    for (int r = 0; r < ROUNDS; r++)
        for (int bits = 0; bits < 1 << levels; bits++)
            step(bits, 0);
    char out[128];
    int n = snprintf(out, sizeof out, "left %p\nright %p\nend %p\n", (void *)(uintptr_t)left,
                     (void *)(uintptr_t)right, (void *)(uintptr_t)end_marker);
    return write(1, out, (size_t)n) == n ? 0 : 1;
}
