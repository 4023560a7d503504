/* Copies of wire constants against the protobuf-c descriptors of
 * proto/imgbatch.proto: the field numbers the worker reads off the wire by
 * hand (parse/wire_fields.h), the enum mirrors the kernels and the public
 * header keep (IB_CHOP_*, IB_ENHANCE_*, IB_TRANSPOSE_*, ib_stage), the
 * ib_status -> ErrorKind mapping of result messages, and the op registry
 * (one row per Node oneof case). A proto edit that moves a number, renames
 * a field or adds a value fails here, not on a live topic. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "result/result_msg.h"
#include "kernels/chops.h"
#include "kernels/enhance.h"
#include "kernels/geometry.h"
#include "ops/op.h"
#include "parse/wire_fields.h"
#include "proto/imgbatch.pb-c.h"

/* ------------------------------------------------------------ field numbers */

static const ProtobufCFieldDescriptor *field(const ProtobufCMessageDescriptor *d,
                                             const char *name) {
  const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
  cr_assert_not_null(f, "%s has no field %s", d->name, name);
  return f;
}

static void expect_field(const ProtobufCMessageDescriptor *d, const char *name, unsigned copy,
                         ProtobufCType type, ProtobufCLabel label) {
  const ProtobufCFieldDescriptor *f = field(d, name);
  cr_expect_eq(f->id, copy, "%s.%s is field %u, the worker's copy says %u", d->name, name, f->id,
               copy);
  cr_expect_eq(f->type, type, "%s.%s: wire type changed", d->name, name);
  cr_expect_eq(f->label, label, "%s.%s: label changed", d->name, name);
}

