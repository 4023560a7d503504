/*
 * backend.h - what the executor core asks of a backend (internal). The core
 * owns admission, credits, ids, windows and result delivery; a backend only
 * runs submissions: several admitted jobs enqueued together and completed
 * together. The CPU reference backend completes a submission inside submit;
 * the CUDA backend enqueues (upload, kernels, terminal copy, one event) and
 * completes in wait. Each job in a submission has its own buffers and
 * parameters; nothing of one job may be overwritten by a later enqueue.
 */
#ifndef IB_EXEC_BACKEND_H
#define IB_EXEC_BACKEND_H

#include "imgbatch.h"
#include "model/graph.h"

/* One job as the backend sees it. The core fills graph, job_id and
 * resident; the backend fills status/err and, on success, out (the terminal
 * image in host memory, owned by the job until the core hands it to a
 * result). A resident job (output gpu) instead keeps its terminal image on
 * the device: on success the backend sets out's mode/width/height with
 * out.data NULL and `dev` to its kept device buffer (opaque), which the
 * core owns from then on and gives back through release.
 *
 * Lent outputs: a backend may point out.data into memory of its own (a
 * submission's pinned download arena) instead of allocating: it then sets
 * `lent` to that memory's token (jobs of one submission share it), leaves
 * out.free_fn NULL, and gives the memory back when the core calls
 * lent_release(token) - once per token, after every image in it was
 * released. Renditions may be lent the same way (each image's data in the
 * token's memory, free_fn NULL). Only successful jobs carry a token; a
 * submission whose jobs all failed keeps no arena.
 *
 * Own-buffer outputs: where out_in_buffer says so, the backend downloads
 * the terminal image into the Job's own buffer (ib_executor_parse_buffer),
 * whose source pixels are dead once uploaded; it then sets `buffer_lent`,
 * and `lent` to a token of that job alone that frees the buffer on
 * lent_release. The core detaches the buffer from the graph before
 * freeing it. */
typedef struct ib_backend_job {
  const ib_graph *graph;
  uint64_t job_id;
  bool resident;
  ib_status status;
  ib_error err;
  ib_image out;
  void *dev;
  void *lent;
  bool buffer_lent;
  /* A graph with renditions: on success, one host image per rendition in
   * the Job's order (a malloc'd array the core takes; out stays empty),
   * owned or lent (above). A backend that cannot produce them rejects such
   * graphs in admit. */
  ib_image *renditions;
  size_t n_renditions;
  /* The core's, for ib_backend_job_started: a host backend
   * (host_working_set), which runs a submission's jobs one after another,
   * reports each one's start through it just before running it. NULL where
   * the core reported the start itself (a submission's first job, every
   * job of a device backend's submission) or nobody asked for starts. */
  const struct ib_start_sink *start;
  void *tag;
} ib_backend_job;

/* ib_executor_options.start_cb and its opaque. */
typedef struct ib_start_sink {
  ib_start_fn fn;
  void *opaque;
} ib_start_sink;

/* Reports j's start (a no-op where j->start is NULL). */
static inline void ib_backend_job_started(const ib_backend_job *j) {
  if (j->start) j->start->fn(j->start->opaque, j->job_id, j->tag);
}

/* Releases every rendition image and the array (failed or discarded jobs). */
void ib_renditions_release(ib_image **ims, size_t *n);

typedef struct ib_backend_submission ib_backend_submission;

