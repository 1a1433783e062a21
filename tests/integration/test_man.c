/*
 * tests/integration/test_man.c: the man pages render, say what --help
 * says, and `make install` / `make uninstall` put and take exactly the
 * files README.md lists.
 *
 * The option comparison is generic: every long option any help text
 * prints must be in its man page, and every long option the page names
 * must be one a help text prints, so an option added to a parser without
 * its page (or left in a page after it went) fails here. "-X, --long"
 * pairs are compared too. Pages are rendered with man -l and col -b, as
 * a reader sees them (hyphenation is off in the pages: .nh).
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The shell lines that list, one a line, sorted: the long options of the
 * help texts (`$R/CMD --help` for each CMD), and those of the rendered page. */
#define HELP_OPTS "for c in %s; do $R/$c --help; done | grep -o -- '--[a-z][a-z0-9-]*' | sort -u"
#define MAN_OPTS "MANWIDTH=200 man -l $R/%s 2>/dev/null | col -b | grep -o -- '--[a-z][a-z0-9-]*' | sort -u"
#define HELP_PAIRS "for c in %s; do $R/$c --help; done | grep -oE '^ +-[A-Za-z], --[a-z-]+' | sed 's/^ *//' | sort -u"
#define MAN_PAIRS "MANWIDTH=200 man -l $R/%s 2>/dev/null | col -b | grep -oE '^ +-[A-Za-z], --[a-z-]+' | sed 's/^ *//' | sort -u"

static void same_options(const char *page, const char *help_cmds)
{
    char *help = h_fmt(HELP_OPTS, help_cmds), *man = h_fmt(MAN_OPTS, page);
    /* bash for the process substitution */
    char *cmd = h_fmt("R='%s'; comm -3 <(%s) <(%s)", h_root(), help, man);
    const char *argv[] = { "/bin/bash", "-c", cmd, NULL };
    h_result d = h_run(argv, NULL, NULL);
    assert_int_equal(d.status, 0);
    if (*d.out)
        fail_msg("%s and `%s --help` differ (left: help only, right: page only):\n%s", page, help_cmds,
                 d.out);
    h_result_free(&d);
    free(cmd);
    free(help);
    free(man);

    char *hp = h_fmt(HELP_PAIRS, help_cmds), *mp = h_fmt(MAN_PAIRS, page);
    cmd = h_fmt("R='%s'; comm -23 <(%s) <(%s)", h_root(), hp, mp);
    const char *argv2[] = { "/bin/bash", "-c", cmd, NULL };
    d = h_run(argv2, NULL, NULL);
    assert_int_equal(d.status, 0);
    if (*d.out)
        fail_msg("%s lacks these short/long pairs of --help:\n%s", page, d.out);
    h_result_free(&d);
    free(cmd);
    free(hp);
    free(mp);
}

static void alloctrace_page_has_every_option_of_its_help(void **state)
{
    (void)state;
    same_options("man/alloctrace.1", "scripts/alloctrace 'scripts/alloctrace --check'");
}

static void postproc_page_has_every_option_of_its_help(void **state)
{
    (void)state;
    same_options("man/alloctrace-postproc.1",
                 "postproc/alloctrace-postproc 'postproc/alloctrace-postproc --gate'");
}

/* groff's warnings (-ww through man --warnings) are errors here. */
static void pages_render_without_warnings(void **state)
{
    (void)state;
    const char *pages[] = { "man/alloctrace.1", "man/alloctrace-postproc.1", "man/alloctrace-filters.7" };
    for (size_t i = 0; i < sizeof pages / sizeof *pages; i++) {
        h_result r = h_sh("MANWIDTH=80 man --warnings -l '%s/%s' | col -b", h_root(), pages[i]);
        assert_int_equal(r.status, 0);
        if (*r.err)
            fail_msg("%s: %s", pages[i], r.err);
        assert_non_null(strstr(r.out, "NAME"));
        assert_non_null(strstr(r.out, "SEE ALSO"));
        h_result_free(&r);
    }
}

/* Installs into a staging directory, checks the file list, runs the
 * installed launcher and gate, renders the installed pages, uninstalls. */
