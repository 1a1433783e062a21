/*
 * postproc/sampling.h: the one place where a sampled trace's calls become
 * estimates (docs/exports.md, "Sampled traces").
 *
 * A trace taken with --sample I (header "sampling interval=I") holds each
 * allocation of s bytes with probability p = 1 - exp(-s/I), and the
 * release of every block it holds. Each sampled block then stands for
 * 1/p blocks of its size: counting it 1/p times makes every total - calls,
 * bytes, live bytes, leaks, per site, per context, per size class - an
 * unbiased estimate (Horvitz-Thompson), as Go, jemalloc and heapprofd scale
 * their samples.
 *
 * Every analysis counts in integers, so the weight is an integer: 1/p
 * rounded down or up at random, up with probability its fraction, the
 * random number a hash of the call's index. Its expectation is still 1/p
 * (so estimates stay unbiased), it is the same for a call however often
 * it is looked at (the release of a block finds its allocation's weight
 * again), and an exact trace's weight is 1.
 */
#ifndef AT_SAMPLING_H
#define AT_SAMPLING_H

#include <stdint.h>

#include "trace.h"

/* The trace's sampling interval in bytes; 0 when every call is in it. */
static inline uint64_t at_sampling_interval(const at_trace *t)
{
    return t ? t->header.sample_interval : 0;
}

/* How many blocks an allocation of `size` bytes, the call numbered `index`,
 * stands for in a trace sampled every `interval` bytes (1 when interval is
 * 0, or for a size the sampler never picks). */
uint64_t at_sampling_weight(uint64_t interval, uint64_t size, uint64_t index);

/* The words the outputs put beside estimated numbers:
 * "estimated from a sample, one in 524288 bytes on average" (static). */
const char *at_sampling_note(uint64_t interval);

#endif
