/* tests/unit/test_model.c: interned stacks, the map table, frame reading. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "maps.h"
#include "stack.h"
#include "xalloc.h"

static void equal_frame_lists_intern_to_one_stack(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_frame a[] = { { 0x10, NULL }, { 0x20, "main() at m.c:3" } };
    at_frame b[] = { { 0x10, NULL }, { 0x20, "main() at m.c:3" } };
    const at_stack *s1 = at_stacks_intern(t, a, 2);
    const at_stack *s2 = at_stacks_intern(t, b, 2);
    assert_ptr_equal(s1, s2);
    assert_int_equal(at_stacks_count(t), 1);
    assert_string_equal(s1->frames[1].text, "main() at m.c:3");
    assert_ptr_not_equal(s1->frames[1].text, a[1].text); /* copied */
    at_stacks_free(t);
}

static void stacks_differing_in_text_or_length_are_distinct(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_frame a[] = { { 0x10, NULL }, { 0x20, NULL } };
    at_frame b[] = { { 0x10, "f() from x.so" }, { 0x20, NULL } };
    const at_stack *s1 = at_stacks_intern(t, a, 2);
    const at_stack *s2 = at_stacks_intern(t, b, 2);
    const at_stack *s3 = at_stacks_intern(t, a, 1);
    const at_stack *s4 = at_stacks_intern(t, NULL, 0);
    assert_ptr_not_equal(s1, s2);
    assert_ptr_not_equal(s1, s3);
    assert_int_equal(s4->nframes, 0);
    assert_int_equal(at_stacks_count(t), 4);
    assert_int_equal(s3->id, 2);
    assert_ptr_equal(at_stacks_get(t, 2), s3);
    at_stacks_free(t);
}

static void many_stacks_survive_table_growth(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    for (uint64_t i = 0; i < 5000; i++) {
        at_frame f = { i, NULL };
        assert_int_equal(at_stacks_intern(t, &f, 1)->id, i);
    }
    for (uint64_t i = 0; i < 5000; i++) {
        at_frame f = { i, NULL };
        assert_int_equal(at_stacks_intern(t, &f, 1)->id, i);
    }
    assert_int_equal(at_stacks_count(t), 5000);
    at_stacks_free(t);
}

/* at_xmap: whole pages, zeroed and writable to the last byte, present
 * at once or (at_xmap_lazy) on demand. */
static void mapped_memory_is_zeroed_and_whole(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    assert_int_equal(at_xmap_size(1), page);
    assert_int_equal(at_xmap_size(page), page);
    assert_int_equal(at_xmap_size(page + 1), 2 * page);
    size_t bytes = 3 * ((size_t)2 << 20) + 5;
    for (int lazy = 0; lazy < 2; lazy++) {
        unsigned char *p = lazy ? at_xmap_lazy(bytes) : at_xmap(bytes);
        if (lazy)
            at_xmap_populate(p, 5, 4 * page + 3);
        for (size_t i = 0; i < at_xmap_size(bytes); i += page)
            assert_int_equal(p[i], 0);
        assert_int_equal(p[at_xmap_size(bytes) - 1], 0);
        memset(p, 0xa5, at_xmap_size(bytes));
        assert_int_equal(p[at_xmap_size(bytes) - 1], 0xa5);
        at_xmap_free(p, bytes);
    }
}

/* Stacks over many of the arena's 2 MiB chunks, one stack bigger than a
 * chunk, and a table of slots past 2 MiB (a mapping of its own): every
 * stack found again by its frames and by its id, its frames intact. */
static void stacks_over_many_mapped_chunks_stay_intact(void **state)
{
    (void)state;
    enum { N = 150000, DEPTH = 12, BIG = 200000 };
    at_stack_table *t = at_stacks_new();
    static at_frame f[BIG];
    for (uint64_t i = 0; i < N; i++) {
        for (uint64_t k = 0; k < DEPTH; k++)
            f[k] = (at_frame){ i * 100 + k, NULL };
        assert_int_equal(at_stacks_intern(t, f, DEPTH)->id, i);
    }
    for (uint64_t k = 0; k < BIG; k++)
        f[k] = (at_frame){ 7 + k, NULL };
    const at_stack *big = at_stacks_intern(t, f, BIG); /* 3.2 MB of frames */
    assert_int_equal(big->id, N);
    for (uint64_t i = 0; i < N; i += 7) {
        for (uint64_t k = 0; k < DEPTH; k++)
            f[k] = (at_frame){ i * 100 + k, NULL };
        const at_stack *s = at_stacks_intern(t, f, DEPTH);
        assert_int_equal(s->id, i);
        assert_ptr_equal(at_stacks_get(t, (uint32_t)i), s);
        assert_int_equal(s->frames[DEPTH - 1].addr, i * 100 + DEPTH - 1);
    }
    assert_int_equal(big->frames[BIG - 1].addr, 7 + BIG - 1);
    assert_int_equal(at_stacks_count(t), N + 1);
    at_stacks_free(t);
}

