/*
 * tests/unit/test_resolve.c: the resolver on real programs, without the
 * tracer. Each test program (tests/programs/resolve_*) prints its map lines
 * and the return address of every known allocation site; the expected line
 * of a site is the line of its "@LABEL" marker in the source, the expected
 * file that source's full path, the expected function written here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "maps.h"
#include "resolve.h"
#include "stack.h"

#define PROGRAMS AT_BUILD_ROOT "/build/tests/programs/"
#define APP_SRC AT_BUILD_ROOT "/tests/programs/resolve_app.c"
#define LIB_SRC AT_BUILD_ROOT "/tests/programs/resolve_lib.c"
#define CXX_SRC AT_BUILD_ROOT "/tests/programs/resolve_cxx.cc"
#define DEBUG_DIR PROGRAMS "resolve_debug"

typedef struct site {
    char label[64];
    uint64_t addr;
} site;

/* What one run of a test program printed. */
typedef struct run {
    at_maps *maps;
    site sites[16];
    size_t nsites;
} run;

static run run_program(const char *name)
{
    run r = { .maps = at_maps_new() };
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s%s", PROGRAMS, name);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[4096];
    while (fgets(line, sizeof line, p)) {
        char path[4096], id[256], label[64];
        unsigned long long a, b;
        if (sscanf(line, "map %4095s 0x%llx 0x%llx %255s", path, &a, &b, id) == 4) {
            at_maps_add(r.maps, path, a, b);
            if (strcmp(id, "-") != 0)
                at_maps_set_build_id(r.maps, path, id);
        } else if (sscanf(line, "site %63s 0x%llx", label, &a) == 2 && r.nsites < 16) {
            snprintf(r.sites[r.nsites].label, sizeof r.sites[0].label, "%s", label);
            r.sites[r.nsites++].addr = a;
        }
    }
    assert_int_equal(pclose(p), 0);
    assert_true(at_maps_count(r.maps) > 0);
    return r;
}

static uint64_t site_addr(const run *r, const char *label)
{
    for (size_t i = 0; i < r->nsites; i++)
        if (strcmp(r->sites[i].label, label) == 0)
            return r->sites[i].addr;
    fail_msg("no site %s", label);
    return 0;
}

/* The line of "@label" in a source file. */
static unsigned marker_line(const char *src, const char *label)
{
    FILE *f = fopen(src, "r");
    assert_non_null(f);
    char line[4096], mark[80];
    snprintf(mark, sizeof mark, "/* @%s */", label);
    unsigned n = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        if (strstr(line, mark))
            found = n;
    }
    fclose(f);
    assert_true(found > 0);
    return found;
}

static char *expect_at(const char *function, const char *src, const char *label, bool inlined)
{
    char *s = NULL;
    assert_true(asprintf(&s, "%s at %s:%u%s", function, src, marker_line(src, label),
                         inlined ? " [inlined]" : "") > 0);
    return s;
}

static void add_maps(at_resolver *res, const at_maps *maps)
{
    for (size_t i = 0; i < at_maps_count(maps); i++)
        at_resolver_add_map(res, at_maps_get(maps, i));
}

/* Resolves a one-frame stack holding addr. */
static const at_stack *resolve_one(at_resolver *res, at_stack_table *t, uint64_t addr)
{
    at_frame f = { addr, NULL };
    return at_resolver_resolve(res, t, at_stacks_intern(t, &f, 1));
}

static void assert_frame(const at_stack *s, uint32_t i, uint64_t addr, char *expected)
{
    assert_true(i < s->nframes);
    assert_int_equal(s->frames[i].addr, addr);
    assert_non_null(s->frames[i].text);
    assert_string_equal(s->frames[i].text, expected);
    free(expected);
}

