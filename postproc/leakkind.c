/*
 * postproc/leakkind.c: the names of memcheck's leak kinds (leakkind.h).
 * The keywords are valgrind's, so a --show-leak-kinds or
 * --errors-for-leak-kinds list from a valgrind command line works as it is.
 */
#include "leakkind.h"

#include <string.h>

#include <alloctrace/format.h>

static const char *const names[AT_LEAK_NKINDS] = {
    [AT_LEAK_UNKNOWN] = "unknown",
    [AT_LEAK_DEFINITE] = AT_KIND_NAME_DEFINITE,
    [AT_LEAK_INDIRECT] = AT_KIND_NAME_INDIRECT,
    [AT_LEAK_POSSIBLE] = AT_KIND_NAME_POSSIBLE,
    [AT_LEAK_REACHABLE] = AT_KIND_NAME_REACHABLE,
    [AT_LEAK_LIBC] = AT_KIND_NAME_LIBC,
};

static const char *const words[AT_LEAK_NKINDS] = {
    [AT_LEAK_UNKNOWN] = "not classified",
    [AT_LEAK_DEFINITE] = "definitely lost",
    [AT_LEAK_INDIRECT] = "indirectly lost",
    [AT_LEAK_POSSIBLE] = "possibly lost",
    [AT_LEAK_REACHABLE] = "still reachable",
    [AT_LEAK_LIBC] = "libc's caches",
};

const char *at_leak_kind_name(at_leak_kind k)
{
    return k < AT_LEAK_NKINDS ? names[k] : names[AT_LEAK_UNKNOWN];
}

const char *at_leak_kind_words(at_leak_kind k)
{
    return k < AT_LEAK_NKINDS ? words[k] : words[AT_LEAK_UNKNOWN];
}

static at_leak_kind by_name(const char *s, size_t len)
{
    for (int k = AT_LEAK_DEFINITE; k < AT_LEAK_NKINDS; k++)
        if (strlen(names[k]) == len && memcmp(names[k], s, len) == 0)
            return (at_leak_kind)k;
    return AT_LEAK_UNKNOWN;
}

at_leak_kind at_leak_kind_line(const char *line, size_t len)
{
    size_t n = sizeof AT_LEAK_KIND_PREFIX - 1;
    if (len <= n || memcmp(line, AT_LEAK_KIND_PREFIX, n) != 0)
        return AT_LEAK_UNKNOWN;
    return by_name(line + n, len - n);
}

int at_leak_kinds_parse(const char *list, unsigned *set)
{
    unsigned s = 0;
    const char *p = list;
    do {
        size_t len = strcspn(p, ",");
        at_leak_kind k = by_name(p, len);
        if (len == 3 && memcmp(p, "all", 3) == 0) {
            s |= AT_LEAK_ALL;
        } else if (len == 4 && memcmp(p, "none", 4) == 0 && p == list && !p[len]) {
            s = 0;
        } else if (k != AT_LEAK_UNKNOWN) {
            s |= AT_LEAK_BIT(k) | AT_LEAK_BIT(AT_LEAK_UNKNOWN);
        } else {
            return -1;
        }
        p += len;
    } while (*p++ == ',');
    *set = s;
    return 0;
}
