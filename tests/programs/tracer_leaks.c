/*
 * tests/programs/tracer_leaks.c: five blocks, three freed, two leaked
 * (111 and 222 bytes, allocated in leak_a and leak_b). Prints the leaked
 * addresses as "leakSIZE ADDRESS" - without stdio, whose buffer would be
 * one more (real) leak.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static void *leak_a(void) { return malloc(111); }
__attribute__((noinline)) static void *leak_b(void) { return calloc(2, 111); }

int main(void)
{
    void *f1 = malloc(10), *f2 = malloc(20), *f3 = strdup("freed");
    void *a = leak_a();
    void *b = leak_b();
    char *grow = malloc(5);
    grow = realloc(grow, 4000);   /* moved and freed: no leak */
    free(grow);
    free(f1);
    free(f2);
    free(f3);
    char out[128];
    int n = snprintf(out, sizeof out, "leak111 %p\nleak222 %p\n", a, b);
    if (write(1, out, (size_t)n) != n)
        return 1;
    return 0;
}
