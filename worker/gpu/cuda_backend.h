/*
 * cuda_backend.h - the CUDA backend (ib_backend_cuda) and what tools ask of it.
 *
 * A submission is several admitted jobs: their sources are decoded or copied
 * straight into one pinned staging block together with every stage's
 * parameter block and the launch descriptor tables, and ONE host-to-device
 * copy moves all of it - except raw sources that already lie in pinned
 * memory (Jobs unpacked by ib_executor_parse), each copied from where it
 * lies; then, level by level (stage k of every job), one launch per chain
 * signature runs that stage for every job of the signature through a
 * descriptor table (small images batch into one launch); resident outputs
 * are copied into their own allocations; ONE device-to-host copy brings
 * every other terminal image into the submission's download arena, whose
 * ranges are lent to the results (no host copy); ONE event completes the
 * submission (the passes: cuda_internal.h). Launch arguments point into the
 * submission's own device block, which nothing else reuses before wait, so a
 * later enqueue can never overwrite an earlier launch's parameters.
 * Device and pinned blocks come from size-class pools (no cuMemAlloc or
 * cuMemHostAlloc per job in steady state). Up to max_in_flight submissions
 * overlap on their own streams.
 */
#ifndef IB_GPU_CUDA_BACKEND_H
#define IB_GPU_CUDA_BACKEND_H

#include "exec/backend.h"

extern const ib_backend ib_backend_cuda;

typedef struct ib_cuda ib_cuda;

ib_status ib_cuda_open(const ib_executor_options *opts, ib_cuda **out, ib_error *err);
void ib_cuda_close(ib_cuda *c);
/* The allocator ib_executor_parse unpacks Jobs with (pinned.h): tools that
 * drive the backend directly parse with it to get pinned sources. */
ProtobufCAllocator *ib_cuda_parse_allocator(ib_cuda *c);

/* Conservative bytes one job needs (device working set and pinned staging),
 * for credit charging; IB_UNSUPPORTED when the graph has no device plan. */
ib_status ib_cuda_job_bytes(const ib_graph *g, uint64_t *gpu_bytes, uint64_t *host_bytes,
                            ib_error *err);

/* With cuda_profile set at open: logs (INFO, log_cb) the host time per job
 * of each phase since the last report (plan, staging, launch, blocked on
 * the device, result copies), then resets. */
void ib_cuda_profile_report(ib_cuda *c, const char *label);
/* With cuda_profile: resets the profile (nothing in flight) and starts a
 * timeline of the next submissions (at most 64), logged by the next
 * report: per submission its jobs and pipeline pieces, the host times of
 * its submit, first enqueue, return and wait, the device times its
 * uploads began and ended and its last download ended (timing events),
 * and the device and pinned blocks it allocated fresh. Returns the
 * timeline's origin (CLOCK_MONOTONIC seconds), 0 without cuda_profile. */
double ib_cuda_profile_reset(ib_cuda *c);

/* Diagnostics for bench/tests: "NVIDIA H200, sm_90, 132 SMs". */
const char *ib_cuda_device_desc(const ib_cuda *c);

#endif
