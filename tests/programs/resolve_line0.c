/*
 * tests/programs/resolve_line0.c: an allocation whose call instruction
 * has line 0 in the line table, as compilers give to code of no
 * particular line. The build (tests/resolve.mk) compiles this file to
 * assembly with clang and gives the statement marked AT_LINE0 line 0
 * (tests/programs/line0.awk).
 */
#include <stdlib.h>

void *volatile keep;

__attribute__((noinline)) static void *zero_line(size_t n)
{
    __asm__ volatile("# AT_LINE0");
    keep = malloc(n);
    return keep;
}

int main(void)
{
    return zero_line(24) == NULL;
}
