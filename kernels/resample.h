/*
 * resample.h - Image.resize with a convolution filter (BOX, BILINEAR,
 * HAMMING, BICUBIC, LANCZOS) on 8-bit bands, matching Pillow 12.3
 * src/libImaging/Resample.c (ImagingResample).
 *
 * Weights (host only: built in double with glibc's sin/cos, never on the
 * device). Per axis, with the box edges in0, in1 already C floats and n_out
 * the output side (precompute_coeffs):
 *   scale = (double)(in1 - in0) / n_out     (float subtraction)
 *   fs    = max(scale, 1);  support = filter_support * fs
 *   ksize = (int)ceil(support) * 2 + 1      (coefficients per output index)
 *   center = in0 + (i + 0.5) * scale
 *   lo = max((int)(center - support + 0.5), 0)
 *   n  = min((int)(center + support + 0.5), n_in) - lo
 *   w[j] = filter((j + lo - center + 0.5) * (1.0 / fs)), j < n, then each
 *          divided by their sum unless the sum is 0 (cut at the borders and
 *          renormalised)
 *   k[j] = (int)(w[j] * 2^22 +- 0.5)        (normalize_coeffs_8bpc: PRECISION_BITS
 *          22, the 0.5 taking w's sign, truncated toward zero)
 * Filters (support): BOX (0.5) 1 on (-0.5, 0.5]; BILINEAR (1) 1 - |x|;
 * HAMMING (1) sinc(x) * (0.54f + 0.46f * cos(pi x)) with the float constants
 * widened to double; BICUBIC (2) Keys with a = -0.5; LANCZOS (3)
 * sinc(x) * sinc(x / 3) on [-3, 3).
 *
 * Passes (host and device, all integer): one output sample of one band is
 *   ss = 2^21 + sum_j in[lo + j] * k[j]   (C int)
 *   out = clip8(ss >> 22)                  (arithmetic shift, then 0..255:
 *                                           Pillow's clip8 lookup)
 * Bands are independent; Pillow's 4-byte pixel words change nothing for
 * L, LA, RGB, RGBA, CMYK, RGBX since each band is computed on its own.
 */
#ifndef IB_RESAMPLE_H
#define IB_RESAMPLE_H

#include "ib_kernel.h"
#ifndef __CUDACC_RTC__
#include <stdbool.h>
#include <string.h>
#endif

/* Image.Resampling values (= proto Resample). */
#define IB_RESAMPLE_NEAREST 0
#define IB_RESAMPLE_LANCZOS 1
#define IB_RESAMPLE_BILINEAR 2
#define IB_RESAMPLE_BICUBIC 3
#define IB_RESAMPLE_BOX 4
#define IB_RESAMPLE_HAMMING 5

#define IB_RESAMPLE_PRECISION_BITS 22

/* One axis of a pass: output index i reads n = bounds[2i + 1] source
 * samples from lo = bounds[2i] on, weighted by coeffs[i * ksize + j]. */
typedef struct ib_resample_axis {
  int ksize;
  const int32_t *bounds;
  const int32_t *coeffs;
} ib_resample_axis;

IB_FN uint8_t ib_resample_clip8(int ss) {
  int v = ss >> IB_RESAMPLE_PRECISION_BITS;
  return (uint8_t)(v <= 0 ? 0 : (v >= 255 ? 255 : v));
}

/* One output sample: n source samples `step` bytes apart from `in`. */
IB_FN uint8_t ib_resample_sample(const uint8_t *in, int64_t step, const int32_t *k, int n) {
  int ss = 1 << (IB_RESAMPLE_PRECISION_BITS - 1);
  for (int j = 0; j < n; j++) ss += (int)in[j * step] * k[j];
  return ib_resample_clip8(ss);
}

/* Horizontal pass, output pixel xx of one row (_ImagingResampleHorizontal_8bpc):
 * `row` is the source row, `bands` bytes per pixel. */
IB_FN void ib_resample_h_pixel(uint8_t *out, const uint8_t *row, int bands, int xx,
                               ib_resample_axis ax) {
  const int lo = ax.bounds[2 * xx], n = ax.bounds[2 * xx + 1];
  const int32_t *k = ax.coeffs + (int64_t)xx * ax.ksize;
  for (int b = 0; b < bands; b++)
    out[b] = ib_resample_sample(row + (int64_t)lo * bands + b, bands, k, n);
}

