/* Backend lookup. Both backends are always built (CMake compiles worker/gpu
 * into the core; libcuda is loaded at run time), so both are plain
 * references: a backend missing from the build is a link error. */
#include "exec/backend.h"

const ib_backend *ib_backend_for(ib_backend_kind kind) {
  switch (kind) {
    case IB_BACKEND_CPU: return &ib_backend_cpu;
    case IB_BACKEND_CUDA: return &ib_backend_cuda;
  }
  return NULL;
}
