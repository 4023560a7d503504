/* phase.h - where a job's time goes between fetch and settle (IB_WP_*),
 * summed per status line. */
#ifndef IB_KAFKA_PHASE_H
#define IB_KAFKA_PHASE_H

#include "kafka/wstate.h"

/* Adds one job's time in a phase, from since_us to now (0 or a time in
 * the future: nothing). */
void ib_wphase(ib_worker *w, int phase, uint64_t since_us);
/* Adds one job's time in a phase, measured by the caller. */
void ib_wphase_add(ib_worker *w, int phase, uint64_t us);
/* The mean time in a phase since the last status line; 0 with no job. */
uint64_t ib_wphase_avg(const ib_worker *w, int phase);

#endif
