/* hist.h - latency histograms with fixed buckets, microseconds: the
 * worker's queue and execute times and the encode pool's prepare times,
 * published on /metrics. */
#ifndef IB_KAFKA_HIST_H
#define IB_KAFKA_HIST_H

#include <stddef.h>
#include <stdint.h>

/* Buckets with an upper bound, then one for +Inf; counts per bucket, not
 * cumulative. */
#define IB_HIST_BUCKETS 17
typedef struct ib_hist {
  uint64_t counts[IB_HIST_BUCKETS + 1];
  uint64_t n, sum_us;
} ib_hist;

void ib_hist_observe(ib_hist *h, uint64_t us);
/* The upper bound of bucket i < IB_HIST_BUCKETS, microseconds. */
uint64_t ib_hist_bound_us(size_t i);

#endif
