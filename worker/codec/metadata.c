/*
 * metadata.c - container walks that find EXIF, XMP and ICC where Pillow
 * 12.3's JpegImagePlugin, PngImagePlugin, WebPImagePlugin and
 * TiffImagePlugin find them. Which copy wins follows Pillow: JPEG joins
 * every APP1 Exif segment (the first whole, later ones after their
 * "Exif\0\0"), keeps the last XMP APP1 and assembles ICC_PROFILE APP2
 * segments sorted by sequence when their count matches; PNG keeps the last
 * eXIf and the last XML:com.adobe.xmp text chunk (tEXt, zTXt or iTXt) of
 * the whole file (exif_transpose loads the image, which reads the chunks
 * after IDAT too) and the iCCP profile; WebP (extended format) the first
 * EXIF, "XMP " and ICCP chunks; TIFF the file itself as EXIF, tags 700 and
 * 34675 of IFD0.
 */
#include "codec/metadata.h"

#include <libdeflate.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exif_orient.h"

/* PngImagePlugin.MAX_TEXT_CHUNK (ImageFile.SAFEBLOCK): a text chunk that
 * inflates past it is refused by Pillow; here it is left out. */
enum { MAX_INFLATED = 1 << 20 };

static uint32_t be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t be32(const uint8_t *p) { return be16(p) << 16 | be16(p + 2); }
static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static void block_set(ib_meta_block *b, const uint8_t *data, size_t len, uint8_t *owned) {
  free(b->owned);
  b->data = data;
  b->len = len;
  b->owned = owned;
}

static int starts(const uint8_t *p, size_t n, const char *lit, size_t k) {
  return n >= k && memcmp(p, lit, k) == 0;
}
#define STARTS(p, n, lit) starts(p, n, lit, sizeof lit - 1)

/* ------------------------------------------------------------------ JPEG */

typedef struct icc_parts {
  const uint8_t *seg[256];
  size_t len[256];
  size_t n;
} icc_parts;

/* Python's bytes ordering, as icclist.sort() uses it. */
static int seg_less(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  return c < 0 || (c == 0 && an < bn);
}

static int icc_join(icc_parts *ip, ib_meta *m) {
  for (size_t i = 1; i < ip->n; i++)
    for (size_t j = i; j > 0 && seg_less(ip->seg[j], ip->len[j], ip->seg[j - 1], ip->len[j - 1]);
         j--) {
      const uint8_t *s = ip->seg[j];
      size_t l = ip->len[j];
      ip->seg[j] = ip->seg[j - 1], ip->len[j] = ip->len[j - 1];
      ip->seg[j - 1] = s, ip->len[j - 1] = l;
    }
  if (!ip->n || ip->len[0] < 14 || ip->seg[0][13] != ip->n) return 0;
  size_t total = 0;
  for (size_t i = 0; i < ip->n; i++) total += ip->len[i] > 14 ? ip->len[i] - 14 : 0;
  uint8_t *out = malloc(total ? total : 1);
  if (!out) return -1;
  size_t at = 0;
  for (size_t i = 0; i < ip->n; i++)
    if (ip->len[i] > 14) memcpy(out + at, ip->seg[i] + 14, ip->len[i] - 14), at += ip->len[i] - 14;
  block_set(&m->icc, out, total, out);
  return 0;
}

static int exif_append(ib_meta *m, const uint8_t *s, size_t n) {
  if (!m->exif.data) {
    block_set(&m->exif, s, n, NULL);
    return 0;
  }
  uint8_t *out = malloc(m->exif.len + n - 6);
  if (!out) return -1;
  memcpy(out, m->exif.data, m->exif.len);
  memcpy(out + m->exif.len, s + 6, n - 6);
  block_set(&m->exif, out, m->exif.len + n - 6, out);
  return 0;
}

