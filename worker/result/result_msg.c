/* Building and packing Result messages. */
#include "result/result_msg.h"

#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/metadata.h"
#include "codec/output_spec.h"
#include "core/error.h"
#include "core/utf8.h"
#include "parse/wire_check.h"
#include "parse/wire_fields.h"

/* Every string a Result carries is valid UTF-8, or strict protobuf runtimes
 * refuse the whole Result (and a client loses its batch). Parsing already
 * rejects Jobs whose strings are not, and error messages are kept valid;
 * this is the last guard for whatever else reaches a Result: invalid
 * bytes are written as "\xNN". NULL when out of memory. */
static char *valid_copy(const char *s) {
  size_t n = strlen(s ? s : "");
  char *out = malloc(4 * n + 1);
  if (out) ib_utf8_escape(out, 4 * n + 1, (const uint8_t *)(s ? s : ""), n);
  return out;
}

void ib_result_msg_init(ib_result_msg *r) {
  memset(r, 0, sizeof *r);
  imgbatch__v1__result__init(&r->msg);
  imgbatch__v1__image_data__init(&r->image);
  imgbatch__v1__job_error__init(&r->error);
  imgbatch__v1__timings__init(&r->timings);
  imgbatch__v1__handle_ref__init(&r->handle);
  r->msg.timings = &r->timings;
}

static void set_key(ib_result_msg *r, const ib_key *key) {
  if (!key) return;
  if (key->is_u64) {
    r->msg.input_key_case = IMGBATCH__V1__RESULT__INPUT_KEY_KEY_U64;
    r->msg.key_u64 = key->u64;
    r->error.input_key_case = IMGBATCH__V1__JOB_ERROR__INPUT_KEY_KEY_U64;
    r->error.key_u64 = key->u64;
  } else {
    r->key_str = valid_copy(key->str);
    r->error_key_str = valid_copy(key->str);
    r->msg.input_key_case = IMGBATCH__V1__RESULT__INPUT_KEY_KEY_STRING;
    r->msg.key_string = r->key_str ? r->key_str : (char *)"";
    r->error.input_key_case = IMGBATCH__V1__JOB_ERROR__INPUT_KEY_KEY_STRING;
    r->error.key_string = r->error_key_str ? r->error_key_str : (char *)"";
  }
}

static Imgbatch__V1__ErrorKind kind_of(ib_status s) {
  switch (s) {
    case IB_INVALID: return IMGBATCH__V1__ERROR_KIND__INVALID;
    case IB_UNSUPPORTED: return IMGBATCH__V1__ERROR_KIND__UNSUPPORTED;
    case IB_LIMIT:
    case IB_QUEUE_FULL:
    case IB_RESULT_BACKPRESSURE: return IMGBATCH__V1__ERROR_KIND__LIMIT;
    case IB_DECODE: return IMGBATCH__V1__ERROR_KIND__DECODE_ERROR;
    case IB_DEVICE: return IMGBATCH__V1__ERROR_KIND__DEVICE;
    case IB_TIMEOUT: return IMGBATCH__V1__ERROR_KIND__TIMEOUT;
    default: return IMGBATCH__V1__ERROR_KIND__INTERNAL;
  }
}

void ib_result_msg_error(ib_result_msg *r, bool has_id, uint64_t job_id, const ib_key *key,
                         const ib_error *err) {
  if (has_id) {
    r->msg.job_id_present_case = IMGBATCH__V1__RESULT__JOB_ID_PRESENT_JOB_ID;
    r->msg.job_id = job_id;
    r->error.job_id_present_case = IMGBATCH__V1__JOB_ERROR__JOB_ID_PRESENT_JOB_ID;
    r->error.job_id = job_id;
  }
  set_key(r, key);
  r->error.stage = (Imgbatch__V1__Stage)err->stage;
  r->error.kind = kind_of(err->status);
  r->message_str = valid_copy(err->message);
  r->error.message = r->message_str ? r->message_str : (char *)"out of memory";
  r->msg.outcome_case = IMGBATCH__V1__RESULT__OUTCOME_ERROR;
  r->msg.error = &r->error;
}

static void echo_snapshot(ib_result_msg *r, const ib_result *res) {
  if (res->metadata_len)
    r->echo_metadata = imgbatch__v1__job__unpack(NULL, res->metadata_len, res->metadata);
  if (r->echo_metadata) {
    /* Job and Result metadata entries share one layout (string key, Value). */
    r->msg.n_metadata = r->echo_metadata->n_metadata;
    r->msg.metadata = (Imgbatch__V1__Result__MetadataEntry **)r->echo_metadata->metadata;
  }
  if (res->correlation_id) {
    r->msg.correlation_present_case = IMGBATCH__V1__RESULT__CORRELATION_PRESENT_CORRELATION_ID;
    r->correlation_str = valid_copy(res->correlation_id);
    r->msg.correlation_id = r->correlation_str ? r->correlation_str : (char *)"";
  }
}

/* A raw output is the image's own bytes: nothing to encode. */
static bool cpu_encodes(const Imgbatch__V1__CpuOutput *cpu) {
  return cpu && cpu->format != IMGBATCH__V1__FORMAT__RAW;
}