/* Resolves one site of a program and checks its single frame. */
static void check_single_site(const char *program, const char *label, const char *marker,
                              const char *function, const char *src, const at_resolve_options *opts)
{
    run r = run_program(program);
    at_resolver *res = at_resolver_new(opts);
    at_stack_table *t = at_stacks_new();
    add_maps(res, r.maps);
    uint64_t addr = site_addr(&r, label);
    const at_stack *s = resolve_one(res, t, addr);
    assert_int_equal(s->nframes, 1);
    assert_frame(s, 0, addr, expect_at(function, src, marker, false));
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
}

/* ---- stderr capture ------------------------------------------------------- */

typedef struct capture {
    int saved;
    char path[64];
} capture;

static capture capture_stderr(void)
{
    capture c;
    snprintf(c.path, sizeof c.path, "/tmp/test_resolve_err.XXXXXX");
    int fd = mkstemp(c.path);
    assert_true(fd >= 0);
    fflush(stderr);
    c.saved = dup(2);
    dup2(fd, 2);
    close(fd);
    return c;
}

/* Restores stderr; returns what was written (malloc'ed). */
static char *end_capture(capture *c)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    FILE *f = fopen(c->path, "r");
    assert_non_null(f);
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    unlink(c->path);
    return buf;
}

static size_t count_lines_with(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *copy = strndup(line, len);
        if (strstr(copy, needle))
            n++;
        free(copy);
        line = end ? end + 1 : NULL;
    }
    return n;
}

/* ---- sites ------------------------------------------------------------------ */

static void pie_O0_site_resolves_to_function_file_and_call_line(void **state)
{
    (void)state;
    check_single_site("resolve_app_O0", "direct", "direct", "alloc_direct()", APP_SRC, NULL);
}

static void pie_O0_uninlined_static_inline_is_its_own_function(void **state)
{
    (void)state;
    check_single_site("resolve_app_O0", "inline", "inline_leaf", "inline_leaf()", APP_SRC, NULL);
}

static void non_pie_site_resolves_with_absolute_addresses(void **state)
{
    (void)state;
    check_single_site("resolve_app_nopie", "direct", "direct", "alloc_direct()", APP_SRC, NULL);
}

static void shared_library_site_resolves_at_its_load_base(void **state)
{
    (void)state;
    check_single_site("resolve_app_O0", "lib", "lib", "resolve_lib_alloc()", LIB_SRC, NULL);
}

static void O2_inline_chain_expands_innermost_first(void **state)
{
    (void)state;
    run r = run_program("resolve_app_O2");
    at_resolver *res = at_resolver_new(NULL);
    at_stack_table *t = at_stacks_new();
    add_maps(res, r.maps);
    uint64_t addr = site_addr(&r, "inline");
    const at_stack *s = resolve_one(res, t, addr);
    assert_int_equal(s->nframes, 3);
    assert_frame(s, 0, addr, expect_at("inline_leaf()", APP_SRC, "inline_leaf", true));
    assert_frame(s, 1, addr, expect_at("inline_mid()", APP_SRC, "inline_mid", true));
    assert_frame(s, 2, addr, expect_at("outer_caller()", APP_SRC, "outer_caller", false));
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
}

static void O2_noinline_site_resolves_to_call_line(void **state)
{
    (void)state;
    check_single_site("resolve_app_O2", "direct", "direct", "alloc_direct()", APP_SRC, NULL);
}

static void cxx_template_in_namespace_is_demangled_with_parameters(void **state)
{
    (void)state;
    check_single_site("resolve_cxx", "template", "template", "double* shapes::make_array<double>(unsigned long)",
                      CXX_SRC, NULL);
}

static void cxx_class_operator_new_is_demangled(void **state)
{
    (void)state;
    check_single_site("resolve_cxx", "operator_new", "operator_new",
                      "shapes::Widget::operator new(unsigned long)", CXX_SRC, NULL);
}

static void cxx_const_method_is_demangled(void **state)
{
    (void)state;
    check_single_site("resolve_cxx", "method", "method", "shapes::Pool::grab(int) const", CXX_SRC, NULL);
}

