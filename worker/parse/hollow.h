/*
 * hollow.h - zero-copy ingest at the wire level. A serialized Job's raw
 * source pixels (Job.source / Job.extra_sources -> Source.raw ->
 * RawImage.data) are found in place and a "hollow" copy of the message is
 * written without them, so protobuf-c (which copies every bytes field it
 * unpacks) unpacks only the small rest; the parser then points each
 * RawImage.data back at its span in the original buffer.
 *
 * Only the canonical shape is hollowed: Job.source at most once, each
 * Source with one kind field, each RawImage with one data field. Anything
 * else (merged duplicates, groups, malformed bytes) is left to the normal
 * copying unpack, which applies protobuf's merge rules and reports errors.
 */
#ifndef IB_PARSE_HOLLOW_H
#define IB_PARSE_HOLLOW_H

#include <stddef.h>
#include <stdint.h>

#define IB_HOLLOW_MAX_SPANS 64

typedef struct ib_hollow_span {
  size_t source;       /* 0 = Job.source, 1 + k = extra_sources[k] */
  const uint8_t *data; /* inside the original buffer */
  size_t len;
} ib_hollow_span;

typedef struct ib_hollow {
  uint8_t *msg; /* the hollow message (malloc'd) */
  size_t len;
  ib_hollow_span spans[IB_HOLLOW_MAX_SPANS];
  size_t n_spans;
} ib_hollow;

/* Hollows raw data fields of at least `min` bytes. Returns 1 with *h filled
 * (free h->msg), 0 when there is nothing to hollow or the message is not
 * canonical (unpack `buf` itself), -1 when out of memory. */
int ib_hollow_job(const uint8_t *buf, size_t len, size_t min, ib_hollow *h);
/* The same, writing the hollow message into scratch[0..cap) when it fits
 * (h->msg == scratch: not freed), else into malloc'd memory. A Job's
 * message without its pixels is usually a few hundred bytes: parsing one
 * per job on the driving thread, the malloc/free pair was worth saving. */
int ib_hollow_job_in(const uint8_t *buf, size_t len, size_t min, uint8_t *scratch, size_t cap,
                     ib_hollow *h);

/* The encodings (key, length, payload) of every top-level field `fn` of a
 * message, concatenated into out[0..cap) in wire order. Returns the total
 * length (also when out is NULL or too small, which writes nothing), or
 * SIZE_MAX for malformed bytes. Two equal results mean equal field values. */
size_t ib_wire_collect(const uint8_t *buf, size_t len, uint32_t fn, uint8_t *out, size_t cap);

#endif
