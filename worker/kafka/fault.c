/*
 * fault.c - the worker-fault policy. Worker faults (device, host
 * allocation, output sink) never become error Results: the job is
 * resubmitted alone, judged the job's own fault after FAULTS_PER_JOB
 * attempts while others succeed, or the worker stops on a sticky fault so
 * the group moves its partitions.
 *
 * Mutual recursion with publish.c: a job judged at fault is answered
 * through ib_wpublish_error, and a publish that cannot pack its Result
 * (out of memory) is a worker fault again (ib_wjob_fault), one round per
 * failed pack.
 */
#include "kafka/fault.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kafka/clock.h"
#include "kafka/json_escape.h"
#include "kafka/log.h"
#include "kafka/publish.h"
#include "kafka/track.h"
#include "kafka/wstate.h"

#define FAULTS_PER_JOB 3 /* a fault that follows one job is that job's (README) */
#define STICKY_FAULTS 5  /* solo retries failing in a row: the worker is sick */

static const char *const fault_names[IB_WF_N] = {"device", "internal", "alloc",
                                                 "encode", "sink",     "other"};

int ib_wfault_index(const char *kind) {
  for (int i = 0; i < IB_WF_OTHER; i++)
    if (strcmp(kind, fault_names[i]) == 0) return i;
  return IB_WF_OTHER;
}

const char *ib_wfault_name(int index) { return fault_names[index]; }

void ib_wjob_fault(ib_worker *w, ib_wjob *j, const char *kind, const char *msg) {
  w->counters[IB_WC_FAULTS]++;
  w->faults[ib_wfault_index(kind)]++;
  /* Only a job that faults alone (a retry, fed with nothing else in the
   * executor) says something about the worker: a first fault may have been
   * another job's, grouped into the same submission. */
  if (j->faults > 0) w->consecutive_faults++;
  if (j->faults == 0) j->fault_seq = w->started;
  j->faults++;
  char m[700];
  ib_wlog(w, "error", "fault",
          "\"kind\":\"%s\",\"partition\":%" PRId32 ",\"offset\":%" PRId64
          ",\"attempts\":%d,\"message\":\"%s\"",
          kind, j->partition, j->offset, j->faults, ib_json_escape(m, sizeof m, msg));
  /* Other jobs succeeded if one started after this one's first fault did
   * (a job started before it may still be publishing: it proves nothing). */
  if (j->faults >= FAULTS_PER_JOB && w->last_success_seq > j->fault_seq) {
    char why[320];
    snprintf(why, sizeof why, "%s fault on each of %d attempts while other jobs succeeded: %.200s",
             kind, j->faults, msg);
    ib_wpublish_error(w, j, IB_INTERNAL, IB_STAGE_EXECUTE, why);
    return;
  }
  if (w->consecutive_faults >= STICKY_FAULTS) {
    /* Sticky: this job stays uncommitted; the worker stops (its caller
     * sees w->sick) so the group gives its partitions to healthy workers. */
    j->state = IB_WJOB_WAITING;
    ib_wq_push_front(&w->retry, j);
    w->sick = true;
    return;
  }
  j->state = IB_WJOB_WAITING;
  uint64_t backoff = 100000u << (j->faults < 5 ? j->faults : 5);
  j->not_before_us = ib_wnow_us() + backoff;
  w->counters[IB_WC_RETRIES]++;
  ib_wq_push(&w->retry, j);
}

void ib_wjob_succeeded(ib_worker *w, const ib_wjob *j) {
  if (j->start_seq > w->last_success_seq) w->last_success_seq = j->start_seq;
  w->consecutive_faults = 0;
}