static void cxx_lambda_is_demangled(void **state)
{
    (void)state;
    check_single_site("resolve_cxx", "lambda", "lambda",
                      "main::{lambda(unsigned long)#1}::operator()(unsigned long) const", CXX_SRC,
                      NULL);
}

/* ---- symbol table only ------------------------------------------------------ */

static void check_symtab_site(const char *program, const char *label, const char *function)
{
    run r = run_program(program);
    at_resolver *res = at_resolver_new(NULL);
    at_stack_table *t = at_stacks_new();
    add_maps(res, r.maps);
    const at_stack *s = resolve_one(res, t, site_addr(&r, label));
    char *expected = NULL;
    assert_true(asprintf(&expected, "%s from %s%s", function, PROGRAMS, program) > 0);
    assert_string_equal(s->frames[0].text, expected);
    free(expected);
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
}

static void symtab_only_site_gives_function_from_module(void **state)
{
    (void)state;
    check_symtab_site("resolve_app_symtab", "direct", "alloc_direct()");
    check_symtab_site("resolve_app_symtab", "inline", "inline_leaf()");
}

static void symtab_only_cxx_names_are_demangled(void **state)
{
    (void)state;
    check_symtab_site("resolve_cxx_symtab", "method", "shapes::Pool::grab(int) const");
    check_symtab_site("resolve_cxx_symtab", "template", "double* shapes::make_array<double>(unsigned long)");
}

/* ---- separate debug info ---------------------------------------------------- */

static void stripped_executable_uses_debug_file_found_by_build_id(void **state)
{
    (void)state;
    const char *dirs[] = { DEBUG_DIR };
    at_resolve_options o = { .debug_dirs = dirs, .ndebug_dirs = 1 };
    check_single_site("resolve_app_stripped", "direct", "direct", "alloc_direct()", APP_SRC, &o);
}

static void stripped_executable_uses_debuglink_in_dot_debug(void **state)
{
    (void)state;
    check_single_site("resolve_app_debuglink", "direct", "direct", "alloc_direct()", APP_SRC, NULL);
}

static void stripped_executable_without_debug_dir_is_from_module(void **state)
{
    (void)state;
    run r = run_program("resolve_app_stripped");
    at_resolver *res = at_resolver_new(NULL);
    at_stack_table *t = at_stacks_new();
    add_maps(res, r.maps);
    const at_stack *s = resolve_one(res, t, site_addr(&r, "direct"));
    assert_string_equal(s->frames[0].text, "from " PROGRAMS "resolve_app_stripped");
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
}

/* The traced file is gone, but the debug file of its build id is there. */
static void missing_file_is_replaced_by_debug_file_of_its_build_id(void **state)
{
    (void)state;
    run r = run_program("resolve_app_stripped");
    const at_map *exe = at_maps_get(r.maps, 0);
    at_map moved = *exe;
    moved.path = "/nonexistent/resolve_app_stripped";
    const char *dirs[] = { DEBUG_DIR };
    at_resolve_options o = { .debug_dirs = dirs, .ndebug_dirs = 1 };
    at_resolver *res = at_resolver_new(&o);
    at_stack_table *t = at_stacks_new();
    at_resolver_add_map(res, &moved);
    capture c = capture_stderr();
    uint64_t addr = site_addr(&r, "direct");
    const at_stack *s = resolve_one(res, t, addr);
    char *err = end_capture(&c);
    assert_frame(s, 0, addr, expect_at("alloc_direct()", APP_SRC, "direct", false));
    assert_string_equal(err, "");
    free(err);
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
}