/* Vertical pass, output pixel (xx, yy) (_ImagingResampleVertical_8bpc):
 * `in` is the source image's first row, `stride` bytes per row. */
IB_FN void ib_resample_v_pixel(uint8_t *out, const uint8_t *in, int64_t stride, int bands, int xx,
                               int yy, ib_resample_axis ax) {
  const int lo = ax.bounds[2 * yy], n = ax.bounds[2 * yy + 1];
  const int32_t *k = ax.coeffs + (int64_t)yy * ax.ksize;
  const uint8_t *col = in + (int64_t)lo * stride + (int64_t)xx * bands;
  for (int b = 0; b < bands; b++) out[b] = ib_resample_sample(col + b, stride, k, n);
}

/* Image.resize premultiplies LA and RGBA (convert to La / RGBa, Convert.c
 * lA2la / rgbA2rgba): every colour band c becomes MULDIV255(c, alpha) =
 * (t + (t >> 8)) >> 8 with t = c * alpha + 128. Alpha is the last band. */
IB_FN void ib_premultiply_px(uint8_t *px, int bands) {
  const unsigned a = px[bands - 1];
  /* b < 3 always holds (1..4 bands); it tells GCC's -Wstringop-overflow that
   * callers' 4-byte pixels are large enough. */
  for (int b = 0; b < bands - 1 && b < 3; b++) {
    unsigned t = px[b] * a + 128;
    px[b] = (uint8_t)(((t >> 8) + t) >> 8);
  }
}

/* ... and takes it back after resizing (la2lA / rgba2rgbA): alpha 0 and 255
 * keep the colour bands, otherwise CLIP8(255 * c / alpha), truncating. */
IB_FN void ib_unpremultiply_px(uint8_t *px, int bands) {
  const unsigned a = px[bands - 1];
  if (a == 0 || a == 255) return;
  for (int b = 0; b < bands - 1; b++) {
    unsigned v = 255u * px[b] / a;
    px[b] = (uint8_t)(v > 255 ? 255 : v);
  }
}

/* ------------------------------------------- device step (resample.cuh)
 *
 * One job's parameters, written by the op row (worker/ops/op_resize.c) and
 * read by the kernels and the launch plan: Image.resize's whole sequence
 * for the job (op_resize.h ib_resize_plan), i.e. reducing_gap's reduce step
 * when it runs, then one _resize call, or two for a tall image.
 *
 * Images of the sequence lie in the job's source (IB_RSI_SRC: d.in0,
 * d.stride0 pixels per row), its output (IB_RSI_OUT: d.out) or its scratch
 * buffer (IB_RSI_SCRATCH: d.in1 at a byte offset). The reduce step reads
 * the source and writes rw x rh pixels at scratch offset 0. Each call says
 * what runs, as _resize and ImagingResampleInner decide it:
 *   IB_RSP_CROP  an integral box of the call's output size (ImagingCrop at
 *                crop_x, crop_y), also the whole-image copy;
 *   IB_RSP_H     the horizontal pass over source rows first .. first+rows-1;
 *   IB_RSP_V     the vertical pass (into the call's destination).
 * With both passes the horizontal one writes an out_w x rows image at
 * scratch offset tmp_off and the vertical bounds are already shifted by
 * `first`. The weight tables follow the parameter block (at d.params +
 * IB_PBYTES) as int32 words: x bounds at xb, x coeffs at xk, y bounds at
 * yb, y coeffs at yk (a pass that does not run has none). With IB_A (LA,
 * RGBA) a pass premultiplies what it reads from the source and
 * unpremultiplies what it writes to the output, so the scratch images hold
 * the premultiplied values the CPU path holds. */
enum { IB_RSP_CROP = 1, IB_RSP_H = 2, IB_RSP_V = 4 };
enum { IB_RSI_SRC, IB_RSI_OUT, IB_RSI_SCRATCH };

