/*
 * tests/unit/test_resolve_disk.c: the resolver's cache files
 * (postproc/resolve/resolve_disk.c): round trip with awkward texts, merging with
 * what another writer left, the entry cap, broken files ignored whole and
 * replaced, directories created or skipped, the default directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resolve_disk.h"

#define KEY "program 1\tmodule=/lib/libx.so\tdebug=none"

static char *tmp_dir(void)
{
    char *d = strdup("/tmp/alloctrace-disk-test.XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

static void rm_tree(char *d)
{
    nftw(d, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(d);
}

static at_rtexts *texts(uint32_t n, ...)
{
    va_list ap;
    va_start(ap, n);
    at_rtexts *e = at_rtexts_new(n);
    for (uint32_t i = 0; i < n; i++)
        e->texts[i] = strdup(va_arg(ap, const char *));
    va_end(ap);
    return e;
}

static void put(at_rdisk *d, uint64_t addr, at_rtexts *e)
{
    at_rdisk_put(d, addr, e);
    at_rtexts_free(e);
}

static void assert_texts(const at_rdisk *d, uint64_t addr, uint32_t n, ...)
{
    const at_rtexts *e = at_rdisk_get(d, addr);
    assert_non_null(e);
    assert_int_equal(e->n, n);
    va_list ap;
    va_start(ap, n);
    for (uint32_t i = 0; i < n; i++)
        assert_string_equal(e->texts[i], va_arg(ap, const char *));
    va_end(ap);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void round_trip_keeps_texts_exactly(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    char *sub = NULL;
    assert_true(asprintf(&sub, "%s/a/b", dir) > 0); /* created with its parents */
    at_rdisk *d = at_rdisk_open(sub, "/lib/libx.so", KEY, 100);
    assert_int_equal(at_rdisk_count(d), 0);
    put(d, 0x1234, texts(2, "inner() at /s/a.c:3 [inlined]", "outer() at /s/a.c:9"));
    put(d, 0x10, texts(1, "odd\tname\\with\nbreaks() from /lib/libx.so"));
    put(d, 0xffffffffffffffffull, texts(1, "from /lib/libx.so"));
    put(d, 0x1234, texts(1, "ignored: the address has an entry"));
    assert_int_equal(at_rdisk_save(d), 0);
    at_rdisk_free(d);

    d = at_rdisk_open(sub, "/lib/libx.so", KEY, 100);
    assert_int_equal(at_rdisk_count(d), 3);
    assert_texts(d, 0x1234, 2, "inner() at /s/a.c:3 [inlined]", "outer() at /s/a.c:9");
    assert_texts(d, 0x10, 1, "odd\tname\\with\nbreaks() from /lib/libx.so");
    assert_texts(d, 0xffffffffffffffffull, 1, "from /lib/libx.so");
    assert_null(at_rdisk_get(d, 0x11));

    char *file = at_rdisk_file_name(sub, "/lib/libx.so", KEY);
    struct stat st;
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644); /* mkstemp's 0600, widened */
    assert_int_equal(stat(sub, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_non_null(strstr(file, "/libx.so-"));
    free(file);
    at_rdisk_free(d);
    free(sub);
    rm_tree(dir);
}

static void another_key_reads_nothing(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    at_rdisk *d = at_rdisk_open(dir, "libx.so", KEY, 100);
    put(d, 1, texts(1, "f() from libx.so"));
    assert_int_equal(at_rdisk_save(d), 0);
    /* The same file name (a hash collision, say) with another key inside. */
    char *file = at_rdisk_file_name(dir, "libx.so", KEY);
    at_rdisk_free(d);
    d = at_rdisk_open(dir, "libx.so", KEY " changed", 100);
    assert_int_equal(at_rdisk_count(d), 0);
    at_rdisk_free(d);
    free(file);
    rm_tree(dir);
}

static void save_merges_what_another_writer_left(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    at_rdisk *a = at_rdisk_open(dir, "libx.so", KEY, 100);
    at_rdisk *b = at_rdisk_open(dir, "libx.so", KEY, 100);
    put(a, 1, texts(1, "one()"));
    put(b, 2, texts(1, "two()"));
    assert_int_equal(at_rdisk_save(a), 0);
    assert_int_equal(at_rdisk_save(b), 0);
    at_rdisk_free(a);
    at_rdisk_free(b);
    at_rdisk *c = at_rdisk_open(dir, "libx.so", KEY, 100);
    assert_int_equal(at_rdisk_count(c), 2);
    assert_texts(c, 1, 1, "one()");
    assert_texts(c, 2, 1, "two()");
    /* Nothing new: nothing written (the file stays as it is). */
    char *file = at_rdisk_file_name(dir, "libx.so", KEY);
    write_text(file, "not a cache file\n");
    assert_int_equal(at_rdisk_save(c), 0);
    at_rdisk_free(c);
    c = at_rdisk_open(dir, "libx.so", KEY, 100);
    assert_int_equal(at_rdisk_count(c), 0);
    at_rdisk_free(c);
    free(file);
    rm_tree(dir);
}

static void entries_are_capped(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    at_rdisk *a = at_rdisk_open(dir, "libx.so", KEY, 3);
    for (uint64_t i = 1; i <= 5; i++)
        put(a, i, texts(1, "f()"));
    assert_int_equal(at_rdisk_count(a), 3);
    assert_null(at_rdisk_get(a, 4));
    assert_int_equal(at_rdisk_save(a), 0);
    at_rdisk_free(a);
    /* Full: a new entry is not kept, and nothing new means nothing written. */
    at_rdisk *b = at_rdisk_open(dir, "libx.so", KEY, 3);
    assert_int_equal(at_rdisk_count(b), 3);
    put(b, 9, texts(1, "g()"));
    assert_null(at_rdisk_get(b, 9));
    assert_int_equal(at_rdisk_save(b), 0);
    at_rdisk_free(b);
    at_rdisk *c = at_rdisk_open(dir, "libx.so", KEY, 2); /* a smaller cap reads what fits */
    assert_int_equal(at_rdisk_count(c), 2);
    at_rdisk_free(c);
    rm_tree(dir);
}

/* Each of these is rejected whole and leaves the cache as it was. */
static void malformed_texts_are_rejected_whole(void **state)
{
    (void)state;
    const char *H = "alloctrace-resolve-cache 1\tprogram 1\\tmodule=/lib/libx.so\\tdebug=none\n";
    const char *bad[] = {
        "",
        "alloctrace-resolve-cache 1\tprogram 1\\tmodule=/lib/libx.so\\tdebug=none",  /* cut */
        "alloctrace-resolve-cache 2\tprogram 1\\tmodule=/lib/libx.so\\tdebug=none\nend 0\n", /* version */
        "alloctrace-resolve-cache 1\tprogram 1\\tmodule=/lib/liby.so\\tdebug=none\nend 0\n", /* key */
        "garbage\nend 0\n",
        "%s1\tf()\n",                /* no end line: truncated */
        "%s1\tf()\nend 2\n",         /* wrong count */
        "%s1\tf()\nend 1\n2\tg()\n", /* after the end */
        "%s1\tf()\nend 1",           /* end line cut */
        "%s1\tf()\n1\tg()\nend 2\n", /* duplicate address */
        "%sxyz\tf()\nend 1\n",       /* not hex */
        "%s1F\tf()\nend 1\n",        /* upper case is not what is written */
        "%s12345678123456781\tf()\nend 1\n", /* more than 64 bits */
        "%s1\nend 1\n",              /* no text */
        "%s1\t\nend 1\n",            /* empty text */
        "%s1\tf()\t\nend 1\n",       /* empty last text */
        "%s1\tf\\x()\nend 1\n",      /* unknown escape */
        "%s1\tf()\\\nend 1\n",       /* escape cut */
        "%s\tf()\nend 1\n",          /* no address */
        "%s1\tf()\nend 01\n",        /* count not as written */
        "%s1\tf()\nend 1 \n",
    };
    char *dir = tmp_dir();
    at_rdisk *d = at_rdisk_open(dir, "libx.so", KEY, 100);
    put(d, 7, texts(1, "kept()"));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = NULL;
        assert_true(asprintf(&text, bad[i], H) >= 0);
        size_t len = strlen(text);
        if (at_rdisk_parse(d, text, len) != -1)
            fail_msg("accepted malformed text %zu:\n%s", i, text);
        assert_int_equal(at_rdisk_count(d), 1);
        free(text);
    }
    /* A NUL inside a line. */
    char nul[] = "alloctrace-resolve-cache 1\tprogram 1\\tmodule=/lib/libx.so\\tdebug=none\n1\tf\0()\nend 1\n";
    assert_int_equal(at_rdisk_parse(d, nul, sizeof nul - 1), -1);
    /* And the well-formed one they were made from is accepted. */
    char *good = NULL;
    assert_true(asprintf(&good, "%s1\tf() at a\\tb.c:1 [inlined]\tg()\n2\tx\\\\y\\n()\nend 2\n", H) > 0);
    assert_int_equal(at_rdisk_parse(d, good, strlen(good)), 0);
    assert_int_equal(at_rdisk_count(d), 3);
    assert_texts(d, 1, 2, "f() at a\tb.c:1 [inlined]", "g()");
    assert_texts(d, 2, 1, "x\\y\n()");
    free(good);
    at_rdisk_free(d);
    rm_tree(dir);
}

