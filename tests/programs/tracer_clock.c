/*
 * tests/programs/tracer_clock.c: two threads take turns allocating (each
 * waits for the other's allocation before its own), COUNT blocks of
 * 1000 + i bytes, 4 ms apart, none freed: past the tracer's first tenth of
 * a second and past its clock anchors' renewal. Each allocation is
 * bracketed by the local time of day read before and after it; printed at
 * the end as "i BEFORE_US AFTER_US" lines, without stdio.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define COUNT 300

static void *volatile blocks[COUNT];
static uint64_t before[COUNT], after[COUNT];
static volatile int turn;   /* the next i to allocate */

static uint64_t day_us(void)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    return (uint64_t)((tm.tm_hour * 60 + tm.tm_min) * 60 + tm.tm_sec) * 1000000 +
           (uint64_t)ts.tv_nsec / 1000;
}

static void *take_turns(void *arg)
{
    int parity = (int)(intptr_t)arg;
    for (int i = parity; i < COUNT; i += 2) {
        while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != i)
            sched_yield();
        struct timespec pause = { 0, 4000000 };
        nanosleep(&pause, NULL);
        before[i] = day_us();
        blocks[i] = malloc(1000 + (size_t)i);
        after[i] = day_us();
        __atomic_store_n(&turn, i + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, take_turns, (void *)1) != 0)
        return 1;
    take_turns((void *)0);
    pthread_join(t, NULL);
    for (int i = 0; i < COUNT; i++) {
        char line[64];
        int n = snprintf(line, sizeof line, "%d %llu %llu\n", i,
                         (unsigned long long)before[i], (unsigned long long)after[i]);
        if (write(1, line, (size_t)n) != n)
            return 1;
    }
    return 0;
}
