/*
 * cu.h - the CUDA driver API, loaded at run time (dlopen "libcuda.so.1"),
 * never linked: the binary starts where no driver exists and reports
 * "no CUDA device" as an IB_DEVICE error instead. Types and enums come from
 * cuda.h; every entry point is a pointer in ib_cu, resolved by its exported
 * symbol name (cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2; the table uses
 * the versioned symbol the header names).
 */
#ifndef IB_GPU_CU_H
#define IB_GPU_CU_H

#include <cuda.h>

#include "imgbatch.h"

/* Hand-laid lists (clang-format cannot settle on a layout for them). */
// clang-format off
#define IB_CU_FUNCS(X)                                                                           \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetAttribute)     \
  X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) \
  X(cuCtxSynchronize) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)               \
  X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)                \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async)              \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent)               \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize)      \
  X(cuEventElapsedTime) X(cuGetErrorName) X(cuGetErrorString) X(cuMemGetInfo)                    \
  X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuDeviceTotalMem)
// clang-format on

/* Entry points a driver may lack (NULL then; callers fall back):
 * cuMemcpyBatchAsync (CUDA 12.8+) enqueues many copies in one call. */
#define IB_CU_OPTIONAL(X) X(cuMemcpyBatchAsync)

#define IB_CU_MEMBER(f) __typeof__(&f) f;

/* The resolved driver table. One per process (ib_cu_get), read-only after load. */
typedef struct ib_cu {
  void *lib;
  IB_CU_FUNCS(IB_CU_MEMBER)
  IB_CU_OPTIONAL(IB_CU_MEMBER)
} ib_cu;

/* Loads libcuda.so.1 and resolves every entry point, then cuInit(0). Safe
 * to call repeatedly; the first outcome is remembered. NULL and err filled
 * (IB_DEVICE, "no CUDA driver: ...") when there is no usable driver. */
const ib_cu *ib_cu_get(ib_error *err);

/* Fills err as IB_DEVICE with "<what>: CUDA_ERROR_X (text)" and returns IB_DEVICE. */
ib_status ib_cu_fail(const ib_cu *cu, CUresult rc, ib_error *err, ib_stage stage, const char *fmt,
                     ...) __attribute__((format(printf, 5, 6)));

#endif