/* A trace from another root: its paths exist only under the sysroot. */
static void sysroot_prefixes_module_paths(void **state)
{
    (void)state;
    char root[] = "/tmp/test_resolve_root.XXXXXX";
    assert_non_null(mkdtemp(root));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/opt/app && cp %sresolve_app_O0 %s/opt/app/", root,
             PROGRAMS, root);
    assert_int_equal(system(cmd), 0);

    run r = run_program("resolve_app_O0");
    at_map m = *at_maps_get(r.maps, 0);
    m.path = "/opt/app/resolve_app_O0";
    at_resolve_options o = { .sysroot = root };
    at_resolver *res = at_resolver_new(&o);
    at_stack_table *t = at_stacks_new();
    at_resolver_add_map(res, &m);
    uint64_t addr = site_addr(&r, "direct");
    const at_stack *s = resolve_one(res, t, addr);
    assert_frame(s, 0, addr, expect_at("alloc_direct()", APP_SRC, "direct", false));
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    assert_int_equal(system(cmd), 0);
}

/* ---- warnings --------------------------------------------------------------- */

static void build_id_mismatch_warns_once_and_gives_module_only(void **state)
{
    (void)state;
    run r = run_program("resolve_app_O0");
    at_map m = *at_maps_get(r.maps, 0);
    m.build_id = "00112233445566778899aabbccddeeff00112233"; /* another build ran */
    at_resolver *res = at_resolver_new(NULL);
    at_stack_table *t = at_stacks_new();
    at_resolver_add_map(res, &m);
    at_frame frames[] = { { site_addr(&r, "direct"), NULL }, { site_addr(&r, "inline"), NULL } };
    capture c = capture_stderr();
    const at_stack *s = at_resolver_resolve(res, t, at_stacks_intern(t, frames, 2));
    char *err = end_capture(&c);
    assert_int_equal(s->nframes, 2);
    assert_string_equal(s->frames[0].text, "from " PROGRAMS "resolve_app_O0");
    assert_string_equal(s->frames[1].text, "from " PROGRAMS "resolve_app_O0");
    assert_int_equal(count_lines_with(err, "alloctrace-postproc: WARNING: "), 1);
    assert_int_equal(count_lines_with(err, PROGRAMS "resolve_app_O0: build id "), 1);
    assert_int_equal(count_lines_with(err, m.build_id), 1);
    free(err);
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
}

/* "## build-id:" after its map line still counts, if it comes before a frame needs the module. */
static void build_id_set_after_the_map_is_checked(void **state)
{
    (void)state;
    run r = run_program("resolve_app_O0");
    at_map m = *at_maps_get(r.maps, 0);
    m.build_id = NULL;
    at_resolver *res = at_resolver_new(&(at_resolve_options){ .quiet = true });
    at_stack_table *t = at_stacks_new();
    at_resolver_add_map(res, &m);
    at_resolver_set_build_id(res, m.path, "00112233445566778899aabbccddeeff00112233");
    const at_stack *s = resolve_one(res, t, site_addr(&r, "direct"));
    assert_string_equal(s->frames[0].text, "from " PROGRAMS "resolve_app_O0");
    assert_int_equal(at_resolver_stats(res).warnings, 1);
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
}

static void matching_build_id_resolves_without_warning(void **state)
{
    (void)state;
    run r = run_program("resolve_app_O0");
    assert_non_null(at_maps_get(r.maps, 0)->build_id);
    at_resolver *res = at_resolver_new(NULL);
    at_stack_table *t = at_stacks_new();
    add_maps(res, r.maps);
    capture c = capture_stderr();
    uint64_t addr = site_addr(&r, "direct");
    const at_stack *s = resolve_one(res, t, addr);
    char *err = end_capture(&c);
    assert_frame(s, 0, addr, expect_at("alloc_direct()", APP_SRC, "direct", false));
    assert_string_equal(err, "");
    free(err);
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
}

