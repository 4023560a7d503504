/* `imgbatch run` writes each Result as a frame packed around its image
 * bytes (worker/cli/run_frame.c, compiled in here: the CLI is not part of
 * the core library). Its bytes must be exactly those of packing the whole
 * message (ib_result_msg_pack framed by ib_frame_write), for every shape of
 * Result, and the image bytes must be the result's own, not a copy. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cli/run_frame.c"
#include "core/error.h"
#include "core/frame.h"

/* The frame as ib_frame_write(ib_result_msg_pack) gives it. */
static uint8_t *whole(const ib_result_msg *rm, size_t *len) {
  size_t n = 0;
  uint8_t *msg = ib_result_msg_pack(rm, &n);
  cr_assert(msg);
  char *buf = NULL;
  size_t blen = 0;
  FILE *f = open_memstream(&buf, &blen);
  cr_assert(ib_frame_write(f, msg, n));
  fclose(f);
  free(msg);
  *len = blen;
  return (uint8_t *)buf;
}

static void assert_same_bytes(const ib_result_msg *rm) {
  size_t len = 0;
  uint8_t *want = whole(rm, &len);
  ib_run_frame f;
  cr_assert(ib_run_frame_pack(&f, rm));
  size_t got = 0;
  for (int i = 0; i < f.iovcnt; i++) {
    cr_assert_leq(got + f.iov[i].iov_len, len);
    cr_assert_eq(memcmp(want + got, f.iov[i].iov_base, f.iov[i].iov_len), 0, "piece %d differs", i);
    got += f.iov[i].iov_len;
  }
  cr_assert_eq(got, len);
  ib_run_frame_clear(&f);
  free(want);
}

static void image_result(ib_result *res, ib_mode mode, uint32_t w, uint32_t h) {
  *res = (ib_result){.job_id = 7, .has_job_id = true, .ok = true, .kind = IB_RESULT_IMAGE};
  cr_assert_eq(ib_image_alloc(&res->image, mode, w, h), IB_OK);
  for (size_t i = 0; i < ib_image_bytes(&res->image); i++) res->image.data[i] = (uint8_t)(i * 13);
  res->queue_us = 300;
  res->exec_us = 1234567;
}

static void *packed_output_spec(Imgbatch__V1__Format format, size_t *len) {
  Imgbatch__V1__CpuOutput cpu = IMGBATCH__V1__CPU_OUTPUT__INIT;
  cpu.format = format;
  Imgbatch__V1__OutputSpec spec = IMGBATCH__V1__OUTPUT_SPEC__INIT;
  spec.target_case = IMGBATCH__V1__OUTPUT_SPEC__TARGET_CPU;
  spec.cpu = &cpu;
  *len = imgbatch__v1__output_spec__get_packed_size(&spec);
  void *buf = malloc(*len);
  imgbatch__v1__output_spec__pack(&spec, buf);
  return buf;
}

static void *packed_metadata(size_t *len) {
  Imgbatch__V1__Value v1 = IMGBATCH__V1__VALUE__INIT, v2 = IMGBATCH__V1__VALUE__INIT;
  v1.kind_case = IMGBATCH__V1__VALUE__KIND_INT_VALUE;
  v1.int_value = -5;
  v2.kind_case = IMGBATCH__V1__VALUE__KIND_STRING_VALUE;
  v2.string_value = (char *)"a longer string value";
  Imgbatch__V1__Job__MetadataEntry e1 = IMGBATCH__V1__JOB__METADATA_ENTRY__INIT;
  Imgbatch__V1__Job__MetadataEntry e2 = IMGBATCH__V1__JOB__METADATA_ENTRY__INIT;
  e1.key = (char *)"n";
  e1.value = &v1;
  e2.key = (char *)"s";
  e2.value = &v2;
  Imgbatch__V1__Job__MetadataEntry *entries[] = {&e1, &e2};
  Imgbatch__V1__Job job = IMGBATCH__V1__JOB__INIT;
  job.n_metadata = 2;
  job.metadata = entries;
  *len = imgbatch__v1__job__get_packed_size(&job);
  void *buf = malloc(*len);
  imgbatch__v1__job__pack(&job, buf);
  return buf;
}

/* Packs res both ways and compares; with `lent`, the image piece is the
 * result's own pixels. */
static void check(ib_result *res, bool lent) {
  ib_result_msg rm;
  ib_result_msg_init(&rm);
  ib_error err = {0};
  cr_assert_eq(ib_result_msg_from_result_lent(&rm, res, &err), IB_OK, "%s", err.message);
  rm.timings.queue_us = res->queue_us;
  rm.timings.gpu_us = res->exec_us;
  assert_same_bytes(&rm);
  ib_run_frame f;
  cr_assert(ib_run_frame_pack(&f, &rm));
  if (lent) {
    cr_assert_eq(f.iovcnt >= 2, true);
    cr_assert_eq(f.iov[1].iov_base, (void *)res->image.data, "the pixels were copied");
    cr_assert_eq(f.iov[1].iov_len, ib_image_bytes(&res->image));
  }
  ib_run_frame_clear(&f);
  ib_result_msg_clear(&rm);
  ib_result_free(res);
}

Test(run_frame, bare_image_with_a_u64_key) {
  ib_result res;
  image_result(&res, IB_MODE_RGB, 64, 48);
  res.key = (ib_key){.is_u64 = true, .u64 = 1ull << 40};
  check(&res, true);
}

Test(run_frame, every_field_around_the_image) {
  ib_result res;
  image_result(&res, IB_MODE_RGBA, 1024, 1024); /* 4 MiB: a 4-byte length */
  res.key = (ib_key){.str = strdup("key \xff not utf-8")};
  res.metadata = packed_metadata(&res.metadata_len);
  res.output_spec = packed_output_spec(IMGBATCH__V1__FORMAT__RAW, &res.output_spec_len);
  res.correlation_id = strdup("corr-42");
  check(&res, true);
}

Test(run_frame, lengths_at_varint_boundaries) {
  /* Image payloads of 127/128 and 16383/16384 bytes change the width of
   * both length prefixes. */
  uint32_t widths[] = {127, 128, 16383, 16384, 1, 2097151};
  for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
    ib_result res;
    image_result(&res, IB_MODE_L, widths[k], 1);
    res.key = (ib_key){.is_u64 = true, .u64 = k};
    check(&res, true);
  }
}

Test(run_frame, an_encoded_image_is_written_from_its_buffer) {
  ib_result res;
  image_result(&res, IB_MODE_RGB, 40, 30);
  res.key = (ib_key){.str = strdup("png")};
  res.output_spec = packed_output_spec(IMGBATCH__V1__FORMAT__PNG, &res.output_spec_len);
  check(&res, false);
}

Test(run_frame, error_and_empty_results_are_packed_whole) {
  ib_result res = {.job_id = 3, .has_job_id = true, .ok = false, .kind = IB_RESULT_ERROR};
  res.key = (ib_key){.str = strdup("bad")};
  ib_error_set(&res.error, IB_DECODE, IB_STAGE_DECODE, "decode: not an image");
  res.correlation_id = strdup("c");
  ib_result_msg rm;
  ib_result_msg_init(&rm);
  ib_error err = {0};
  ib_result_msg_from_result_lent(&rm, &res, &err);
  assert_same_bytes(&rm);
  ib_run_frame f;
  cr_assert(ib_run_frame_pack(&f, &rm));
  cr_assert_eq(f.iovcnt, 1);
  ib_run_frame_clear(&f);
  ib_result_msg_clear(&rm);
  ib_result_free(&res);
}
