/*
 * bench/filter_bench.c: the callstack filters' speed (issue 5). Three jobs,
 * used by bench/filter:
 *
 *   filter_bench --trace CALLS STACKS   a synthetic resolved trace on stdout:
 *                                       CALLS allocations over STACKS stacks
 *                                       (6 to 20 frames over 1200 call sites),
 *                                       95% freed again
 *   filter_bench --filters N            N named filters of every kind on stdout
 *   filter_bench --micro FILTERS CALLS STACKS
 *                                       the matcher alone: time per distinct
 *                                       stack (first sight: every filter's
 *                                       list part) and per allocation (cached)
 *
 * The stacks and filters are deterministic (a fixed seed), built from the
 * same pools, so some filters match some stacks and most match none, as
 * with a real suppression file.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "filter.h"

static uint64_t rng = 42;

static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define NFUNCS 400
#define NDIRS 12
#define LIBXML "/usr/lib/x86_64-linux-gnu/libxml2.so.2"
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"

/* The text of frame j (innermost first) of a stack of depth n. */
static void frame_text(char *buf, size_t len, unsigned j, unsigned n, uint64_t *addr)
{
    if (j == n - 1) {
        snprintf(buf, len, "__libc_start_call_main() from " LIBC);
        *addr = 0x7f3a1202a1caull;
        return;
    }
    if (j == n - 2) {
        unsigned site = (unsigned)(rnd() % 30);
        snprintf(buf, len, "main() at /home/u/app/src/main.c:%u", 20 + site);
        *addr = 0x555500001000ull + site * 0x8;
        return;
    }
    if (rnd() % 10 == 0) {
        unsigned x = (unsigned)(rnd() % 50);
        snprintf(buf, len, "xml_fn_%u() from " LIBXML, x);
        *addr = 0x7f3a13000000ull + x * 0x1000;
        return;
    }
    /* A function calls on at one of its three call sites: a program has
     * far fewer distinct frames than its stacks have frames. */
    unsigned f = (unsigned)(rnd() % NFUNCS), site = (unsigned)(rnd() % 3);
    snprintf(buf, len, "fn_%u() at /home/u/app/src/dir%u/file%u.c:%u", f, f % NDIRS, f % 97,
             1 + (f * 37 + site * 101) % 2000);
    *addr = 0x555500002000ull + f * 0x100 + site * 0x10;
}

/* STACKS stacks, each frames[] with texts, innermost first. */
typedef struct synth {
    at_frame *frames;
    unsigned *depth, *start;
    char *texts;
} synth;

static synth make_stacks(unsigned nstacks)
{
    synth s = { .depth = malloc(nstacks * sizeof *s.depth), .start = malloc(nstacks * sizeof *s.start) };
    size_t total = 0;
    for (unsigned i = 0; i < nstacks; i++) {
        s.depth[i] = 6 + (unsigned)(rnd() % 15);
        s.start[i] = (unsigned)total;
        total += s.depth[i];
    }
    s.frames = malloc(total * sizeof *s.frames);
    s.texts = malloc(total * 128);
    for (unsigned i = 0; i < nstacks; i++)
        for (unsigned j = 0; j < s.depth[i]; j++) {
            size_t k = s.start[i] + j;
            frame_text(s.texts + k * 128, 128, j, s.depth[i], &s.frames[k].addr);
            s.frames[k].text = s.texts + k * 128;
        }
    return s;
}

static uint64_t alloc_size(void)
{
    uint64_t r = rnd() % 100;
    return r < 70 ? 8 + rnd() % 120 : r < 95 ? 128 + rnd() % 4000 : 4096 + rnd() % 100000;
}

