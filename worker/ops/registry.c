/*
 * registry.c - the list of op rows. Each row lives beside its op in
 * worker/ops/op_<family>.c; a row not linked in (weak reference, NULL) leaves
 * its op rejected as Unsupported rather than failing the build, so rows land
 * one family at a time. The library is an object library, so every row that
 * exists is linked.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"
#include "ops/op.h"
#include "plan/graph.h"

extern const ib_op_desc ib_op_source __attribute__((weak));
extern const ib_op_desc ib_op_copy __attribute__((weak));
extern const ib_op_desc ib_op_transpose __attribute__((weak));
extern const ib_op_desc ib_op_crop __attribute__((weak));
extern const ib_op_desc ib_op_expand __attribute__((weak));
extern const ib_op_desc ib_op_resize __attribute__((weak));
extern const ib_op_desc ib_op_paste __attribute__((weak));
extern const ib_op_desc ib_op_getchannel __attribute__((weak));
extern const ib_op_desc ib_op_convert __attribute__((weak));
extern const ib_op_desc ib_op_point __attribute__((weak));
extern const ib_op_desc ib_op_invert __attribute__((weak));
extern const ib_op_desc ib_op_solarize __attribute__((weak));
extern const ib_op_desc ib_op_posterize __attribute__((weak));
extern const ib_op_desc ib_op_rank_filter __attribute__((weak));
extern const ib_op_desc ib_op_box_blur __attribute__((weak));
extern const ib_op_desc ib_op_gaussian_blur __attribute__((weak));
extern const ib_op_desc ib_op_kernel __attribute__((weak));
extern const ib_op_desc ib_op_chops __attribute__((weak));
extern const ib_op_desc ib_op_blend __attribute__((weak));
extern const ib_op_desc ib_op_constant __attribute__((weak));
extern const ib_op_desc ib_op_enhance __attribute__((weak));
extern const ib_op_desc ib_op_tone __attribute__((weak));

static const ib_op_desc *const candidates[] = {
    &ib_op_source,
    &ib_op_copy,
    &ib_op_transpose,
    &ib_op_crop,
    &ib_op_expand,
    &ib_op_resize,
    &ib_op_paste,
    &ib_op_getchannel,
    &ib_op_convert,
    &ib_op_point,
    &ib_op_invert,
    &ib_op_solarize,
    &ib_op_posterize,
    &ib_op_rank_filter,
    &ib_op_box_blur,
    &ib_op_gaussian_blur,
    &ib_op_kernel,
    &ib_op_chops,
    &ib_op_blend,
    &ib_op_constant,
    &ib_op_enhance,
    &ib_op_tone,
};

#define N_CANDIDATES (sizeof candidates / sizeof candidates[0])
static const ib_op_desc *rows[N_CANDIDATES];
static size_t n_rows;

static void collect(void) {
  if (n_rows) return;
  size_t n = 0;
  for (size_t i = 0; i < N_CANDIDATES; i++)
    if (candidates[i]) rows[n++] = candidates[i];
  n_rows = n;
}

const ib_op_desc *const *ib_op_all(size_t *count) {
  collect();
  *count = n_rows;
  return rows;
}

const ib_op_desc *ib_op_for_case(Imgbatch__V1__Node__OpCase c) {
  for (size_t i = 0; i < N_CANDIDATES; i++)
    if (candidates[i] && candidates[i]->op_case == c) return candidates[i];
  return NULL;
}

ib_status ib_op_fail(ib_error *err, ib_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ib_error_vset(err, st, IB_STAGE_VALIDATE, fmt, ap);
  va_end(ap);
  return st;
}

ib_status ib_op_check_mode(const ib_op_desc *d, const ib_shape *in, ib_error *err) {
  if (in->mode > IB_MODE_NONE && in->mode < IB_MODE_COUNT && (d->modes & IB_MODE_BIT(in->mode)))
    return IB_OK;
  return ib_op_fail(err, IB_UNSUPPORTED, "op %s: mode %s not supported", d->name,
                    ib_mode_name(in->mode));
}

uint64_t ib_op_no_params(const ib_node *node) {
  (void)node;
  return 0;
}
