/*
 * tests/programs/tracer_leak_order.c: leaks N + N blocks whose addresses
 * are far from their allocation order, for leaks mode's sort at exit
 * (preload/leaks/leakreport.c). 2N blocks of 40 bytes are allocated and
 * every other one freed; N more of the same size then reuse the freed
 * chunks, which glibc hands back last freed first: in address order
 * their allocation order runs backwards, so the blocks by address make
 * about N ascending runs of keys (up to 256 are merged, more go to the
 * radix sort). Prints every block still live, one "live ADDRESS" line
 * each, in allocation order, without stdio (its buffer would be a block).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_N 4096

static void *first[2 * MAX_N], *second[MAX_N];
static char out[3 * MAX_N * 32];

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    if (n < 1 || n > MAX_N)
        return 2;
    for (int i = 0; i < 2 * n; i++)
        first[i] = malloc(40);
    for (int i = 0; i < 2 * n; i += 2) {
        free(first[i]);
        first[i] = NULL;
    }
    for (int i = 0; i < n; i++)
        second[i] = malloc(40);
    size_t len = 0;
    for (int i = 1; i < 2 * n; i += 2)
        len += (size_t)snprintf(out + len, sizeof out - len, "live %p\n", first[i]);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(out + len, sizeof out - len, "live %p\n", second[i]);
    return write(1, out, len) == (ssize_t)len ? 0 : 1;
}
