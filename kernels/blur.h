/*
 * blur.h - what BoxBlur / GaussianBlur's device step (kernels/blur.cuh)
 * shares with its op row (worker/ops/op_blur.c): the one parameter block
 * the row fills and the kernels read, and the launch geometry the row's
 * launch plan sizes grids and shared memory with. Host and device.
 */
#ifndef IB_BLUR_H
#define IB_BLUR_H

#include "boxblur.h"

/* A job's parameters: hp passes over the rows with ph, then vp passes over
 * the columns with pv (a count is 0 for a zero radius: that direction is
 * skipped, as Pillow skips it). */
typedef struct ib_blur_params {
  int32_t hp, vp;
  ib_box_pass ph, pv;
} ib_blur_params;

/* Kernels of blur.cuh, in the order of the op row's list. */
enum { IB_BLUR_K_ROWS, IB_BLUR_K_COLS, IB_BLUR_K_PASS };

/* ib_blur_rows: pixels per thread span in the shared-memory row passes
 * (odd: fewer bank conflicts); ib_blur_pass: samples per thread span;
 * ib_blur_cols: tile bytes wide (a 4-byte word per lane of a warp) and
 * output rows high. */
#define IB_BLUR_SEG 15
#define IB_BLUR_CSEG 32
#define IB_BLUR_CW 128
#define IB_BLUR_TH 128

/* ib_blur_cols' buffer height for an h-row image whose column passes are
 * `p` (the rows the passes reach above and below a tile of IB_BLUR_TH,
 * ib_box_tile_rows), and its tiles for `row_bytes` bytes a row. */
IB_FN uint64_t ib_blur_cols_rows(const ib_blur_params *p, uint64_t h) {
  const uint64_t reach = 2 * (uint64_t)(p->vp > 0 ? p->vp : 0) * ((uint64_t)p->pv.radius + 1);
  const uint64_t th = IB_BLUR_TH < h ? IB_BLUR_TH : h;
  return th + reach < h ? th + reach : h;
}
IB_FN uint64_t ib_blur_cols_tiles(uint64_t row_bytes, uint64_t h) {
  return ((row_bytes + IB_BLUR_CW - 1) / IB_BLUR_CW) * ((h + IB_BLUR_TH - 1) / IB_BLUR_TH);
}

#endif
