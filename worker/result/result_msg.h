/* result_msg.h - building imgbatch.v1.Result messages (shared by the run
 * command and the Kafka worker). The message borrows from the ib_result
 * given to ib_result_msg_from_result until it is written; it owns its
 * encoded bytes. */
#ifndef IB_RESULT_MSG_H
#define IB_RESULT_MSG_H

#include <stdbool.h>
#include <stdio.h>

#include "model/graph.h"
#include "proto/imgbatch.pb-c.h"

typedef struct ib_result_msg {
  Imgbatch__V1__Result msg;
  Imgbatch__V1__ImageData image;
  Imgbatch__V1__JobError error;
  Imgbatch__V1__Timings timings;
  Imgbatch__V1__HandleRef handle; /* outcome resident */
  uint8_t *encoded;               /* owned (ib_codec_free) */
  char *key_str;                  /* owned */
  char *error_key_str;
  char *message_str;                   /* owned: the error message, as valid UTF-8 */
  char *correlation_str;               /* owned: the correlation id, as valid UTF-8 */
  Imgbatch__V1__Job *echo_metadata;    /* owned: unpacked ib_result metadata */
  Imgbatch__V1__OutputSpec *echo_spec; /* owned: unpacked ib_result output spec */
  /* A job with renditions: one entry per rendition (msg.renditions points
   * at rend_ptrs), each image encoded into rend_encoded[i]. Owned. */
  size_t n_rend;
  Imgbatch__V1__RenditionResult *rend;
  Imgbatch__V1__RenditionResult **rend_ptrs;
  Imgbatch__V1__ImageData *rend_images;
  uint8_t **rend_encoded;
  Imgbatch__V1__Job *echo_renditions; /* owned: unpacked ib_result renditions spec */
} ib_result_msg;

void ib_result_msg_init(ib_result_msg *r);
/* An error result; with has_id false the job never got an id (unparseable). */
void ib_result_msg_error(ib_result_msg *r, bool has_id, uint64_t job_id, const ib_key *key,
                         const ib_error *err);
/* A Result for an executor result: the image encoded per the job's output
 * spec snapshot (raw when absent; raw too for an output gpu job whose
 * resident output the front end downloaded into res->image), a resident
 * HandleRef (kind IB_RESULT_RESIDENT: mode/size from the handle, handle_id =
 * the job id, worker_id "" and generation 0 - the front end sets those in
 * r->handle before writing), or its error; metadata and correlation id
 * echoed. Borrows from `res` until written/cleared. A failed encode turns
 * the message into an encode error result (returned status). */
ib_status ib_result_msg_from_result(ib_result_msg *r, const ib_result *res, ib_error *err);
/* The same, but a raw image is not copied: the message's bytes field points
 * at res->image.data (so `res` must outlive every pack of the message, as
 * its pixels too are borrowed). */
ib_status ib_result_msg_from_result_lent(ib_result_msg *r, const ib_result *res, ib_error *err);
/* Whether building res's message runs a codec (an image result whose
 * output spec asks for PNG, JPEG, WebP or TIFF): the costly case, worth a
 * thread of its own. */
bool ib_result_msg_encodes(const ib_result *res);
/* Packs into a malloc'ed buffer. */
uint8_t *ib_result_msg_pack(const ib_result_msg *r, size_t *len);
void ib_result_msg_clear(ib_result_msg *r);

#endif
