/* Resident (output gpu) buffers of the CUDA backend (see cuda_resident.h). */
#include "gpu/cuda_resident.h"

#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ib_cuda_kept {
  const ib_cu *cu;
  CUcontext ctx;
  CUdeviceptr buf;
  size_t bytes;
  uint64_t job_id;
  /* The download workspace, made on first download and kept (its bytes are
   * charged for the handle's whole life anyway). */
  CUstream stream;
  void *staging; /* pinned; NULL when pinned memory was refused */
  bool have_workspace;
} ib_cuda_kept;

static void keep_fail(ib_backend_job *j, const ib_cu *cu, CUresult rc, const char *what) {
  ib_error e = {0};
  ib_cu_fail(cu, rc, &e, IB_STAGE_DOWNLOAD, "job %llu: output gpu: %s",
             (unsigned long long)j->job_id, what);
  j->status = IB_DEVICE;
  j->err = e;
}

void ib_cuda_keep(const ib_cu *cu, CUcontext ctx, CUstream stream, CUdeviceptr src,
                  const ib_shape *shape, ib_backend_job *j) {
  size_t bytes = (size_t)shape->width * shape->height * ib_mode_bands(shape->mode);
  ib_cuda_kept *k = calloc(1, sizeof *k);
  if (!k) {
    j->status = IB_INTERNAL;
    j->err = (ib_error){.status = IB_INTERNAL, .stage = IB_STAGE_DOWNLOAD};
    snprintf(j->err.message, sizeof j->err.message, "job %llu: out of host memory",
             (unsigned long long)j->job_id);
    return;
  }
  *k = (ib_cuda_kept){.cu = cu, .ctx = ctx, .bytes = bytes, .job_id = j->job_id};
  CUresult rc = cu->cuMemAlloc(&k->buf, bytes ? bytes : 1);
  if (rc != CUDA_SUCCESS) {
    free(k);
    keep_fail(j, cu, rc, "cuMemAlloc of the resident buffer");
    return;
  }
  if (bytes && (rc = cu->cuMemcpyDtoDAsync(k->buf, src, bytes, stream)) != CUDA_SUCCESS) {
    cu->cuMemFree(k->buf);
    free(k);
    keep_fail(j, cu, rc, "copy into the resident buffer");
    return;
  }
  j->out = (ib_image){.mode = shape->mode, .width = shape->width, .height = shape->height};
  j->dev = k;
}

static ib_status make_workspace(ib_cuda_kept *k, ib_error *err) {
  const ib_cu *cu = k->cu;
  CUresult rc = cu->cuStreamCreate(&k->stream, CU_STREAM_NON_BLOCKING);
  if (rc != CUDA_SUCCESS)
    return ib_cu_fail(cu, rc, err, IB_STAGE_DOWNLOAD, "job %llu: download stream",
                      (unsigned long long)k->job_id);
  /* Pinned staging when the driver grants it; otherwise the copy goes
   * straight to the (pageable) result image, synchronously. */
  if (k->bytes && cu->cuMemHostAlloc(&k->staging, k->bytes, 0) != CUDA_SUCCESS) k->staging = NULL;
  k->have_workspace = true;
  return IB_OK;
}

ib_status ib_cuda_resident_download(void *state, void *dev, ib_image *into, ib_error *err) {
  (void)state;
  ib_cuda_kept *k = dev;
  const ib_cu *cu = k->cu;
  if (ib_image_bytes(into) != k->bytes || !into->data)
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_DOWNLOAD,
                        "job %llu: download target is not %zu bytes", (unsigned long long)k->job_id,
                        k->bytes);
  if (!k->bytes) return IB_OK;
  CUresult rc = cu->cuCtxSetCurrent(k->ctx);
  if (rc != CUDA_SUCCESS)
    return ib_cu_fail(cu, rc, err, IB_STAGE_DOWNLOAD, "job %llu: cuCtxSetCurrent",
                      (unsigned long long)k->job_id);
  ib_status st = k->have_workspace ? IB_OK : make_workspace(k, err);
  if (st != IB_OK) return st;
  void *dst = k->staging ? k->staging : into->data;
  if ((rc = cu->cuMemcpyDtoHAsync(dst, k->buf, k->bytes, k->stream)) != CUDA_SUCCESS ||
      (rc = cu->cuStreamSynchronize(k->stream)) != CUDA_SUCCESS)
    return ib_cu_fail(cu, rc, err, IB_STAGE_DOWNLOAD, "job %llu: download",
                      (unsigned long long)k->job_id);
  if (k->staging) memcpy(into->data, k->staging, k->bytes);
  return IB_OK;
}

void ib_cuda_resident_release(void *state, void *dev) {
  (void)state;
  ib_cuda_kept *k = dev;
  if (!k) return;
  const ib_cu *cu = k->cu;
  cu->cuCtxSetCurrent(k->ctx);
  if (k->stream) cu->cuStreamDestroy(k->stream);
  if (k->staging) cu->cuMemFreeHost(k->staging);
  cu->cuMemFree(k->buf);
  free(k);
}
