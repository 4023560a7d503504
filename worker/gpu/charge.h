/*
 * charge.h - the CUDA backend's own admission charge of one job (backend.h
 * job_bytes), as a pure function of the graph and of which raw sources the
 * submission will upload from where they lie (pinned Job memory): no device
 * and no backend state needed, so it is unit-tested on GPU-less machines.
 * The formula is documented in imgbatch.h "Credits".
 */
#ifndef IB_GPU_CHARGE_H
#define IB_GPU_CHARGE_H

#include <stdbool.h>

#include "gpu/gplan.h"
#include "model/graph.h"

/* Every device-block range and pinned staging range of a submission starts
 * on this boundary (cuda_backend.c lays them out so). */
#define IB_CUDA_ALIGN 256u

/* True when source `index` of `g` is uploaded straight from where its bytes
 * lie (no staging copy). */
typedef bool (*ib_cuda_in_place_fn)(void *ctx, const ib_graph *g, size_t index);

/* The job's device working set and its host working bytes (the source
 * bytes, the pinned staging of every source not in place, its parameter
 * blocks and descriptors, and the alignment padding of its range of the
 * download arena). `in_place` NULL: every source is staged. IB_UNSUPPORTED
 * when the graph has no device plan. */
ib_status ib_cuda_charge(const ib_graph *g, ib_cuda_in_place_fn in_place, void *ctx,
                         uint64_t *gpu_bytes, uint64_t *host_bytes, ib_error *err);
/* The same from `g`'s plan, built already (admission's tier memo keeps it). */
void ib_cuda_charge_plan(const ib_graph *g, const ib_gplan *p, ib_cuda_in_place_fn in_place,
                         void *ctx, uint64_t *gpu_bytes, uint64_t *host_bytes);

#endif
