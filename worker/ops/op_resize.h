/* op_resize.h - the calls Image.resize makes for a convolution filter, as
 * op_resize.c plans them from a node and op_resample.c runs them on the
 * CPU. */
#ifndef IB_OP_RESIZE_H
#define IB_OP_RESIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "imgbatch.h"

/* One _imaging.c _resize call: box already C floats, checked. */
typedef struct ib_resize_call {
  uint32_t in_w, in_h, out_w, out_h;
  float box[4];
} ib_resize_call;

/* Image.resize(size, filter, box, reducing_gap) for filter != NEAREST, in
 * Pillow 12.3's order: `copy` (same size, whole box: nothing else runs);
 * else premultiply (LA, RGBA: convert to La / RGBa, reducing_gap dropped),
 * reduce(factor, reduce_box) when reducing_gap asks for it, then one call,
 * or two for a tall image (height > 100 x width shrinking vertically),
 * then unpremultiply. */
typedef struct ib_resize_plan {
  int filter; /* IB_RESAMPLE_* */
  bool copy, premultiply, reduce;
  int fx, fy;      /* reduce factor */
  int rbox[4];     /* reduce box (left, top, right, bottom) */
  uint32_t rw, rh; /* reduced size */
  int n_calls;     /* 1 or 2 */
  ib_resize_call call[2];
} ib_resize_plan;

/* Runs the plan over src into out (allocated with the plan's output size
 * and src's mode). Only memory errors can fail here. */
ib_status ib_resize_run(const ib_resize_plan *p, const ib_image *src, ib_image *out, ib_error *err);

/* Scratch bytes ib_resize_run allocates for the plan on a `bands` image
 * (copies, reduced and intermediate images, weight tables). */
uint64_t ib_resize_scratch_bytes(const ib_resize_plan *p, unsigned bands);

#endif
