/*
 * Kernel-header functions the GPU backend uses in place of the CPU's loops,
 * proven equal to them here: ib_box_blur_span over any split of a line gives
 * ib_box_blur_line's bytes; the 3x3 rank networks (which both backends run,
 * four bands per word) give ib_rank_select8's.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/boxblur.h"
#include "kernels/rank.h"

static uint64_t st = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) {
  st ^= st >> 12;
  st ^= st << 25;
  st ^= st >> 27;
  return (uint32_t)((st * 0x2545f4914f6cdd1dull) >> 32);
}

Test(boxblur, span_equals_line) {
  static const float radii[] = {0.0f, 0.5f, 1.0f, 1.7f, 2.0f, 3.25f, 7.31f, 12.9f, 40.0f};
  static const int lens[] = {1, 2, 3, 5, 8, 17, 33, 100, 257};
  uint8_t in[2 * 257], ref[2 * 257], got[2 * 257];
  for (size_t ri = 0; ri < sizeof radii / sizeof radii[0]; ri++)
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
      for (int trial = 0; trial < 6; trial++) {
        int n = lens[li];
        ib_box_pass p = ib_box_pass_for(radii[ri]);
        for (int i = 0; i < 2 * n; i++) in[i] = (uint8_t)(trial == 0 ? 255 : rnd());
        memset(ref, 0xa5, sizeof ref);
        memset(got, 0x5a, sizeof got);
        /* step 2: one band of an interleaved pair, as rows of an LA image */
        ib_box_blur_line(ref, 2, in + 1, 2, n, p);
        int seg = 1 + (int)(rnd() % 19u);
        for (int x0 = 0; x0 < n; x0 += seg)
          ib_box_blur_span(got, 2, in + 1, 2, n, x0, x0 + seg < n ? x0 + seg : n, p);
        for (int i = 0; i < n; i++)
          cr_assert_eq(got[2 * i], ref[2 * i], "r=%g n=%d seg=%d x=%d: %d != %d", radii[ri], n, seg,
                       i, got[2 * i], ref[2 * i]);
      }
}

/* `passes` passes of ib_box_blur_line over one line (out != in). */
static void line_passes(uint8_t *out, const uint8_t *in, int n, int passes, ib_box_pass p) {
  uint8_t tmp[2][600];
  memcpy(tmp[0], in, (size_t)n);
  for (int k = 0; k < passes; k++) ib_box_blur_line(tmp[(k + 1) & 1], 1, tmp[k & 1], 1, n, p);
  memcpy(out, tmp[passes & 1], (size_t)n);
}

static const float span_radii[] = {0.0f, 0.5f, 1.0f, 1.7f, 3.25f, 7.47f, 12.9f, 40.0f, 300.0f};

/* Four lines as the byte lanes of words, any split, the words behind a
 * base offset: each lane equals ib_box_blur_line's bytes. */
Test(boxblur, span4_equals_line) {
  static const int lens[] = {1, 2, 3, 5, 17, 33, 100, 257};
  uint8_t lines[4][257], ref[4][257];
  uint32_t words[3 * 262], got[3 * 262];
  for (size_t ri = 0; ri < sizeof span_radii / sizeof span_radii[0]; ri++)
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
      for (int trial = 0; trial < 4; trial++) {
        const int n = lens[li], off = (int)(rnd() % 5u);
        ib_box_pass p = ib_box_pass_for(span_radii[ri]);
        for (int j = 0; j < n; j++) {
          words[3 * (j + off)] = 0;
          for (int b = 0; b < 4; b++) {
            lines[b][j] = (uint8_t)(trial == 0 ? 255 : rnd());
            words[3 * (j + off)] |= (uint32_t)lines[b][j] << (8 * b);
          }
        }
        for (int b = 0; b < 4; b++) ib_box_blur_line(ref[b], 1, lines[b], 1, n, p);
        memset(got, 0x5a, sizeof got);
        /* word j at words[3 * (j + off)]: base -off */
        int seg = 1 + (int)(rnd() % 19u);
        for (int x0 = 0; x0 < n; x0 += seg)
          ib_box_blur_span4(got, 3, words, 3, -off, n, x0, x0 + seg < n ? x0 + seg : n, p);
        for (int j = 0; j < n; j++)
          for (int b = 0; b < 4; b++)
            cr_assert_eq((got[3 * (j + off)] >> (8 * b)) & 255u, ref[b][j],
                         "r=%g n=%d seg=%d x=%d lane %d", span_radii[ri], n, seg, j, b);
      }
}

