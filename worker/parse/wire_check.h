/*
 * wire_check.h - a walk over a serialized message's wire bytes, driven by
 * the protobuf-c descriptors, before protobuf-c unpacks it. protobuf-c
 * recurses once per nested message with no bound, so a Job whose metadata
 * nests a few thousand Values deep overflows the stack inside
 * protobuf_c_message_unpack; and it turns every string into a C string, so
 * an embedded NUL silently truncates it ("L\0x" reads as "L"). The walk
 * bounds the nesting, checks every string, and notes what this contract
 * does not know (fields, enum values), all in one pass and without
 * recursing past the bound.
 */
#ifndef IB_PARSE_WIRE_CHECK_H
#define IB_PARSE_WIRE_CHECK_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "imgbatch.h"

/* One field as it lies on the wire. */
typedef struct ib_wire_field {
  uint32_t fn; /* field number */
  int wt;      /* wire type: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
  const uint8_t *start, *val, *end; /* key .. payload .. next field */
  size_t vlen;                      /* payload bytes of a length-delimited field */
} ib_wire_field;

enum { IB_WT_VARINT = 0, IB_WT_I64 = 1, IB_WT_LEN = 2, IB_WT_I32 = 5 };

/* Reads the field at *p (advancing *p past it). 1: a field; 0: the end of
 * the message; -1: malformed, or a group (proto3 has none). */
int ib_wire_next(const uint8_t **p, const uint8_t *end, ib_wire_field *f);
/* Reads a varint at *p; 0 when malformed or cut short. */
int ib_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

/* Message levels below the top message that a walk admits. The deepest a
 * valid Job goes is its metadata: map entry, Value, then three levels
 * (ValueMap, entry, Value) per nesting level, 8 levels in all (docs/wire.md),
 * which is 20; nothing else in the schema nests past 3. 32 leaves room and
 * keeps protobuf-c's recursion a few kilobytes of stack. */
#define IB_WIRE_MAX_DEPTH 32

/* What a walk found that is not fatal to unpacking. Each note keeps the
 * first occurrence, named by its field path ("nodes[1].convert.mode"). */
typedef struct ib_wire_notes {
  bool bad_string; /* a string that is not UTF-8, or holds a NUL */
  char string_path[96];
  char string_text[256]; /* the message for it, the bad bytes escaped */
  bool unknown;          /* a field number or enum value not in this contract */
  char unknown_text[200];
} ib_wire_notes;

/* Walks msg[0..len) as a `desc` message. Returns IB_OK (with *notes filled),
 * IB_INVALID (stage PARSE) for bytes that are not a well-formed message
 * (bad varint, length past the end, a group or an unknown wire type), or
 * IB_LIMIT (stage PARSE) for nesting past IB_WIRE_MAX_DEPTH. */
ib_status ib_wire_check(const ProtobufCMessageDescriptor *desc, const uint8_t *msg, size_t len,
                        ib_wire_notes *notes, ib_error *err);

#endif