static int read_jpeg(const uint8_t *p, size_t len, ib_meta *m) {
  icc_parts icc = {.n = 0};
  size_t at = 2;
  int dpi = 0;
  while (at + 2 <= len) {
    if (p[at] != 0xFF || p[at + 1] == 0xFF || p[at + 1] == 0x00) {
      at++; /* junk, fill bytes, an escaped 0xFF: JpegImageFile._open skips them */
      continue;
    }
    unsigned marker = p[at + 1];
    at += 2;
    if (marker == 0xDA || marker == 0xD9) break;
    if ((marker >= 0xD0 && marker <= 0xD8) || marker == 0x01) continue;
    if (len - at < 2) break;
    size_t n = be16(p + at);
    if (n < 2 || len - at < n) break;
    const uint8_t *s = p + at + 2;
    n -= 2;
    at += n + 2;
    if (marker == 0xE0 && STARTS(s, n, "JFIF") && n >= 12 && (s[7] == 1 || s[7] == 2)) {
      dpi = 1;
    } else if (marker == 0xE1 && STARTS(s, n, "Exif\0\0")) {
      if (exif_append(m, s, n) != 0) return -1;
    } else if (marker == 0xE1 && STARTS(s, n, "http://ns.adobe.com/xap/1.0/\0")) {
      const uint8_t *z = memchr(s, 0, n);
      block_set(&m->xmp, z + 1, n - (size_t)(z + 1 - s), NULL);
    } else if (marker == 0xE2 && STARTS(s, n, "ICC_PROFILE\0") && icc.n < 256) {
      icc.seg[icc.n] = s, icc.len[icc.n++] = n;
    }
  }
  m->exif_read_at_open = m->exif.data && !dpi;
  return icc_join(&icc, m);
}

/* ------------------------------------------------------------------- PNG */

/* zlib data inflated to at most MAX_INFLATED bytes: 1 done (`*out`
 * malloc'ed), 0 not inflatable here, -1 out of memory. */
static int inflate_zlib(const uint8_t *in, size_t n, uint8_t **out, size_t *out_len) {
  struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
  if (!d) return -1;
  int rc = 0;
  for (size_t cap = 4096;; cap *= 4) {
    uint8_t *buf = malloc(cap);
    if (!buf) {
      rc = -1;
      break;
    }
    size_t got = 0;
    enum libdeflate_result r = libdeflate_zlib_decompress(d, in, n, buf, cap, &got);
    if (r == LIBDEFLATE_SUCCESS) {
      *out = buf, *out_len = got, rc = 1;
      break;
    }
    free(buf);
    if (r != LIBDEFLATE_INSUFFICIENT_SPACE || cap >= MAX_INFLATED) break;
    if (cap * 4 > MAX_INFLATED) cap = MAX_INFLATED / 4;
  }
  libdeflate_free_decompressor(d);
  return rc;
}

static int set_inflated(ib_meta_block *b, const uint8_t *z, size_t n) {
  uint8_t *out = NULL;
  size_t got = 0;
  int rc = inflate_zlib(z, n, &out, &got);
  if (rc == 1) block_set(b, out, got, out);
  return rc < 0 ? -1 : 0;
}

static const char XMP_KEY[] = "XML:com.adobe.xmp";

/* tEXt/zTXt/iTXt named XML:com.adobe.xmp (PngImagePlugin's chunk_*). */
static int png_text(const uint8_t *type, const uint8_t *s, size_t n, ib_meta *m) {
  const uint8_t *z = memchr(s, 0, n);
  if (!z || (size_t)(z - s) != sizeof XMP_KEY - 1 || memcmp(s, XMP_KEY, sizeof XMP_KEY - 1) != 0)
    return 0;
  const uint8_t *v = z + 1;
  size_t vn = n - (size_t)(v - s);
  if (memcmp(type, "tEXt", 4) == 0) {
    block_set(&m->xmp, v, vn, NULL);
    return 0;
  }
  if (memcmp(type, "zTXt", 4) == 0)
    return vn && v[0] == 0 ? set_inflated(&m->xmp, v + 1, vn - 1) : 0;
  /* iTXt: flag, method, language\0, translated keyword\0, text. */
  if (vn < 2) return 0;
  unsigned flag = v[0], method = v[1];
  const uint8_t *r = v + 2, *end = s + n;
  for (int k = 0; k < 2; k++) {
    const uint8_t *q = memchr(r, 0, (size_t)(end - r));
    if (!q) return 0;
    r = q + 1;
  }
  if (flag == 0) {
    block_set(&m->xmp, r, (size_t)(end - r), NULL);
    return 0;
  }
  return method == 0 ? set_inflated(&m->xmp, r, (size_t)(end - r)) : 0;
}

