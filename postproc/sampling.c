/*
 * postproc/sampling.c: a sampled call's weight (sampling.h).
 *
 * p = 1 - exp(-s/I) is computed as -expm1(-s/I), which keeps its digits
 * when s is far smaller than I (p close to s/I); the random rounding draws
 * from a 64-bit mix of the call's index, so the same call always gets the
 * same weight and neighbouring calls independent ones.
 */
#include "sampling.h"

#include <math.h>
#include <stdio.h>

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t at_sampling_weight(uint64_t interval, uint64_t size, uint64_t index)
{
    if (!interval || !size)
        return 1;
    double p = -expm1(-(double)size / (double)interval);
    if (!(p > 0))
        return 1;
    double w = 1.0 / p;
    if (w >= 1e18)
        return (uint64_t)1e18;
    uint64_t whole = (uint64_t)w;
    double frac = w - (double)whole;
    double u = (double)(mix(index) >> 11) * 0x1.0p-53;   /* [0, 1) */
    return whole + (u < frac);
}

const char *at_sampling_note(uint64_t interval)
{
    static char note[96];
    snprintf(note, sizeof note, "estimated from a sample, one in %llu bytes on average",
             (unsigned long long)interval);
    return note;
}