typedef struct ib_backend {
  const char *name;
  /* Set for a backend whose working buffers live in host memory (the CPU
   * backend): the most bytes they hold at once while running `g`, which
   * the core charges to gpu_bytes and host_bytes alike (docs/credits.md). NULL for a device
   * backend. */
  uint64_t (*host_working_set)(const ib_graph *g);
  /* Creates backend state for an executor. */
  ib_status (*open)(const ib_executor_options *opts, void **state, ib_error *err);
  void (*close)(void *state);
  /* Optional (NULL accepts everything the registry validated): rejects, at
   * admission, a graph this backend cannot run - IB_UNSUPPORTED naming the
   * op/mode/param, IB_LIMIT for device bounds (grid, shared memory). Runs
   * on the driving thread, allocates no device memory, never decodes. */
  ib_status (*admit)(void *state, const ib_graph *g, ib_error *err);
  /* Optional: blocks until the backend's state may have changed (a
   * compile finished) or timeout_ms passed. The core calls it when admit
   * answered IB_QUEUE_FULL for a bound of the backend's own (its kernel
   * compile queue) while nothing of the executor is live, so no completion
   * will make room, and when only parked jobs (job_ready) are live
   * (timeout_ms 0: does not block, beside a source that may bring input at
   * any moment). False when nothing of the backend's can change it: the core then fails such
   * an input as it would any job that does not fit an idle executor, and
   * submits parked jobs as they are. */
  bool (*admit_wait)(void *state, int timeout_ms);
  /* Optional (a backend that compiles kernels off the submitting thread):
   * false while a kernel `g` needs is still compiling, so a submission
   * holding the job would wait for that compile, and every job beside it
   * too. Asked right after admit (which may have requested the compile),
   * so it can answer from what admit found for the same graph. The core
   * then parks the job: it keeps its credits, stays out of submissions
   * while the others go on, is asked about again once ready_epoch changed
   * and is answered IB_TIMEOUT at its deadline. Driving thread. */
  bool (*job_ready)(void *state, const ib_graph *g);
  /* With job_ready: a count that changes whenever a job that was not ready
   * may have become so (a compile finished). Any thread; never blocks on
   * a compile. */
  uint64_t (*ready_epoch)(void *state);
  /* Optional (NULL: the core's registry estimate alone): the backend's own
   * conservative working bytes for one job - device working set and host
   * (pinned) staging. The core charges the larger of each against its own
   * estimate, so a backend can only raise a charge. Same rules as admit. */
  ib_status (*job_bytes)(void *state, const ib_graph *g, uint64_t *gpu_bytes, uint64_t *host_bytes,
                         ib_error *err);
  /* True when job_bytes' host figure covers the job's source bytes and
   * every upload and parameter staging it will use (a raw source uploaded
   * from where it lies needs none): the core then charges only the source
   * bytes on its side (credits.h ib_charge_rules). */
  bool job_bytes_stages;
  /* Enqueues jobs[0..n) as one submission. The jobs array and the graphs
   * stay valid until wait returns. A non-OK status means nothing was
   * enqueued (device-wide failure; err names one representative job). */
  ib_status (*submit)(void *state, ib_backend_job *jobs, size_t n, ib_backend_submission **sub,
                      ib_error *err);
  /* Blocks until the submission completed; every job's status/out is then
   * final. Releases the submission. */
  ib_status (*wait)(void *state, ib_backend_submission *sub, ib_error *err);
  /* Non-blocking completion test (true when wait would not block). */
  bool (*ready)(void *state, ib_backend_submission *sub);
  /* Resident outputs (all three NULL: the backend keeps none, and must
   * reject output gpu in admit). download copies a kept buffer's native
   * bytes into `into` (shape set, data allocated by the core); release
   * frees the buffer. Both may run on any thread, concurrently with
   * submit/wait on the driving thread and after the executor was closed
   * (close of the backend state waits for the last release); the core
   * never runs two downloads of one buffer at once. */
  ib_status (*download)(void *state, void *dev, ib_image *into, ib_error *err);
  void (*release)(void *state, void *dev);
  /* Gives back a lent download arena (see ib_backend_job). Any thread, also
   * after the executor was closed. NULL when the backend lends nothing. */
  void (*lent_release)(void *state, void *token);
  /* Optional (lending backends): true when a job of `g` (not output gpu)
   * gets its output downloaded into its own Job buffer (see above). The
   * core then charges that buffer, held until the result is released, in
   * place of the in-buffer sources (working) plus the output (held).
   * Decided on the graph alone: admission and submission agree. */
  bool (*out_in_buffer)(void *state, const ib_graph *g);
  /* Optional (device backends): true when a job of `g` is large - its
   * PCIe traffic long beside a submission's fixed costs, so the backend
   * runs submissions of such jobs as a pipeline (the CUDA backend: sources
   * in + terminal image out of 1/8 of a pipeline piece or more,
   * ib_cuda_large_io; `resident`: the image stays on the device). Asked
   * once at admission; a head of mostly large jobs gets the start ramp and
   * the cut of a partial window (dispatch.c), so the core and the backend
   * share one notion. NULL: a job charging IB_EXEC_LARGE_JOB_BYTES of
   * device memory or more is large. */
  bool (*large_job)(void *state, const ib_graph *g, bool resident);
  /* Optional: the allocator ib_executor_parse unpacks Jobs with, so large
   * byte fields (raw pixels) land where the backend uploads from without a
   * host copy. Thread-safe; lives as long as the state. NULL: the heap. */
  ProtobufCAllocator *(*parse_allocator)(void *state);
  /* Optional: fills the backend's own counters (the kernel module fields of
   * ib_executor_counters). Any thread, at any time while the state lives;
   * must not block on device work or a compile. */
  void (*counters)(void *state, ib_executor_counters *out);
  /* Optional: its pools' bytes and caps (ib_executor_pools_get); the same
   * rules as counters. NULL: every field 0. */
  void (*pools)(void *state, ib_executor_pools *out);
} ib_backend;

extern const ib_backend ib_backend_cpu;
extern const ib_backend ib_backend_cuda; /* worker/gpu/cuda_backend.c */
/* The backend of a kind; NULL for a kind that does not exist. */
const ib_backend *ib_backend_for(ib_backend_kind kind);

#endif