static int read_png(const uint8_t *p, size_t len, ib_meta *m) {
  size_t at = 8;
  while (len - at >= 12) {
    size_t n = be32(p + at);
    const uint8_t *type = p + at + 4, *s = p + at + 8;
    if (n > len - at - 12) break;
    at += n + 12;
    if (memcmp(type, "IEND", 4) == 0) break;
    int rc = 0;
    if (memcmp(type, "eXIf", 4) == 0) {
      block_set(&m->exif, s, n, NULL);
    } else if (memcmp(type, "iCCP", 4) == 0) {
      const uint8_t *z = memchr(s, 0, n);
      if (z && (size_t)(z - s) + 2 <= n && z[1] == 0)
        rc = set_inflated(&m->icc, z + 2, n - (size_t)(z + 2 - s));
    } else if (memcmp(type, "tEXt", 4) == 0 || memcmp(type, "zTXt", 4) == 0 ||
               memcmp(type, "iTXt", 4) == 0) {
      rc = png_text(type, s, n, m);
    }
    if (rc != 0) return rc;
  }
  return 0;
}

/* ------------------------------------------------------------ WebP, TIFF */

static void read_webp(const uint8_t *p, size_t len, ib_meta *m) {
  size_t at = 12;
  if (len < 20 || memcmp(p + 12, "VP8X", 4) != 0) return; /* simple format: no metadata */
  while (len - at >= 8) {
    size_t n = le32(p + at + 4);
    const uint8_t *type = p + at, *s = p + at + 8;
    if (n > len - at - 8) break;
    at += 8 + n + (n & 1);
    ib_meta_block *b = memcmp(type, "EXIF", 4) == 0   ? &m->exif
                       : memcmp(type, "XMP ", 4) == 0 ? &m->xmp
                       : memcmp(type, "ICCP", 4) == 0 ? &m->icc
                                                      : NULL;
    if (b && !b->data) block_set(b, s, n, NULL);
    if (at > len) break;
  }
}

static uint32_t tiff16(const uint8_t *p, int big) {
  return big ? be16(p) : (uint32_t)p[1] << 8 | p[0];
}
static uint32_t tiff32(const uint8_t *p, int big) { return big ? be32(p) : le32(p); }

/* The file is its own EXIF; XMLPacket (700) and InterColorProfile (34675)
 * are IFD0 entries of BYTE/UNDEFINED data. */
static void read_tiff(const uint8_t *p, size_t len, ib_meta *m) {
  block_set(&m->exif, p, len, NULL);
  if (len < 8 || p[2] == 0x2B || p[3] == 0x2B) return;
  int big = p[0] == 'M';
  size_t ifd = tiff32(p + 4, big);
  if (ifd > len || len - ifd < 2) return;
  size_t count = tiff16(p + ifd, big);
  for (size_t i = 0, e = ifd + 2; i < count && len - e >= 12; i++, e += 12) {
    uint32_t tag = tiff16(p + e, big), type = tiff16(p + e + 2, big), n = tiff32(p + e + 4, big);
    if ((tag != 700 && tag != 34675) || (type != 1 && type != 7)) continue;
    size_t off = n > 4 ? tiff32(p + e + 8, big) : e + 8;
    if (off > len || len - off < n) continue;
    block_set(tag == 700 ? &m->xmp : &m->icc, p + off, n, NULL);
  }
}

