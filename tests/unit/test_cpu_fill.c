/*
 * The CPU backend's terminal images (worker/cpu/execute.c): a result of a
 * block-cache size comes from the cache uncleared when its op writes every
 * byte (sources - raw, fill, PNG, interlaced PNG, JPEG - and copy) and
 * cleared otherwise (crop past the edges relies on it). Each graph runs
 * three ways and gives the same bytes: into calloc'd memory (the
 * reference), into a fresh block (malloc: valgrind sees any byte left
 * unwritten when the bytes are compared), and into that block again after
 * it was filled with 0xA5 (a byte left unwritten shows as a difference).
 * The cache's count of cleared bytes tells which blocks were cleared.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <vips/vips.h>

#include "codec/codec.h"
#include "cpu/cpu_backend.h"
#include "tools/jobgen.h"

#define MIB ((size_t)1 << 20)

static jg_arena arena;
static void setup(void) {
  arena = (jg_arena){malloc(8 * MIB), 0, 8 * MIB};
  cr_assert_not_null(arena.p);
}
static void teardown(void) { free(arena.p); }
TestSuite(cpu_fill, .init = setup, .fini = teardown);

/* Runs g the three ways; `cleared`: whether the reused block must have been
 * cleared first. */
static void check(ib_graph *g, const char *what, bool cleared) {
  ib_error err = {0};
  ib_image want = {0};
  cr_assert_eq(ib_cpu_execute(g, &want, &err), IB_OK, "%s: %s", what, err.message);
  const size_t n = ib_image_bytes(&want);
  cr_assert_geq(n, IB_BLOCKCACHE_MIN, "%s: too small for the cache", what);
  ib_blockcache *bc = ib_blockcache_new(64 * MIB);
  cr_assert_not_null(bc);
  ib_image got = {0};
  cr_assert_eq(ib_cpu_execute_cached(g, bc, &got, NULL, &err), IB_OK, "%s: %s", what, err.message);
  cr_assert_eq(memcmp(got.data, want.data, n), 0, "%s: into a fresh block", what);
  uint8_t *block = got.data;
  memset(got.data, 0xA5, n);
  ib_image_release(&got); /* back to the cache */
  cr_assert_eq(ib_blockcache_cached(bc), 1);
  const size_t before = ib_blockcache_cleared_bytes(bc);
  cr_assert_eq(ib_cpu_execute_cached(g, bc, &got, NULL, &err), IB_OK, "%s: %s", what, err.message);
  cr_assert_eq(got.data, block, "%s: not the poisoned block", what);
  cr_assert_eq(ib_blockcache_hits(bc), 1);
  cr_assert_eq(memcmp(got.data, want.data, n), 0, "%s: a byte of the 0xA5 block survived", what);
  cr_assert_eq(ib_blockcache_cleared_bytes(bc) - before, cleared ? n : 0, "%s: cleared %zu of %zu",
               what, ib_blockcache_cleared_bytes(bc) - before, n);
  ib_image_release(&got);
  ib_image_release(&want);
  ib_blockcache_unref(bc);
  ib_graph_free(g);
}

static ib_graph *finish(jg_job *j) {
  ib_error err = {0};
  ib_graph *g = jg_finish(j, &err);
  cr_assert_not_null(g, "%s", err.message);
  return g;
}

/* A job whose only node is its source, of the given kind. */
static void begin_with(jg_job *j, Imgbatch__V1__Source *s) {
  jg_rng r = {5};
  jg_begin(j, &arena, &r, IB_MODE_L, 1, 1, 1);
  j->job.source = s;
}

static Imgbatch__V1__Source *encoded(jg_job *j, const void *bytes, size_t len) {
  Imgbatch__V1__Source *s = jg_alloc(j->a, sizeof *s);
  imgbatch__v1__source__init(s);
  s->kind_case = IMGBATCH__V1__SOURCE__KIND_ENCODED;
  uint8_t *copy = jg_alloc(j->a, len);
  memcpy(copy, bytes, len);
  s->encoded = (ProtobufCBinaryData){len, copy};
  return s;
}

/* A noisy image (so a decode has something to get wrong). */
static ib_image noisy(ib_mode m, uint32_t w, uint32_t h) {
  ib_image im = {0};
  cr_assert_eq(ib_image_alloc(&im, m, w, h), IB_OK);
  jg_rng r = {77};
  for (size_t i = 0; i < ib_image_bytes(&im); i++) im.data[i] = (uint8_t)(jg_u32(&r) >> 7);
  return im;
}

