/* Varint-delimited framing as `imgbatch run` reads and writes it. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/frame.h"

static FILE *roundtrip(const uint8_t *msg, size_t len) {
  FILE *f = tmpfile();
  cr_assert(ib_frame_write(f, msg, len));
  rewind(f);
  return f;
}

Test(frame, round_trip_of_small_and_multibyte_lengths) {
  size_t sizes[] = {0, 1, 127, 128, 300, 70000};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    uint8_t *msg = malloc(sizes[k] + 1);
    for (size_t i = 0; i < sizes[k]; i++) msg[i] = (uint8_t)(i * 7);
    FILE *f = roundtrip(msg, sizes[k]);
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    cr_assert_eq(ib_frame_read(f, 1 << 20, &buf, &cap, &len), IB_FRAME_OK);
    cr_assert_eq(len, sizes[k]);
    cr_assert(len == 0 || memcmp(buf, msg, len) == 0);
    cr_assert_eq(ib_frame_read(f, 1 << 20, &buf, &cap, &len), IB_FRAME_EOF);
    fclose(f);
    free(buf);
    free(msg);
  }
}

Test(frame, truncated_body_is_reported) {
  FILE *f = tmpfile();
  fwrite(
      "\x05"
      "ab",
      1, 3, f);
  rewind(f);
  uint8_t *buf = NULL;
  size_t cap = 0, len = 0;
  cr_assert_eq(ib_frame_read(f, 1 << 20, &buf, &cap, &len), IB_FRAME_TRUNCATED);
  fclose(f);
  free(buf);
}

Test(frame, oversized_length_is_rejected_before_allocation) {
  FILE *f = tmpfile();
  fwrite("\xff\xff\xff\xff\x0f", 1, 5, f);
  rewind(f);
  uint8_t *buf = NULL;
  size_t cap = 0, len = 0;
  cr_assert_eq(ib_frame_read(f, 1 << 20, &buf, &cap, &len), IB_FRAME_TOO_LARGE);
  cr_assert_null(buf);
  fclose(f);
}

Test(frame, prefix_then_body_reads_into_the_callers_memory) {
  uint8_t msg[300];
  for (size_t i = 0; i < sizeof msg; i++) msg[i] = (uint8_t)(i * 5);
  FILE *f = roundtrip(msg, sizeof msg);
  size_t len = 0;
  cr_assert_eq(ib_frame_read_len(f, 1 << 20, &len), IB_FRAME_OK);
  cr_assert_eq(len, sizeof msg);
  uint8_t dst[300];
  cr_assert_eq(ib_frame_read_body(f, dst, len), IB_FRAME_OK);
  cr_assert(memcmp(dst, msg, len) == 0);
  cr_assert_eq(ib_frame_read_len(f, 1 << 20, &len), IB_FRAME_EOF);
  fclose(f);
}

Test(frame, stream_ending_inside_the_prefix_is_truncated) {
  FILE *f = tmpfile();
  fwrite("\x80", 1, 1, f);
  rewind(f);
  size_t len = 0;
  cr_assert_eq(ib_frame_read_len(f, 1 << 20, &len), IB_FRAME_TRUNCATED);
  fclose(f);
}

Test(frame, stream_ending_inside_the_body_is_truncated) {
  FILE *f = tmpfile();
  const uint8_t frame[] = {5, 'a', 'b'};
  fwrite(frame, 1, sizeof frame, f);
  rewind(f);
  size_t len = 0;
  cr_assert_eq(ib_frame_read_len(f, 1 << 20, &len), IB_FRAME_OK);
  cr_assert_eq(len, 5);
  uint8_t dst[5];
  cr_assert_eq(ib_frame_read_body(f, dst, len), IB_FRAME_TRUNCATED);
  fclose(f);
}

Test(frame, length_over_the_bound_is_rejected_by_the_prefix_read) {
  FILE *f = tmpfile();
  fwrite("\x81\x80\x40", 1, 3, f); /* 1 + (1 << 20) */
  rewind(f);
  size_t len = 7;
  cr_assert_eq(ib_frame_read_len(f, 1 << 20, &len), IB_FRAME_TOO_LARGE);
  cr_assert_eq(len, 7);
  fclose(f);
}

Test(frame, skipped_body_leaves_the_stream_at_the_next_frame) {
  FILE *f = tmpfile();
  uint8_t big[10000];
  memset(big, 0xab, sizeof big);
  cr_assert(ib_frame_write(f, big, sizeof big));
  cr_assert(ib_frame_write(f, (const uint8_t *)"xyz", 3));
  rewind(f);
  size_t len = 0;
  cr_assert_eq(ib_frame_read_len(f, 1 << 20, &len), IB_FRAME_OK);
  cr_assert_eq(ib_frame_skip_body(f, len), IB_FRAME_OK);
  cr_assert_eq(ib_frame_read_len(f, 1 << 20, &len), IB_FRAME_OK);
  cr_assert_eq(len, 3);
  uint8_t dst[3];
  cr_assert_eq(ib_frame_read_body(f, dst, len), IB_FRAME_OK);
  cr_assert(memcmp(dst, "xyz", 3) == 0);
  cr_assert_eq(ib_frame_skip_body(f, 1), IB_FRAME_TRUNCATED);
  fclose(f);
}