int ib_meta_read(const uint8_t *bytes, size_t len, ib_meta *m) {
  memset(m, 0, sizeof *m);
  int rc = 0;
  if (STARTS(bytes, len, "\x89PNG\r\n\x1a\n"))
    rc = read_png(bytes, len, m);
  else if (len >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF)
    rc = read_jpeg(bytes, len, m);
  else if (len >= 12 && STARTS(bytes, len, "RIFF") && memcmp(bytes + 8, "WEBP", 4) == 0)
    read_webp(bytes, len, m);
  else if (STARTS(bytes, len, "II*\0") || STARTS(bytes, len, "MM\0*"))
    read_tiff(bytes, len, m);
  if (rc != 0) ib_meta_free(m);
  return rc;
}

void ib_meta_free(ib_meta *m) {
  free(m->exif.owned);
  free(m->xmp.owned);
  free(m->icc.owned);
  memset(m, 0, sizeof *m);
}

int ib_meta_orientation(const ib_meta *m) {
  int v = 1;
  switch (ib_exif_orientation(m->exif.data, m->exif.len, &v)) {
    case IB_EXIF_REFUSED: return m->exif_read_at_open ? 1 : -1;
    case IB_EXIF_TAG: return v;
    case IB_EXIF_NO_TAG: break;
  }
  v = ib_xmp_orientation(m->xmp.data, m->xmp.len);
  return v >= 2 && v <= 8 ? v : 1;
}

/* ------------------------------------------------------------ keep, pack */

/* The EXIF without its prefixes, IFD0's Orientation entry removed when
 * asked: the entries after it move up 12 bytes and the count drops by one;
 * the data they point at does not move. */
static size_t exif_for_output(const ib_meta *m, int drop, uint8_t *out) {
  size_t prefix = 0;
  long e = ib_exif_orientation_entry(m->exif.data, m->exif.len, &prefix);
  if (!m->exif.data || m->exif.len <= prefix) return 0;
  int v;
  if (drop && ib_exif_orientation(m->exif.data, m->exif.len, &v) == IB_EXIF_REFUSED) return 0;
  size_t n = m->exif.len - prefix;
  memcpy(out, m->exif.data + prefix, n);
  if (!drop || e < 0) return n;
  int big = out[0] == 'M';
  size_t ifd = tiff32(out + 4, big), count = tiff16(out + ifd, big);
  size_t end = ifd + 2 + count * 12 + 4; /* entries and the next-IFD link */
  if (end > n) end = n;
  memmove(out + e, out + e + 12, end - (size_t)e - 12);
  memset(out + end - 12, 0, 12);
  count--;
  out[ifd] = (uint8_t)(big ? count >> 8 : count),
  out[ifd + 1] = (uint8_t)(big ? count : count >> 8);
  return n;
}

/* Pillow's re.sub of tiff:Orientation="[0-9]" and
 * <tiff:Orientation>[0-9]</tiff:Orientation> with "". */
static size_t xmp_for_output(const ib_meta *m, int drop, uint8_t *out) {
  static const char attr[] = "tiff:Orientation=\"", open_tag[] = "<tiff:Orientation>",
                    close_tag[] = "</tiff:Orientation>";
  const uint8_t *p = m->xmp.data;
  size_t n = m->xmp.len, o = 0;
  for (size_t i = 0; i < n;) {
    size_t a = sizeof attr - 1, t = sizeof open_tag - 1, c = sizeof close_tag - 1;
    if (drop && n - i >= a + 2 && memcmp(p + i, attr, a) == 0 && p[i + a] >= '0' &&
        p[i + a] <= '9' && p[i + a + 1] == '"') {
      i += a + 2;
      continue;
    }
    if (drop && n - i >= t + 1 + c && memcmp(p + i, open_tag, t) == 0 && p[i + t] >= '0' &&
        p[i + t] <= '9' && memcmp(p + i + t + 1, close_tag, c) == 0) {
      i += t + 1 + c;
      continue;
    }
    out[o++] = p[i++];
  }
  return o;
}

