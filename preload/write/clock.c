/*
 * preload/write/clock.c: the time of records, and leaks mode's order of
 * allocations.
 *
 * A vDSO clock_gettime costs 11-38 ns an event; reading the TSC ~12 ns
 * less on the machines measured, and what counts more, its value needs no
 * shared memory. So where the TSC is invariant (CPUID 0x80000007 EDX bit
 * 8: constant rate, runs in every C-state) and the kernel still lists it
 * as a usable clock source (it drops it when it finds the cores'
 * counters out of step) the tracer reads it, and else the clock.
 *
 * Time of a record in full mode (at_clock_stamp): the TSC alone, one
 * rdtsc on the hot path. The writer turns the stamps of a chunk into
 * times off the hot path (at_clock_conv, at_stamp_us in tracer.h), with
 * the rate measured from start-up to that moment: a stamp lies between
 * the two clock-and-TSC pairs the rate is drawn from, so its time is off
 * by no more than the pairs' own error (a microsecond or two), however
 * short the run; the next chunk's better rate may step the time by as
 * much. (Reading the clock until a rate was known, as before, cost a
 * vDSO clock_gettime per event for a run's first tenth of a second: all
 * of a short program's events.) Without an invariant TSC a stamp is the
 * time itself, from the clock.
 *
 * Order in leaks mode (at_order_key): a live block's key is the TSC at its
 * allocation, strictly increasing on each thread. Threads share nothing,
 * so the cost does not grow with them, and the order of keys is the true
 * order: two allocations one of which happened before the other (through a
 * lock, the allocator, a release store) are tens of nanoseconds apart at
 * least, more than the key's grain. live.c sorts by key at exit; the time
 * of a key is computed then, with the rate measured over the whole run, so
 * leaks mode reads no clock per event at all. Without an invariant TSC the
 * key is a shared count of events drawn here (an atomic add; the
 * writer's index is a layer above) and the time the clock's.
 */
#include <cpuid.h>
#include <fcntl.h>
#include <string.h>
#include <sys/platform/x86.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "tracer.h"

#define KEY_SHIFT 6            /* grain: 64 ticks, ~20 ns */
#define PAIR_GAP_TICKS 4096    /* ~1-2 us: the clock read without a preemption */

static int tsc_ok;
static int64_t gmtoff_us;
static uint64_t start_tsc, start_ns;   /* read together at start-up */
static uint64_t order_seq;             /* keys without an invariant TSC */

static __thread uint64_t last_key AT_TLS;

/* glibc read CPUID at start-up and keeps the answers (2.33 and later):
 * asking it costs nothing, while each CPUID instruction in a virtual
 * machine is a VM exit, ~26 us on this project's machines, and
 * __get_cpuid costs two. The instruction only when that glibc is absent
 * (the reference is weak, so the tracer still loads under an older one). */
extern __typeof__(__x86_get_cpuid_feature_leaf) __x86_get_cpuid_feature_leaf
    __attribute__((weak));

static int tsc_invariant(void)
{
    if (__x86_get_cpuid_feature_leaf)
        return CPU_FEATURE_PRESENT(INVARIANT_TSC) != 0;
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1;
}

/* The kernel drops "tsc" from its usable clock sources when it finds the
 * cores' counters out of step (or jumping) despite the CPUID bit; then
 * keys of two cores would not compare. No sysfs: the bit decides. */
static int kernel_keeps_tsc(void)
{
    int fd = open("/sys/devices/system/clocksource/clocksource0/available_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    char b[256];
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n <= 0)
        return 1;
    b[n] = 0;
    for (char *p = b; (p = strstr(p, "tsc")) != NULL; p += 3)
        if ((p == b || p[-1] == ' ') && (p[3] == ' ' || p[3] == '\n' || p[3] == 0))
            return 1;
    return 0;
}

static uint64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The clock and the TSC at one moment: the TSC is read on both sides of
 * the clock, and of up to four tries the one with the shortest gap is
 * kept, so a thread preempted in between does not shift its anchor. */
static void read_pair(uint64_t *ns, uint64_t *tsc)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 4 && best > PAIR_GAP_TICKS; i++) {
        uint64_t t0 = __rdtsc(), c = clock_ns(), t1 = __rdtsc();
        if (t1 - t0 < best) {
            best = t1 - t0;
            *ns = c;
            *tsc = t0 + (t1 - t0) / 2;
        }
    }
}

void at_clock_start(int64_t offset_us)
{
    gmtoff_us = offset_us;
    tsc_ok = tsc_invariant() && kernel_keeps_tsc();
    read_pair(&start_ns, &start_tsc);
}

int at_clock_tsc(void)
{
    return tsc_ok;
}

/* ns per tick, <<32, measured from start-up to (now_ns, now_tsc). */
static uint64_t rate_since_start(uint64_t now_ns, uint64_t now_tsc)
{
    if (now_tsc <= start_tsc || now_ns <= start_ns)
        return 0;
    return (uint64_t)(((unsigned __int128)(now_ns - start_ns) << 32) / (now_tsc - start_tsc));
}

uint64_t at_now_us(void)
{
    return (uint64_t)((int64_t)(clock_ns() / 1000) + gmtoff_us);
}

uint64_t at_clock_stamp(void)
{
    return tsc_ok ? __rdtsc() : at_now_us();
}

void at_clock_conv(struct at_stamp_conv *c)
{
    c->tsc = tsc_ok;
    c->tsc0 = start_tsc;
    c->ns0 = start_ns;
    c->gmtoff_us = gmtoff_us;
    c->rate_q32 = 0;
    if (tsc_ok) {
        uint64_t ns, t;
        read_pair(&ns, &t);
        c->rate_q32 = rate_since_start(ns, t);
    }
}

/* 2^31 ticks: 0.5 to 1 s on 2 to 4 GHz counters, near enough for an age. */
uint64_t at_clock_stamp_second(void)
{
    return tsc_ok ? 1ull << 31 : 1000000;
}

uint64_t at_order_key(void)
{
    if (!tsc_ok)   /* a shared count of its own: the writer is above */
        return __atomic_add_fetch(&order_seq, 1, __ATOMIC_RELAXED);
    uint64_t k = __rdtsc() >> KEY_SHIFT;
    if (k <= last_key)
        k = last_key + 1;
    last_key = k;
    return k;
}

uint64_t at_order_key_us(uint64_t key)
{
    static struct at_stamp_conv end;   /* the rate over the whole run, once */
    static int measured;
    if (!measured) {
        at_clock_conv(&end);
        measured = 1;
    }
    return at_stamp_us(&end, key << KEY_SHIFT);
}