static void missing_file_warns_once_per_module(void **state)
{
    (void)state;
    at_maps *maps = at_maps_new();
    at_maps_add(maps, "/nonexistent/dir/libgone.so", 0x7f0000000000, 0x7f0000100000);
    at_resolver *res = at_resolver_new(NULL);
    at_stack_table *t = at_stacks_new();
    add_maps(res, maps);
    at_frame a[] = { { 0x7f0000001234, NULL }, { 0x7f0000005678, NULL } };
    at_frame b[] = { { 0x7f0000009abc, NULL } };
    capture c = capture_stderr();
    const at_stack *s1 = at_resolver_resolve(res, t, at_stacks_intern(t, a, 2));
    const at_stack *s2 = at_resolver_resolve(res, t, at_stacks_intern(t, b, 1));
    char *err = end_capture(&c);
    assert_string_equal(s1->frames[0].text, "from /nonexistent/dir/libgone.so");
    assert_string_equal(s1->frames[1].text, "from /nonexistent/dir/libgone.so");
    assert_string_equal(s2->frames[0].text, "from /nonexistent/dir/libgone.so");
    assert_int_equal(count_lines_with(err, "alloctrace-postproc: WARNING: "), 1);
    assert_int_equal(count_lines_with(err, "/nonexistent/dir/libgone.so: No such file"), 1);
    assert_int_equal(at_resolver_stats(res).modules_opened, 1);
    free(err);
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(maps);
}

static void quiet_resolver_prints_no_warning(void **state)
{
    (void)state;
    at_maps *maps = at_maps_new();
    at_maps_add(maps, "/nonexistent/dir/libgone.so", 0x7f0000000000, 0x7f0000100000);
    at_resolve_options o = { .quiet = true };
    at_resolver *res = at_resolver_new(&o);
    at_stack_table *t = at_stacks_new();
    add_maps(res, maps);
    capture c = capture_stderr();
    const at_stack *s = resolve_one(res, t, 0x7f0000001234);
    char *err = end_capture(&c);
    assert_string_equal(s->frames[0].text, "from /nonexistent/dir/libgone.so");
    assert_string_equal(err, "");
    assert_int_equal(at_resolver_stats(res).warnings, 1);
    free(err);
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(maps);
}

/* ---- frames that need no lookup, re-resolving, caching ---------------------- */

static void address_outside_every_map_is_unknown(void **state)
{
    (void)state;
    at_maps *maps = at_maps_new();
    at_maps_add(maps, "/nonexistent/libx.so", 0x7f0000000000, 0x7f0000100000);
    at_resolver *res = at_resolver_new(NULL);
    at_stack_table *t = at_stacks_new();
    add_maps(res, maps);
    const at_stack *s = resolve_one(res, t, 0x1000);
    assert_int_equal(s->nframes, 1);
    assert_string_equal(s->frames[0].text, "in ??");
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(maps);
}

static void empty_stack_stays_empty(void **state)
{
    (void)state;
    at_resolver *res = at_resolver_new(NULL);
    at_stack_table *t = at_stacks_new();
    const at_stack *in = at_stacks_intern(t, NULL, 0);
    const at_stack *s = at_resolver_resolve(res, t, in);
    assert_ptr_equal(s, in);
    assert_int_equal(s->nframes, 0);
    at_stacks_free(t);
    at_resolver_free(res);
}

static void frames_with_text_keep_it_unless_re_resolve(void **state)
{
    (void)state;
    run r = run_program("resolve_app_O0");
    uint64_t addr = site_addr(&r, "direct");
    at_frame in[] = { { addr, "old_name() at old.c:1" }, { addr, NULL } };
    for (int re = 0; re < 2; re++) {
        at_resolve_options o = { .re_resolve = re };
        at_resolver *res = at_resolver_new(&o);
        at_stack_table *t = at_stacks_new();
        add_maps(res, r.maps);
        const at_stack *s = at_resolver_resolve(res, t, at_stacks_intern(t, in, 2));
        assert_int_equal(s->nframes, 2);
        if (re)
            assert_frame(s, 0, addr, expect_at("alloc_direct()", APP_SRC, "direct", false));
        else
            assert_string_equal(s->frames[0].text, "old_name() at old.c:1");
        assert_frame(s, 1, addr, expect_at("alloc_direct()", APP_SRC, "direct", false));
        at_stacks_free(t);
        at_resolver_free(res);
    }
    at_maps_free(r.maps);
}