static void put32(uint8_t *p, size_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

int ib_meta_pack(const ib_meta *m, int drop_orientation, uint8_t **blob, size_t *len) {
  *blob = NULL;
  *len = 0;
  size_t cap = 12 + m->exif.len + m->xmp.len + m->icc.len;
  if (cap == 12) return 0;
  uint8_t *b = malloc(cap);
  if (!b) return -1;
  size_t at = 0, n;
  n = exif_for_output(m, drop_orientation, b + at + 4);
  put32(b + at, n), at += 4 + n;
  n = m->xmp.data ? xmp_for_output(m, drop_orientation, b + at + 4) : 0;
  put32(b + at, n), at += 4 + n;
  if (m->icc.len) memcpy(b + at + 4, m->icc.data, m->icc.len);
  put32(b + at, m->icc.len), at += 4 + m->icc.len;
  if (at == 12) {
    free(b);
    return 0;
  }
  *blob = b;
  *len = at;
  return 0;
}

int ib_meta_unpack(const uint8_t *blob, size_t len, ib_meta_keep *k) {
  memset(k, 0, sizeof *k);
  const uint8_t **data[3] = {&k->exif, &k->xmp, &k->icc};
  size_t *lens[3] = {&k->exif_len, &k->xmp_len, &k->icc_len};
  size_t at = 0;
  for (int i = 0; i < 3; i++) {
    if (len - at < 4) return -1;
    size_t n = be32(blob + at);
    if (n > len - at - 4) return -1;
    *data[i] = n ? blob + at + 4 : NULL;
    *lens[i] = n;
    at += 4 + n;
  }
  return at == len ? 0 : -1;
}

/* Layout: n (4 bytes), n selectors, then for IB_META_AS_READ and
 * IB_META_NO_ORIENTATION in turn a length (4 bytes) and that ib_meta_pack
 * blob (length 0: no rendition asked for it, or it holds nothing). */
int ib_meta_pack_renditions(const ib_meta *m, const uint8_t *sel, size_t n, uint8_t **blob,
                            size_t *len) {
  *blob = NULL;
  *len = 0;
  uint8_t *packed[2] = {NULL, NULL};
  size_t plen[2] = {0, 0};
  bool done[2] = {false, false};
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    int k = sel[i] - IB_META_AS_READ;
    if (k < 0 || k > 1 || done[k]) continue;
    done[k] = true;
    rc = ib_meta_pack(m, k == 1, &packed[k], &plen[k]);
  }
  if (rc == 0 && (plen[0] || plen[1])) {
    uint8_t *b = malloc(12 + n + plen[0] + plen[1]);
    if (b) {
      size_t at = 0;
      put32(b, n), at += 4;
      memcpy(b + at, sel, n), at += n;
      for (int k = 0; k < 2; k++) {
        put32(b + at, plen[k]), at += 4;
        if (plen[k]) memcpy(b + at, packed[k], plen[k]), at += plen[k];
      }
      *blob = b;
      *len = at;
    } else {
      rc = -1;
    }
  }
  free(packed[0]);
  free(packed[1]);
  return rc;
}

int ib_meta_rendition(const uint8_t *blob, size_t len, size_t i, ib_meta_keep *k) {
  memset(k, 0, sizeof *k);
  if (len < 4) return -1;
  size_t n = be32(blob);
  if (n > len - 4) return -1;
  const uint8_t *part[2] = {NULL, NULL};
  size_t plen[2] = {0, 0}, at = 4 + n;
  for (int p = 0; p < 2; p++) {
    if (len - at < 4) return -1;
    plen[p] = be32(blob + at);
    if (plen[p] > len - at - 4) return -1;
    part[p] = blob + at + 4;
    at += 4 + plen[p];
  }
  if (at != len || i >= n) return -1;
  int s = blob[4 + i];
  if (s == IB_META_NONE) return 0;
  if (s != IB_META_AS_READ && s != IB_META_NO_ORIENTATION) return -1;
  const int p = s - IB_META_AS_READ;
  if (!plen[p]) return 0;
  return ib_meta_unpack(part[p], plen[p], k) == 0 ? 1 : -1;
}
