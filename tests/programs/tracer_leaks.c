/*
 * tests/programs/tracer_leaks.c: five blocks, three freed, two leaked
 * (111 and 222 bytes, allocated in leak_a and leak_b). Prints the leaked
 * addresses as "leak SIZE ADDRESS".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    printf("leak 111 %p\nleak 222 %p\n", a, b);
    return 0;
}