typedef struct ib_rsp_call {
  uint64_t src_off, dst_off, tmp_off; /* scratch byte offsets (IB_RSI_SCRATCH) */
  int32_t passes;                     /* IB_RSP_* */
  int32_t src, dst;                   /* IB_RSI_* */
  int32_t in_w, in_h, out_w, out_h;
  int32_t crop_x, crop_y;
  int32_t first, rows;
  int32_t ksize_x, ksize_y;
  int32_t xb, xk, yb, yk;
  /* the tiled horizontal pass (ib_resample_tile_plan); tile_x 0: the
   * pixel-parallel one; xq: its weights in byte planes (ib_resample_quads,
   * a multiple of 4 words) */
  int32_t tile_x, tile_pitch, tile_smem, xq;
  /* the vertical pass's weights in byte planes when it reads the
   * horizontal pass's rows (ib_resample_tmp_at), a multiple of 4 words */
  int32_t yq, pad_;
} ib_rsp_call;

typedef struct ib_resample_params {
  int32_t n_calls; /* 1 or 2 */
  int32_t reduce;  /* 1: ImagingReduce first */
  int32_t fx, fy;  /* its factor */
  int32_t rbox[4]; /* its box: left, top, width, height */
  int32_t rw, rh;  /* its output */
  int32_t pad[2];
  ib_rsp_call call[2];
} ib_resample_params;

/* Kernels of resample.cuh, in the order of the op row's list; the
 * horizontal and vertical ones take the call's index as their argument,
 * ib_resample_h also whether it runs the calls planned tiled (the tiled
 * kernel cannot run: no shared memory). */
enum { IB_RESAMPLE_K_H, IB_RESAMPLE_K_V, IB_RESAMPLE_K_REDUCE, IB_RESAMPLE_K_HT };

/* Threads that share one output pixel of the horizontal pass (a power of
 * two, at most a warp): lane l sums taps l, l + lanes, ... and the lanes'
 * sums are added up across the group. A shrink reads a wide window per
 * pixel, so neighbouring pixels' windows lie far apart and a thread per
 * pixel loads scattered bytes and weights; lanes on one pixel load
 * neighbouring ones. Integer addition is exact in any order (the sum of
 * 8-bit samples times weights that sum to 2^22 fits an int), so the bytes
 * are the sequential sum's. Narrow windows (enlarging, mild shrinks) keep
 * a thread per pixel. The launch plan sizes the grid with it. */
IB_FN int ib_resample_h_lanes(int ksize) {
  if (ksize < 8) return 1;
  int g = 1;
  while (g < 32 && 8 * g <= ksize) g *= 2; /* at least 4 taps a lane */
  return g;
}

/* Slices of the taps of one output pixel of the vertical pass (a power of
 * two, at most 8): a shrink's pass has few output pixels with long windows
 * (12 MP -> 256: 49 k pixels of ~97 taps), too few threads to hide a load's
 * latency when each walks its whole window. A block's warps then share 32
 * neighbouring pixels, warp s summing taps (or quads) s, s + slices, ... of
 * each (neighbouring lanes still read neighbouring bytes of one row), and
 * the partial sums are added in shared memory: exact in any order, as for
 * ib_resample_h_lanes. Short windows keep one warp. Over the horizontal
 * pass's four-row words (`words`) a load brings four taps, so a slice takes
 * at least 8 quads: more slices would add blocks (and waves of them, each
 * waiting out the same chain of loads before its first sum) rather than
 * loads in flight. The launch plan sizes the grid with
 * ib_resample_v_threads. */
#define IB_RESAMPLE_V_MAX_SLICES 8

IB_FN int ib_resample_v_slices(int ksize, bool words) {
  const int taps = words ? 64 : 16; /* twice a slice's least taps */
  int s = 1;
  while (s < IB_RESAMPLE_V_MAX_SLICES && taps * s <= ksize) s *= 2;
  return s;
}

/* Threads of a vertical pass over `pixels` outputs: whole warps of 32
 * pixels, one a slice. */
IB_FN unsigned long long ib_resample_v_threads(unsigned long long pixels, int ksize, bool words) {
  return (pixels + 31) / 32 * 32 * (unsigned long long)ib_resample_v_slices(ksize, words);
}

/* The tiled horizontal pass (ib_resample_ht) for wide windows: a block
 * stages IB_RESAMPLE_TILE_ROWS source rows, just the span that tile_x
 * consecutive outputs read, in shared memory (premultiplied when the pass
 * premultiplies), a plane per band: plane b holds band b of the tile's rows,
 * a row's bytes from source pixel lo0 & ~3 on (lo0: the tile's first
 * window), so that four neighbouring samples of one band are one aligned
 * word wherever a window starts. Then a warp's lanes are the tile's rows and
 * its outputs go one by one: the window's bounds and every weight are the
 * same for the 32 lanes (one load each, no divergence), and a lane reads its
 * own staged row. A row's pitch (ib_resample_tile_pitch) is an odd number of
 * 4-byte words, so the 32 rows of a plane fall in 32 different banks. The
 * outputs go through a shared tile too, then to global memory a row at a
 * time. */
