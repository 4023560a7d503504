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
  fwrite("\x05" "ab", 1, 3, f);
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
