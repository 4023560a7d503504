/*
 * charge.h - the CUDA backend's own admission charge of one job (backend.h
 * job_bytes), as a pure function of the graph and of which raw sources the
 * submission will upload from where they lie (pinned Job memory): no device
 * and no backend state needed, so it is unit-tested on GPU-less machines.
 * The formula is documented in docs/credits.md.
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

/* The last IB_CHARGE_MEMO_GRAPHS charges (be_job_bytes, driving thread): a
 * graph whose nodes equal an entry's `like` (ib_cuda_same_nodes) with the
 * same sources in place has the same charge but for its source bytes, so a
 * stream of one operation over many images, or one that interleaves a few
 * graphs (the tier off: no admission plan to reuse), plans each once for
 * its charges. The least recently used entry makes room, as in the tier's
 * memo (cuda_internal.h ib_tier_memo). `like` holds only the nodes' wire
 * bytes, ops and shapes. Zeroed: empty. */
#define IB_CHARGE_MEMO_GRAPHS 8
typedef struct ib_charge_memo_entry {
  ib_graph like;
  bool valid;
  uint64_t in_place;       /* bit i: source i uploaded in place */
  uint64_t gpu, host_plan; /* host_plan: the host charge less the source bytes */
  uint64_t used;           /* the memo's clock at its last use */
} ib_charge_memo_entry;
typedef struct ib_charge_memo {
  ib_charge_memo_entry g[IB_CHARGE_MEMO_GRAPHS];
  ib_charge_memo_entry *last; /* looked at first: a stream of one graph compares once */
  uint64_t clock;
  uint64_t plans; /* charges worked out from a plan (misses) */
} ib_charge_memo;

/* A plan of `g` made already (admission's tier memo), or NULL. */
typedef const ib_gplan *(*ib_cuda_planned_fn)(void *ctx, const ib_graph *g);

/* ib_cuda_charge through the memo: a graph like a kept one (a graph with
 * over 64 sources or without its nodes' wire bytes never is) takes its
 * charge; any other is charged from `planned`'s plan when there is one,
 * else from one built now, and kept. `planned` may be NULL; `ctx` goes to
 * both callbacks. */
ib_status ib_cuda_charge_memo(ib_charge_memo *m, const ib_graph *g, ib_cuda_in_place_fn in_place,
                              ib_cuda_planned_fn planned, void *ctx, uint64_t *gpu_bytes,
                              uint64_t *host_bytes, ib_error *err);
/* Frees what the memo holds; it is empty then. */
void ib_charge_memo_free(ib_charge_memo *m);

#endif
