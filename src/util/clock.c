/*
 * clock.c - the only place that reads clocks (see clock.h). The core never calls these:
 * time is its argument, which is what lets docket-sim run it on a virtual clock.
 */
#define _POSIX_C_SOURCE 200809L
#include "util/clock.h"

#include <time.h>

static struct timespec read_clock(clockid_t id)
{
    struct timespec ts = {0, 0};

    (void)clock_gettime(id, &ts); /* cannot fail for these two clocks on Linux */
    return ts;
}

int64_t clock_now_ms(void)
{
    struct timespec ts = read_clock(CLOCK_REALTIME);

    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_mono_ms(void)
{
    struct timespec ts = read_clock(CLOCK_MONOTONIC);

    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_mono_us(void)
{
    struct timespec ts = read_clock(CLOCK_MONOTONIC);

    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