/* A text shared by two stacks is kept once (stack.c's table of texts),
 * whoever handed it in. */
static void a_frame_text_is_kept_once_across_stacks(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    char text1[] = "std::vector<int>::push_back(int const&) at stl_vector.h:1287";
    char text2[] = "std::vector<int>::push_back(int const&) at stl_vector.h:1287";
    at_frame a[] = { { 0x10, text1 }, { 0x20, "main() at m.c:3" } };
    at_frame b[] = { { 0x11, text2 }, { 0x20, "main() at m.c:3" } };
    const at_stack *s1 = at_stacks_intern(t, a, 2);
    const at_stack *s2 = at_stacks_intern(t, b, 2);
    assert_ptr_not_equal(s1, s2);
    assert_ptr_equal(s1->frames[0].text, s2->frames[0].text);
    assert_ptr_equal(s1->frames[1].text, s2->frames[1].text);
    assert_string_equal(s2->frames[0].text, text2);
    at_stacks_free(t);
}

/* The stack hash samples a text (its ends, its middle, its length); texts
 * differing anywhere else still make distinct stacks, and each is found
 * again. */
static void stacks_whose_texts_differ_only_between_the_sampled_bytes_are_distinct(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    char text[] = "f<aaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb>() at x.cc:1";
    const at_stack *s[20];
    for (int i = 0; i < 20; i++) {
        text[12] = (char)('a' + i); /* outside the first, middle and last 8 bytes */
        at_frame f = { 0x10, text };
        s[i] = at_stacks_intern(t, &f, 1);
    }
    for (int i = 0; i < 20; i++) {
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(s[i], s[j]);
        text[12] = (char)('a' + i);
        at_frame f = { 0x10, text };
        assert_ptr_equal(at_stacks_intern(t, &f, 1), s[i]);
        assert_string_equal(s[i]->frames[0].text, text);
    }
    assert_int_equal(at_stacks_count(t), 20);
    at_stacks_free(t);
}

/* The resolver's way in (its texts the table's own, their hashes kept
 * beside them) finds the same stacks as the general one, both ways round. */
static void a_stack_interned_with_kept_texts_is_the_same_stack(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    char main_text[] = "main() at m.c:3";
    at_frame plain[] = { { 0x10, NULL }, { 0x20, "g(int) at g.cc:7" }, { 0x30, main_text } };
    const at_stack *s1 = at_stacks_intern(t, plain, 3);
    at_frame kept[3];
    uint64_t hashes[3];
    for (int i = 0; i < 3; i++) {
        kept[i] = (at_frame){ plain[i].addr, at_stacks_text(t, plain[i].text) };
        hashes[i] = at_stacks_text_hash(kept[i].text);
    }
    assert_ptr_equal(at_stacks_intern_kept(t, kept, hashes, 3), s1);
    /* a new one interned the kept way first is found the general way */
    kept[2].addr = 0x31;
    const at_stack *s2 = at_stacks_intern_kept(t, kept, hashes, 3);
    assert_ptr_not_equal(s2, s1);
    assert_ptr_equal(s2->frames[2].text, kept[2].text); /* not copied again */
    main_text[0] = 'm';
    at_frame again[] = { { 0x10, NULL }, { 0x20, "g(int) at g.cc:7" }, { 0x31, main_text } };
    assert_ptr_equal(at_stacks_intern(t, again, 3), s2);
    assert_ptr_equal(at_stacks_intern_kept(t, kept, hashes, 0), at_stacks_intern(t, NULL, 0));
    assert_int_equal(at_stacks_count(t), 3);
    at_stacks_free(t);
}

static void map_line_splits_at_last_arrow(void **state)
{
    (void)state;
    const char *line = "/opt/my => app/lib x.so => 0x7f00-0x7fff";
    const char *path;
    size_t plen;
    uint64_t start, end;
    assert_int_equal(at_maps_parse_line(line, strlen(line), &path, &plen, &start, &end), 0);
    assert_int_equal(plen, strlen("/opt/my => app/lib x.so"));
    assert_int_equal(start, 0x7f00);
    assert_int_equal(end, 0x7fff);
}

static void malformed_map_lines_are_rejected(void **state)
{
    (void)state;
    const char *bad[] = { "/lib.so => 0x10", "/lib.so 0x10-0x20", " => 0x10-0x20",
                          "/lib.so => 0x20-0x10", "/lib.so => 0x10-0x20junk",
                          "/lib.so => 0x11111111111111111-0x2" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *path;
        size_t plen;
        uint64_t s, e;
        assert_int_not_equal(at_maps_parse_line(bad[i], strlen(bad[i]), &path, &plen, &s, &e), 0);
    }
}