#define IB_RESAMPLE_TILE_ROWS 32
/* Quads a turn of the tiled pass's summing loop takes. */
#define IB_RESAMPLE_SUM_UNROLL 4
#define IB_RESAMPLE_TILE_SMEM (48 * 1024) /* what every kernel may take */
IB_FN int ib_resample_tile_pitch(int bytes) { return ((bytes + 3) & ~3) | 4; }
/* Shared bytes of a tile: the staged planes, then the output rows. */
IB_FN int ib_resample_tile_bytes(int pitch, int tile_x, int bands) {
  return IB_RESAMPLE_TILE_ROWS * (bands * pitch + ib_resample_tile_pitch(tile_x * bands));
}

/* The tiled pass sums a window four taps at a time with dp4a (four 8-bit
 * products added to a 32-bit sum in one instruction): the weights of four
 * neighbouring taps, split into byte planes, against one staged word.
 * A weight k (|k| < 2^23, checked where the tables are built) is
 *   k = k0 + 2^8 k1 + 2^16 k2   (k0, k1 unsigned bytes, k2 a signed one)
 * so a window's sum is S0 + 2^8 S1 + 2^16 S2 with Sp = sum_j in[j] * kp[j],
 * exactly the tap-by-tap sum modulo 2^32, which is the sum itself: it fits
 * an int (ib_resample_h_lanes). A window starting at lo begins lo & 3 taps
 * into its first word; its quads ("quad" = four taps) carry zero weights
 * there and past its end. A table (at word xq, or yq for the vertical
 * pass over four-row words): word 0 is 1 when every
 * weight fits, else 0 and the pass sums tap by tap from the int32 table;
 * then from word 4 on, per output, ib_resample_quad_max(ksize) quads of 4
 * words (k0, k1, k2 of its four taps as bytes, lowest tap lowest; 0). */
IB_FN int ib_resample_quad_max(int ksize) { return (ksize + 6) / 4; }
IB_FN int ib_resample_quads_of(int lo, int n) { return ((lo & 3) + n + 3) / 4; }

/* dp4a: c + the sum of a's four bytes (unsigned) times b's (unsigned, or
 * signed when b_signed), modulo 2^32; on the host the same sum spelled out,
 * so the replay of tests/unit checks the arithmetic the device runs. */
IB_FN unsigned ib_resample_dp4a(unsigned a, unsigned b, unsigned c, bool b_signed) {
#ifdef __CUDACC_RTC__
  unsigned d;
  if (b_signed)
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  else
    asm("dp4a.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  for (int i = 0; i < 4; i++) {
    const unsigned x = (a >> (8 * i)) & 0xffu, y = (b >> (8 * i)) & 0xffu;
    c += x * (b_signed && y > 127 ? y - 256u : y);
  }
  return c;
#endif
}

/* One quad of a window: word d's four samples times the quad's three
 * weight planes k0, k1, k2 (the last signed), added into the plane sums
 * s[0..2] (ib_resample_dp4a). */
IB_FN void ib_resample_quad_add(unsigned *s, unsigned d, unsigned k0, unsigned k1, unsigned k2) {
  s[0] = ib_resample_dp4a(d, k0, s[0], false);
  s[1] = ib_resample_dp4a(d, k1, s[1], false);
  s[2] = ib_resample_dp4a(d, k2, s[2], true);
}

/* The three plane sums made one: the tap-by-tap sum without its rounding
 * term, modulo 2^32. */
IB_FN unsigned ib_resample_quad_sum(const unsigned *s) { return s[0] + (s[1] << 8) + (s[2] << 16); }

/* A window's sum without its rounding term (any order of addition, modulo
 * 2^32), rounded and clipped as ib_resample_sample does. */
IB_FN uint8_t ib_resample_round(unsigned ss) {
  return ib_resample_clip8((int)(ss + (1u << (IB_RESAMPLE_PRECISION_BITS - 1))));
}