static void install_and_uninstall(void **state)
{
    (void)state;
    char *dest = h_tmpdir();
    h_result in = h_sh("make -s -C '%s' install DESTDIR='%s' PREFIX=/usr >/dev/null && "
                       "cd '%s' && find . -type f | sort", h_root(), dest, dest);
    assert_int_equal(in.status, 0);
    const char *want[] = { "./usr/bin/alloctrace\n", "./usr/bin/alloctrace-check\n",
                           "./usr/bin/alloctrace-postproc\n", "./usr/include/alloctrace.h\n",
                           "./usr/lib/alloctrace/liballoctrace.so\n",
                           "./usr/share/alloctrace/default.supp\n",
                           "./usr/share/doc/alloctrace/LICENSE\n",
                           "./usr/share/doc/alloctrace/README.md\n",
                           "./usr/share/doc/alloctrace/docs/filters.md\n",
                           "./usr/share/man/man1/alloctrace-postproc.1\n",
                           "./usr/share/man/man1/alloctrace.1\n",
                           "./usr/share/man/man7/alloctrace-filters.7\n" };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(in.out, want[i]))
            fail_msg("not installed: %s", want[i]);
    /* Internal: shared by the tracer and the post-processor only. */
    assert_null(strstr(in.out, "format.h"));
    h_result_free(&in);

    /* The installed pieces find each other. */
    h_result run = h_sh("cd '%s' && ./usr/bin/alloctrace -o t.txt -- true && "
                        "./usr/bin/alloctrace --check --max-groups 1 -- true && "
                        "man -l usr/share/man/man7/alloctrace-filters.7 | grep -c SUPPRESSION", dest);
    assert_int_equal(run.status, 0);
    /* Installed but not on PATH, under the working directory: relative. */
    assert_non_null(strstr(run.err, "alloctrace: analyse it with: usr/bin/alloctrace-postproc -l -c -r t.txt\n"));
    assert_string_equal(run.out, "1\n");
    h_result_free(&run);
    /* On PATH: the bare name, as the user would type it. */
    h_result path = h_sh("cd '%s' && PATH=\"$PWD/usr/bin:$PATH\" alloctrace -o p.txt -- true", dest);
    assert_int_equal(path.status, 0);
    assert_non_null(strstr(path.err, "alloctrace: analyse it with: alloctrace-postproc -l -c -r p.txt\n"));
    h_result_free(&path);

    h_result un = h_sh("rm -f '%s/t.txt' '%s/p.txt' && make -s -C '%s' uninstall DESTDIR='%s' PREFIX=/usr && "
                       "cd '%s' && find . -type f; find . -name alloctrace", dest, dest, h_root(), dest, dest);
    assert_int_equal(un.status, 0);
    assert_string_equal(un.out, ""); /* no file left, nor alloctrace's own directories */
    h_result_free(&un);
    /* Nor the directories install created (usr/bin, usr/share/man/man1...). */
    un = h_sh("cd '%s' && find . -mindepth 1", dest);
    assert_string_equal(un.out, "");
    h_result_free(&un);
    /* A directory that was there before stays, even empty. */
    un = h_sh("mkdir -p '%s/usr/bin' && make -s -C '%s' install DESTDIR='%s' PREFIX=/usr >/dev/null && "
              "make -s -C '%s' uninstall DESTDIR='%s' PREFIX=/usr && cd '%s' && find . -mindepth 1 | sort",
              dest, h_root(), dest, h_root(), dest, dest);
    assert_int_equal(un.status, 0);
    assert_string_equal(un.out, "./usr\n./usr/bin\n");
    h_result_free(&un);
    h_cleanup();
}

int main(void)
{
    if (access("/usr/bin/man", X_OK) != 0) {
        printf("test_man: skipped: man (man-db) is not installed\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(alloctrace_page_has_every_option_of_its_help),
        cmocka_unit_test(postproc_page_has_every_option_of_its_help),
        cmocka_unit_test(pages_render_without_warnings),
        cmocka_unit_test(install_and_uninstall),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
