/*
 * exif_orient.c - IFD0's Orientation (tag 274) read as Pillow 12.3 reads
 * it: Image.Exif.load takes the first 8 bytes as the TIFF header
 * (ImageFileDirectory_v2: the prefixes of TiffImagePlugin.PREFIXES, byte
 * order from the first two bytes, BigTIFF when byte 2 is 0x2B), then
 * ImageFileDirectory_v2.load walks IFD0: entries of an unknown type are
 * skipped, a read past the end stops the walk keeping the entries before
 * it, a later entry of the same tag replaces an earlier one.
 */
#include "codec/exif_orient.h"

#include <math.h>
#include <string.h>

enum { TAG_ORIENTATION = 274 };

typedef struct tiff_view {
  const uint8_t *p;
  size_t len;
  int big; /* big-endian ("MM") */
} tiff_view;

static uint32_t rd16(const tiff_view *t, size_t at) {
  const uint8_t *b = t->p + at;
  return t->big ? (uint32_t)b[0] << 8 | b[1] : (uint32_t)b[1] << 8 | b[0];
}

static uint32_t rd32(const tiff_view *t, size_t at) {
  uint32_t hi = rd16(t, at), lo = rd16(t, at + 2);
  return t->big ? hi << 16 | lo : lo << 16 | hi;
}

static uint64_t rd64(const tiff_view *t, size_t at) {
  uint64_t a = rd32(t, at), b = rd32(t, at + 4);
  return t->big ? a << 32 | b : b << 32 | a;
}

/* TiffImagePlugin's _load_dispatch: bytes per value, 0 for a type it skips. */
static unsigned unit_size(uint32_t type) {
  static const unsigned size[] = {0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4, 0, 0, 8};
  return type < sizeof size / sizeof size[0] ? size[type] : 0;
}

static size_t skip_prefixes(const uint8_t *p, size_t len) {
  size_t at = 0;
  while (len - at >= 6 && memcmp(p + at, "Exif\0\0", 6) == 0) at += 6;
  return at;
}

/* The header check: 1 ok, 0 no EXIF at all, -1 a header Pillow raises on. */
static int open_tiff(const uint8_t *exif, size_t len, tiff_view *t, size_t *prefix) {
  static const char *const prefixes[] = {"MM\0*", "II*\0", "MM*\0", "II\0*", "MM\0+", "II+\0"};
  size_t at = skip_prefixes(exif, len);
  *prefix = at;
  t->p = exif + at;
  t->len = len - at;
  if (t->len == 0) return 0;
  int known = 0;
  for (size_t i = 0; i < 6 && t->len >= 4; i++) known |= memcmp(t->p, prefixes[i], 4) == 0;
  /* Fewer than 8 header bytes, or BigTIFF (its 16-byte header is cut to
   * 8): struct.error in Pillow. */
  if (!known || t->len < 8 || t->p[2] == 0x2B) return -1;
  t->big = t->p[0] == 'M';
  return 1;
}

/* The last readable IFD0 entry of tag 274 (offset of its 12 bytes) or -1. */
static long find_entry(const tiff_view *t) {
  uint64_t at = rd32(t, 4);
  if (at > t->len || t->len - at < 2) return -1;
  uint32_t count = rd16(t, (size_t)at);
  long found = -1;
  at += 2;
  for (uint32_t i = 0; i < count; i++, at += 12) {
    if (t->len - at < 12) break;
    uint32_t type = rd16(t, (size_t)at + 2), n = rd32(t, (size_t)at + 4);
    unsigned unit = unit_size(type);
    if (!unit) continue;
    uint64_t size = (uint64_t)n * unit;
    if (size > 4) {
      uint64_t off = rd32(t, (size_t)at + 8);
      if (off > t->len || t->len - off < size) break; /* Truncated File Read */
    }
    if (size == 0) continue;
    if (rd16(t, (size_t)at) == TAG_ORIENTATION) found = (long)at;
  }
  return found;
}

/* The tag's first value compared as Pillow's dict lookup compares it. */
static int entry_value(const tiff_view *t, size_t entry) {
  uint32_t type = rd16(t, entry + 2), n = rd32(t, entry + 4);
  size_t at = (uint64_t)n * unit_size(type) > 4 ? rd32(t, entry + 8) : entry + 8;
  double v;
  switch (type) {
    case 3: v = rd16(t, at); break;
    case 4:
    case 13: v = rd32(t, at); break;
    case 6: v = (int8_t)t->p[at]; break;
    case 8: v = (int16_t)rd16(t, at); break;
    case 9: v = (int32_t)rd32(t, at); break;
    case 16: {
      uint64_t q = rd64(t, at);
      v = q <= 8 ? (double)q : 0;
      break;
    }
    case 5:
    case 10: {
      /* IFDRational: equal to an int when the fraction is one exactly. */
      int64_t num = type == 5 ? (int64_t)rd32(t, at) : (int32_t)rd32(t, at);
      int64_t den = type == 5 ? (int64_t)rd32(t, at + 4) : (int32_t)rd32(t, at + 4);
      if (den == 0 || num % den != 0) return 1;
      v = (double)(num / den);
      break;
    }
    case 11: {
      uint32_t bits = rd32(t, at);
      float f;
      memcpy(&f, &bits, sizeof f);
      v = f;
      break;
    }
    case 12: {
      uint64_t bits = rd64(t, at);
      memcpy(&v, &bits, sizeof v);
      break;
    }
    default: return 1; /* BYTE, UNDEFINED: bytes; ASCII: str */
  }
  if (isnan(v) || v < 2 || v > 8 || v != floor(v)) return 1;
  return (int)v;
}

ib_exif_orient ib_exif_orientation(const uint8_t *exif, size_t len, int *value) {
  tiff_view t;
  size_t prefix;
  *value = 1;
  if (!exif) return IB_EXIF_NO_TAG;
  int h = open_tiff(exif, len, &t, &prefix);
  if (h <= 0) return h < 0 ? IB_EXIF_REFUSED : IB_EXIF_NO_TAG;
  long e = find_entry(&t);
  if (e < 0) return IB_EXIF_NO_TAG;
  *value = entry_value(&t, (size_t)e);
  return IB_EXIF_TAG;
}

long ib_exif_orientation_entry(const uint8_t *exif, size_t len, size_t *prefix) {
  tiff_view t;
  if (!exif || open_tiff(exif, len, &t, prefix) <= 0) return -1;
  return find_entry(&t);
}

int ib_xmp_orientation(const uint8_t *xmp, size_t len) {
  static const char key[] = "tiff:Orientation";
  const size_t k = sizeof key - 1;
  for (size_t i = 0; xmp && len >= k + 2 && i <= len - k - 2; i++) {
    if (memcmp(xmp + i, key, k) != 0) continue;
    const uint8_t *r = xmp + i + k;
    if (r[0] == '>' && r[1] >= '0' && r[1] <= '9') return r[1] - '0';
    if (r[0] == '=' && len - i - k >= 3 && r[1] == '"' && r[2] >= '0' && r[2] <= '9')
      return r[2] - '0';
  }
  return 0;
}