/* Where a call runs both passes, the horizontal pass's out_w x rows image
 * (scratch at tmp_off) keeps four rows in a word: band b of pixel (x, y) is
 * byte y & 3 of word ((y / 4) out_w + x) bands + b. The vertical pass then
 * reads four neighbouring taps of a column with one load and sums them with
 * dp4a against its own quads, as the tiled horizontal pass does; the
 * image's rows are rounded up to a multiple of 4 (ib_resample_tmp_rows). */
IB_FN unsigned long long ib_resample_tmp_at(int x, int y, int b, int out_w, int bands) {
  return ((((unsigned long long)(y >> 2) * (unsigned)out_w + (unsigned)x) * (unsigned)bands +
           (unsigned)b)
          << 2) |
         (unsigned)(y & 3);
}
IB_FN int ib_resample_tmp_rows(int rows) { return (rows + 3) & ~3; }

#ifndef __CUDACC_RTC__
/* ------------------------------------------------ host: weight tables */

/* The filter's support (Resample.c's struct filter); 0 for NEAREST or an
 * unknown value. */
static inline double ib_resample_support(int filter) {
  switch (filter) {
    case IB_RESAMPLE_BOX: return 0.5;
    case IB_RESAMPLE_BILINEAR:
    case IB_RESAMPLE_HAMMING: return 1.0;
    case IB_RESAMPLE_BICUBIC: return 2.0;
    case IB_RESAMPLE_LANCZOS: return 3.0;
    default: return 0.0;
  }
}

static inline double ib_resample_sinc(double x) {
  if (x == 0.0) return 1.0;
  x = x * M_PI;
  return sin(x) / x;
}

/* box_filter, bilinear_filter, hamming_filter, bicubic_filter,
 * lanczos_filter, each in Pillow's order of operations. */
static inline double ib_resample_filter(int filter, double x) {
  const double a = -0.5; /* bicubic */
  switch (filter) {
    case IB_RESAMPLE_BOX: return x > -0.5 && x <= 0.5 ? 1.0 : 0.0;
    case IB_RESAMPLE_BILINEAR:
      if (x < 0.0) x = -x;
      return x < 1.0 ? 1.0 - x : 0.0;
    case IB_RESAMPLE_HAMMING:
      if (x < 0.0) x = -x;
      if (x == 0.0) return 1.0;
      if (x >= 1.0) return 0.0;
      x = x * M_PI;
      return sin(x) / x * ((double)0.54f + (double)0.46f * cos(x));
    case IB_RESAMPLE_BICUBIC:
      if (x < 0.0) x = -x;
      if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
      if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
      return 0.0;
    default: /* LANCZOS */
      return -3.0 <= x && x < 3.0 ? ib_resample_sinc(x) * ib_resample_sinc(x / 3) : 0.0;
  }
}

/* precompute_coeffs' scale: the float span divided in double. */
static inline double ib_resample_scale(float in0, float in1, int n_out) {
  return (double)(in1 - in0) / n_out;
}

/* Coefficients per output index (ksize) for one axis. */
static inline int ib_resample_ksize(int filter, float in0, float in1, int n_out) {
  double fs = ib_resample_scale(in0, in1, n_out);
  if (fs < 1.0) fs = 1.0;
  return (int)ceil(ib_resample_support(filter) * fs) * 2 + 1;
}

/* precompute_coeffs' source range of output index i: the first sample
 * `lo` and the count `n`. */
static inline void ib_resample_bound(int filter, int n_in, float in0, float in1, int n_out, int i,
                                     int *lo, int *n) {
  const double scale = ib_resample_scale(in0, in1, n_out);
  const double fs = scale < 1.0 ? 1.0 : scale;
  const double support = ib_resample_support(filter) * fs;
  const double center = in0 + (i + 0.5) * scale;
  int l = (int)(center - support + 0.5);
  if (l < 0) l = 0;
  int h = (int)(center + support + 0.5);
  if (h > n_in) h = n_in;
  *lo = l;
  *n = h - l;
}

/* One axis's integer tables: bounds[2 * n_out] and coeffs[n_out * ksize]
 * (ksize from ib_resample_ksize; unused trailing coefficients are 0).
 * `w` is scratch for ksize doubles. */
