/* webp_meta.c - metadata chunks into a WebP file (see webp_meta.h). */
#include "codec/webp_meta.h"

#include <glib.h>
#include <stdbool.h>
#include <string.h>

#include "codec/metadata.h"

enum { VP8X_ICC = 0x20, VP8X_ALPHA = 0x10, VP8X_EXIF = 0x08, VP8X_XMP = 0x04 };

static void le32(uint8_t *p, size_t v) {
  p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}
static void le24(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16);
}
static size_t rd32(const uint8_t *p) {
  return (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
}

static size_t put_chunk(uint8_t *p, const char *fourcc, const uint8_t *data, size_t n) {
  memcpy(p, fourcc, 4);
  le32(p + 4, n);
  if (n) memcpy(p + 8, data, n);
  if (n & 1) p[8 + n] = 0;
  return 8 + n + (n & 1);
}

int ib_webp_add_meta(const uint8_t *in, size_t len, int alpha, uint32_t width, uint32_t height,
                     const ib_meta_keep *m, uint8_t **out, size_t *out_len) {
  static const ib_meta_keep none = {0};
  if (!m) m = &none;
  if (len < 20 || memcmp(in, "RIFF", 4) != 0 || memcmp(in + 8, "WEBP", 4) != 0) return -1;
  size_t cap = len + 18 + 3 * 9 + m->icc_len + m->exif_len + m->xmp_len;
  uint8_t *o = g_try_malloc(cap);
  if (!o) return -1;
  size_t at = 12;
  uint8_t flags = (uint8_t)((alpha ? VP8X_ALPHA : 0) | (m->icc_len ? VP8X_ICC : 0) |
                            (m->exif_len ? VP8X_EXIF : 0) | (m->xmp_len ? VP8X_XMP : 0));
  uint8_t vp8x[10] = {flags, 0, 0, 0};
  le24(vp8x + 4, width - 1);
  le24(vp8x + 7, height - 1);
  /* Nothing to add and no alpha: the simple layout, the image chunk alone. */
  bool extended = flags != 0;
  if (extended) at += put_chunk(o + at, "VP8X", vp8x, sizeof vp8x);
  if (m->icc_len) at += put_chunk(o + at, "ICCP", m->icc, m->icc_len);
  /* The image chunks as libvips wrote them (ALPH, VP8, VP8L), not its
   * VP8X or metadata. */
  for (size_t i = 12; len - i >= 8;) {
    size_t n = rd32(in + i + 4), whole = 8 + n + (n & 1);
    if (n > len - i - 8) break;
    if (whole > len - i) whole = len - i;
    const uint8_t *c = in + i;
    if (!memcmp(c, "ALPH", 4) || !memcmp(c, "VP8 ", 4) || !memcmp(c, "VP8L", 4)) {
      memcpy(o + at, c, whole);
      at += whole;
    }
    i += whole;
  }
  if (m->exif_len) at += put_chunk(o + at, "EXIF", m->exif, m->exif_len);
  if (m->xmp_len) at += put_chunk(o + at, "XMP ", m->xmp, m->xmp_len);
  memcpy(o, "RIFF", 4);
  le32(o + 4, at - 8);
  memcpy(o + 8, "WEBP", 4);
  *out = o;
  *out_len = at;
  return 0;
}
