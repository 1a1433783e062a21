/* tests/programs/gate_clean.c: allocates and frees everything it uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char *a = malloc(1000), *b = strdup("clean");
    a = realloc(a, 5000);
    printf("%s\n", b);
    free(a);
    free(b);
    return 0;
}
