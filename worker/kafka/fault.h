/* fault.h - the worker-fault policy (fault.c): what a device, allocation
 * or output-sink fault does to its job and to the worker. */
#ifndef IB_KAFKA_FAULT_H
#define IB_KAFKA_FAULT_H

#include "kafka/wstate.h"

/* A worker fault met by job j: no Result, no commit; the job is
 * resubmitted, judged alone, or the worker stops on a sticky fault. */
void ib_wjob_fault(ib_worker *w, ib_wjob *j, const char *kind, const char *msg);
/* A job's Result went out: the worker worked for a job started then. */
void ib_wjob_succeeded(ib_worker *w, const ib_wjob *j);
/* IB_WF_* for a fault kind named by ib_wjob_fault's callers. */
int ib_wfault_index(const char *kind);
/* The kind as /metrics labels it, for an IB_WF_* index. */
const char *ib_wfault_name(int index);

#endif