/* ib_cols (kernels/blur.cuh) emulated on the host: tiles of th output rows
 * of a column image of `nw` words, each loaded with the rows
 * ib_box_tile_rows reaches into a buffer of exactly that many rows
 * (malloc'd: the sanitizer build sees a read outside it), the passes split
 * into nseg row parts by ib_box_seg, ping-pong between two such buffers.
 * Every byte equals `passes` whole-column ib_box_blur_line passes. */
Test(boxblur, column_tiles_equal_passes) {
  static const int heights[] = {1, 2, 5, 31, 128, 300, 513};
  static const int ths[] = {1, 3, 16, 128, 600};
  static const int nsegs[] = {1, 3, 8};
  enum { NW = 3 };
  uint8_t col[600], want[600];
  uint32_t img[NW * 513], res[NW * 513];
  for (size_t ri = 0; ri < sizeof span_radii / sizeof span_radii[0]; ri++)
    for (size_t hi_ = 0; hi_ < sizeof heights / sizeof heights[0]; hi_++)
      for (int passes = 1; passes <= 3; passes += 2) {
        const int H = heights[hi_];
        const int th = ths[rnd() % 5u], nseg = nsegs[rnd() % 3u];
        const ib_box_pass p = ib_box_pass_for(span_radii[ri]);
        const int pad = p.radius + 1;
        for (int i = 0; i < NW * H; i++) img[i] = rnd();
        memset(res, 0xa5, sizeof res);
        for (int y0 = 0; y0 < H; y0 += th) {
          const int y1 = y0 + th < H ? y0 + th : H;
          int lo, hi;
          ib_box_tile_rows(y0, y1, H, pad, passes, &lo, &hi);
          uint32_t *A = malloc(sizeof *A * NW * (size_t)(hi - lo));
          uint32_t *B = malloc(sizeof *B * NW * (size_t)(hi - lo));
          cr_assert(A && B);
          memcpy(A, img + (size_t)lo * NW, sizeof *A * NW * (size_t)(hi - lo));
          for (int k = 0; k < passes; k++) {
            int olo, ohi;
            ib_box_tile_rows(y0, y1, H, pad, passes - 1 - k, &olo, &ohi);
            for (int c = 0; c < NW; c++)
              for (int sg = 0; sg < nseg; sg++) {
                int x0, x1;
                ib_box_seg(olo, ohi, nseg, sg, &x0, &x1);
                if (x0 < x1) ib_box_blur_span4(B + c, NW, A + c, NW, lo, H, x0, x1, p);
              }
            uint32_t *t = A;
            A = B;
            B = t;
          }
          memcpy(res + (size_t)y0 * NW, A + (size_t)(y0 - lo) * NW,
                 sizeof *A * NW * (size_t)(y1 - y0));
          free(A);
          free(B);
        }
        for (int c = 0; c < NW; c++)
          for (int b = 0; b < 4; b++) {
            for (int y = 0; y < H; y++) col[y] = (uint8_t)(img[y * NW + c] >> (8 * b));
            line_passes(want, col, H, passes, p);
            for (int y = 0; y < H; y++)
              cr_assert_eq((res[y * NW + c] >> (8 * b)) & 255u, want[y],
                           "r=%g H=%d th=%d nseg=%d passes=%d col %d lane %d y=%d", span_radii[ri],
                           H, th, nseg, passes, c, b, y);
          }
      }
}

/* 0-1 principle: a comparator network sorts every input iff it sorts every
 * 0/1 input. Each byte lane gets its own input. */
Test(rank, sort9_network_sorts_all_0_1_inputs) {
  for (unsigned m = 0; m < 512; m++) {
    uint32_t v[9];
    for (int i = 0; i < 9; i++) {
      v[i] = 0;
      for (int lane = 0; lane < 4; lane++)
        v[i] |= (uint32_t)((((m * (2u * lane + 1u)) & 511u) >> i) & 1u) << (8 * lane);
    }
    ib_rank_sort9x4(v);
    for (int i = 1; i < 9; i++)
      for (int lane = 0; lane < 4; lane++)
        cr_assert_leq((v[i - 1] >> (8 * lane)) & 255u, (v[i] >> (8 * lane)) & 255u,
                      "input %u lane %d", m, lane);
  }
}

/* The host's per-byte min/max (the device's are __vminu4/__vmaxu4): every
 * pair of byte values, in every lane, beside random neighbours. */
