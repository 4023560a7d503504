/* A Result frame packed around its image bytes. protobuf-c packs fields in
 * field-number order and each field on its own, so the message is: fields
 * 1-5, the image (6) as a length-delimited ImageData whose bytes field (5)
 * comes last, then fields 7-14. Everything but the image bytes is packed
 * here (a few hundred bytes); the bytes are written from where they lie.
 * Should the Result message change shape, the whole message is packed
 * instead (a copy, but the same bytes). */
#include "cli/run_frame.h"

#include <stdlib.h>
#include <string.h>

#include "core/frame.h"

#define RESULT_FIELDS 14u
#define RESULT_IMAGE_FIELD 6u
#define IMAGE_DATA_FIELD 5u
#define WIRE_LEN 2u

static size_t varint_len(uint64_t v) {
  uint8_t scratch[10];
  return ib_frame_varint(scratch, v);
}

/* The shape the split relies on, checked against the compiled descriptors. */
static bool splittable(void) {
  const ProtobufCMessageDescriptor *rd = &imgbatch__v1__result__descriptor;
  const ProtobufCMessageDescriptor *id = &imgbatch__v1__image_data__descriptor;
  const ProtobufCFieldDescriptor *img =
      protobuf_c_message_descriptor_get_field_by_name(rd, "image");
  const ProtobufCFieldDescriptor *data =
      protobuf_c_message_descriptor_get_field_by_name(id, "data");
  return rd->n_fields == RESULT_FIELDS && img && img->id == RESULT_IMAGE_FIELD && data &&
         data->id == IMAGE_DATA_FIELD && id->fields[id->n_fields - 1].id == IMAGE_DATA_FIELD;
}

static bool pack_whole(ib_run_frame *f, const ib_result_msg *rm) {
  size_t len = imgbatch__v1__result__get_packed_size(&rm->msg);
  if (!(f->packed = malloc(10 + len))) return false;
  size_t k = ib_frame_varint(f->packed, len);
  imgbatch__v1__result__pack(&rm->msg, f->packed + k);
  f->iov[0] = (struct iovec){f->packed, k + len};
  f->iovcnt = 1;
  return true;
}

bool ib_run_frame_pack(ib_run_frame *f, const ib_result_msg *rm) {
  *f = (ib_run_frame){0};
  const Imgbatch__V1__ImageData *im =
      rm->msg.outcome_case == IMGBATCH__V1__RESULT__OUTCOME_IMAGE ? rm->msg.image : NULL;
  if (!im || im->data.len == 0 || !splittable()) return pack_whole(f, rm);
  /* Every field but the image; the part after it: fields 7-14 alone. */
  Imgbatch__V1__Result outer = rm->msg;
  outer.outcome_case = IMGBATCH__V1__RESULT__OUTCOME__NOT_SET;
  outer.image = NULL;
  Imgbatch__V1__Result after = outer;
  after.job_id_present_case = IMGBATCH__V1__RESULT__JOB_ID_PRESENT__NOT_SET;
  after.worker_id = (char *)"";
  after.input_key_case = IMGBATCH__V1__RESULT__INPUT_KEY__NOT_SET;
  after.source = NULL;
  Imgbatch__V1__ImageData hdr = *im;
  hdr.data = (ProtobufCBinaryData){0, NULL};
  size_t outer_len = imgbatch__v1__result__get_packed_size(&outer);
  size_t tail_len = imgbatch__v1__result__get_packed_size(&after);
  size_t hdr_len = imgbatch__v1__image_data__get_packed_size(&hdr);
  size_t img_len = hdr_len + 1 + varint_len(im->data.len) + im->data.len;
  size_t total = imgbatch__v1__result__get_packed_size(&rm->msg);
  if (tail_len > outer_len || total != outer_len + 1 + varint_len(img_len) + img_len)
    return pack_whole(f, rm);
  size_t pre_len = outer_len - tail_len;
  /* [frame length][fields 1-5][image tag, length][ImageData 1-4][data tag, length] [tail] */
  size_t cap = 10 + pre_len + 11 + hdr_len + 11 + tail_len;
  uint8_t *p = f->packed = malloc(cap);
  uint8_t *tail = malloc(outer_len ? outer_len : 1);
  if (!p || !tail) {
    free(tail);
    ib_run_frame_clear(f);
    return false;
  }
  imgbatch__v1__result__pack(&outer, tail);
  size_t k = ib_frame_varint(p, total);
  memcpy(p + k, tail, pre_len);
  k += pre_len;
  p[k++] = (uint8_t)(RESULT_IMAGE_FIELD << 3 | WIRE_LEN);
  k += ib_frame_varint(p + k, img_len);
  k += imgbatch__v1__image_data__pack(&hdr, p + k);
  p[k++] = (uint8_t)(IMAGE_DATA_FIELD << 3 | WIRE_LEN);
  k += ib_frame_varint(p + k, im->data.len);
  memcpy(p + k, tail + pre_len, tail_len);
  free(tail);
  f->iov[0] = (struct iovec){p, k};
  f->iov[1] = (struct iovec){im->data.data, im->data.len};
  f->iov[2] = (struct iovec){p + k, tail_len};
  f->iovcnt = tail_len ? 3 : 2;
  return true;
}

void ib_run_frame_clear(ib_run_frame *f) {
  free(f->packed);
  *f = (ib_run_frame){0};
}
