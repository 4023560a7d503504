/*
 * fuzz_image.c - libFuzzer target: untrusted image bytes through the codec
 * as a job's encoded source goes: sniff the magic, read the header, check
 * it, then decode into a buffer of the header's shape (when it is small
 * enough that the fuzzer stays fast). Oracles: sanitizers, and every error
 * message must be UTF-8 (it is echoed into a Result, a proto3 string).
 */
#include <stdint.h>
#include <stdlib.h>

#include "codec/codec.h"
#include "fuzz_util.h"
#include "imgbatch.h"

/* 4 MP: far above the seeds, small enough for -rss_limit_mb=2048. */
#define FZ_MAX_PIXELS (4u << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fz_quiet_vips();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ib_shape shape = {0};
  ib_error err = {0};
  ib_status st = ib_codec_header(data, size, &shape, &err);
  if (st != IB_OK) {
    fz_check_str("header error message is not UTF-8", err.message);
    return 0;
  }
  unsigned bands = ib_mode_bands(shape.mode);
  if (bands == 0 || shape.width == 0 || shape.height == 0)
    fz_fail("header reported an empty shape or no mode", err.message);
  if (shape.width > IB_MAX_SIDE || shape.height > IB_MAX_SIDE) return 0; /* parse's limit */
  uint64_t pixels = (uint64_t)shape.width * shape.height;
  if (pixels > FZ_MAX_PIXELS) return 0;
  size_t n = (size_t)pixels * bands;
  uint8_t *dst = malloc(n);
  if (!dst) return 0;
  err = (ib_error){0};
  st = ib_codec_decode_into(data, size, &shape, dst, &err);
  if (st != IB_OK) fz_check_str("decode error message is not UTF-8", err.message);
  free(dst);
  return 0;
}
