/*
 * registry.c - the list of op rows. Each row lives beside its op in
 * worker/ops/op_<family>.c and is referenced here by name, so an op file
 * left out of the build is a link error, never a runtime Unsupported
 * (the shared library links with --no-undefined for the same reason).
 * tests/unit/test_wire_constants.c checks that every Node oneof case of the
 * proto has exactly one row, named as its field.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"
#include "ops/op.h"
#include "model/graph.h"

extern const ib_op_desc ib_op_source;
extern const ib_op_desc ib_op_copy;
extern const ib_op_desc ib_op_transpose;
extern const ib_op_desc ib_op_crop;
extern const ib_op_desc ib_op_expand;
extern const ib_op_desc ib_op_resize;
extern const ib_op_desc ib_op_paste;
extern const ib_op_desc ib_op_getchannel;
extern const ib_op_desc ib_op_convert;
extern const ib_op_desc ib_op_point;
extern const ib_op_desc ib_op_invert;
extern const ib_op_desc ib_op_solarize;
extern const ib_op_desc ib_op_posterize;
extern const ib_op_desc ib_op_rank_filter;
extern const ib_op_desc ib_op_box_blur;
extern const ib_op_desc ib_op_gaussian_blur;
extern const ib_op_desc ib_op_kernel;
extern const ib_op_desc ib_op_chops;
extern const ib_op_desc ib_op_blend;
extern const ib_op_desc ib_op_constant;
extern const ib_op_desc ib_op_enhance;
extern const ib_op_desc ib_op_tone;

static const ib_op_desc *const rows[] = {
    &ib_op_source,        &ib_op_copy,     &ib_op_transpose,  &ib_op_crop,        &ib_op_expand,
    &ib_op_resize,        &ib_op_paste,    &ib_op_getchannel, &ib_op_convert,     &ib_op_point,
    &ib_op_invert,        &ib_op_solarize, &ib_op_posterize,  &ib_op_rank_filter, &ib_op_box_blur,
    &ib_op_gaussian_blur, &ib_op_kernel,   &ib_op_chops,      &ib_op_blend,       &ib_op_constant,
    &ib_op_enhance,       &ib_op_tone,
};

#define N_ROWS (sizeof rows / sizeof rows[0])

const ib_op_desc *const *ib_op_all(size_t *count) {
  *count = N_ROWS;
  return rows;
}

const ib_op_desc *ib_op_for_case(Imgbatch__V1__Node__OpCase c) {
  for (size_t i = 0; i < N_ROWS; i++)
    if (rows[i]->op_case == c) return rows[i];
  return NULL;
}

ib_status ib_op_fail(ib_error *err, ib_status st, ib_stage stage, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ib_error_vset(err, st, stage, fmt, ap);
  va_end(ap);
  return st;
}

ib_status ib_op_check_mode(const ib_op_desc *d, const ib_shape *in, ib_error *err) {
  if (in->mode > IB_MODE_NONE && in->mode < IB_MODE_COUNT && (d->modes & IB_MODE_BIT(in->mode)))
    return IB_OK;
  return ib_op_fail(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE, "op %s: mode %s not supported", d->name,
                    ib_mode_name(in->mode));
}

uint64_t ib_op_no_params(const ib_node *node) {
  (void)node;
  return 0;
}
