/* ImageFilter.Kernel((size, size), kernel, scale, offset), size 3 or 5, as
 * Pillow 12.3 _imaging.c `_filter` + Filter.c ImagingFilter: all bands of a
 * pixel filtered together (a MultibandFilter), the border copied unfiltered.
 * The per-sample math is kernels/convolve.h. */
#include <string.h>

#include "kernels/convolve.h"
#include "ops/op.h"
#include "model/graph.h"

/* ImagingFilter copies an image smaller than the kernel before it checks the
 * kernel size, so e.g. a 7x7 kernel is an identity on a 6-pixel-wide image
 * and an error on anything larger. */
static int kernel_copies(uint32_t size, const ib_shape *in) {
  return in->width < size || in->height < size;
}

static ib_status kernel_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                              ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  const Imgbatch__V1__KernelOp *p = node->pb->kernel;
  if (p->size == 0 || p->n_kernel != (size_t)p->size * p->size)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op kernel: mode %s: %zu weights for size %u (need size*size)",
                        ib_mode_name(in->mode), p->n_kernel, p->size);
  if (!kernel_copies(p->size, &in[0]) && p->size != 3 && p->size != 5)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op kernel: mode %s: size %u is not 3 or 5 (bad kernel size)",
                        ib_mode_name(in->mode), p->size);
  *out = in[0];
  return IB_OK;
}

static uint64_t kernel_param_bytes(const ib_node *node) {
  return (node->pb->kernel->n_kernel + 1) * sizeof(float);
}

static ib_status kernel_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                            ib_error *err) {
  (void)err;
  const Imgbatch__V1__KernelOp *p = node->pb->kernel;
  const ib_image *src = in[0];
  const int w = (int)src->width, h = (int)src->height, bands = (int)ib_mode_bands(src->mode);
  const int64_t stride = (int64_t)w * bands;
  memcpy(out->data, src->data, ib_image_bytes(src));
  const ib_shape shape = {src->mode, src->width, src->height};
  if (kernel_copies(p->size, &shape)) return IB_OK;
  const int size = (int)p->size, m = size / 2;
  float k[IB_CONVOLVE_MAX_SIZE * IB_CONVOLVE_MAX_SIZE];
  for (int i = 0; i < size * size; i++) k[i] = ib_convolve_weight(p->kernel[i], p->scale);
  const float bias = ib_convolve_bias(p->offset);
  for (int y = m; y < h - m; y++) {
    const uint8_t *srow = src->data + y * stride;
    uint8_t *orow = out->data + y * stride;
    for (int x = m; x < w - m; x++)
      for (int b = 0; b < bands; b++)
        orow[x * bands + b] =
            ib_convolve_sample(srow + x * bands + b, stride, bands, size, k, bias);
  }
  return IB_OK;
}

/* Device step: a window head (kernels/convolve.cuh), the size baked in;
 * parameters: the size*size weights and the bias kernel_cpu uses. */
static void kernel_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  const Imgbatch__V1__KernelOp *k = node->pb->kernel;
  const size_t n = (size_t)k->size * k->size;
  for (size_t i = 0; i < n && i < k->n_kernel; i++) {
    const float w = ib_convolve_weight(k->kernel[i], k->scale);
    memcpy(p + 4 * i, &w, 4);
  }
  const float bias = ib_convolve_bias(k->offset);
  memcpy(p + 4 * n, &bias, 4);
}

static const ib_dev_op kernel_dev_op = {.tag = 'F',
                                        .role = IB_DEV_GATHER,
                                        .header = "convolve.cuh",
                                        .fn = "ib_head_kernel",
                                        .fill = kernel_fill};

static ib_status kernel_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)in_modes, (void)err;
  const uint32_t size = node->pb->kernel->size;
  s->dev = &kernel_dev_op;
  s->a = (int)size;
  s->param_len = 4u * (size * size + 1u);
  return IB_OK;
}

const ib_op_desc ib_op_kernel = {
    IB_OP_HEAD(kernel),
    .infer = kernel_infer,
    .param_bytes = kernel_param_bytes,
    .cpu = kernel_cpu,
    .dev = kernel_dev,
    .dev_ops = (const ib_dev_op *const[]){&kernel_dev_op, NULL},
};
