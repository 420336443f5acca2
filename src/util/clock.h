/*
 * clock.h - the only place that reads clocks, for the daemons and the CLI
 * (the core never does: time is its argument).
 */
#ifndef DOCKET_UTIL_CLOCK_H
#define DOCKET_UTIL_CLOCK_H

#include <stdint.h>

int64_t clock_now_ms(void);  /* CLOCK_REALTIME, ms since the Unix epoch */
int64_t clock_mono_ms(void); /* CLOCK_MONOTONIC, ms */
int64_t clock_mono_us(void); /* CLOCK_MONOTONIC, µs */

#endif
