/*
 * op_exif_transpose.c - ImageOps.exif_transpose(image): the transpose
 * Pillow maps the source's orientation to (2 FLIP_LEFT_RIGHT, 3
 * ROTATE_180, 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE, 6 ROTATE_270, 7 TRANSVERSE,
 * 8 ROTATE_90), else a copy. The orientation is read at parse time from
 * the source's EXIF, else XMP (codec/metadata.h), so the input must be a
 * source node: Pillow's own images carry the metadata through every op,
 * this worker's carry none (docs/metadata.md).
 */
#include <string.h>

#include "kernels/geometry.h"
#include "model/graph.h"
#include "ops/op.h"
#include "ops/op_geometry.h"

static const ib_source *source_of(const ib_node *node) {
  const ib_node *in = &node->graph->nodes[node->inputs[0]];
  if (in->op->op_case != IMGBATCH__V1__NODE__OP_SOURCE) return NULL;
  return &node->graph->sources[in->pb->source->index];
}

/* Image.Transpose of an orientation, -1 for none. */
static int method_of(int orientation) {
  static const int method[9] = {-1,
                                -1,
                                IB_TRANSPOSE_FLIP_LEFT_RIGHT,
                                IB_TRANSPOSE_ROTATE_180,
                                IB_TRANSPOSE_FLIP_TOP_BOTTOM,
                                IB_TRANSPOSE_TRANSPOSE,
                                IB_TRANSPOSE_ROTATE_270,
                                IB_TRANSPOSE_TRANSVERSE,
                                IB_TRANSPOSE_ROTATE_90};
  return orientation >= 0 && orientation <= 8 ? method[orientation] : -1;
}

static ib_status exif_transpose_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                                      ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  const ib_source *s = source_of(node);
  if (!s)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op exif_transpose: input node %u is not a source node (the orientation "
                        "is read from a source's metadata)",
                        node->inputs[0]);
  if (s->orientation < 0)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op exif_transpose: mode %s: the source's EXIF does not start with a TIFF "
                        "header Pillow reads (Image.getexif raises)",
                        ib_mode_name(in[0].mode));
  *out = in[0];
  int m = method_of(s->orientation);
  if (m >= 0 && ib_transpose_swaps(m)) {
    out->width = in[0].height;
    out->height = in[0].width;
  }
  return IB_OK;
}

static ib_status exif_transpose_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                                    ib_error *err) {
  (void)err;
  int m = method_of(source_of(node)->orientation);
  if (m < 0)
    memcpy(out->data, in[0]->data, ib_image_bytes(out));
  else
    ib_geom_transpose(in[0], out, m);
  return IB_OK;
}

/* transpose's gather head with the resolved method, or the identity step.
 * The method comes from the source's bytes, not the wire: parse.c adds
 * each source's orientation to the bytes that tell device plans apart. */
static ib_status exif_transpose_dev(const ib_node *node, const int *in_modes, ib_gstep *s,
                                    ib_error *err) {
  (void)in_modes, (void)err;
  int m = method_of(source_of(node)->orientation);
  if (m < 0) {
    s->dev = &ib_dev_copy;
    return IB_OK;
  }
  s->dev = &ib_dev_transpose;
  s->a = m;
  return IB_OK;
}

/* ImageOps.exif_transpose removes the orientation when it transposed. */
static bool exif_transpose_drops_orientation(const ib_node *node) {
  const ib_source *src = source_of(node);
  return src && method_of(src->orientation) >= 0;
}

const ib_op_desc ib_op_exif_transpose = {
    IB_OP_HEAD(exif_transpose),
    .infer = exif_transpose_infer,
    .param_bytes = ib_op_no_params,
    .cpu = exif_transpose_cpu,
    .dev = exif_transpose_dev,
    .dev_ops = (const ib_dev_op *const[]){&ib_dev_transpose, &ib_dev_copy, NULL},
    .drops_orientation = exif_transpose_drops_orientation,
};
