/*
 * tests/unit/test_sampling.c: the weight of a sampled call
 * (postproc/sampling.c): 1 in an exact trace, its mean 1/(1 - exp(-s/I))
 * over many calls, the same for a call each time it is asked.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sampling.h"

static void test_exact_trace_weighs_one(void **state)
{
    (void)state;
    for (uint64_t i = 1; i < 100; i++)
        assert_int_equal(at_sampling_weight(0, i * 37, i), 1);
    assert_int_equal(at_sampling_weight(4096, 0, 5), 1);   /* never picked: no weight */
}

static void test_mean_weight_is_the_inverse_probability(void **state)
{
    (void)state;
    const uint64_t interval = 524288;
    const uint64_t sizes[] = { 1, 48, 1000, 65536, 524288, 4 << 20 };
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        double want = 1.0 / -expm1(-(double)sizes[k] / (double)interval), sum = 0;
        const int n = 200000;
        for (int i = 0; i < n; i++) {
            uint64_t w = at_sampling_weight(interval, sizes[k], (uint64_t)i + 1);
            assert_true((double)w >= floor(want) && (double)w <= ceil(want));
            sum += (double)w;
        }
        assert_true(fabs(sum / n - want) < want * 1e-3);
    }
}

static void test_a_call_always_gets_the_same_weight(void **state)
{
    (void)state;
    for (uint64_t i = 1; i < 1000; i++)
        assert_int_equal(at_sampling_weight(65536, 40000, i), at_sampling_weight(65536, 40000, i));
}

static void test_large_blocks_weigh_one(void **state)
{
    (void)state;
    assert_int_equal(at_sampling_weight(512 * 1024, 64ull << 20, 9), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_trace_weighs_one),
        cmocka_unit_test(test_mean_weight_is_the_inverse_probability),
        cmocka_unit_test(test_a_call_always_gets_the_same_weight),
        cmocka_unit_test(test_large_blocks_weigh_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
