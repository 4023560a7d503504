/* cuda_probe.h - is there a usable CUDA device? Loads the driver API at run
 * time (dlopen libcuda.so.1), so the binary starts where no driver exists. */
#ifndef IB_CUDA_PROBE_H
#define IB_CUDA_PROBE_H

#include <stddef.h>

#include "imgbatch.h"

/* IB_OK and a description ("NVIDIA H200, sm_90, 139 GiB, driver 13.0") of
 * device `ordinal`, or IB_DEVICE and the reason there is none. */
ib_status ib_cuda_probe(int ordinal, char *desc, size_t n);

#endif