static ib_graph *encoded_job(Imgbatch__V1__Format f, ib_mode m, bool interlace) {
  ib_error err = {0};
  cr_assert_eq(ib_codec_init(&err), IB_OK, "%s", err.message);
  ib_image im = noisy(m, 640, 600);
  void *buf = NULL;
  size_t len = 0;
  if (interlace) {
    VipsImage *v =
        vips_image_new_from_memory(im.data, ib_image_bytes(&im), (int)im.width, (int)im.height,
                                   (int)ib_mode_bands(m), VIPS_FORMAT_UCHAR);
    cr_assert_not_null(v);
    cr_assert_eq(vips_pngsave_buffer(v, &buf, &len, "interlace", TRUE, NULL), 0, "%s",
                 vips_error_buffer());
    g_object_unref(v);
  } else {
    Imgbatch__V1__CpuOutput spec;
    imgbatch__v1__cpu_output__init(&spec);
    spec.format = f;
    uint8_t *out = NULL;
    cr_assert_eq(ib_codec_encode(&im, &spec, NULL, &out, &len, &err), IB_OK, "%s", err.message);
    buf = out;
  }
  ib_image_release(&im);
  jg_job j;
  begin_with(&j, NULL);
  j.job.source = encoded(&j, buf, len);
  g_free(buf);
  return finish(&j);
}

Test(cpu_fill, sources_and_copy_write_every_byte_of_an_uncleared_block, .timeout = 120) {
  jg_job j;
  jg_rng r = {9};
  /* A raw source as the result: the copy that used to follow a clear. */
  jg_begin(&j, &arena, &r, IB_MODE_RGBA, 512, 600, 1);
  check(finish(&j), "raw source", false);
  /* A fill. */
  begin_with(&j, NULL);
  Imgbatch__V1__Source *s = jg_alloc(&arena, sizeof *s);
  imgbatch__v1__source__init(s);
  j.job.source = s;
  Imgbatch__V1__FillImage *f = jg_alloc(&arena, sizeof *f);
  imgbatch__v1__fill_image__init(f);
  f->mode = "RGB";
  f->width = 700;
  f->height = 600;
  f->color = (ProtobufCBinaryData){3, (uint8_t *)"\x12\x34\x56"};
  s->kind_case = IMGBATCH__V1__SOURCE__KIND_FILL;
  s->fill = f;
  check(finish(&j), "fill source", false);
  /* Decodes: libpng (plain and Adam7) and libvips (JPEG). */
  check(encoded_job(IMGBATCH__V1__FORMAT__PNG, IB_MODE_RGBA, false), "png source", false);
  check(encoded_job(IMGBATCH__V1__FORMAT__PNG, IB_MODE_RGB, true), "interlaced png source", false);
  check(encoded_job(IMGBATCH__V1__FORMAT__JPEG, IB_MODE_RGB, false), "jpeg source", false);
  /* Copy of a raw source (read where it lies). */
  jg_begin(&j, &arena, &r, IB_MODE_RGBA, 600, 512, 1);
  jg_op(&j, &r, JG_COPY, 0, IB_MODE_RGBA, 600, 512, -1);
  check(finish(&j), "copy", false);
}

Test(cpu_fill, other_ops_still_get_a_cleared_block, .timeout = 120) {
  jg_job j;
  jg_rng r = {13};
  /* Crop past every edge: the border is the cleared block's zeros. */
  jg_begin(&j, &arena, &r, IB_MODE_RGBA, 400, 400, 1);
  Imgbatch__V1__Node *n = jg_node(&j, IMGBATCH__V1__NODE__OP_CROP, 0, -1);
  n->crop = jg_alloc(&arena, sizeof *n->crop);
  imgbatch__v1__crop_op__init(n->crop);
  n->crop->left = n->crop->top = -100;
  n->crop->right = n->crop->bottom = 500;
  check(finish(&j), "crop past the edges", true);
  /* Any op not known to write every byte: cleared too. */
  jg_begin(&j, &arena, &r, IB_MODE_RGB, 700, 600, 1);
  jg_op(&j, &r, JG_INVERT, 0, IB_MODE_RGB, 700, 600, -1);
  check(finish(&j), "invert", true);
}
