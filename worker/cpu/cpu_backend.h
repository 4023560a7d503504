/* cpu_backend.h - the CPU reference backend: runs a validated graph node by
 * node with each row's cpu function (the same pixel math NVRTC compiles). */
#ifndef IB_CPU_BACKEND_H
#define IB_CPU_BACKEND_H

#include "plan/graph.h"

/* Executes `g`; on success `out` holds the last node's image (caller releases). */
ib_status ib_cpu_execute(const ib_graph *g, ib_image *out, ib_error *err);

#endif
