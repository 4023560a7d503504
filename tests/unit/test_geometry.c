/* Geometric index maps (kernels/geometry.h) and the rows' parameter checks.
 * Expected values were produced by Pillow 12.3.0. */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/geometry.h"
#include "ops/op.h"
#include "model/graph.h"

/* Pillow: Image.frombytes("L", (3, 2), bytes(range(6))).transpose(m).tobytes() */
Test(geometry, transpose_maps_equal_pillow_for_all_seven_methods) {
  static const int want[7][6] = {
      {2, 1, 0, 5, 4, 3}, {3, 4, 5, 0, 1, 2}, {2, 5, 1, 4, 0, 3}, {5, 4, 3, 2, 1, 0},
      {3, 0, 4, 1, 5, 2}, {0, 3, 1, 4, 2, 5}, {5, 2, 4, 1, 3, 0},
  };
  for (int m = 0; m < 7; m++) {
    int ow = ib_transpose_swaps(m) ? 2 : 3, oh = 6 / ow;
    for (int y = 0; y < oh; y++)
      for (int x = 0; x < ow; x++) {
        int sx, sy;
        ib_transpose_src(m, x, y, 3, 2, &sx, &sy);
        cr_expect_eq(sy * 3 + sx, want[m][y * ow + x], "method %d at (%d, %d)", m, x, y);
      }
  }
}

/* Pillow: 2x1 [10, 20] resized NEAREST to 7x1 is [10, 10, 10, 10, 20, 20, 20]:
 * index 3 maps to 3.5 * 2/7 = 1.0 by multiplication but to 0.999... by
 * ImagingScaleAffine's running sum. */
Test(geometry, resize_table_accumulates_like_imaging_scale_affine) {
  double scale, offset;
  int32_t tab[7];
  ib_resize_axis_coeffs(0.0f, 2.0f, 7, &scale, &offset);
  ib_resize_axis_table(scale, offset, 7, 2, tab);
  static const int32_t want[7] = {0, 0, 0, 0, 1, 1, 1};
  cr_expect_arr_eq(tab, want, sizeof want);
}

Test(geometry, resize_box_at_the_right_edge_maps_outside) {
  double scale, offset;
  int32_t tab[3];
  ib_resize_axis_coeffs(5.0f, 5.0f, 3, &scale, &offset); /* box (5, _, 5, _) of a 5-wide image */
  ib_resize_axis_table(scale, offset, 3, 5, tab);
  for (int i = 0; i < 3; i++) cr_expect_eq(tab[i], -1);
}

Test(geometry, window_map_handles_extreme_offsets_without_overflow) {
  int sx = -7, sy = -7;
  cr_expect_eq(ib_window_src(4095, 0, INT32_MAX, 0, 10, 10, &sx, &sy), 0);
  cr_expect_eq(ib_window_src(0, 0, INT32_MIN, 0, 10, 10, &sx, &sy), 0);
  cr_expect_eq(ib_window_src(3, 2, -1, 1, 10, 10, &sx, &sy), 1);
  cr_expect(sx == 2 && sy == 3);
}

/* ---------------------------------------------------------------- rows */

static ib_status infer(const ib_op_desc *d, Imgbatch__V1__Node *pb, const ib_shape *in,
                       ib_shape *out, ib_error *err) {
  ib_node node = {.pb = pb, .op = d, .n_inputs = d->n_inputs};
  return d->infer(&node, in, out, err);
}

Test(geometry, crop_rejects_right_less_than_left_as_pillow_does) {
  Imgbatch__V1__Node pb = IMGBATCH__V1__NODE__INIT;
  Imgbatch__V1__CropOp c = IMGBATCH__V1__CROP_OP__INIT;
  c.left = 5;
  c.right = 4;
  c.bottom = 1;
  pb.op_case = IMGBATCH__V1__NODE__OP_CROP;
  pb.crop = &c;
  ib_shape in = {IB_MODE_RGB, 8, 8}, out;
  ib_error err = {0};
  cr_expect_eq(infer(ib_op_for_case(pb.op_case), &pb, &in, &out, &err), IB_INVALID);
  cr_expect(strstr(err.message, "right") != NULL, "%s", err.message);
}

