/* tests/unit/test_tree.c: the traces of one process tree read together
 * (postproc/read/tree.c), under ASan and UBSan: a block inherited at fork
 * and never freed goes to the child, with the parent's stack; a block the
 * child still holds leaves the parent's report; full and leaks mode; a
 * child's snapshot holds what it inherited; a trace that cannot be read. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "pp_run.h"
#include "reorder.h"
#include "snapmark.h"
#include "tree.h"

#define MEM "<1> : memory (memory allocation in bytes)\n"

/* The parent, pid 10 (full mode): 0x100 before the fork and kept by the
 * child; 0x200 before the fork, freed by the child; 0x300 after it. */
static const char parent_full[] =
    "version=2.0, arch=x86_64, process=p, pid=10, \n" MEM
    "1. malloc(100) = 0x100\n\t0xa1\n\t0xa2\n\n"
    "2. malloc(200) = 0x200\n\t0xb1\n\n"
    "3. malloc(300) = 0x300\n\t0xc1\n\n";

/* The child, pid 11, forked after the parent's call 2. */
static const char child_full[] =
    "version=2.0, arch=x86_64, process=p, pid=11, ppid=10, fork index=2, \n" MEM
    "1. free(0x200)\n\n"
    "2. malloc(50) = 0x50\n\t0xd1\n\n";

static char dir[64];

static char *put_file(const char *name, const char *text)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir, name) < 0)
        abort();
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* `main_text` (also written to main_name) with -l, beside `other`; with
 * `snapshot`, snapshot 1 of it (--snapshot 1: reorder, the mark, pairing). */
static char *run_stages(const char *main_name, const char *main_text, const char *other_name,
                        const char *other_text, bool snapshot)
{
    char *main_path = put_file(main_name, main_text), *other = put_file(other_name, other_text);
    FILE *of = tmpfile();
    at_diag d;
    at_diag_init(&d, main_path);
    at_trace *t = at_trace_new();
    at_stage *w = at_writer_new(fileno(of), t, &d);
    at_stage *l = at_leaks_new(w, t);
    at_stage *m = snapshot ? at_snapmark_new(l, t, &d, "1") : NULL;
    at_stage *o = snapshot ? at_reorder_new(m, t, &d) : NULL;
    const char *others[] = { other };
    at_stage *tr = at_tree_new(snapshot ? o : l, t, main_path, others, 1, true, snapshot, &d);
    assert_non_null(tr);
    assert_int_equal(at_read_mem(main_text, strlen(main_text), t, tr, &d), 0);
    at_stage_finish(tr);
    assert_false(d.failed);
    char *out = pp_slurp_fd(fileno(of));
    at_tree_free(tr);
    if (snapshot) {
        at_reorder_free(o);
        at_snapmark_free(m);
    }
    at_leaks_free(l);
    at_writer_free(w);
    at_trace_free(t);
    fclose(of);
    unlink(main_path);
    unlink(other);
    free(main_path);
    free(other);
    return out;
}

static char *run_tree(const char *main_name, const char *main_text, const char *other_name,
                      const char *other_text)
{
    return run_stages(main_name, main_text, other_name, other_text, false);
}

/* Snapshot 1 of `main_text`, beside `other_text`. */
static char *run_snapshot(const char *main_text, const char *other_text)
{
    return run_stages("c", main_text, "p", other_text, true);
}

static void child_reports_the_inherited_block_it_never_frees(void **state)
{
    (void)state;
    char *out = run_tree("c", child_full, "p", parent_full);
    assert_non_null(strstr(out, "2. malloc(50) = 0x50\n\t0xd1\n\n"));
    assert_non_null(strstr(out, "## process tree: 1 block(s) inherited from pid 10 at the fork"));
    /* after its last call, with the parent's stack */
    assert_non_null(strstr(out, "3. malloc(100) = 0x100\n\t0xa1\n\t0xa2\n\n"));
    assert_null(strstr(out, "0x200"));
    assert_non_null(strstr(out, "# 2 block(s) leaked with total size of 150 bytes"));
    free(out);
}

static void parent_leaves_out_what_the_child_holds(void **state)
{
    (void)state;
    char *out = run_tree("p", parent_full, "c", child_full);
    assert_null(strstr(out, "= 0x100"));
    assert_non_null(strstr(out, "2. malloc(200) = 0x200"));   /* the child freed its copy */
    assert_non_null(strstr(out, "3. malloc(300) = 0x300"));
    assert_non_null(strstr(out, "## process tree: 1 block(s) left out, still held at its end by child pid 11"));
    assert_non_null(strstr(out, "# 2 block(s) leaked with total size of 500 bytes"));
    free(out);
}