/* An old three-frame expansion of one address becomes the new expansion
 * once, not three times. */
static void re_resolve_replaces_an_earlier_inline_expansion(void **state)
{
    (void)state;
    run r = run_program("resolve_app_O2");
    uint64_t addr = site_addr(&r, "inline");
    at_frame in[] = { { addr, "a() at x.c:1 [inlined]" }, { addr, "b() at x.c:2 [inlined]" },
                      { addr, "c() at x.c:3" } };
    at_resolve_options o = { .re_resolve = true };
    at_resolver *res = at_resolver_new(&o);
    at_stack_table *t = at_stacks_new();
    add_maps(res, r.maps);
    const at_stack *s = at_resolver_resolve(res, t, at_stacks_intern(t, in, 3));
    assert_int_equal(s->nframes, 3);
    assert_frame(s, 0, addr, expect_at("inline_leaf()", APP_SRC, "inline_leaf", true));
    assert_frame(s, 2, addr, expect_at("outer_caller()", APP_SRC, "outer_caller", false));
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
}

static void each_distinct_address_and_stack_is_resolved_once(void **state)
{
    (void)state;
    run r = run_program("resolve_app_O0");
    at_resolver *res = at_resolver_new(NULL);
    at_stack_table *t = at_stacks_new();
    add_maps(res, r.maps);
    uint64_t d = site_addr(&r, "direct"), i = site_addr(&r, "inline"), l = site_addr(&r, "lib");
    at_frame a[] = { { d, NULL }, { i, NULL } };
    at_frame b[] = { { i, NULL }, { l, NULL }, { d, NULL } };
    const at_stack *sa = at_stacks_intern(t, a, 2), *sb = at_stacks_intern(t, b, 3);
    const at_stack *ra = at_resolver_resolve(res, t, sa);
    const at_stack *rb = at_resolver_resolve(res, t, sb);
    assert_ptr_equal(at_resolver_resolve(res, t, sa), ra);
    assert_ptr_equal(at_resolver_resolve(res, t, ra), ra);
    assert_string_equal(rb->frames[2].text, ra->frames[0].text);
    at_resolve_stats st = at_resolver_stats(res);
    assert_int_equal(st.addresses, 3);
    assert_int_equal(st.stacks, 2);
    assert_int_equal(st.modules_opened, 2); /* the executable and the library */
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
}

/* dlclose, then another object over the same range: the newer map wins. */
static void later_map_over_same_range_replaces_earlier(void **state)
{
    (void)state;
    run r = run_program("resolve_app_O0");
    const at_map *exe = at_maps_get(r.maps, 0);
    at_map gone = { .path = "/nonexistent/old.so", .start = exe->start, .end = exe->end };
    at_resolver *res = at_resolver_new(&(at_resolve_options){ .quiet = true });
    at_stack_table *t = at_stacks_new();
    at_resolver_add_map(res, &gone);
    uint64_t addr = site_addr(&r, "direct");
    assert_string_equal(resolve_one(res, t, addr)->frames[0].text, "from /nonexistent/old.so");
    at_resolver_add_map(res, exe);
    assert_frame(resolve_one(res, t, addr), 0, addr,
                 expect_at("alloc_direct()", APP_SRC, "direct", false));
    at_stacks_free(t);
    at_resolver_free(res);
    at_maps_free(r.maps);
}

static void debug_dir_with_colon_is_refused(void **state)
{
    (void)state;
    const char *dirs[] = { "/a:b" };
    at_resolve_options o = { .debug_dirs = dirs, .ndebug_dirs = 1 };
    capture c = capture_stderr();
    at_resolver *res = at_resolver_new(&o);
    char *err = end_capture(&c);
    assert_null(res);
    assert_int_equal(count_lines_with(err, "alloctrace-postproc: --debug-dir /a:b:"), 1);
    free(err);
}