/* Read off the spec's wire bytes, as protobuf-c would unpack them (the last
 * target of the oneof wins, and its last format), so that building the
 * message (encode_result) is the one unpack of the spec per result. The
 * bytes are the executor's own pack of a parsed Job; malformed ones answer
 * false, as a failed unpack did. */
bool ib_result_msg_encodes(const ib_result *res) {
  if (res->kind == IB_RESULT_IMAGE && res->n_renditions) return true;
  if (res->kind != IB_RESULT_IMAGE || !res->output_spec_len) return false;
  const uint8_t *p = res->output_spec, *end = p + res->output_spec_len;
  bool cpu = false;
  int32_t format = IMGBATCH__V1__FORMAT__RAW;
  ib_wire_field f;
  int r;
  while ((r = ib_wire_next(&p, end, &f)) == 1) {
    if (f.fn != IB_FIELD_OUTPUT_SPEC_CPU && f.fn != IB_FIELD_OUTPUT_SPEC_GPU) continue;
    if (f.wt != IB_WT_LEN) return false; /* unpack refuses it */
    /* Each target field replaces the one before (protobuf-c keeps the last
     * member of a oneof, not a merge of repeated ones). */
    cpu = f.fn == IB_FIELD_OUTPUT_SPEC_CPU;
    format = IMGBATCH__V1__FORMAT__RAW;
    if (!cpu) continue;
    const uint8_t *q = f.val, *qend = f.val + f.vlen;
    ib_wire_field g;
    int s;
    while ((s = ib_wire_next(&q, qend, &g)) == 1) {
      uint64_t v;
      const uint8_t *vp = g.val;
      if (g.fn != IB_FIELD_CPU_OUTPUT_FORMAT) continue;
      if (g.wt != IB_WT_VARINT || !ib_wire_varint(&vp, g.end, &v)) return false;
      format = (int32_t)(uint32_t)v; /* an enum is an int32 on the wire */
    }
    if (s < 0) return false;
  }
  return r == 0 && cpu && format != IMGBATCH__V1__FORMAT__RAW;
}

static ib_status encode_result(ib_result_msg *r, const ib_result *res, bool lend_raw,
                               ib_error *err) {
  const Imgbatch__V1__CpuOutput *cpu = NULL;
  if (res->output_spec_len && !(r->echo_spec = imgbatch__v1__output_spec__unpack(
                                    NULL, res->output_spec_len, res->output_spec)))
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE,
                        "encode: output spec snapshot unreadable");
  /* An output gpu job reaches here only as a downloaded resident output:
   * its native bytes are written raw. */
  if (r->echo_spec && r->echo_spec->target_case == IMGBATCH__V1__OUTPUT_SPEC__TARGET_CPU)
    cpu = r->echo_spec->cpu;
  size_t len = 0;
  const uint8_t *data = NULL;
  if (lend_raw && !cpu_encodes(cpu)) {
    data = res->image.data;
    len = ib_image_bytes(&res->image);
  } else {
    ib_meta_keep meta;
    if (res->source_meta && ib_meta_unpack(res->source_meta, res->source_meta_len, &meta) != 0)
      return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE,
                          "encode: metadata snapshot unreadable");
    ib_status st =
        ib_codec_encode(&res->image, cpu, res->source_meta ? &meta : NULL, &r->encoded, &len, err);
    if (st != IB_OK) return st;
    data = r->encoded;
  }
  r->msg.job_id_present_case = IMGBATCH__V1__RESULT__JOB_ID_PRESENT_JOB_ID;
  r->msg.job_id = res->job_id;
  set_key(r, &res->key);
  /* The encoded file's mode as Pillow opens it (RGBX written as JPEG is RGB). */
  r->image.mode = (char *)ib_mode_name(ib_output_mode(cpu, res->image.mode));
  r->image.width = res->image.width;
  r->image.height = res->image.height;
  r->image.format = cpu ? cpu->format : IMGBATCH__V1__FORMAT__RAW;
  r->image.data.data = (uint8_t *)data;
  r->image.data.len = len;
  r->msg.outcome_case = IMGBATCH__V1__RESULT__OUTCOME_IMAGE;
  r->msg.image = &r->image;
  return IB_OK;
}

/* Every rendition encoded per its CpuOutput, in the Job's order; the
 * outcome stays unset (an error would fail the whole Result instead). */
