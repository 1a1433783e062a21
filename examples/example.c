/*
 * examples/example.c: what `make demo` traces. A tiny "config parser"
 * that allocates through a few call paths and forgets to free some of it:
 *   - load_config() keeps every line in a growing array (realloc path),
 *     and leaks the last line it duplicated on one path,
 *   - make_table() builds a small hash table and frees it properly,
 *   - remember() leaks a cache entry each time it is called with a new key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    char *key;
    struct entry *next;
};

static struct entry *cache;

/* Leaks: the cache is never torn down. */
static void remember(const char *key)
{
    for (struct entry *e = cache; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return;
    struct entry *e = malloc(sizeof *e);
    e->key = strdup(key);
    e->next = cache;
    cache = e;
}

static size_t load_config(char ***out)
{
    static const char *lines[] = { "name=demo", "threads=4", "log=stderr", "cache=on" };
    char **v = NULL;
    size_t n = 0;
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        v = realloc(v, (n + 1) * sizeof *v);
        v[n++] = strdup(lines[i]);
        remember(lines[i] + (strchr(lines[i], '=') - lines[i]) + 1);
    }
    char *extra = strdup("unused");   /* leaked: never stored anywhere */
    extra[0] = 'U';
    *out = v;
    return n;
}

static void make_table(size_t buckets)
{
    struct entry **table = calloc(buckets, sizeof *table);
    for (size_t i = 0; i < 3 * buckets; i++) {
        struct entry *e = malloc(sizeof *e);
        e->key = malloc(16);
        snprintf(e->key, 16, "k%zu", i);
        e->next = table[i % buckets];
        table[i % buckets] = e;
    }
    for (size_t b = 0; b < buckets; b++)
        while (table[b]) {
            struct entry *e = table[b];
            table[b] = e->next;
            free(e->key);
            free(e);
        }
    free(table);
}

int main(void)
{
    char **config;
    size_t n = load_config(&config);
    make_table(8);
    remember("extra");
    for (size_t i = 0; i < n; i++)
        free(config[i]);
    free(config);
    printf("example: read %zu settings\n", n);
    return 0;
}