Test(geometry, resize_admits_every_filter_and_the_device_step_runs_it) {
  Imgbatch__V1__Node pb = IMGBATCH__V1__NODE__INIT;
  Imgbatch__V1__ResizeOp r = IMGBATCH__V1__RESIZE_OP__INIT;
  r.width = r.height = 4;
  r.resample = IMGBATCH__V1__RESAMPLE__BICUBIC;
  pb.op_case = IMGBATCH__V1__NODE__OP_RESIZE;
  pb.resize = &r;
  const ib_op_desc *d = ib_op_for_case(pb.op_case);
  ib_shape in = {IB_MODE_RGBA, 8, 8}, out;
  ib_error err = {0};
  cr_expect_eq(infer(d, &pb, &in, &out, &err), IB_OK, "%s", err.message);
  /* the head plans from input 0's shape, which it finds through the graph */
  ib_node nodes[2] = {{.shape = in}, {.pb = &pb, .op = d, .n_inputs = 1, .shape = out}};
  ib_graph g = {.nodes = nodes, .n_nodes = 2};
  nodes[1].graph = &g;
  int modes[2] = {IB_MODE_RGBA, 0};
  ib_gstep s = {0};
  cr_assert_eq(d->dev(&nodes[1], modes, &s, &err), IB_OK, "%s", err.message);
  cr_expect_not_null(s.dev->passes, "a multi-pass head");
  cr_expect_eq(s.a, 1, "RGBA is premultiplied");
  nodes[1].graph = NULL;
  cr_expect_eq(d->dev(&nodes[1], modes, &s, &err), IB_INTERNAL, "no input shape, no plan");
  cr_expect(strstr(err.message, "BICUBIC") && strstr(err.message, "RGBA"), "%s", err.message);
}

Test(geometry, resize_reducing_gap_below_one_is_invalid_as_in_pillow) {
  Imgbatch__V1__Node pb = IMGBATCH__V1__NODE__INIT;
  Imgbatch__V1__ResizeOp r = IMGBATCH__V1__RESIZE_OP__INIT;
  r.width = r.height = 4;
  r.resample = IMGBATCH__V1__RESAMPLE__NEAREST;
  r.reducing_gap_present_case = IMGBATCH__V1__RESIZE_OP__REDUCING_GAP_PRESENT_REDUCING_GAP;
  r.reducing_gap = 0.5;
  pb.op_case = IMGBATCH__V1__NODE__OP_RESIZE;
  pb.resize = &r;
  ib_shape in = {IB_MODE_L, 8, 8}, out;
  ib_error err = {0};
  cr_expect_eq(infer(ib_op_for_case(pb.op_case), &pb, &in, &out, &err), IB_INVALID);
  cr_expect(strstr(err.message, "reducing_gap") != NULL, "%s", err.message);
}

Test(geometry, resize_side_over_the_max_side_is_a_limit_and_zero_is_invalid) {
  Imgbatch__V1__Node pb = IMGBATCH__V1__NODE__INIT;
  Imgbatch__V1__ResizeOp r = IMGBATCH__V1__RESIZE_OP__INIT;
  pb.op_case = IMGBATCH__V1__NODE__OP_RESIZE;
  pb.resize = &r;
  ib_shape in = {IB_MODE_L, 8, 8}, out;
  ib_error err = {0};
  r.width = IB_DEFAULT_MAX_SIDE + 1;
  r.height = 1;
  cr_expect_eq(infer(ib_op_for_case(pb.op_case), &pb, &in, &out, &err), IB_LIMIT);
  cr_expect(strstr(err.message, "16385") && strstr(err.message, "--max-side"), "%s", err.message);
  r.width = IB_DEFAULT_MAX_SIDE;
  cr_expect_eq(infer(ib_op_for_case(pb.op_case), &pb, &in, &out, &err), IB_OK, "%s", err.message);
  r.width = 0;
  cr_expect_eq(infer(ib_op_for_case(pb.op_case), &pb, &in, &out, &err), IB_INVALID);
}

Test(geometry, paste_rejects_mismatched_modes_without_converting) {
  Imgbatch__V1__Node pb = IMGBATCH__V1__NODE__INIT;
  Imgbatch__V1__PasteOp p = IMGBATCH__V1__PASTE_OP__INIT;
  pb.op_case = IMGBATCH__V1__NODE__OP_PASTE;
  pb.paste = &p;
  ib_shape in[2] = {{IB_MODE_RGBA, 8, 8}, {IB_MODE_RGB, 2, 2}}, out;
  ib_error err = {0};
  cr_expect_eq(infer(ib_op_for_case(pb.op_case), &pb, in, &out, &err), IB_UNSUPPORTED);
  cr_expect(strstr(err.message, "RGB") != NULL, "%s", err.message);
}