Test(wire_fields, hand_read_field_numbers_match_the_proto) {
  const ProtobufCMessageDescriptor *job = &imgbatch__v1__job__descriptor;
  expect_field(job, "source", IB_FIELD_JOB_SOURCE, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE);
  expect_field(job, "extra_sources", IB_FIELD_JOB_EXTRA_SOURCES, PROTOBUF_C_TYPE_MESSAGE,
               PROTOBUF_C_LABEL_REPEATED);
  expect_field(job, "nodes", IB_FIELD_JOB_NODES, PROTOBUF_C_TYPE_MESSAGE,
               PROTOBUF_C_LABEL_REPEATED);
  cr_expect_eq(field(job, "source")->descriptor, &imgbatch__v1__source__descriptor);
  cr_expect_eq(field(job, "extra_sources")->descriptor, &imgbatch__v1__source__descriptor);
  cr_expect_eq(field(job, "nodes")->descriptor, &imgbatch__v1__node__descriptor);
  /* parse.c compares the wire walk's path with this name. */
  field(job, "key_string");

  const ProtobufCMessageDescriptor *src = &imgbatch__v1__source__descriptor;
  expect_field(src, "raw", IB_FIELD_SOURCE_RAW, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE);
  cr_expect_eq(field(src, "raw")->descriptor, &imgbatch__v1__raw_image__descriptor);
  /* hollow.c treats the field numbers FIRST..LAST as Source's one oneof: it
   * must be exactly those; Source's other fields (draft_scale) lie outside
   * that range, and hollowing copies them as they are. */
  unsigned kinds = 0;
  for (unsigned i = 0; i < src->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &src->fields[i];
    bool in_range = f->id >= IB_FIELD_SOURCE_KIND_FIRST && f->id <= IB_FIELD_SOURCE_KIND_LAST;
    bool in_oneof = (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0;
    cr_expect_eq(in_range, in_oneof, "Source.%s = %u: in %d..%d exactly when in the kind oneof",
                 f->name, f->id, IB_FIELD_SOURCE_KIND_FIRST, IB_FIELD_SOURCE_KIND_LAST);
    kinds += in_oneof;
  }
  cr_expect_eq(kinds, IB_FIELD_SOURCE_KIND_LAST - IB_FIELD_SOURCE_KIND_FIRST + 1);

  expect_field(&imgbatch__v1__raw_image__descriptor, "data", IB_FIELD_RAW_IMAGE_DATA,
               PROTOBUF_C_TYPE_BYTES, PROTOBUF_C_LABEL_NONE);

  const ProtobufCMessageDescriptor *spec = &imgbatch__v1__output_spec__descriptor;
  expect_field(spec, "cpu", IB_FIELD_OUTPUT_SPEC_CPU, PROTOBUF_C_TYPE_MESSAGE,
               PROTOBUF_C_LABEL_NONE);
  expect_field(spec, "gpu", IB_FIELD_OUTPUT_SPEC_GPU, PROTOBUF_C_TYPE_MESSAGE,
               PROTOBUF_C_LABEL_NONE);
  cr_expect_eq(spec->n_fields, 2, "OutputSpec is its target oneof alone");
  expect_field(&imgbatch__v1__cpu_output__descriptor, "format", IB_FIELD_CPU_OUTPUT_FORMAT,
               PROTOBUF_C_TYPE_ENUM, PROTOBUF_C_LABEL_NONE);
}

/* ib_result_msg_encodes reads the spec off the wire: the answer protobuf-c's
 * unpack gives, for every target and format as the executor packs them and
 * for hand-made sequences (a repeated or switched oneof). */
static bool encodes_by_unpack(const uint8_t *b, size_t n) {
  Imgbatch__V1__OutputSpec *s = imgbatch__v1__output_spec__unpack(NULL, n, b);
  bool enc = s && s->target_case == IMGBATCH__V1__OUTPUT_SPEC__TARGET_CPU && s->cpu &&
             s->cpu->format != IMGBATCH__V1__FORMAT__RAW;
  if (s) imgbatch__v1__output_spec__free_unpacked(s, NULL);
  return enc;
}

static void expect_same(const uint8_t *b, size_t n, const char *what) {
  ib_result r = {
      .kind = IB_RESULT_IMAGE, .ok = true, .output_spec = (void *)b, .output_spec_len = n};
  cr_expect_eq(ib_result_msg_encodes(&r), encodes_by_unpack(b, n), "%s", what);
}

Test(wire_fields, result_encodes_reads_the_spec_as_unpack_does) {
  for (int target = 0; target < 3; target++)
    for (int fmt = 0; fmt <= 5; fmt++) {
      Imgbatch__V1__OutputSpec s = IMGBATCH__V1__OUTPUT_SPEC__INIT;
      Imgbatch__V1__CpuOutput cpu = IMGBATCH__V1__CPU_OUTPUT__INIT;
      Imgbatch__V1__GpuOutput gpu = IMGBATCH__V1__GPU_OUTPUT__INIT;
      cpu.format = (Imgbatch__V1__Format)fmt;
      cpu.quality_present_case = IMGBATCH__V1__CPU_OUTPUT__QUALITY_PRESENT_QUALITY;
      cpu.quality = 80;
      if (target == 1) s.target_case = IMGBATCH__V1__OUTPUT_SPEC__TARGET_CPU, s.cpu = &cpu;
      if (target == 2) s.target_case = IMGBATCH__V1__OUTPUT_SPEC__TARGET_GPU, s.gpu = &gpu;
      uint8_t b[64];
      size_t n = imgbatch__v1__output_spec__pack(&s, b);
      char what[64];
      snprintf(what, sizeof what, "target %d format %d", target, fmt);
      expect_same(b, n, what);
    }
  /* cpu{png} gpu{} ; gpu{} cpu{png} ; cpu{png} cpu{} ; cpu{png} gpu{} cpu{} ;
   * cpu{format 2^32} (an int32 on the wire) ; cut short ; field 1 as a
   * varint ; an unknown field 2 ; format as fixed32 ; an unknown field 3
   * before the format. */
  static const struct {
    uint8_t b[16];
    size_t n;
  } seq[] = {{{0x0a, 2, 0x08, 1, 0x12, 0}, 6},
             {{0x12, 0, 0x0a, 2, 0x08, 1}, 6},
             {{0x0a, 2, 0x08, 1, 0x0a, 0}, 6},
             {{0x0a, 2, 0x08, 1, 0x12, 0, 0x0a, 0}, 8},
             {{0x0a, 6, 0x08, 0x80, 0x80, 0x80, 0x80, 0x10}, 8},
             {{0x0a, 4, 0x08, 1}, 4},
             {{0x0a, 2, 0x08, 1, 0x08, 1}, 6},
             {{0x0a, 2, 0x08, 1, 0x10, 1}, 6},
             {{0x0a, 5, 0x0d, 1, 0, 0, 0}, 7},
             {{0x0a, 4, 0x18, 5, 0x08, 2}, 6}};
  for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
    char what[32];
    snprintf(what, sizeof what, "sequence %zu", i);
    expect_same(seq[i].b, seq[i].n, what);
  }
  ib_result none = {.kind = IB_RESULT_IMAGE, .ok = true};
  cr_expect_not(ib_result_msg_encodes(&none), "no spec: raw");
}

