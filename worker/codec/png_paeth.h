/*
 * png_paeth.h - PNG's Paeth predictor (internal), shared by the encoder's
 * filter choice and the plain decoder's unfilter. Without branches: on
 * photo-like rows its choice is unpredictable, and mispredicted branches
 * were most of a Paeth row's unfilter.
 */
#ifndef IB_PNG_PAETH_H
#define IB_PNG_PAETH_H

#include <stdlib.h>

/* a left, b above, c above-left: whichever is nearest a + b - c, ties to
 * a, then b (the PNG specification's order). */
static inline int ib_png_paeth(int a, int b, int c) {
  const int p = b - c, q = a - c;
  const int pa = abs(p), pb = abs(q), pc = abs(p + q);
  const int not_a = -((pb < pa) | (pc < pa)), c_not_b = -(pc < pb);
  const int bc = b ^ ((b ^ c) & c_not_b);
  return a ^ ((a ^ bc) & not_a);
}

#endif