static ib_status renditions_result(ib_result_msg *r, const ib_result *res, ib_error *err) {
  const size_t n = res->n_renditions;
  r->echo_renditions =
      imgbatch__v1__job__unpack(NULL, res->renditions_spec_len, res->renditions_spec);
  if (!r->echo_renditions || r->echo_renditions->n_renditions != n)
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE,
                        "encode: renditions snapshot unreadable");
  r->rend = calloc(n, sizeof *r->rend);
  r->rend_ptrs = calloc(n, sizeof *r->rend_ptrs);
  r->rend_images = calloc(n, sizeof *r->rend_images);
  r->rend_encoded = calloc(n, sizeof *r->rend_encoded);
  if (!r->rend || !r->rend_ptrs || !r->rend_images || !r->rend_encoded)
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE, "encode: out of memory");
  r->n_rend = n;
  for (size_t i = 0; i < n; i++) {
    const Imgbatch__V1__Rendition *want = r->echo_renditions->renditions[i];
    const ib_image *im = &res->renditions[i];
    size_t len = 0;
    ib_meta_keep meta;
    int kept =
        res->source_meta ? ib_meta_rendition(res->source_meta, res->source_meta_len, i, &meta) : 0;
    if (kept < 0)
      return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE,
                          "encode: renditions[%zu]: metadata snapshot unreadable", i);
    ib_status st =
        ib_codec_encode(im, want->output, kept ? &meta : NULL, &r->rend_encoded[i], &len, err);
    if (st != IB_OK) return st;
    Imgbatch__V1__ImageData *d = &r->rend_images[i];
    imgbatch__v1__image_data__init(d);
    d->mode = (char *)ib_mode_name(ib_output_mode(want->output, im->mode));
    d->width = im->width;
    d->height = im->height;
    d->format = want->output ? want->output->format : IMGBATCH__V1__FORMAT__RAW;
    d->data.data = r->rend_encoded[i];
    d->data.len = len;
    imgbatch__v1__rendition_result__init(&r->rend[i]);
    r->rend[i].node = want->node;
    r->rend[i].outcome_case = IMGBATCH__V1__RENDITION_RESULT__OUTCOME_IMAGE;
    r->rend[i].image = d;
    r->rend_ptrs[i] = &r->rend[i];
  }
  r->msg.job_id_present_case = IMGBATCH__V1__RESULT__JOB_ID_PRESENT_JOB_ID;
  r->msg.job_id = res->job_id;
  set_key(r, &res->key);
  r->msg.n_renditions = n;
  r->msg.renditions = r->rend_ptrs;
  return IB_OK;
}

static void resident_result(ib_result_msg *r, const ib_result *res) {
  r->msg.job_id_present_case = IMGBATCH__V1__RESULT__JOB_ID_PRESENT_JOB_ID;
  r->msg.job_id = res->job_id;
  set_key(r, &res->key);
  r->handle.handle_id = res->job_id;
  r->handle.mode = (char *)ib_mode_name(ib_handle_mode(res->handle));
  r->handle.width = ib_handle_width(res->handle);
  r->handle.height = ib_handle_height(res->handle);
  r->msg.outcome_case = IMGBATCH__V1__RESULT__OUTCOME_RESIDENT;
  r->msg.resident = &r->handle;
}

static ib_status from_result(ib_result_msg *r, const ib_result *res, bool lend_raw, ib_error *err) {
  ib_status st = IB_OK;
  if (res->ok && res->kind == IB_RESULT_RESIDENT && res->handle) {
    resident_result(r, res);
    echo_snapshot(r, res);
    return IB_OK;
  }
  if (res->ok && res->n_renditions) {
    if ((st = renditions_result(r, res, err)) == IB_OK) {
      echo_snapshot(r, res);
      return IB_OK;
    }
  } else if (res->ok && (st = encode_result(r, res, lend_raw, err)) == IB_OK) {
    echo_snapshot(r, res);
    return IB_OK;
  }
  ib_result_msg_clear(r);
  /* Bytes that never unpacked into a Job carry no key. */
  bool keyed = res->has_job_id || res->ok || res->error.stage != IB_STAGE_PARSE;
  ib_result_msg_error(r, res->has_job_id, res->job_id, keyed ? &res->key : NULL,
                      res->ok ? err : &res->error);
  echo_snapshot(r, res);
  return st;
}

ib_status ib_result_msg_from_result(ib_result_msg *r, const ib_result *res, ib_error *err) {
  return from_result(r, res, false, err);
}

ib_status ib_result_msg_from_result_lent(ib_result_msg *r, const ib_result *res, ib_error *err) {
  return from_result(r, res, true, err);
}

uint8_t *ib_result_msg_pack(const ib_result_msg *r, size_t *len) {
  *len = imgbatch__v1__result__get_packed_size(&r->msg);
  uint8_t *buf = malloc(*len ? *len : 1);
  if (buf) imgbatch__v1__result__pack(&r->msg, buf);
  return buf;
}

void ib_result_msg_clear(ib_result_msg *r) {
  ib_codec_free(r->encoded);
  free(r->key_str);
  free(r->error_key_str);
  free(r->message_str);
  free(r->correlation_str);
  if (r->echo_metadata) imgbatch__v1__job__free_unpacked(r->echo_metadata, NULL);
  if (r->echo_spec) imgbatch__v1__output_spec__free_unpacked(r->echo_spec, NULL);
  for (size_t i = 0; r->rend_encoded && i < r->n_rend; i++) ib_codec_free(r->rend_encoded[i]);
  free(r->rend_encoded);
  free(r->rend_images);
  free(r->rend_ptrs);
  free(r->rend);
  if (r->echo_renditions) imgbatch__v1__job__free_unpacked(r->echo_renditions, NULL);
  ib_result_msg_init(r);
}
