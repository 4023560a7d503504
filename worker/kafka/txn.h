/* txn.h - --transactional (txn.c). */
#ifndef IB_KAFKA_TXN_H
#define IB_KAFKA_TXN_H

#include "kafka/wstate.h"

bool ib_wtxn_init(ib_worker *w);
/* Opens a transaction if none is (every produce goes into one). */
bool ib_wtxn_begin(ib_worker *w);
/* Sends the watermarks' offsets and commits; aborts (and re-sends its
 * Results later) when the transaction cannot commit. */
void ib_wtxn_commit(ib_worker *w);
/* Partitions lost: the open transaction cannot commit their offsets. */
void ib_wtxn_lost(ib_worker *w);

#endif
