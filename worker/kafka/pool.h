/* pool.h - the encode pool (pool.c): `threads` workers preparing Results
 * off the driving thread. */
#ifndef IB_KAFKA_POOL_H
#define IB_KAFKA_POOL_H

#include "kafka/hist.h"
#include "kafka/publish.h"
#include "kafka/wstate.h"

ib_wpool *ib_wpool_new(const ib_worker *w, int threads);
void ib_wpool_free(ib_wpool *p);
/* Queues a Result (takes o). */
void ib_wpool_push(ib_wpool *p, ib_wout *o);
/* Prepared Results, in any order (NULL-terminated list); caller owns. */
ib_wout *ib_wpool_take(ib_wpool *p);
size_t ib_wpool_outstanding(ib_wpool *p);
/* The encode pool's histogram of ib_wout_prepare times (a copy). */
void ib_wpool_encode_hist(ib_wpool *p, ib_hist *out);

#endif