static void newest_map_covering_an_address_wins(void **state)
{
    (void)state;
    at_maps *m = at_maps_new();
    at_maps_add(m, "/old.so", 0x1000, 0x2000);
    at_maps_add(m, "/exe", 0x5000, 0x6000);
    assert_string_equal(at_maps_find(m, 0x1800)->path, "/old.so");
    at_maps_add(m, "/new.so", 0x1000, 0x3000);
    assert_string_equal(at_maps_find(m, 0x1800)->path, "/new.so");
    assert_null(at_maps_find(m, 0x4000));
    assert_null(at_maps_find(m, 0x6000)); /* end is exclusive */
    at_maps_free(m);
}

static void build_id_attaches_before_or_after_its_map(void **state)
{
    (void)state;
    at_maps *m = at_maps_new();
    at_maps_set_build_id(m, "/a.so", "abcd");
    const at_map *a = at_maps_add(m, "/a.so", 0, 0x10);
    const at_map *b = at_maps_add(m, "/b.so", 0x10, 0x20);
    at_maps_set_build_id(m, "/b.so", "ef01");
    assert_string_equal(a->build_id, "abcd");
    assert_string_equal(b->build_id, "ef01");
    at_maps_free(m);
}

static at_frame_info read1(at_stack_table *t, const at_maps *m, uint64_t addr, const char *text)
{
    at_frame f = { addr, text };
    at_frame_info info;
    at_frame_read(&f, m, t, &info);
    return info;
}

static void frame_at_file_line_is_read(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_frame_info i = read1(t, NULL, 1, "parse_config() at /home/u/app/src/config.c:88");
    assert_string_equal(i.function, "parse_config");
    assert_string_equal(i.file, "/home/u/app/src/config.c");
    assert_int_equal(i.line, 88);
    assert_false(i.inlined);
    at_stacks_free(t);
}

static void cxx_names_keep_their_parameter_list(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_frame_info i = read1(t, NULL, 1, "ns::Foo::bar(int) const at /src/a b.cc:12 [inlined]");
    assert_string_equal(i.function, "ns::Foo::bar(int) const");
    assert_string_equal(i.file, "/src/a b.cc");
    assert_int_equal(i.line, 12);
    assert_true(i.inlined);
    at_stacks_free(t);
}

static void frame_from_module_forms_are_read(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_frame_info a = read1(t, NULL, 1, "__libc_start_call_main() from /usr/lib/libc.so.6");
    assert_string_equal(a.function, "__libc_start_call_main");
    assert_string_equal(a.module, "/usr/lib/libc.so.6");
    assert_string_equal(a.file, "??");
    at_frame_info b = read1(t, NULL, 1, "from /usr/lib/libc.so.6");
    assert_string_equal(b.function, "??");
    assert_string_equal(b.module, "/usr/lib/libc.so.6");
    at_frame_info c = read1(t, NULL, 1, "in ??");
    assert_string_equal(c.function, "??");
    assert_string_equal(c.module, "??");
    assert_int_equal(c.line, 0);
    at_stacks_free(t);
}

static void unresolved_frame_takes_module_from_maps(void **state)
{
    (void)state;
    at_stack_table *t = at_stacks_new();
    at_maps *m = at_maps_new();
    at_maps_add(m, "/usr/bin/app", 0x400000, 0x500000);
    at_frame_info a = read1(t, m, 0x401234, NULL);
    assert_string_equal(a.module, "/usr/bin/app");
    assert_string_equal(a.function, "??");
    at_frame_info b = read1(t, m, 0x10, NULL);
    assert_string_equal(b.module, "??");
    at_maps_free(m);
    at_stacks_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(equal_frame_lists_intern_to_one_stack),
        cmocka_unit_test(stacks_differing_in_text_or_length_are_distinct),
        cmocka_unit_test(many_stacks_survive_table_growth),
        cmocka_unit_test(mapped_memory_is_zeroed_and_whole),
        cmocka_unit_test(stacks_over_many_mapped_chunks_stay_intact),
        cmocka_unit_test(a_frame_text_is_kept_once_across_stacks),
        cmocka_unit_test(stacks_whose_texts_differ_only_between_the_sampled_bytes_are_distinct),
        cmocka_unit_test(a_stack_interned_with_kept_texts_is_the_same_stack),
        cmocka_unit_test(map_line_splits_at_last_arrow),
        cmocka_unit_test(malformed_map_lines_are_rejected),
        cmocka_unit_test(newest_map_covering_an_address_wins),
        cmocka_unit_test(build_id_attaches_before_or_after_its_map),
        cmocka_unit_test(frame_at_file_line_is_read),
        cmocka_unit_test(cxx_names_keep_their_parameter_list),
        cmocka_unit_test(frame_from_module_forms_are_read),
        cmocka_unit_test(unresolved_frame_takes_module_from_maps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
