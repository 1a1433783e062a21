/*
 * tests/programs/postproc_sites.c: allocations with known sites for the
 * post-processor's end-to-end tests. It leaks exactly six blocks from three
 * sites, each site always reached through the same call chain:
 *   leak_three: 3 x malloc(100)       (one backtrace: called in a loop)
 *   leak_big:   1 x malloc(2000)
 *   leak_pair:  2 x calloc(4, 25)     (one backtrace)
 * and frees everything else (50 short-lived blocks from one site, a
 * realloc chain). It prints each leaked block as "leak SIZE ADDRESS" with
 * write(2), not stdio, whose buffer would be one more leak.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void report(size_t size, void *p)
{
    char line[64];
    int n = snprintf(line, sizeof line, "leak %zu %p\n", size, p);
    if (write(1, line, (size_t)n) != n)
        exit(1);
}

__attribute__((noinline)) static void *leak_three(void) { return malloc(100); }
__attribute__((noinline)) static void *leak_big(void) { return malloc(2000); }
__attribute__((noinline)) static void *leak_pair(void) { return calloc(4, 25); }
__attribute__((noinline)) static void *short_lived(void) { return malloc(64); }

__attribute__((noinline)) static void churn(void)
{
    for (int i = 0; i < 50; i++) {
        char *p = short_lived();
        memset(p, i, 64);
        free(p);
    }
    char *r = malloc(8);
    for (size_t n = 16; n < 4096; n *= 2)
        r = realloc(r, n);
    free(r);
}

int main(void)
{
    churn();
    for (int i = 0; i < 3; i++)
        report(100, leak_three());
    report(2000, leak_big());
    for (int i = 0; i < 2; i++)
        report(100, leak_pair());
    return 0;
}