/* A broken file on disk: read as empty, replaced by the next save. */
static void broken_file_is_ignored_and_replaced(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    at_rdisk *d = at_rdisk_open(dir, "libx.so", KEY, 100);
    put(d, 1, texts(1, "one()"));
    put(d, 2, texts(1, "two()"));
    assert_int_equal(at_rdisk_save(d), 0);
    char *text = at_rdisk_format(d);
    at_rdisk_free(d);
    char *file = at_rdisk_file_name(dir, "libx.so", KEY);
    text[strlen(text) - strlen("end 2\n")] = '\0'; /* cut before its end line */
    write_text(file, text);
    d = at_rdisk_open(dir, "libx.so", KEY, 100);
    assert_int_equal(at_rdisk_count(d), 0); /* not even the whole lines before the cut */
    put(d, 3, texts(1, "three()"));
    assert_int_equal(at_rdisk_save(d), 0);
    at_rdisk_free(d);
    d = at_rdisk_open(dir, "libx.so", KEY, 100);
    assert_int_equal(at_rdisk_count(d), 1);
    assert_texts(d, 3, 1, "three()");
    at_rdisk_free(d);
    free(text);
    free(file);
    rm_tree(dir);
}

static void unwritable_directory_is_skipped(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    char *file_as_dir = NULL;
    assert_true(asprintf(&file_as_dir, "%s/plain", dir) > 0);
    write_text(file_as_dir, "x\n");
    char *below = NULL;
    assert_true(asprintf(&below, "%s/cache", file_as_dir) > 0);
    at_rdisk *d = at_rdisk_open(below, "libx.so", KEY, 100);
    put(d, 1, texts(1, "one()"));
    assert_int_equal(at_rdisk_save(d), -1);
    at_rdisk_free(d);
    free(below);
    free(file_as_dir);
    rm_tree(dir);
}

