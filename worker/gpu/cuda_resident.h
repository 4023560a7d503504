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
#include "model/graph.h"

/* Called by ib_cuda_submit for a resident job whose terminal image lies at
 * `src` in the submission's device block: enqueues a device-to-device copy
 * into a new allocation on `stream`, before the submission's event (so the
 * event covers it and the block can be reused after it), and sets j->dev
 * and j->out's shape (data NULL). On failure j->status/err say why
 * (IB_DEVICE, stage download). */
void ib_cuda_keep(const ib_cu *cu, CUcontext ctx, CUstream stream, CUdeviceptr src,
                  const ib_shape *shape, ib_backend_job *j);

/* The backend row's download/release hooks (state unused: a kept buffer
 * carries its driver table and context). */
ib_status ib_cuda_resident_download(void *state, void *dev, ib_image *into, ib_error *err);
void ib_cuda_resident_release(void *state, void *dev);

#endif
