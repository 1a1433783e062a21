/* tests/unit/test_live_table.c: the analysis' live blocks by id
 * (postproc/analyze/live_table.c), whose table doubles in place from 2 MiB
 * on. Every block inserted is found with its word after every doubling
 * (1,600,000 blocks: five copied doublings, then five in place, clusters
 * wrapping past the end of the table among them); removed blocks stay
 * gone, the others found, when removals and doublings interleave; ids
 * that differ only in their high bits or only by 16 bytes (as block
 * addresses do) are kept apart. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "live_table.h"

#define NBLOCKS 1600000u

/* Block-like ids: 16-byte aligned, spread over a few "arenas". */
static uint64_t id_of(uint64_t i)
{
    return 0x7f0000000000ull + (i % 7) * 0x100000000ull + (i / 7) * 48;
}

static uint64_t word_of(uint64_t i)
{
    return i << 24 | (i % 1000 + 1); /* never 0 */
}

/* Every block of 0..n-1 (but the removed, every `gone`-th, if gone) is
 * found with its word; the removed ones are not. */
static void assert_all_found(const at_live_table *t, uint64_t n, uint64_t gone)
{
    for (uint64_t i = 0; i < n; i++) {
        at_live_slot *s = at_live_find(t, id_of(i));
        if (gone && i % gone == 0) {
            assert_null(s);
            continue;
        }
        assert_non_null(s);
        assert_int_equal(s->id, id_of(i));
        assert_int_equal(s->packed, word_of(i));
    }
}

static void every_block_survives_every_doubling(void **state)
{
    (void)state;
    at_live_table t;
    at_live_init(&t);
    size_t doublings = 0, in_place = 0;
    for (uint64_t i = 0; i < NBLOCKS; i++) {
        size_t cap = t.cap;
        bool was_mapped = t.mapped;
        at_live_insert(&t, id_of(i), word_of(i));
        if (t.cap != cap) {
            doublings++;
            in_place += was_mapped;
            assert_all_found(&t, i + 1, 0);
        }
    }
    assert_int_equal(t.n, NBLOCKS);
    assert_int_equal(doublings, 11); /* the first table, five copies, five in place */
    assert_int_equal(in_place, 5);
    assert_true(t.mapped);
    assert_all_found(&t, NBLOCKS, 0);
    size_t used = 0;
    for (size_t i = 0; i < t.cap; i++)
        used += t.slots[i].packed != 0;
    assert_int_equal(used, NBLOCKS); /* no block twice */
    at_live_free(&t);
}

static void removals_between_doublings_stay_removed(void **state)
{
    (void)state;
    at_live_table t;
    at_live_init(&t);
    uint64_t removed = 0;
    for (uint64_t i = 0; i < NBLOCKS / 2; i++) {
        at_live_insert(&t, id_of(i), word_of(i));
        if (i % 3 == 0) { /* every third leaves again, a few calls later */
            uint64_t k = i >= 30 ? i - 30 : i;
            if (k % 3 == 0 && at_live_find(&t, id_of(k))) {
                at_live_remove(&t, at_live_find(&t, id_of(k)));
                removed++;
            }
        }
    }
    for (uint64_t k = NBLOCKS / 2 - 30; k < NBLOCKS / 2; k++) /* the last of them */
        if (k % 3 == 0 && at_live_find(&t, id_of(k))) {
            at_live_remove(&t, at_live_find(&t, id_of(k)));
            removed++;
        }
    assert_int_equal(t.n, NBLOCKS / 2 - removed);
    assert_true(t.mapped);
    assert_all_found(&t, NBLOCKS / 2, 3);
    at_live_free(&t);
}

static void ids_that_differ_in_high_bits_only_are_kept_apart(void **state)
{
    (void)state;
    at_live_table t;
    at_live_init(&t);
    for (uint64_t i = 0; i < 300000; i++)
        at_live_insert(&t, (i + 1) << 32, i + 1);
    for (uint64_t i = 0; i < 300000; i++) {
        at_live_slot *s = at_live_find(&t, (i + 1) << 32);
        assert_non_null(s);
        assert_int_equal(s->packed, i + 1);
    }
    assert_null(at_live_find(&t, 300001ull << 32));
    assert_null(at_live_find(&t, 1));
    at_live_free(&t);
}

static void an_empty_table_finds_nothing(void **state)
{
    (void)state;
    at_live_table t;
    at_live_init(&t);
    assert_null(at_live_find(&t, 0x1000));
    at_live_prefetch(&t, 0x1000); /* no table: nothing to touch */
    at_live_free(&t);
    assert_int_equal(t.cap, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_block_survives_every_doubling),
        cmocka_unit_test(removals_between_doublings_stay_removed),
        cmocka_unit_test(ids_that_differ_in_high_bits_only_are_kept_apart),
        cmocka_unit_test(an_empty_table_finds_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
