/*
 * tests/programs/tracer_ownalloc.c: leaks mode over an allocator that is
 * not glibc's (libtracer_bumpalloc.so). From a 64-byte boundary X it
 * allocates
 *   a: 16 bytes at X       b: 16 bytes at X+16 (same 32 bytes as a)
 *   c:  8 bytes at X+32    d: 24 bytes at X+40 (not 16-byte aligned)
 *   e:  8 bytes at X+64
 * frees a, d and e, and leaks b and c. Prints "NAME ADDRESS" for each,
 * without stdio (its buffer would be one more leak); exits 3 if the
 * allocator did not place them so. It all runs twice, the first time
 * freeing everything: the tracer allocates when it first meets a call
 * site, and would move the blocks of the round that counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void bump_align(size_t a);

__attribute__((noinline)) static void *leak_b(void) { return malloc(16); }
__attribute__((noinline)) static void *leak_c(void) { return malloc(8); }

static int say(const char *name, const void *p)
{
    char line[64];
    int n = snprintf(line, sizeof line, "%s %p\n", name, p);
    return write(1, line, (size_t)n) == n ? 0 : -1;
}

int main(void)
{
    for (int round = 0; round < 2; round++) {
        bump_align(64);
        char *a = malloc(16), *b = leak_b(), *c = leak_c(), *d = malloc(24), *e = malloc(8);
        free(a);
        free(d);
        free(e);
        if (round == 0) {
            free(b);
            free(c);
            continue;
        }
        if (say("a", a) || say("b", b) || say("c", c) || say("d", d) || say("e", e))
            return 1;
        if (((unsigned long)a & 63) || b != a + 16 || c != a + 32 || d != a + 40 || e != a + 64)
            return 3;
    }
    return 0;
}
