/*
 * preload/clock.c: the time of records, and leaks mode's order of
 * allocations.
 *
 * A vDSO clock_gettime costs 11-38 ns an event; reading the TSC ~12 ns
 * less on the machines measured, and what counts more, its value needs no
 * shared memory. So where the TSC is invariant (CPUID 0x80000007 EDX bit
 * 8: constant rate, runs in every C-state) and the kernel still lists it
 * as a usable clock source (it drops it when it finds the cores'
 * counters out of step) the tracer reads it, and else the clock.
 *
 * Time of a record (at_now_us): ticks are turned into nanoseconds from a
 * per-thread anchor (clock and TSC read together) with a global rate. Both
 * are renewed from the clock every 2^31 ticks (under a second), and the
 * rate is measured over the whole run so far, so it only gets better; the
 * run's first tenth of a second, too short to measure a rate, reads the
 * clock. An anchor is the clock read between two TSC readings close
 * together (not a preempted read). A renewed anchor may step the time by
 * the rate's error over that second, a few microseconds at most.
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
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "tracer.h"

#define KEY_SHIFT 6            /* grain: 64 ticks, ~20 ns */
#define ANCHOR_TICKS (1ull << 31)
#define FIRST_RATE_NS 100000000ull   /* measure the rate over 0.1 s at least */
#define PAIR_GAP_TICKS 4096          /* ~1-2 us: the clock read without a preemption */

static int tsc_ok;
static int64_t gmtoff_us;
static uint64_t start_tsc, start_ns;   /* read together at start-up */
static uint64_t rate_q32;              /* ns per tick << 32; 0: not known yet */
static uint64_t order_seq;             /* keys without an invariant TSC */

static __thread uint64_t anchor_tsc AT_TLS, anchor_ns AT_TLS, last_key AT_TLS;

static int tsc_invariant(void)
{
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

/* The clock, read with the TSC to renew this thread's anchor and the
 * rate; in the first tenth of a second, too short to measure the rate,
 * the clock alone. */
static __attribute__((noinline)) uint64_t renew_anchor(void)
{
    uint64_t ns, t;
    if (!__atomic_load_n(&rate_q32, __ATOMIC_RELAXED) &&
        (ns = clock_ns()) - start_ns < FIRST_RATE_NS)
        return ns;
    read_pair(&ns, &t);
    anchor_ns = ns;
    anchor_tsc = t;
    __atomic_store_n(&rate_q32, rate_since_start(ns, t), __ATOMIC_RELAXED);
    return ns;
}

uint64_t at_now_us(void)
{
    uint64_t ns;
    if (!tsc_ok) {
        ns = clock_ns();
    } else {
        uint64_t d = __rdtsc() - anchor_tsc;
        uint64_t rate = __atomic_load_n(&rate_q32, __ATOMIC_RELAXED);
        ns = rate && d < ANCHOR_TICKS && anchor_ns
                 ? anchor_ns + (uint64_t)(((unsigned __int128)d * rate) >> 32)
                 : renew_anchor();
    }
    return (uint64_t)((int64_t)(ns / 1000) + gmtoff_us);
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
    static uint64_t end_rate;   /* measured over the whole run, once */
    if (!end_rate) {
        uint64_t ns, t;
        read_pair(&ns, &t);
        end_rate = rate_since_start(ns, t);
    }
    unsigned __int128 ticks = (unsigned __int128)key << KEY_SHIFT;
    int64_t d_ns = ticks >= start_tsc
                       ? (int64_t)(((ticks - start_tsc) * end_rate) >> 32)
                       : -(int64_t)(((start_tsc - ticks) * end_rate) >> 32);
    return (uint64_t)(((int64_t)start_ns + d_ns) / 1000 + gmtoff_us);
}