/* ------------------------------------------------------------ enum mirrors */

typedef struct mirror {
  int value;
  const char *proto_name;
} mirror;

/* Every value of the proto enum is in the mirror under its name with the
 * same number, and the mirror has nothing else. */
static void expect_mirror(const ProtobufCEnumDescriptor *e, const mirror *m, size_t n) {
  cr_expect_eq(e->n_values, n, "%s has %u values, the worker's mirror %zu", e->name, e->n_values,
               n);
  for (unsigned i = 0; i < e->n_values; i++) {
    const ProtobufCEnumValue *v = &e->values[i];
    size_t k = 0;
    while (k < n && strcmp(m[k].proto_name, v->name) != 0) k++;
    cr_expect_lt(k, n, "%s.%s has no worker mirror", e->name, v->name);
    if (k < n)
      cr_expect_eq(m[k].value, v->value, "%s.%s = %d, the worker's mirror says %d", e->name,
                   v->name, v->value, m[k].value);
  }
}

#define N(a) (sizeof(a) / sizeof(a)[0])

Test(wire_enums, chops_functions) {
  static const mirror m[] = {
      {IB_CHOP_MULTIPLY, "MULTIPLY"},
      {IB_CHOP_SCREEN, "SCREEN"},
      {IB_CHOP_OVERLAY, "OVERLAY"},
      {IB_CHOP_HARD_LIGHT, "HARD_LIGHT"},
      {IB_CHOP_SOFT_LIGHT, "SOFT_LIGHT"},
      {IB_CHOP_DIFFERENCE, "DIFFERENCE"},
      {IB_CHOP_DARKER, "DARKER"},
      {IB_CHOP_LIGHTER, "LIGHTER"},
      {IB_CHOP_ADD, "ADD"},
      {IB_CHOP_SUBTRACT, "SUBTRACT"},
      {IB_CHOP_ADD_MODULO, "ADD_MODULO"},
      {IB_CHOP_SUBTRACT_MODULO, "SUBTRACT_MODULO"},
  };
  expect_mirror(&imgbatch__v1__chops_function__descriptor, m, N(m));
  /* IB_CHOP_COUNT bounds the function a row admits and the kernels switch on. */
  cr_expect_eq(IB_CHOP_COUNT, imgbatch__v1__chops_function__descriptor.n_values);
}

Test(wire_enums, enhance_kinds) {
  static const mirror m[] = {
      {IB_ENHANCE_BRIGHTNESS, "BRIGHTNESS"},
      {IB_ENHANCE_COLOR, "COLOR"},
      {IB_ENHANCE_CONTRAST, "CONTRAST"},
  };
  expect_mirror(&imgbatch__v1__enhance_kind__descriptor, m, N(m));
}

Test(wire_enums, transpose_methods) {
  static const mirror m[] = {
      {IB_TRANSPOSE_FLIP_LEFT_RIGHT, "FLIP_LEFT_RIGHT"},
      {IB_TRANSPOSE_FLIP_TOP_BOTTOM, "FLIP_TOP_BOTTOM"},
      {IB_TRANSPOSE_ROTATE_90, "ROTATE_90"},
      {IB_TRANSPOSE_ROTATE_180, "ROTATE_180"},
      {IB_TRANSPOSE_ROTATE_270, "ROTATE_270"},
      {IB_TRANSPOSE_TRANSPOSE, "TRANSPOSE"},
      {IB_TRANSPOSE_TRANSVERSE, "TRANSVERSE"},
  };
  expect_mirror(&imgbatch__v1__transpose_method__descriptor, m, N(m));
}

/* result_msg.c casts ib_stage to the proto's Stage; the client shows the
 * proto name in lower case, the worker ib_stage_name: one word for both. */
