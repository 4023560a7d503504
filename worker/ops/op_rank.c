/* ImageFilter.RankFilter(size, rank) and its Median/Min/Max spellings:
 * every band filtered on its own with edge-replicated borders (Pillow 12.3
 * Image.filter -> RankFilter.filter -> ImagingExpand + ImagingRankFilter);
 * the per-sample math is kernels/rank.h. */
#include <string.h>

#include "kernels/rank.h"
#include "ops/op.h"
#include "model/graph.h"

static ib_status rank_infer(const ib_node *node, const ib_shape *in, ib_shape *out, ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  const Imgbatch__V1__RankFilterOp *p = node->pb->rank_filter;
  /* RankFilter.__init__ refuses even sizes and ranks outside the window. */
  if (p->size % 2 == 0)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op rank_filter: mode %s: size %u is not odd (bad filter size)",
                        ib_mode_name(in->mode), p->size);
  /* Pillow 12.3 dies with SIGFPE on size 1 (ImagingExpand divides by its
   * margin 0; fixed after 12.3), so there is no result to be exact with. */
  if (p->size == 1)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op rank_filter: mode %s: size 1 (Pillow 12.3 crashes on it: "
                        "ImagingExpand margin 0)",
                        ib_mode_name(in->mode));
  if (p->size > IB_RANK_MAX_SIZE)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE,
                        "op rank_filter: mode %s: size %u exceeds the bound %d",
                        ib_mode_name(in->mode), p->size, IB_RANK_MAX_SIZE);
  if (p->rank >= p->size * p->size)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op rank_filter: mode %s: rank %u outside 0..%u (bad rank value)",
                        ib_mode_name(in->mode), p->rank, p->size * p->size - 1);
  *out = in[0];
  return IB_OK;
}

/* Always inlined with a literal size so the window loops unroll. Pixels
 * whose window lies inside the image skip the edge clamping. */
static inline __attribute__((always_inline)) void rank_image(const ib_image *src, ib_image *out,
                                                             int size, int rank) {
  const int w = (int)src->width, h = (int)src->height, bands = (int)ib_mode_bands(src->mode);
  const int64_t stride = (int64_t)w * bands;
  const int m = size / 2;
  for (int y = 0; y < h; y++) {
    const uint8_t *srow = src->data + y * stride;
    uint8_t *orow = out->data + y * stride;
    const int inside_row = y >= m && y < h - m;
    for (int x = 0; x < w; x++) {
      const uint8_t *c = srow + x * bands;
      if (inside_row && x >= m && x < w - m)
        for (int b = 0; b < bands; b++)
          orow[x * bands + b] = ib_rank_sample_inside(c + b, stride, bands, size, rank);
      else
        for (int b = 0; b < bands; b++)
          orow[x * bands + b] = ib_rank_sample(c + b, stride, bands, x, y, w, h, size, rank);
    }
  }
}

/* 3x3: every band at once through ib_rank_run3x4, IB_RANK_RUN pixels of a
 * row per call, the very function the device's rank head runs
 * (kernels/rank.cuh). */
static void rank_image3(const ib_image *src, ib_image *out, int rank) {
  const int w = (int)src->width, h = (int)src->height, bands = (int)ib_mode_bands(src->mode);
  const int64_t stride = (int64_t)w * bands;
  for (int y = 0; y < h; y++) {
    const uint8_t *srow = src->data + y * stride;
    const uint8_t *up = y > 0 ? srow - stride : srow, *down = y < h - 1 ? srow + stride : srow;
    uint8_t *orow = out->data + y * stride;
    for (int x = 0; x < w; x += IB_RANK_RUN) {
      uint32_t r[IB_RANK_RUN];
      ib_rank_run3x4(up, srow, down, bands, x, w, rank, r);
      for (int k = 0; k < IB_RANK_RUN && x + k < w; k++)
        for (int b = 0; b < bands; b++) orow[(x + k) * bands + b] = (uint8_t)(r[k] >> (8 * b));
    }
  }
}

static ib_status rank_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                          ib_error *err) {
  (void)err;
  const int rank = (int)node->pb->rank_filter->rank;
  switch (node->pb->rank_filter->size) {
    case 3: rank_image3(in[0], out, rank); break;
    case 5: rank_image(in[0], out, 5, rank); break;
    case 7: rank_image(in[0], out, 7, rank); break;
    default: rank_image(in[0], out, 9, rank); break;
  }
  return IB_OK;
}

/* Device step: a window head (kernels/rank.cuh), the size baked in; the
 * rank as an int parameter. */
static void rank_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  const int32_t rank = (int32_t)node->pb->rank_filter->rank;
  memcpy(p, &rank, sizeof rank);
}

static const ib_dev_op rank_dev_op = {.tag = 'M',
                                      .role = IB_DEV_GATHER,
                                      .header = "rank.cuh",
                                      .fn = "ib_head_rank",
                                      .fill = rank_fill};

static ib_status rank_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)in_modes, (void)err;
  s->dev = &rank_dev_op;
  s->a = (int)node->pb->rank_filter->size;
  s->param_len = sizeof(int32_t);
  return IB_OK;
}

const ib_op_desc ib_op_rank_filter = {
    IB_OP_HEAD(rank_filter),
    .infer = rank_infer,
    .param_bytes = ib_op_no_params,
    .cpu = rank_cpu,
    .dev = rank_dev,
    .dev_ops = (const ib_dev_op *const[]){&rank_dev_op, NULL},
};
