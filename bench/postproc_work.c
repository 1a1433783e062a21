/*
 * bench/postproc_work.c: the allocation workload bench/postproc traces with
 * both alloctrace and heaptrack, so that alloctrace-postproc -lc and
 * heaptrack_print are timed per event on the same program.
 *
 * Each allocation goes through LEVELS levels (default 3) of four distinct
 * functions chosen by the bits of a pseudo-random number: up to 4^LEVELS
 * distinct call stacks, used with a skew as in real programs. About 5% of
 * the blocks are never freed; a few thousand are live at any time.
 * (heaptrack 1.4's interpreter aborts with std::bad_alloc after some 40000
 * allocations from 256 or more distinct stacks here, hence the default.)
 *
 *   postproc_work EVENTS [LEVELS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *level(unsigned depth, uint64_t path, size_t size);

#define LEVEL_FN(n)                                                                \
    __attribute__((noinline)) static void *f##n(unsigned depth, uint64_t path,     \
                                                size_t size)                       \
    {                                                                              \
        void *p = level(depth - 1, path >> 2, size);                               \
        __asm__ volatile("" ::: "memory"); /* no tail call: keep this frame */     \
        return p;                                                                  \
    }
LEVEL_FN(0)
LEVEL_FN(1)
LEVEL_FN(2)
LEVEL_FN(3)

__attribute__((noinline)) static void *level(unsigned depth, uint64_t path, size_t size)
{
    if (depth == 0)
        return malloc(size);
    switch (path & 3) {
    case 0:
        return f0(depth, path, size);
    case 1:
        return f1(depth, path, size);
    case 2:
        return f2(depth, path, size);
    default:
        return f3(depth, path, size);
    }
}

static uint64_t state = 42;

static uint64_t rnd(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || strcmp(argv[1], "--help") == 0) {
        fputs("usage: postproc_work EVENTS [LEVELS]\n", argc == 2 ? stdout : stderr);
        return argc == 2 ? 0 : 2;
    }
    long events = strtol(argv[1], NULL, 10);
    unsigned levels = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 3;
    if (levels < 1 || levels > 16) {
        fputs("postproc_work: LEVELS from 1 to 16\n", stderr);
        return 2;
    }
    enum { LIVE = 4096 };
    static void *live[LIVE];
    int nlive = 0;
    for (long e = 0; e < events; e++) {
        uint64_t r = rnd();
        if (nlive == LIVE || (nlive > 64 && r % 100 < 47)) {
            int k = (int)((r >> 8) % (uint64_t)nlive);
            void *p = live[k];
            live[k] = live[--nlive];
            if ((r >> 40) % 100 >= 5)
                free(p);
            continue;
        }
        uint64_t path = ((r >> 8) & 0xfff) * ((r >> 20) & 0xfff) >> 12; /* skewed */
        live[nlive++] = level(levels, path, 8 + (r >> 32) % 512);
    }
    return 0;
}
