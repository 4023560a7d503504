/*
 * codec_bench.c - PNG or JPEG decode throughput on T threads of one
 * process, as a job decodes (ib_codec_header, then ib_codec_decode_into a
 * buffer of that shape): through libvips (vips_pngload_buffer or
 * vips_jpegload_buffer, the paths before codec/png_decode.c and
 * codec/jpeg_decode.c) and through libpng or libjpeg directly (the paths
 * now; a plain PNG inflated whole by libdeflate, codec/png_plain.c):
 * libvips' PNG decodes did not scale past one thread in one process.
 *
 *   codec_bench [--format png|jpeg] [--sides 128,1024] [--threads 1,2]
 *               [--images N] [--seconds S] [--content noise|smooth]
 *               [--paths both|libvips|direct]
 *
 *   --format    png (libdeflate level 6, as the worker encodes) or jpeg
 *               (libjpeg quality 85, 4:2:0, as Pillow saves); png
 *   --sides     RGB images of S x S; 128,1024
 *   --threads   thread counts to time; 1,2
 *   --images    distinct files per side, decoded round-robin; 64
 *   --seconds   per measurement; 1.0
 *   --content   noise (a file about as large as its pixels, as kafka_bench's
 *               jobs) or smooth (a gradient with noise in its low bits,
 *               closer to a photo); noise
 *   --paths     which paths to time (for a profile of one); both
 *
 * First checks that both paths give the same bytes for every file. Prints
 * one line per side, path and thread count (images/s, MB/s of pixels), then
 * per side the new path's speedup at each thread count. Tool code: a
 * failure prints what failed and exits 1.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "codec/jpeg_encode.h"
#include "codec/png_encode.h"
#include "core/error.h"

typedef struct file {
  uint8_t *data; /* the encoded file */
  size_t len;
} file;

typedef struct run {
  const file *files;
  int n_files;
  bool vips;
  atomic_bool stop;
  atomic_llong done;
  int failed;
  char why[320];
} run;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static ib_status decode(bool vips, const file *f, ib_shape *s, uint8_t **px, size_t *cap,
                        ib_error *e) {
  ib_status st =
      vips ? ib_codec_header_vips(f->data, f->len, s, e) : ib_codec_header(f->data, f->len, s, e);
  if (st != IB_OK) return st;
  size_t n = (size_t)s->width * s->height * ib_mode_bands(s->mode);
  if (n > *cap) {
    free(*px);
    if (!(*px = malloc(n))) return IB_INTERNAL;
    *cap = n;
  }
  return vips ? ib_codec_decode_into_vips(f->data, f->len, s, *px, e)
              : ib_codec_decode_into(f->data, f->len, s, *px, e);
}

static void *worker(void *arg) {
  run *r = arg;
  uint8_t *px = NULL;
  size_t cap = 0;
  static atomic_int next_start;
  int i = atomic_fetch_add(&next_start, 7) % r->n_files;
  while (!atomic_load(&r->stop)) {
    ib_shape s;
    ib_error e = {0};
    if (decode(r->vips, &r->files[i], &s, &px, &cap, &e) != IB_OK) {
      r->failed = 1;
      snprintf(r->why, sizeof r->why, "%s", e.message);
      break;
    }
    atomic_fetch_add(&r->done, 1);
    i = (i + 1) % r->n_files;
  }
  free(px);
  return NULL;
}

/* Images per second on `threads` threads. */
static double measure(const file *files, int n, bool vips, int threads, double seconds) {
  run r = {.files = files, .n_files = n, .vips = vips};
  pthread_t t[256];
  double t0 = now();
  for (int k = 0; k < threads; k++)
    if (pthread_create(&t[k], NULL, worker, &r) != 0) {
      fprintf(stderr, "codec_bench: pthread_create failed\n");
      exit(1);
    }
  struct timespec nap = {.tv_sec = (time_t)seconds,
                         .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&nap, NULL);
  atomic_store(&r.stop, true);
  for (int k = 0; k < threads; k++) pthread_join(t[k], NULL);
  double dt = now() - t0;
  if (r.failed) {
    fprintf(stderr, "codec_bench: decode failed: %s\n", r.why);
    exit(1);
  }
  return (double)atomic_load(&r.done) / dt;
}

static int parse_list(const char *s, int *out, int max) {
  int n = 0;
  for (char *end; *s && n < max; s = *end ? end + 1 : end) {
    long v = strtol(s, &end, 10);
    if (end == s || v <= 0 || v > 16384) {
      fprintf(stderr, "codec_bench: bad list item in %s\n", s);
      exit(1);
    }
    out[n++] = (int)v;
  }
  return n;
}

