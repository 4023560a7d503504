/*
 * ib_mathf.h - cube roots and powers whose results are the same bits on the
 * host and under NVRTC. libm's and CUDA's powf/cbrtf/exp2f may differ in the
 * last bit, which would make a GPU pixel differ from the CPU reference. These
 * use only IEEE-754 double +, -, *, / and sqrt (correctly rounded on both
 * sides) and the exact frexp/ldexp (exponent moves, no rounding; --fmad=false keeps the device from
 * contracting them), so a backend that calls them reproduces the CPU byte for byte. Accuracy is
 * close to double precision before the final narrowing to float.
 */
#ifndef IB_MATHF_H
#define IB_MATHF_H

#include "ib_kernel.h"

/* x = m * 8^q with m in [1/8, 1), q = ceil(e / 3) for frexp's exponent e:
 * frexp and ldexp are exact (no rounding), so m and 2^q are the values the
 * former loops (x *= 1/8 or 8, scale *= 2 or 1/2, one at a time) reached. */
IB_FN int ib_ceil_div(int e, int d) { return e >= 0 ? (e + d - 1) / d : -((-e) / d); }

/* x^(1/3) for finite x >= 0: scale into [1/8, 1) by exact powers of 8, then
 * Newton from a cubic guess fitted on [1/8, 0.35) and [0.35, 1) (Chebyshev
 * nodes; relative error below 5.3e-4). Newton squares the error: 2.4e-7,
 * 6e-14, then 1 ulp after the third step - half the divisions of the former
 * linear guess with 6 steps, which dominated the tone kernel. */
IB_FN double ib_cbrt_d(double x) {
  if (!(x > 0.0)) return 0.0;
  int e;
  double m = frexp(x, &e);
  const int q = ib_ceil_div(e, 3);
  x = ldexp(m, e - 3 * q);
  double y = x < 0.35
                 ? ((3.3139677865482184 * x - 3.6966616976532256) * x + 2.0627590108463676) * x +
                       0.29368613568394597
                 : ((0.20559434170626478 * x - 0.6512894123530185) * x + 1.0305828987269838) * x +
                       0.41536624850355686;
  for (int i = 0; i < 3; i++) y = y - (y * y * y - x) / (3.0 * y * y);
  return ldexp(y, q);
}

/* x^(1/5) for finite x >= 0, as ib_cbrt_d with powers of 32. */
IB_FN double ib_root5_d(double x) {
  if (!(x > 0.0)) return 0.0;
  int e;
  double m = frexp(x, &e);
  const int q = ib_ceil_div(e, 5);
  x = ldexp(m, e - 5 * q);
  double y = 0.5 + 0.5 * x;
  for (int i = 0; i < 8; i++) {
    double y2 = y * y, y4 = y2 * y2;
    y = y - (y4 * y - x) / (5.0 * y4);
  }
  return ldexp(y, q);
}

/* x^2.4 = x^2 * (x^(1/5))^2, x >= 0 (the sRGB decode's power). */
IB_FN double ib_pow_2_4_d(double x) {
  double r = ib_root5_d(x);
  return x * x * r * r;
}

/* x^(1/2.4) = (x^(1/12))^5 with x^(1/12) = sqrt(sqrt(cbrt(x))), x >= 0. */
IB_FN double ib_pow_inv_2_4_d(double x) {
  double r = sqrt(sqrt(ib_cbrt_d(x)));
  double r2 = r * r;
  return r2 * r2 * r;
}

/* 2^x for |x| <= 64: 2^floor(x) by exact scaling (ldexp), 2^frac by the Taylor
 * series of e^(frac * ln 2) (26 terms: below double rounding for frac < 1). */
IB_FN double ib_exp2_d(double x) {
  double k = floor(x), t = (x - k) * 0.6931471805599453, term = 1.0, sum = 1.0;
  for (int n = 1; n < 26; n++) {
    term = term * t / n;
    sum += term;
  }
  return ldexp(sum, (int)k); /* exact, as the former doubling loops */
}

#endif
