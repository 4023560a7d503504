/*
 * config.h - the executor's tuning and test settings (internal): what an
 * ib_config of imgbatch.h holds. Users set them by name with
 * ib_config_set; the library reads them from this struct. Each key, its
 * range and its effect: docs/tuning.md.
 */
#ifndef IB_EXEC_CONFIG_H
#define IB_EXEC_CONFIG_H

#include "imgbatch.h"

struct ib_config {
  bool cuda_profile;          /* cuda: time the host side of submissions, logged at close */
  bool cuda_blur_global_rows; /* cuda: force the global-memory blur passes */
  uint32_t cuda_pieces;       /* cuda: streams a submission of small jobs is split over */
  uint32_t cuda_batch_min;    /* cuda: upload copies batched into one call, at least */
  int32_t cuda_pipe_kib;      /* cuda: pipeline piece size in KiB; -1 = no pipeline */
  uint32_t compile_queue;     /* cuda: compile pool bound (signatures) */
  uint32_t ramp_jobs;         /* device backends: first submission size of the start ramp */
  bool host_stream;           /* host backends: one job per submission, each result handed back
                               * before the next job runs */
};

/* Every setting at its default. */
void ib_config_defaults(ib_config *c);

/* The settings `opts` carries (opts->config), or the defaults when it
 * carries none. Never NULL; borrowed. */
const ib_config *ib_config_of(const ib_executor_options *opts);

#endif