Test(rank, byte_lane_min_max) {
  for (unsigned x = 0; x < 256; x++)
    for (unsigned y = 0; y < 256; y++) {
      const int lane = (int)((x + y) & 3u), s = 8 * lane;
      const uint32_t keep = ~(0xffu << s), ra = rnd(), rb = rnd();
      const uint32_t a = (ra & keep) | x << s, b = (rb & keep) | y << s;
      const uint32_t lo = ib_vmin4(a, b), hi = ib_vmax4(a, b);
      cr_assert_eq((lo >> s) & 255u, x < y ? x : y, "min %u %u lane %d", x, y, lane);
      cr_assert_eq((hi >> s) & 255u, x < y ? y : x, "max %u %u lane %d", x, y, lane);
      for (int o = 0; o < 32; o += 8) {
        const unsigned p = (a >> o) & 255u, q = (b >> o) & 255u;
        cr_assert_eq((lo >> o) & 255u, p < q ? p : q);
        cr_assert_eq((hi >> o) & 255u, p < q ? q : p);
      }
    }
}

Test(rank, select9x4_equals_select8_for_every_rank_and_lane) {
  for (int trial = 0; trial < 200000; trial++) {
    uint8_t v[4][9];
    uint32_t w[9] = {0};
    unsigned range = trial % 3 == 0 ? 4u : 256u; /* many ties too */
    for (int lane = 0; lane < 4; lane++)
      for (int i = 0; i < 9; i++) {
        v[lane][i] = (uint8_t)(rnd() % range);
        w[i] |= (uint32_t)v[lane][i] << (8 * lane);
      }
    int k = trial % 9;
    const uint32_t r = ib_rank_select9x4(w, k);
    for (int lane = 0; lane < 4; lane++)
      cr_assert_eq((r >> (8 * lane)) & 255u, ib_rank_select8(v[lane], 9, k),
                   "trial %d rank %d lane %d", trial, k, lane);
  }
}

/* The 3x3 function both backends run equals the general per-band window
 * (ib_rank_sample, size 3) for every band count, edge, rank and run start,
 * including runs that reach past the width (their in-image outputs). */
static void check_run3x4(const uint8_t *im, int bands, int w, int h, int k) {
  const int64_t stride = (int64_t)w * bands;
  for (int y = 0; y < h; y++) {
    const uint8_t *c = im + y * stride;
    const uint8_t *u = y > 0 ? c - stride : c, *d = y < h - 1 ? c + stride : c;
    for (int x0 = 0; x0 < w; x0++) {
      uint32_t r[IB_RANK_RUN];
      ib_rank_run3x4(u, c, d, bands, x0, w, k, r);
      for (int j = 0; j < IB_RANK_RUN && x0 + j < w; j++) {
        const int x = x0 + j;
        for (int b = 0; b < bands; b++)
          cr_assert_eq((r[j] >> (8 * b)) & 255u,
                       ib_rank_sample(c + x * bands + b, stride, bands, x, y, w, h, 3, k),
                       "bands %d %dx%d (%d,%d) run at %d rank %d band %d", bands, w, h, x, y, x0, k,
                       b);
        for (int b = bands; b < 4; b++) cr_assert_eq((r[j] >> (8 * b)) & 255u, 0u);
      }
    }
  }
}

Test(rank, run3x4_equals_sample_with_clamped_edges) {
  uint8_t im[11 * 6 * 4];
  for (int trial = 0; trial < 8; trial++) {
    /* few distinct values in some trials: many ties */
    const unsigned range = trial % 2 ? 256u : 3u;
    for (size_t i = 0; i < sizeof im; i++) im[i] = (uint8_t)(rnd() % range);
    for (int bands = 1; bands <= 4; bands++)
      for (int w = 1; w <= 11; w++)
        for (int h = 1; h <= 6; h++)
          for (int k = 0; k < 9; k++) check_run3x4(im, bands, w, h, k);
  }
}

/* Every value triple in a 16-bit lane (the host's twins of the device's
 * VIMNMX3.U16x2), the other lane random, and the middle of three by sums. */
Test(rank, lane16_min_max_med_of_three) {
  for (unsigned a = 0; a < 256; a += 3)
    for (unsigned b = 0; b < 256; b += 5)
      for (unsigned c = 0; c < 256; c++) {
        const int s = (int)((a + b + c) & 1u) * 16;
        const uint32_t o = rnd() & 0xffu, x = a << s | o << (16 - s), y = b << s | o << (16 - s),
                       z = c << s | o << (16 - s);
        const unsigned lo = a < b ? (a < c ? a : c) : (b < c ? b : c);
        const unsigned hi = a > b ? (a > c ? a : c) : (b > c ? b : c);
        cr_assert_eq((ib_vmin3x2(x, y, z) >> s) & 0xffffu, lo);
        cr_assert_eq((ib_vmax3x2(x, y, z) >> s) & 0xffffu, hi);
        cr_assert_eq((ib_rank_med3x2(x, y, z) >> s) & 0xffffu, a + b + c - lo - hi);
        cr_assert_eq((ib_rank_med3x2(x, y, z) >> (16 - s)) & 0xffffu, o);
      }
}