static void leaks_mode_parent_leaves_out_the_childs_blocks(void **state)
{
    (void)state;
    const char parent[] = "version=2.0, arch=x86_64, process=p, pid=20, filter=leaks, \n" MEM
                          "1. malloc(100) = 0x100\n\t0xa1\n\n"
                          "2. malloc(7) = 0x700\n\t0xe1\n\n";
    const char child[] = "version=2.0, arch=x86_64, process=p, pid=21, filter=leaks, ppid=20, \n" MEM
                         "1. malloc(100) = 0x100\n\t0xa1\n\n"
                         "2. malloc(50) = 0x50\n\t0xd1\n\n";
    char *out = run_tree("p", parent, "c", child);
    assert_null(strstr(out, "0x100"));
    assert_non_null(strstr(out, "malloc(7) = 0x700"));
    free(out);
    out = run_tree("c", child, "p", parent);   /* the child's report stays whole */
    assert_non_null(strstr(out, "malloc(100) = 0x100"));
    assert_non_null(strstr(out, "malloc(50) = 0x50"));
    free(out);
}

static void trace_of_another_tree_changes_nothing(void **state)
{
    (void)state;
    const char stranger[] = "version=2.0, arch=x86_64, process=q, pid=99, ppid=98, fork index=1, \n" MEM
                            "1. malloc(9) = 0x900\n\n";
    char *out = run_tree("p", parent_full, "s", stranger);
    assert_null(strstr(out, "## process tree"));
    assert_non_null(strstr(out, "# 3 block(s) leaked with total size of 600 bytes"));
    free(out);
}

static void childs_snapshot_holds_what_it_inherited_and_still_holds(void **state)
{
    (void)state;
    const char child[] = "version=2.0, arch=x86_64, process=p, pid=11, ppid=10, fork index=2, \n" MEM
                         "1. free(0x200)\n\n"
                         "## snapshot: 1\n"
                         "2. malloc(50) = 0x50\n\t0xd1\n\n";
    char *out = run_snapshot(child, parent_full);
    assert_non_null(strstr(out, "## process tree: 2 block(s) inherited from pid 10 at the fork, "
                                "numbered 1 to 2; this process's calls follow, their numbers 2 higher"));
    /* the parent's block, its stack and its number among the inherited */
    assert_non_null(strstr(out, "1. malloc(100) = 0x100\n\t0xa1\n\t0xa2\n\n"));
    assert_null(strstr(out, "0x200"));   /* freed by the child before the mark */
    assert_null(strstr(out, "0x50"));    /* allocated after it */
    assert_non_null(strstr(out, "# 1 block(s) leaked with total size of 100 bytes"));
    free(out);
}

static void snapshot_before_the_childs_first_call_holds_all_it_inherited(void **state)
{
    (void)state;
    const char child[] = "version=2.0, arch=x86_64, process=p, pid=11, ppid=10, fork index=2, \n" MEM
                         "## snapshot: 1\n"
                         "1. free(0x200)\n\n";
    char *out = run_snapshot(child, parent_full);
    assert_non_null(strstr(out, "1. malloc(100) = 0x100\n"));
    assert_non_null(strstr(out, "2. malloc(200) = 0x200\n\t0xb1\n\n"));
    assert_null(strstr(out, "0x300"));   /* the parent's, after the fork */
    assert_non_null(strstr(out, "# 2 block(s) leaked with total size of 300 bytes"));
    free(out);
}

static void missing_trace_is_an_error(void **state)
{
    (void)state;
    char *main_path = put_file("m", parent_full);
    char *errs = NULL;
    size_t elen;
    FILE *ef = open_memstream(&errs, &elen);
    at_diag d;
    at_diag_init(&d, main_path);
    d.out = ef;
    at_trace *t = at_trace_new();
    const char *others[] = { "/nonexistent/alloctrace.trace" };
    at_stage pass = { at_stage_pass_put, at_stage_pass_finish, NULL };
    assert_null(at_tree_new(&pass, t, main_path, others, 1, true, false, &d));
    fclose(ef);
    assert_true(d.failed);
    assert_non_null(strstr(errs, "/nonexistent/alloctrace.trace: No such file or directory"));
    free(errs);
    at_trace_free(t);
    unlink(main_path);
    free(main_path);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", "/tmp/alloctrace-tree.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(child_reports_the_inherited_block_it_never_frees),
        cmocka_unit_test(parent_leaves_out_what_the_child_holds),
        cmocka_unit_test(leaks_mode_parent_leaves_out_the_childs_blocks),
        cmocka_unit_test(trace_of_another_tree_changes_nothing),
        cmocka_unit_test(childs_snapshot_holds_what_it_inherited_and_still_holds),
        cmocka_unit_test(snapshot_before_the_childs_first_call_holds_all_it_inherited),
        cmocka_unit_test(missing_trace_is_an_error),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
