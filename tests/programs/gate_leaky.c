/* tests/programs/gate_leaky.c: leaks on request, for the gate's tests.
 * Arguments: "buf=N" leaks N blocks of 512 bytes from make_buffer, "name"
 * leaks one 24-byte block from dup_name, "extra" 64 bytes from extra_site,
 * "exit=N" exits with status N. Tests check the line numbers of the
 * allocations: keep them where they are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *keep[1024];
static int nkeep;

static void make_buffer(void)
{
    keep[nkeep++] = malloc(512); /* line 15 */
}

static void dup_name(void)
{
    keep[nkeep++] = strdup("a name of 23 characters"); /* line 20 */
}

static void extra_site(void)
{
    keep[nkeep++] = calloc(8, 8); /* line 25 */
}

int main(int argc, char **argv)
{
    int status = 0;
    free(malloc(100)); /* freed: never a leak */
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "buf=", 4) == 0)
            for (int n = atoi(argv[i] + 4); n > 0 && nkeep < 1000; n--)
                make_buffer();
        else if (strcmp(argv[i], "name") == 0)
            dup_name();
        else if (strcmp(argv[i], "extra") == 0)
            extra_site();
        else if (strncmp(argv[i], "exit=", 5) == 0)
            status = atoi(argv[i] + 5);
    }
    /* Forget the pointers so the blocks are leaks, not just reachable. */
    memset(keep, 0, sizeof keep);
    return status;
}
