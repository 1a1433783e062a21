/*
 * postproc/leakkind.h: memcheck's leak kinds, as the tracer writes them
 * before each leaked block ("## leak kind: definite", see
 * docs/TEXT_FORMAT.md) and as the options name them (valgrind's
 * --show-leak-kinds words: definite, indirect, possible, reachable, all,
 * none), and a fifth of ours, libc: what valgrind does not count because
 * its --run-libc-freeres frees it first.
 */
#ifndef AT_LEAKKIND_H
#define AT_LEAKKIND_H

#include <stddef.h>
#include <stdint.h>

typedef enum at_leak_kind {
    AT_LEAK_UNKNOWN,   /* no kind line: a full trace, an older tracer, a scan that failed */
    AT_LEAK_DEFINITE,
    AT_LEAK_INDIRECT,
    AT_LEAK_POSSIBLE,
    AT_LEAK_REACHABLE,
    AT_LEAK_LIBC,      /* glibc's own caches, which valgrind's freeres frees before it looks */
    AT_LEAK_NKINDS
} at_leak_kind;

/* A set of kinds: bit (1 << kind). */
#define AT_LEAK_BIT(k) (1u << (k))
#define AT_LEAK_ALL                                                                        \
    (AT_LEAK_BIT(AT_LEAK_UNKNOWN) | AT_LEAK_BIT(AT_LEAK_DEFINITE) |                        \
     AT_LEAK_BIT(AT_LEAK_INDIRECT) | AT_LEAK_BIT(AT_LEAK_POSSIBLE) |                       \
     AT_LEAK_BIT(AT_LEAK_REACHABLE) | AT_LEAK_BIT(AT_LEAK_LIBC))
/* What fails the gate by default, as valgrind's --errors-for-leak-kinds=
 * definite,indirect and LSan: a block of unknown kind counts as lost. */
#define AT_LEAK_DEFAULT_FAIL                                                               \
    (AT_LEAK_BIT(AT_LEAK_UNKNOWN) | AT_LEAK_BIT(AT_LEAK_DEFINITE) |                        \
     AT_LEAK_BIT(AT_LEAK_INDIRECT))

/* The keyword ("definite"; "unknown" for AT_LEAK_UNKNOWN). */
const char *at_leak_kind_name(at_leak_kind k);
/* valgrind's words in its LEAK SUMMARY ("definitely lost"). */
const char *at_leak_kind_words(at_leak_kind k);
/* The kind a "## leak kind: NAME" line gives, AT_LEAK_UNKNOWN when the
 * line is no such line or names no kind. */
at_leak_kind at_leak_kind_line(const char *line, size_t len);
/* A comma-separated list of keywords, "all" or "none" (unknown blocks are
 * in every set but "none": a block that could not be classified is never
 * dropped silently). 0 on success, -1 when a word is none of them. */
int at_leak_kinds_parse(const char *list, unsigned *set);
/* The words, for the options' error messages. */
#define AT_LEAK_KINDS_WORDS "definite, indirect, possible, reachable, libc, all, none"

#endif