static void missing_debug_dir_is_refused(void **state)
{
    (void)state;
    const char *dirs[] = { "/nonexistent/debug" };
    at_resolve_options o = { .debug_dirs = dirs, .ndebug_dirs = 1 };
    capture c = capture_stderr();
    at_resolver *res = at_resolver_new(&o);
    char *err = end_capture(&c);
    assert_null(res);
    assert_string_equal(err, "alloctrace-postproc: --debug-dir /nonexistent/debug: No such file or directory\n");
    free(err);
}

/* ---- the disk cache ---------------------------------------------------------- */

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

/* Resolves every site of a run, and an address inside each library with a
 * build id (libc: its debug file when libc6-dbg is installed), with a new
 * resolver on cache_dir: the frame texts, one a line, and the counters. */
static char *resolve_all(const run *r, const at_resolve_options *base, const char *cache_dir,
                         at_resolve_stats *st)
{
    at_resolve_options o = base ? *base : (at_resolve_options){ 0 };
    o.cache_dir = cache_dir;
    at_resolver *res = at_resolver_new(&o);
    at_stack_table *t = at_stacks_new();
    add_maps(res, r->maps);
    at_frame f[64];
    uint32_t n = 0;
    for (size_t i = 0; i < r->nsites; i++)
        f[n++] = (at_frame){ r->sites[i].addr, NULL };
    for (size_t i = 0; i < at_maps_count(r->maps) && n < 64; i++) {
        const at_map *m = at_maps_get(r->maps, i);
        if (m->build_id && m->path[0] == '/' && strstr(m->path, ".so")) /* not linux-vdso.so.1 */
            f[n++] = (at_frame){ m->start + (m->end - m->start) / 3, NULL };
    }
    const at_stack *s = at_resolver_resolve(res, t, at_stacks_intern(t, f, n));
    char *out = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&out, &len);
    for (uint32_t i = 0; i < s->nframes; i++)
        fprintf(mf, "%s\n", s->frames[i].text);
    fclose(mf);
    *st = at_resolver_stats(res);
    at_stacks_free(t);
    at_resolver_free(res); /* writes the cache */
    return out;
}

/* A second resolver on the same cache answers every address from it,
 * reads no DWARF, and says exactly what the first said: for a program
 * with its own DWARF, a debug file found by build id, one found by
 * .gnu_debuglink, symbols only, C++, and libc. */