static file *make_files(int side, int n, bool smooth, bool jpeg) {
  file *f = calloc((size_t)n, sizeof *f);
  size_t bytes = (size_t)side * side * 3;
  uint8_t *px = malloc(bytes);
  if (!f || !px) exit(1);
  uint32_t x = 2463534242u;
  for (int k = 0; k < n; k++) {
    for (size_t i = 0; i < bytes; i++) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      size_t col = i % ((size_t)side * 3), row = i / ((size_t)side * 3);
      px[i] = smooth ? (uint8_t)((col / 3 + row + (size_t)k * 9) + (x >> 29)) : (uint8_t)(x >> 24);
    }
    ib_error e = {0};
    ib_jpeg_options o = {.quality = 85, .subsampling = 2};
    ib_status st = jpeg ? ib_jpeg_encode(px, (uint32_t)side, (uint32_t)side, IB_MODE_RGB,
                                         (size_t)side * 3, &o, &f[k].data, &f[k].len, &e)
                        : ib_png_encode(px, (uint32_t)side, (uint32_t)side, 3, (size_t)side * 3, 6,
                                        NULL, &f[k].data, &f[k].len, &e);
    if (st != IB_OK) {
      fprintf(stderr, "codec_bench: encode: %s\n", e.message);
      exit(1);
    }
  }
  free(px);
  return f;
}

/* Both paths decode every file to the same shape and bytes. */
static void check_alike(const file *f, int n) {
  uint8_t *a = NULL, *b = NULL;
  size_t ca = 0, cb = 0;
  for (int k = 0; k < n; k++) {
    ib_shape sa, sb;
    ib_error e = {0};
    if (decode(true, &f[k], &sa, &a, &ca, &e) != IB_OK ||
        decode(false, &f[k], &sb, &b, &cb, &e) != IB_OK) {
      fprintf(stderr, "codec_bench: check decode failed: %s\n", e.message);
      exit(1);
    }
    size_t bytes = (size_t)sa.width * sa.height * ib_mode_bands(sa.mode);
    if (memcmp(&sa, &sb, sizeof sa) != 0 || memcmp(a, b, bytes) != 0) {
      fprintf(stderr, "codec_bench: MISMATCH between libvips and the direct path on file %d\n", k);
      exit(1);
    }
  }
  free(a);
  free(b);
}

int main(int argc, char **argv) {
  int sides[8] = {128, 1024}, n_sides = 2, threads[16] = {1, 2}, n_threads = 2, images = 64;
  double seconds = 1.0;
  bool smooth = false, jpeg = false;
  int first_path = 0, last_path = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "codec_bench: %s needs a value\n", a);
      return 1;
    }
    if (strcmp(a, "--sides") == 0)
      n_sides = parse_list(v, sides, 8);
    else if (strcmp(a, "--threads") == 0)
      n_threads = parse_list(v, threads, 16);
    else if (strcmp(a, "--images") == 0)
      images = atoi(v);
    else if (strcmp(a, "--seconds") == 0)
      seconds = atof(v);
    else if (strcmp(a, "--format") == 0 && (strcmp(v, "png") == 0 || strcmp(v, "jpeg") == 0))
      jpeg = strcmp(v, "jpeg") == 0;
    else if (strcmp(a, "--content") == 0)
      smooth = strcmp(v, "smooth") == 0;
    else if (strcmp(a, "--paths") == 0 &&
             (strcmp(v, "both") == 0 || strcmp(v, "libvips") == 0 || strcmp(v, "direct") == 0)) {
      first_path = strcmp(v, "direct") == 0;
      last_path = strcmp(v, "libvips") == 0 ? 0 : 1;
    } else {
      fprintf(stderr,
              "usage: codec_bench [--format png|jpeg] [--sides 128,1024] [--threads 1,2] "
              "[--images N] [--seconds S] [--content noise|smooth] "
              "[--paths both|libvips|direct]\n");
      return 1;
    }
    i++;
  }
  if (images < 1 || seconds <= 0) {
    fprintf(stderr, "codec_bench: --images and --seconds must be positive\n");
    return 1;
  }
  const char *direct = jpeg ? "libjpeg" : "direct";
  ib_error e = {0};
  if (ib_codec_init(&e) != IB_OK) {
    fprintf(stderr, "codec_bench: %s\n", e.message);
    return 1;
  }
  for (int s = 0; s < n_sides; s++) {
    int n = images;
    file *f = make_files(sides[s], n, smooth, jpeg);
    check_alike(f, n);
    double mb = (double)sides[s] * sides[s] * 3 / 1e6;
    double rate[2][16] = {{0}};
    for (int path = first_path; path <= last_path; path++)
      for (int t = 0; t < n_threads; t++) {
        rate[path][t] = measure(f, n, path == 0, threads[t], seconds);
        printf(
            "codec_bench format=%s side=%d content=%s path=%s threads=%d images/s=%.0f "
            "MB/s=%.0f\n",
            jpeg ? "jpeg" : "png", sides[s], smooth ? "smooth" : "noise",
            path == 0 ? "libvips" : direct, threads[t], rate[path][t], rate[path][t] * mb);
        fflush(stdout);
      }
    for (int t = 0; first_path == 0 && last_path == 1 && t < n_threads; t++)
      printf(
          "codec_bench format=%s side=%d threads=%d %s/libvips=%.2fx scaling libvips=%.2fx "
          "%s=%.2fx (vs 1st thread count)\n",
          jpeg ? "jpeg" : "png", sides[s], threads[t], direct, rate[1][t] / rate[0][t],
          rate[0][t] / rate[0][0], direct, rate[1][t] / rate[1][0]);
    for (int k = 0; k < n; k++) ib_codec_free(f[k].data);
    free(f);
  }
  return 0;
}
