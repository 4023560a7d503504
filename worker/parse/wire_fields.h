/*
 * wire_fields.h - field numbers of proto/imgbatch.proto that the worker reads
 * straight off the wire, without protobuf-c (hollowing raw pixels out of a
 * Job, keeping its node bytes). protobuf-c emits no field-number macros, so
 * these are copies: tests/unit/test_wire_constants.c checks every one (and
 * its field's type) against the generated descriptors.
 */
#ifndef IB_PARSE_WIRE_FIELDS_H
#define IB_PARSE_WIRE_FIELDS_H

enum {
  IB_FIELD_JOB_SOURCE = 3,        /* Job.source (Source) */
  IB_FIELD_JOB_EXTRA_SOURCES = 4, /* Job.extra_sources (repeated Source) */
  IB_FIELD_JOB_NODES = 5,         /* Job.nodes (repeated Node) */
  /* Source's oneof kind is exactly the fields FIRST..LAST (encoded, path,
   * raw, fill); its other fields (draft_scale = 5) are numbered past them. */
  IB_FIELD_SOURCE_KIND_FIRST = 1,
  IB_FIELD_SOURCE_RAW = 3, /* Source.raw (RawImage) */
  IB_FIELD_SOURCE_KIND_LAST = 4,
  IB_FIELD_RAW_IMAGE_DATA = 4, /* RawImage.data (bytes) */
  /* result_msg.c reads whether a result encodes off its spec snapshot. */
  IB_FIELD_OUTPUT_SPEC_CPU = 1,  /* OutputSpec.cpu (CpuOutput, oneof target) */
  IB_FIELD_OUTPUT_SPEC_GPU = 2,  /* OutputSpec.gpu (GpuOutput, oneof target) */
  IB_FIELD_CPU_OUTPUT_FORMAT = 1 /* CpuOutput.format (enum Format) */
};

#endif