static void default_directory_follows_the_environment(void **state)
{
    (void)state;
    setenv("ALLOCTRACE_CACHE_DIR", "/x/own", 1);
    setenv("XDG_CACHE_HOME", "/x/xdg", 1);
    setenv("HOME", "/x/home", 1);
    char *s = at_rdisk_default_dir();
    assert_string_equal(s, "/x/own");
    free(s);
    setenv("ALLOCTRACE_CACHE_DIR", "", 1);
    assert_null(at_rdisk_default_dir());
    unsetenv("ALLOCTRACE_CACHE_DIR");
    s = at_rdisk_default_dir();
    assert_string_equal(s, "/x/xdg/alloctrace");
    free(s);
    setenv("XDG_CACHE_HOME", "relative", 1); /* ignored, as the XDG spec says */
    s = at_rdisk_default_dir();
    assert_string_equal(s, "/x/home/.cache/alloctrace");
    free(s);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    assert_null(at_rdisk_default_dir());
}

static void program_id_names_this_build(void **state)
{
    (void)state;
    char *a = at_rdisk_program_id(), *b = at_rdisk_program_id();
    assert_string_equal(a, b);
    assert_non_null(strstr(a, AT_VERSION));
    assert_null(strstr(a, "(no build id)")); /* the test binary has one, as builds do here */
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_keeps_texts_exactly),
        cmocka_unit_test(another_key_reads_nothing),
        cmocka_unit_test(save_merges_what_another_writer_left),
        cmocka_unit_test(entries_are_capped),
        cmocka_unit_test(malformed_texts_are_rejected_whole),
        cmocka_unit_test(broken_file_is_ignored_and_replaced),
        cmocka_unit_test(unwritable_directory_is_skipped),
        cmocka_unit_test(default_directory_follows_the_environment),
        cmocka_unit_test(program_id_names_this_build),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
