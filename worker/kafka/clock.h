/* clock.h - the worker's monotonic clock: phase times, deadlines, rate
 * limits and the hung-job rule all read this one. */
#ifndef IB_KAFKA_CLOCK_H
#define IB_KAFKA_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in microseconds. */
uint64_t ib_wnow_us(void);

#endif
