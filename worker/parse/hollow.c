/* Hollowing a serialized Job (see hollow.h). Field numbers: wire_fields.h. */
#include "parse/hollow.h"

#include <stdlib.h>
#include <string.h>

#include "parse/wire_check.h"
#include "parse/wire_fields.h"

enum {
  JOB_SOURCE = IB_FIELD_JOB_SOURCE,
  JOB_EXTRA = IB_FIELD_JOB_EXTRA_SOURCES,
  SRC_RAW = IB_FIELD_SOURCE_RAW,
  RAW_DATA = IB_FIELD_RAW_IMAGE_DATA
};

static size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

static uint8_t *put_varint(uint8_t *o, uint64_t v) {
  while (v >= 0x80) *o++ = (uint8_t)(v | 0x80), v >>= 7;
  *o++ = (uint8_t)v;
  return o;
}

/* The RawImage's one data field (NULL: none); -1 when not canonical. */
static int raw_data(const uint8_t *p, size_t n, ib_wire_field *data) {
  const uint8_t *end = p + n;
  ib_wire_field f;
  int r, seen = 0;
  while ((r = ib_wire_next(&p, end, &f)) == 1)
    if (f.fn == RAW_DATA) {
      if (f.wt != IB_WT_LEN || seen++) return -1;
      *data = f;
    }
  return r < 0 ? -1 : seen;
}

/* The Source's raw field when it is the only kind field: 1 (with *raw and
 * *data when data is at least min), 0 nothing to hollow, -1 not canonical. */
static int source_raw(const uint8_t *p, size_t n, size_t min, ib_wire_field *raw,
                      ib_wire_field *data) {
  const uint8_t *end = p + n;
  ib_wire_field f;
  int r, kinds = 0, found = 0;
  while ((r = ib_wire_next(&p, end, &f)) == 1) {
    if (f.fn < IB_FIELD_SOURCE_KIND_FIRST || f.fn > IB_FIELD_SOURCE_KIND_LAST) continue;
    if (f.wt != IB_WT_LEN || kinds++) return -1;
    if (f.fn != SRC_RAW) continue;
    int d = raw_data(f.val, f.vlen, data);
    if (d < 0) return -1;
    if (d == 1 && data->vlen >= min) {
      *raw = f;
      found = 1;
    }
  }
  return r < 0 ? -1 : found;
}

int ib_hollow_job(const uint8_t *buf, size_t len, size_t min, ib_hollow *h) {
  return ib_hollow_job_in(buf, len, min, NULL, 0, h);
}

int ib_hollow_job_in(const uint8_t *buf, size_t len, size_t min, uint8_t *scratch, size_t cap,
                     ib_hollow *h) {
  h->msg = NULL;
  h->len = 0;
  h->n_spans = 0;
  /* Pass 1: find the spans; pass 2 writes the message without them. */
  typedef struct hit {
    const uint8_t *field_start; /* the Job-level Source field */
    ib_wire_field raw, data;
  } hit;
  hit hits[IB_HOLLOW_MAX_SPANS];
  size_t n_hits = 0, extra = 0, dropped = 0;
  int sources = 0;
  const uint8_t *p = buf, *end = buf + len;
  ib_wire_field f;
  int r;
  while ((r = ib_wire_next(&p, end, &f)) == 1) {
    if (f.fn != JOB_SOURCE && f.fn != JOB_EXTRA) continue;
    if (f.wt != IB_WT_LEN || (f.fn == JOB_SOURCE && sources++)) return 0;
    size_t index = f.fn == JOB_SOURCE ? 0 : 1 + extra++;
    hit hh;
    int s = source_raw(f.val, f.vlen, min, &hh.raw, &hh.data);
    if (s < 0) return 0;
    if (s == 0) continue;
    if (n_hits == IB_HOLLOW_MAX_SPANS) return 0;
    hh.field_start = f.start;
    hits[n_hits] = hh;
    h->spans[n_hits] = (ib_hollow_span){index, hh.data.val, hh.data.vlen};
    dropped += (size_t)(hh.data.end - hh.data.start);
    n_hits++;
  }
  if (r < 0 || n_hits == 0) return 0;
  const size_t need = len - dropped + 16;
  uint8_t *o = need <= cap ? scratch : malloc(need);
  if (!o) return -1;
  h->msg = o;
  p = buf;
  size_t k = 0;
  while (ib_wire_next(&p, end, &f) == 1) {
    if (k == n_hits || f.start != hits[k].field_start) {
      memcpy(o, f.start, (size_t)(f.end - f.start));
      o += f.end - f.start;
      continue;
    }
    const hit *hh = &hits[k++];
    size_t data_bytes = (size_t)(hh->data.end - hh->data.start);
    size_t raw_len = hh->raw.vlen - data_bytes;
    size_t raw_old = (size_t)(hh->raw.end - hh->raw.start);
    size_t raw_new = varint_len((uint64_t)SRC_RAW << 3 | IB_WT_LEN) + varint_len(raw_len) + raw_len;
    size_t src_len = f.vlen - raw_old + raw_new;
    o = put_varint(o, (uint64_t)f.fn << 3 | IB_WT_LEN);
    o = put_varint(o, src_len);
    /* The Source's fields, its raw one rebuilt without data. */
    const uint8_t *q = f.val, *qend = f.val + f.vlen;
    ib_wire_field g;
    while (ib_wire_next(&q, qend, &g) == 1) {
      if (g.start != hh->raw.start) {
        memcpy(o, g.start, (size_t)(g.end - g.start));
        o += g.end - g.start;
        continue;
      }
      o = put_varint(o, (uint64_t)SRC_RAW << 3 | IB_WT_LEN);
      o = put_varint(o, raw_len);
      memcpy(o, g.val, (size_t)(hh->data.start - g.val));
      o += hh->data.start - g.val;
      memcpy(o, hh->data.end, (size_t)(g.val + g.vlen - hh->data.end));
      o += g.val + g.vlen - hh->data.end;
    }
  }
  h->len = (size_t)(o - h->msg);
  h->n_spans = n_hits;
  return 1;
}

size_t ib_wire_collect(const uint8_t *buf, size_t len, uint32_t fn, uint8_t *out, size_t cap) {
  size_t total = 0;
  const uint8_t *p = buf, *end = buf + len;
  ib_wire_field f;
  int r;
  while ((r = ib_wire_next(&p, end, &f)) == 1) {
    if (f.fn != fn) continue;
    size_t n = (size_t)(f.end - f.start);
    if (out && total + n <= cap) memcpy(out + total, f.start, n);
    total += n;
  }
  return r < 0 ? SIZE_MAX : total;
}