static inline void ib_resample_coeffs(int filter, int n_in, float in0, float in1, int n_out,
                                      int ksize, int32_t *bounds, int32_t *coeffs, double *w) {
  const double scale = ib_resample_scale(in0, in1, n_out);
  const double fs = scale < 1.0 ? 1.0 : scale;
  const double inv_fs = 1.0 / fs;
  for (int i = 0; i < n_out; i++) {
    const double center = in0 + (i + 0.5) * scale;
    int lo, n;
    ib_resample_bound(filter, n_in, in0, in1, n_out, i, &lo, &n);
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
      w[j] = ib_resample_filter(filter, (j + lo - center + 0.5) * inv_fs);
      sum += w[j];
    }
    int32_t *k = coeffs + (int64_t)i * ksize;
    for (int j = 0; j < ksize; j++) {
      double v = j < n ? (sum != 0.0 ? w[j] / sum : w[j]) : 0.0;
      k[j] = v < 0 ? (int)(-0.5 + v * (1 << IB_RESAMPLE_PRECISION_BITS))
                   : (int)(0.5 + v * (1 << IB_RESAMPLE_PRECISION_BITS));
    }
    bounds[2 * i] = lo;
    bounds[2 * i + 1] = n;
  }
}

/* The tiling of a wide horizontal pass (ib_resample_h_lanes > 1): the
 * widest tile (tile_x outputs, a power of two up to 64) whose shared bytes
 * fit IB_RESAMPLE_TILE_SMEM, with the pitch of its widest staged span (from
 * the word holding its first output's first sample to the end of its last
 * one's window: both grow with the output index). tile_x 0: narrow windows,
 * or no tile fits; the pixel-parallel pass runs. */
static inline void ib_resample_tile_plan(int filter, int n_in, float in0, float in1, int n_out,
                                         int ksize, int bands, int32_t *tile_x, int32_t *pitch,
                                         int32_t *smem) {
  *tile_x = *pitch = *smem = 0;
  if (ib_resample_h_lanes(ksize) < 2) return;
  for (int tx = 64; tx >= 1; tx /= 2) {
    int span = 0;
    for (int x0 = 0; x0 < n_out; x0 += tx) {
      const int x1 = (x0 + tx < n_out ? x0 + tx : n_out) - 1;
      int lo0, n0, lo1, n1;
      ib_resample_bound(filter, n_in, in0, in1, n_out, x0, &lo0, &n0);
      ib_resample_bound(filter, n_in, in0, in1, n_out, x1, &lo1, &n1);
      if (lo1 + n1 - (lo0 & ~3) > span) span = lo1 + n1 - (lo0 & ~3);
    }
    const int p = ib_resample_tile_pitch(span);
    const int b = ib_resample_tile_bytes(p, tx, bands);
    if (b <= IB_RESAMPLE_TILE_SMEM) {
      *tile_x = tx, *pitch = p, *smem = b;
      return;
    }
  }
}

/* The int32 words of a tiled call's quad table (ib_resample_quad_max). */
static inline size_t ib_resample_quad_words(int n_out, int ksize) {
  return 4 + (size_t)n_out * (size_t)ib_resample_quad_max(ksize) * 4;
}

/* The quad table of an axis's tables (ib_resample_coeffs' bounds and
 * coeffs) into q (ib_resample_quad_words); false, with word 0 cleared, when
 * a weight does not fit three byte planes. */
static inline bool ib_resample_quads(const int32_t *bounds, const int32_t *coeffs, int n_out,
                                     int ksize, uint32_t *q) {
  const int qmax = ib_resample_quad_max(ksize);
  memset(q, 0, ib_resample_quad_words(n_out, ksize) * sizeof *q);
  for (int i = 0; i < n_out; i++) {
    const int lo = bounds[2 * i], n = bounds[2 * i + 1], pad = lo & 3;
    const int32_t *k = coeffs + (int64_t)i * ksize;
    uint32_t *out = q + 4 + (size_t)i * (size_t)qmax * 4;
    for (int j = 0; j < n; j++) {
      if (k[j] < -(1 << 23) || k[j] >= (1 << 23)) return false;
      const uint32_t u = (uint32_t)k[j];
      const int t = pad + j, at = (t / 4) * 4, sh = 8 * (t % 4);
      out[at] |= (u & 0xffu) << sh;
      out[at + 1] |= ((u >> 8) & 0xffu) << sh;
      out[at + 2] |= ((u >> 16) & 0xffu) << sh;
    }
  }
  q[0] = 1;
  return true;
}
#endif

#endif
