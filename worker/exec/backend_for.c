/* Backend lookup. The CUDA backend is linked in by worker/gpu when built; a
 * weak reference leaves it NULL otherwise, so the core links without it. */
#include "exec/backend.h"

extern const ib_backend ib_backend_cuda __attribute__((weak));

const ib_backend *ib_backend_for(ib_backend_kind kind) {
  switch (kind) {
    case IB_BACKEND_CPU: return &ib_backend_cpu;
    case IB_BACKEND_CUDA: return &ib_backend_cuda;
  }
  return NULL;
}
