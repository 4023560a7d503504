#include "kafka/hist.h"

/* 100 us to 30 s, enough for a queue wait as for a large decode-encode. */
static const uint64_t bounds_us[IB_HIST_BUCKETS] = {
    100,    250,    500,    1000,    2500,    5000,    10000,    25000,   50000,
    100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000};

void ib_hist_observe(ib_hist *h, uint64_t us) {
  size_t i = 0;
  while (i < IB_HIST_BUCKETS && us > bounds_us[i]) i++;
  h->counts[i]++;
  h->n++;
  h->sum_us += us;
}

uint64_t ib_hist_bound_us(size_t i) { return bounds_us[i]; }
