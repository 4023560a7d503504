/*
 * chops.h - per-byte math of the ImageChops two-image functions, matching
 * Pillow 12.3 src/libImaging/Chops.c. Each function maps one byte of image1
 * (a) and the byte at the same offset of image2 (b) to one output byte; Pillow
 * applies the same expression to every band, so a row of any 8-bit mode is a
 * flat run of width * bands bytes.
 *
 * Two families, as in Chops.c:
 *   CHOP  (multiply, screen, difference, darker, lighter, add, subtract): the
 *         expression is evaluated into an int, then clipped to 0..255.
 *   CHOP2 (add_modulo, subtract_modulo, soft_light, hard_light, overlay): the
 *         int expression is stored into a UINT8, i.e. reduced modulo 256.
 * All integer divisions are C int division (truncation toward zero).
 */
#ifndef IB_KERNEL_CHOPS_H
#define IB_KERNEL_CHOPS_H

#include "ib_kernel.h"

/* Values of proto enum imgbatch.v1.ChopsFunction. */
enum {
  IB_CHOP_MULTIPLY = 0,
  IB_CHOP_SCREEN = 1,
  IB_CHOP_OVERLAY = 2,
  IB_CHOP_HARD_LIGHT = 3,
  IB_CHOP_SOFT_LIGHT = 4,
  IB_CHOP_DIFFERENCE = 5,
  IB_CHOP_DARKER = 6,
  IB_CHOP_LIGHTER = 7,
  IB_CHOP_ADD = 8,
  IB_CHOP_SUBTRACT = 9,
  IB_CHOP_ADD_MODULO = 10,
  IB_CHOP_SUBTRACT_MODULO = 11,
  IB_CHOP_COUNT = 12
};

/* ImagingChopMultiply: a * b / 255 (truncated). */
IB_FN uint8_t ib_chop_multiply(uint8_t a, uint8_t b) { return ib_clip8((int)a * (int)b / 255); }

/* ImagingChopScreen: 255 - (255 - a) * (255 - b) / 255 (truncated product term). */
IB_FN uint8_t ib_chop_screen(uint8_t a, uint8_t b) {
  return ib_clip8(255 - ((255 - (int)a) * (255 - (int)b)) / 255);
}

/* ImagingOverlay: a < 128 ? a * b / 127 : 255 - (255 - a) * (255 - b) / 127, mod 256. */
IB_FN uint8_t ib_chop_overlay(uint8_t a, uint8_t b) {
  int v = a < 128 ? ((int)a * (int)b) / 127 : 255 - ((255 - (int)a) * (255 - (int)b)) / 127;
  return (uint8_t)v;
}

/* ImagingChopHardLight: overlay with the roles of a and b swapped in the test
 * and in the products: b < 128 ? a * b / 127 : 255 - (255 - b) * (255 - a) / 127. */
IB_FN uint8_t ib_chop_hard_light(uint8_t a, uint8_t b) {
  int v = b < 128 ? ((int)a * (int)b) / 127 : 255 - ((255 - (int)b) * (255 - (int)a)) / 127;
  return (uint8_t)v;
}

/* ImagingChopSoftLight:
 *   (255 - a) * (a * b) / 65536  +  a * (255 - (255 - a) * (255 - b) / 255) / 255,
 * each division truncating, the sum stored mod 256. */
IB_FN uint8_t ib_chop_soft_light(uint8_t a, uint8_t b) {
  int ia = a, ib = b;
  int v = ((255 - ia) * (ia * ib)) / 65536 + (ia * (255 - ((255 - ia) * (255 - ib) / 255))) / 255;
  return (uint8_t)v;
}

/* ImagingChopDifference: |a - b|. */
IB_FN uint8_t ib_chop_difference(uint8_t a, uint8_t b) {
  int d = (int)a - (int)b;
  return (uint8_t)(d < 0 ? -d : d);
}

IB_FN uint8_t ib_chop_darker(uint8_t a, uint8_t b) { return a < b ? a : b; }
IB_FN uint8_t ib_chop_lighter(uint8_t a, uint8_t b) { return a > b ? a : b; }

/* The int conversion + clip of Pillow's CHOP for a float expression:
 * Pillow does `int temp = v` (truncation) then clips to 0..255. Comparing the
 * float first gives the same byte wherever Pillow's conversion is defined
 * (|v| < 2^31; the op row rejects parameters that could leave that range) and
 * is total on the device, where float->int conversion saturates. */
IB_FN uint8_t ib_chop_clip_float(float v) {
  if (v >= 255.0f) return 255;
  if (v <= 0.0f) return 0;
  return (uint8_t)(int)v;
}

/* ImagingChopAdd(scale, offset): ((int)a + (int)b) / scale + offset, where the
 * int sum converts to float, the division is float32, and the int offset
 * converts to float before a float32 add; then CHOP's truncate-and-clip. */
IB_FN uint8_t ib_chop_add(uint8_t a, uint8_t b, float scale, int offset) {
  float v = (float)((int)a + (int)b) / scale + (float)offset;
  return ib_chop_clip_float(v);
}

/* ImagingChopSubtract(scale, offset): ((int)a - (int)b) / scale + offset, as add. */
IB_FN uint8_t ib_chop_subtract(uint8_t a, uint8_t b, float scale, int offset) {
  float v = (float)((int)a - (int)b) / scale + (float)offset;
  return ib_chop_clip_float(v);
}

/* ImagingChopAddModulo / SubtractModulo: a + b, a - b stored mod 256. */
IB_FN uint8_t ib_chop_add_modulo(uint8_t a, uint8_t b) { return (uint8_t)((int)a + (int)b); }
IB_FN uint8_t ib_chop_subtract_modulo(uint8_t a, uint8_t b) {
  return (uint8_t)(unsigned)((int)a - (int)b);
}

/* One byte of function `fn` (IB_CHOP_*); scale/offset are read by add and
 * subtract only. An unknown fn yields 0 (the op row never passes one). */
IB_FN uint8_t ib_chops_px(int fn, uint8_t a, uint8_t b, float scale, int offset) {
  switch (fn) {
    case IB_CHOP_MULTIPLY: return ib_chop_multiply(a, b);
    case IB_CHOP_SCREEN: return ib_chop_screen(a, b);
    case IB_CHOP_OVERLAY: return ib_chop_overlay(a, b);
    case IB_CHOP_HARD_LIGHT: return ib_chop_hard_light(a, b);
    case IB_CHOP_SOFT_LIGHT: return ib_chop_soft_light(a, b);
    case IB_CHOP_DIFFERENCE: return ib_chop_difference(a, b);
    case IB_CHOP_DARKER: return ib_chop_darker(a, b);
    case IB_CHOP_LIGHTER: return ib_chop_lighter(a, b);
    case IB_CHOP_ADD: return ib_chop_add(a, b, scale, offset);
    case IB_CHOP_SUBTRACT: return ib_chop_subtract(a, b, scale, offset);
    case IB_CHOP_ADD_MODULO: return ib_chop_add_modulo(a, b);
    case IB_CHOP_SUBTRACT_MODULO: return ib_chop_subtract_modulo(a, b);
    default: return 0;
  }
}

/* `n` bytes of one row: out[i] = fn(in1[i], in2[i]). */
IB_FN void ib_chops_row(int fn, const uint8_t *in1, const uint8_t *in2, uint8_t *out, int n,
                        float scale, int offset) {
  for (int i = 0; i < n; i++) out[i] = ib_chops_px(fn, in1[i], in2[i], scale, offset);
}

#endif