static int write_trace(unsigned long calls, unsigned nstacks)
{
    static char obuf[1 << 20];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    synth s = make_stacks(nstacks);
    printf("version=2.0, arch=x86_64, timestamp=2026.11.22 10:00:00, process=/home/u/app/server, "
           "pid=4242, filter=resolve, backtrace depth=32, origin=alloctrace 0.1.0, \n"
           "<1> : memory (memory allocation in bytes)\n"
           ": /home/u/app/server => 0x555500000000-0x555500400000\n"
           ": " LIBC " => 0x7f3a12000000-0x7f3a12400000\n"
           ": " LIBXML " => 0x7f3a13000000-0x7f3a13400000\n");
    /* A ring of live blocks: each new one frees the block allocated 4096
     * calls earlier, unless that one leaks (5%). */
    enum { RING = 4096 };
    static uint64_t ring[RING];
    unsigned long index = 1;
    for (unsigned long i = 0; i < calls; i++) {
        uint64_t id = 0x10000 + (uint64_t)i * 16;
        uint64_t old = ring[i % RING];
        if (old && rnd() % 20 != 0)
            printf("%lu. free(0x%" PRIx64 ")\n\n", index++, old);
        ring[i % RING] = id;
        unsigned st = (unsigned)(rnd() % 8 ? rnd() % (nstacks / 10 + 1) : rnd() % nstacks);
        printf("%lu. malloc(%" PRIu64 ") = 0x%" PRIx64 "\n", index++, alloc_size(), id);
        for (unsigned j = 0; j < s.depth[st]; j++) {
            const at_frame *f = &s.frames[s.start[st] + j];
            printf("\t0x%" PRIx64 " %s\n", f->addr, f->text);
        }
        putchar('\n');
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static int write_filters(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        unsigned f = (unsigned)(rnd() % NFUNCS), g = (unsigned)(rnd() % NFUNCS);
        unsigned lo = 1 + (unsigned)(rnd() % 1500);
        printf("f%u: ", i);
        switch (i % 6) {
        case 0:
            printf("functions contains [ ... fn_%u ... ] && size > %u\n", f, (unsigned)(rnd() % 5000));
            break;
        case 1:
            printf("callstack contains [ ... dir%u/ : _ ... file%u.c : [%u, %u] ]\n", f % NDIRS, g % 97, lo,
                   lo + 200);
            break;
        case 2:
            printf("string contains [ ... #\"file%u\\.c$\"# ... ]\n", f % 97);
            break;
        case 3:
            printf("modules contains [ ... libxml2.so.2 ... ] && size in [%uk, %uk]\n", f % 4, f % 4 + 2);
            break;
        case 4:
            printf("functions contains [ ... main ... fn_%u fn_%u ... ]\n", f, g);
            break;
        default:
            printf("functions excludes [ ... #\"^fn_%u$\"# ... ] && size = %u\n", f, (unsigned)(rnd() % 200));
            break;
        }
    }
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int micro(const char *filters, unsigned long calls, unsigned nstacks)
{
    at_filter_set *set = at_filter_set_new();
    at_filter_error err;
    if (at_filter_set_add_file(set, filters, &err) != 0) {
        at_filter_error_print(stderr, &err, false);
        return 2;
    }
    synth s = make_stacks(nstacks);
    at_stack_table *t = at_stacks_new();
    const at_stack **stacks = malloc(nstacks * sizeof *stacks);
    for (unsigned i = 0; i < nstacks; i++)
        stacks[i] = at_stacks_intern(t, &s.frames[s.start[i]], s.depth[i]);

    double t0 = now();
    unsigned long matched = 0;
    for (unsigned i = 0; i < nstacks; i++)
        matched += at_filter_set_first_match_stack(set, stacks[i], NULL, t, 64) >= 0;
    double t1 = now();
    unsigned long kept = 0;
    for (unsigned long i = 0; i < calls; i++) {
        unsigned st = (unsigned)(rnd() % nstacks);
        kept += at_filter_set_first_match_stack(set, stacks[st], NULL, t, alloc_size()) >= 0;
    }
    double t2 = now();
    printf("filters: %zu, distinct stacks: %u (%lu matched by some filter)\n", at_filter_set_count(set),
           nstacks, matched);
    printf("first sight of a stack (all %zu filters' lists): %.2f us per stack\n", at_filter_set_count(set),
           (t1 - t0) * 1e6 / nstacks);
    printf("allocations: %lu (%lu matched), %.1f ns per allocation (cached lists, size checks)\n", calls,
           kept, (t2 - t1) * 1e9 / (double)calls);
    at_filter_set_free(set);
    at_stacks_free(t);
    free(stacks);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "--trace") == 0)
        return write_trace(strtoul(argv[2], NULL, 10), (unsigned)strtoul(argv[3], NULL, 10));
    if (argc >= 3 && strcmp(argv[1], "--filters") == 0)
        return write_filters((unsigned)strtoul(argv[2], NULL, 10));
    if (argc >= 5 && strcmp(argv[1], "--micro") == 0)
        return micro(argv[2], strtoul(argv[3], NULL, 10), (unsigned)strtoul(argv[4], NULL, 10));
    FILE *out = argc > 1 && strcmp(argv[1], "--help") == 0 ? stdout : stderr;
    fputs("usage: filter_bench --trace CALLS STACKS | --filters N | --micro FILTERS CALLS STACKS\n", out);
    return out == stdout ? 0 : 2;
}