Test(wire_enums, stages_cast_to_the_proto_stage) {
  static const mirror m[] = {
      {IB_STAGE_NONE, "STAGE_UNSPECIFIED"}, {IB_STAGE_PARSE, "PARSE"},
      {IB_STAGE_VALIDATE, "VALIDATE"},      {IB_STAGE_ADMIT, "ADMIT"},
      {IB_STAGE_DECODE, "DECODE"},          {IB_STAGE_UPLOAD, "UPLOAD"},
      {IB_STAGE_EXECUTE, "EXECUTE"},        {IB_STAGE_DOWNLOAD, "DOWNLOAD"},
      {IB_STAGE_ENCODE, "ENCODE"},          {IB_STAGE_PUBLISH, "PUBLISH"},
  };
  const ProtobufCEnumDescriptor *e = &imgbatch__v1__stage__descriptor;
  expect_mirror(e, m, N(m));
  for (unsigned i = 0; i < e->n_values; i++) {
    const ProtobufCEnumValue *v = &e->values[i];
    if (v->value == 0) continue;
    char lower[32];
    size_t k = 0;
    for (; v->name[k] && k + 1 < sizeof lower; k++)
      lower[k] = (char)tolower((unsigned char)v->name[k]);
    lower[k] = 0;
    cr_expect_str_eq(ib_stage_name((ib_stage)v->value), lower);
  }
}

/* The kind each status is reported as on the wire (docs/wire.md: retryable
 * capacity answers are LIMIT; what is not a request's fault is INTERNAL). */
Test(wire_enums, statuses_map_to_error_kinds) {
  static const struct {
    ib_status status;
    const char *kind;
  } want[] = {
      {IB_QUEUE_FULL, "LIMIT"},        {IB_LIMIT, "LIMIT"},
      {IB_UNSUPPORTED, "UNSUPPORTED"}, {IB_INVALID, "INVALID"},
      {IB_DECODE, "DECODE_ERROR"},     {IB_DEVICE, "DEVICE"},
      {IB_TIMEOUT, "TIMEOUT"},         {IB_INTERNAL, "INTERNAL"},
      {IB_BUSY, "INTERNAL"},           {IB_RESULT_BACKPRESSURE, "LIMIT"},
      {IB_CLOSED, "INTERNAL"},         {IB_END, "INTERNAL"},
      {IB_AGAIN, "INTERNAL"},
  };
  const ProtobufCEnumDescriptor *e = &imgbatch__v1__error_kind__descriptor;
  unsigned reached = 0; /* bit per ErrorKind value */
  for (size_t i = 0; i < N(want); i++) {
    ib_result_msg r;
    ib_result_msg_init(&r);
    ib_error err = {.status = want[i].status, .stage = IB_STAGE_EXECUTE};
    snprintf(err.message, sizeof err.message, "x");
    ib_key key = {.is_u64 = true, .u64 = 1};
    ib_result_msg_error(&r, true, 1, &key, &err);
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(e, (int)r.error.kind);
    cr_assert_not_null(v, "%s: kind %d is not an ErrorKind", ib_status_name(want[i].status),
                       (int)r.error.kind);
    cr_expect_str_eq(v->name, want[i].kind, "%s", ib_status_name(want[i].status));
    cr_expect_eq((int)r.error.stage, IMGBATCH__V1__STAGE__EXECUTE);
    reached |= 1u << v->value;
    ib_result_msg_clear(&r);
  }
  /* Every status but IB_OK is listed (IB_AGAIN is the last). */
  cr_expect_eq(N(want), (size_t)IB_AGAIN);
  /* Every ErrorKind a worker can send is reached by some status. */
  for (unsigned i = 0; i < e->n_values; i++)
    if (e->values[i].value != 0)
      cr_expect(reached & (1u << e->values[i].value), "ErrorKind %s is never sent",
                e->values[i].name);
}

/* ------------------------------------------------------------ op registry */

Test(wire_ops, every_node_op_has_one_row_named_as_its_field) {
  size_t n_rows;
  const ib_op_desc *const *rows = ib_op_all(&n_rows);
  const ProtobufCMessageDescriptor *node = &imgbatch__v1__node__descriptor;
  size_t ops = 0;
  for (unsigned i = 0; i < node->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &node->fields[i];
    if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) continue;
    ops++;
    const ib_op_desc *d = ib_op_for_case((Imgbatch__V1__Node__OpCase)f->id);
    cr_expect_not_null(d, "Node.%s (%u) has no op row", f->name, f->id);
    if (d) cr_expect_str_eq(d->name, f->name, "the row of Node.%s", f->name);
    size_t same = 0;
    for (size_t k = 0; k < n_rows; k++) same += (unsigned)rows[k]->op_case == f->id;
    cr_expect_eq(same, 1, "Node.%s has %zu rows", f->name, same);
  }
  cr_expect_eq(n_rows, ops, "rows %zu, Node op cases %zu", n_rows, ops);
}
