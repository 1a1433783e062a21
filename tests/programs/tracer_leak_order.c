/*
 * tests/programs/tracer_leak_order.c N [KEEP]: leaks blocks whose addresses
 * are far from their allocation order, for leaks mode's sort at exit
 * (preload/leaks/leakreport.c), and with enough of them (KEEP) for the
 * report's helper threads. First KEEP blocks of 56 bytes, in address
 * order (one ascending run of keys). Then 2N blocks of 40 bytes, every
 * other one freed; N more of 40 then reuse the freed chunks, which glibc
 * hands back last freed first: in address order their allocation order
 * runs backwards, so the blocks make about N ascending runs of keys (up
 * to 256 are merged, more go to the radix sort). All of these stay
 * reachable (static arrays point at them). Last, LOST blocks of 24 bytes
 * whose addresses are kept only as text: definitely lost.
 * Prints "live ADDRESS" for every reachable block, in allocation order,
 * then "lost ADDRESS" lines, without stdio (its buffer would be a block).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_N 4096
#define MAX_KEEP 65536
#define LOST 8

static void *first[2 * MAX_N], *second[MAX_N], *kept[MAX_KEEP];
static char out[(3 * MAX_N + MAX_KEEP + LOST) * 32];
static size_t len;

/* The block's address as text only: no word of memory keeps it. */
static __attribute__((noinline)) void lose(void)
{
    volatile uintptr_t p = (uintptr_t)malloc(24);
    len += (size_t)snprintf(out + len, sizeof out - len, "lost 0x%lx\n", (unsigned long)p);
    p = 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100, keep = argc > 2 ? atoi(argv[2]) : 0;
    if (n < 1 || n > MAX_N || keep < 0 || keep > MAX_KEEP)
        return 2;
    for (int i = 0; i < keep; i++)
        kept[i] = malloc(56);
    for (int i = 0; i < 2 * n; i++)
        first[i] = malloc(40);
    for (int i = 0; i < 2 * n; i += 2) {
        free(first[i]);
        first[i] = NULL;
    }
    for (int i = 0; i < n; i++)
        second[i] = malloc(40);
    for (int i = 0; i < keep; i++)
        len += (size_t)snprintf(out + len, sizeof out - len, "live %p\n", kept[i]);
    for (int i = 1; i < 2 * n; i += 2)
        len += (size_t)snprintf(out + len, sizeof out - len, "live %p\n", first[i]);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(out + len, sizeof out - len, "live %p\n", second[i]);
    for (int i = 0; i < LOST; i++)
        lose();
    return write(1, out, len) == (ssize_t)len ? 0 : 1;
}
