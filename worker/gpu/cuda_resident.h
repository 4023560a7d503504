/*
 * cuda_resident.h - resident (output gpu) buffers of the CUDA backend. A
 * kept output is a device allocation of its own (cuMemAlloc, outside the
 * submission pools, so it can outlive the submission and be released from
 * any thread) plus a download workspace (pinned staging and a non-blocking
 * stream) made on first download. The executor core serializes downloads of
 * one buffer and calls release once; the backend state (context) stays open
 * until the last buffer is released.
 */
#ifndef IB_GPU_CUDA_RESIDENT_H
#define IB_GPU_CUDA_RESIDENT_H

#include "exec/backend.h"
#include "gpu/cu.h"
#include "plan/graph.h"

/* Called by cuda_wait for a resident job whose terminal image lies at `src`
 * in the submission's device block: enqueues a device-to-device copy into a
 * new allocation on `stream` (the caller synchronizes the stream before the
 * block is reused) and sets j->dev and j->out's shape (data NULL). On
 * failure j->status/err say why (IB_DEVICE, stage download). */
void ib_cuda_keep(const ib_cu *cu, CUcontext ctx, CUstream stream, CUdeviceptr src,
                  const ib_shape *shape, ib_backend_job *j);

/* Waits for the copies ib_cuda_keep enqueued on `stream`; when that fails,
 * every kept job of jobs[0..n) fails with IB_DEVICE and its buffer is
 * freed (its bytes may be incomplete). */
void ib_cuda_keep_fence(const ib_cu *cu, CUstream stream, ib_backend_job *jobs, size_t n);

/* The backend row's download/release hooks (state unused: a kept buffer
 * carries its driver table and context). */
ib_status ib_cuda_resident_download(void *state, void *dev, ib_image *into, ib_error *err);
void ib_cuda_resident_release(void *state, void *dev);

#endif