static void second_resolver_answers_from_disk_without_dwarf(void **state)
{
    (void)state;
    static const char *const programs[] = { "resolve_app_O2", "resolve_app_stripped",
                                            "resolve_app_debuglink", "resolve_app_symtab",
                                            "resolve_cxx" };
    const char *dirs[] = { DEBUG_DIR };
    at_resolve_options with_dir = { .debug_dirs = dirs, .ndebug_dirs = 1 };
    for (size_t p = 0; p < sizeof programs / sizeof programs[0]; p++) {
        char cache[] = "/tmp/alloctrace-rcache.XXXXXX";
        assert_non_null(mkdtemp(cache));
        run r = run_program(programs[p]);
        at_resolve_stats a, b, none;
        char *first = resolve_all(&r, &with_dir, cache, &a);
        char *second = resolve_all(&r, &with_dir, cache, &b);
        char *uncached = resolve_all(&r, &with_dir, NULL, &none);
        assert_string_equal(first, uncached);
        assert_string_equal(second, first);
        assert_int_equal(a.cache_hits, 0);
        assert_true(a.dwarf_loaded > 0);
        if (b.cache_hits != b.addresses || b.dwarf_loaded != 0)
            fail_msg("%s: %zu of %zu addresses from the cache, %zu module(s) read DWARF",
                     programs[p], b.cache_hits, b.addresses, b.dwarf_loaded);
        free(first);
        free(second);
        free(uncached);
        at_maps_free(r.maps);
        nftw(cache, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    }
}

/* A module whose file differs from the traced build is never cached. */
static void mismatched_build_id_is_not_cached(void **state)
{
    (void)state;
    char cache[] = "/tmp/alloctrace-rcache.XXXXXX";
    assert_non_null(mkdtemp(cache));
    run r = run_program("resolve_app_O0");
    at_maps *wrong = at_maps_new();
    const at_map *exe = at_maps_get(r.maps, 0);
    at_maps_add(wrong, exe->path, exe->start, exe->end);
    at_maps_set_build_id(wrong, exe->path, "00112233445566778899aabbccddeeff00112233");
    run w = { .maps = wrong };
    w.sites[w.nsites++] = (site){ "direct", site_addr(&r, "direct") };
    at_resolve_options quiet = { .quiet = true };
    at_resolve_stats a, b;
    free(resolve_all(&w, &quiet, cache, &a));
    free(resolve_all(&w, &quiet, cache, &b));
    assert_int_equal(b.cache_hits, 0);
    DIR *d = opendir(cache);
    size_t files = 0;
    for (struct dirent *e; (e = readdir(d));)
        files += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(files, 0);
    at_maps_free(wrong);
    at_maps_free(r.maps);
    nftw(cache, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pie_O0_site_resolves_to_function_file_and_call_line),
        cmocka_unit_test(pie_O0_uninlined_static_inline_is_its_own_function),
        cmocka_unit_test(non_pie_site_resolves_with_absolute_addresses),
        cmocka_unit_test(shared_library_site_resolves_at_its_load_base),
        cmocka_unit_test(O2_inline_chain_expands_innermost_first),
        cmocka_unit_test(O2_noinline_site_resolves_to_call_line),
        cmocka_unit_test(cxx_template_in_namespace_is_demangled_with_parameters),
        cmocka_unit_test(cxx_class_operator_new_is_demangled),
        cmocka_unit_test(cxx_const_method_is_demangled),
        cmocka_unit_test(cxx_lambda_is_demangled),
        cmocka_unit_test(symtab_only_site_gives_function_from_module),
        cmocka_unit_test(symtab_only_cxx_names_are_demangled),
        cmocka_unit_test(stripped_executable_uses_debug_file_found_by_build_id),
        cmocka_unit_test(stripped_executable_uses_debuglink_in_dot_debug),
        cmocka_unit_test(stripped_executable_without_debug_dir_is_from_module),
        cmocka_unit_test(missing_file_is_replaced_by_debug_file_of_its_build_id),
        cmocka_unit_test(sysroot_prefixes_module_paths),
        cmocka_unit_test(build_id_mismatch_warns_once_and_gives_module_only),
        cmocka_unit_test(build_id_set_after_the_map_is_checked),
        cmocka_unit_test(matching_build_id_resolves_without_warning),
        cmocka_unit_test(missing_file_warns_once_per_module),
        cmocka_unit_test(quiet_resolver_prints_no_warning),
        cmocka_unit_test(address_outside_every_map_is_unknown),
        cmocka_unit_test(empty_stack_stays_empty),
        cmocka_unit_test(frames_with_text_keep_it_unless_re_resolve),
        cmocka_unit_test(re_resolve_replaces_an_earlier_inline_expansion),
        cmocka_unit_test(each_distinct_address_and_stack_is_resolved_once),
        cmocka_unit_test(later_map_over_same_range_replaces_earlier),
        cmocka_unit_test(debug_dir_with_colon_is_refused),
        cmocka_unit_test(missing_debug_dir_is_refused),
        cmocka_unit_test(second_resolver_answers_from_disk_without_dwarf),
        cmocka_unit_test(mismatched_build_id_is_not_cached),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
