/*
 * control.c - resident outputs: the handles this worker keeps for output
 * gpu jobs, their leases, and the control topic (Download, Release) read
 * by every worker: all partitions, no group, from the end. Handle ids are
 * random 64-bit tokens (nobody can guess and release another's image);
 * the generation changes with every start, so a stale reference gets a
 * clean error.
 */
#include "kafka/control.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "kafka/clock.h"
#include "kafka/conf.h"
#include "kafka/log.h"
#include "kafka/txn.h"
#include "kafka/wstate.h"
#include "proto/imgbatch.pb-c.h"
#include "result/result_msg.h"

struct ib_handle_slot {
  uint64_t id;
  ib_handle *h;
  uint64_t expires_us;
};

static uint64_t random_u64(void) {
  uint64_t v = 0;
  while (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
  }
  return v;
}

bool ib_whandle_keep(ib_worker *w, ib_result *res, uint64_t *handle_id) {
  if (w->n_handles == w->cap_handles) {
    size_t cap = w->cap_handles ? w->cap_handles * 2 : 16;
    ib_handle_slot *s = realloc(w->handles, cap * sizeof *s);
    if (!s) return false;
    w->handles = s;
    w->cap_handles = cap;
  }
  uint64_t id;
  do id = random_u64();
  while (!id);
  w->handles[w->n_handles++] = (ib_handle_slot){
      .id = id, .h = res->handle, .expires_us = ib_wnow_us() + w->cfg->lease_s * 1000000u};
  /* The published HandleRef stands for it now; the result must not release it. */
  ib_handle *h = NULL;
  if (ib_handle_clone(res->handle, &h) != IB_OK) {
    w->n_handles--;
    return false;
  }
  w->handles[w->n_handles - 1].h = h;
  *handle_id = id;
  return true;
}

static ib_handle_slot *find(ib_worker *w, uint64_t id) {
  for (size_t i = 0; i < w->n_handles; i++)
    if (w->handles[i].id == id) return &w->handles[i];
  return NULL;
}

static void drop_slot(ib_worker *w, ib_handle_slot *s) {
  ib_handle_release(&s->h);
  *s = w->handles[--w->n_handles];
}

/* An answer on the results topic, keyed by the control message's own
 * coordinates (so it collapses like any Result). */
static void answer(ib_worker *w, const rd_kafka_message_t *m, ib_result_msg *rm) {
  Imgbatch__V1__SourceCoordinates src = IMGBATCH__V1__SOURCE_COORDINATES__INIT;
  src.topic = (char *)rd_kafka_topic_name(m->rkt);
  src.partition = m->partition;
  src.offset = m->offset;
  rm->msg.source = &src;
  rm->msg.worker_id = w->worker_id;
  rm->msg.contract_version = IB_CONTRACT_VERSION;
  size_t len = 0;
  uint8_t *buf = ib_result_msg_pack(rm, &len);
  rm->msg.source = NULL;
  if (!buf) return;
  char key[300];
  snprintf(key, sizeof key, "%s/%" PRId32 "/%" PRId64, src.topic, m->partition, m->offset);
  rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__STATE;
  while (ib_wtxn_begin(w) &&
         (e = rd_kafka_producev(w->producer, RD_KAFKA_V_TOPIC(w->cfg->results_topic),
                                RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(buf, len),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE), RD_KAFKA_V_END)) ==
             RD_KAFKA_RESP_ERR__QUEUE_FULL)
    rd_kafka_poll(w->producer, 100);
  if (e) {
    free(buf);
    ib_wlog(w, "error", "produce_failed", "\"control_offset\":%" PRId64 ",\"error\":\"%s\"",
            m->offset, rd_kafka_err2name(e));
  }
}

static void answer_error(ib_worker *w, const rd_kafka_message_t *m, ib_status st, const char *msg) {
  ib_error e = {.status = st, .stage = IB_STAGE_DOWNLOAD};
  snprintf(e.message, sizeof e.message, "%s", msg);
  ib_result_msg rm;
  ib_result_msg_init(&rm);
  ib_result_msg_error(&rm, false, 0, NULL, &e);
  answer(w, m, &rm);
  ib_result_msg_clear(&rm);
}

/* The slot a HandleRef names, or NULL when it is another worker's (not
 * ours to answer) - *stale set when it names us but is gone. */
static ib_handle_slot *resolve(ib_worker *w, const Imgbatch__V1__HandleRef *ref, bool *ours) {
  *ours = ref && ref->worker_id && strcmp(ref->worker_id, w->worker_id) == 0;
  if (!*ours || ref->generation != w->generation) return NULL;
  return find(w, ref->handle_id);
}

static void serve(ib_worker *w, const rd_kafka_message_t *m) {
  Imgbatch__V1__Control *c = imgbatch__v1__control__unpack(NULL, m->len, m->payload);
  if (!c) return; /* not a Control: nothing names us */
  bool ours = false;
  if (c->command_case == IMGBATCH__V1__CONTROL__COMMAND_RELEASE) {
    ib_handle_slot *s = resolve(w, c->release->handle, &ours);
    if (s) drop_slot(w, s);
    if (ours)
      ib_wlog(w, "info", "released", "\"handle\":%" PRIu64 ",\"found\":%s",
              c->release->handle ? c->release->handle->handle_id : 0, s ? "true" : "false");
  } else if (c->command_case == IMGBATCH__V1__CONTROL__COMMAND_DOWNLOAD) {
    ib_handle_slot *s = resolve(w, c->download->handle, &ours);
    if (ours && !s) {
      answer_error(w, m, IB_INVALID,
                   "download: handle unknown here (released, expired, or from an earlier "
                   "generation of this worker)");
    } else if (s) {
      s->expires_us = ib_wnow_us() + w->cfg->lease_s * 1000000u; /* Download renews */
      ib_result res = {.ok = true, .kind = IB_RESULT_IMAGE};
      ib_error err = {0};
      ib_status st = ib_handle_download(s->h, &res.image, &err);
      if (st != IB_OK) {
        answer_error(w, m, st, err.message);
      } else {
        Imgbatch__V1__OutputSpec spec = IMGBATCH__V1__OUTPUT_SPEC__INIT;
        spec.target_case = IMGBATCH__V1__OUTPUT_SPEC__TARGET_CPU;
        Imgbatch__V1__CpuOutput raw = IMGBATCH__V1__CPU_OUTPUT__INIT;
        spec.cpu = c->download->output ? c->download->output : &raw;
        size_t n = imgbatch__v1__output_spec__get_packed_size(&spec);
        uint8_t *packed = malloc(n ? n : 1);
        if (packed) imgbatch__v1__output_spec__pack(&spec, packed);
        res.output_spec = packed;
        res.output_spec_len = packed ? n : 0;
        ib_result_msg rm;
        ib_result_msg_init(&rm);
        ib_result_msg_from_result(&rm, &res, &err);
        answer(w, m, &rm);
        ib_result_msg_clear(&rm);
        free(packed);
        ib_image_release(&res.image);
      }
    }
  }
  imgbatch__v1__control__free_unpacked(c, NULL);
}

ib_status ib_wcontrol_start(ib_worker *w, char *errbuf, size_t cap) {
  w->generation = random_u64() | 1u;
  rd_kafka_conf_t *c = ib_wconf_new(w, errbuf, cap);
  if (!c) return IB_INVALID;
  bool ok = ib_wconf_props(w, c, errbuf, cap);
  /* Each worker reads every control message, from the end: partitions are
   * assigned, never subscribed, and nothing is committed. librdkafka 2.0
   * wants a group id even for that; a private one joins no group. */
  char group[200];
  snprintf(group, sizeof group, "imgbatch-control-%s", w->worker_id);
  if (ok)
    ok = ib_wconf_set(w, c, "group.id", group, errbuf, cap) &&
         ib_wconf_set(w, c, "enable.auto.commit", "false", errbuf, cap);
  if (!ok) {
    rd_kafka_conf_destroy(c);
    return IB_INVALID;
  }
  w->control = rd_kafka_new(RD_KAFKA_CONSUMER, c, errbuf, cap);
  if (!w->control) {
    rd_kafka_conf_destroy(c);
    return IB_INVALID;
  }
  const rd_kafka_metadata_t *md = NULL;
  rd_kafka_topic_t *t = rd_kafka_topic_new(w->control, w->cfg->control_topic, NULL);
  rd_kafka_resp_err_t e = rd_kafka_metadata(w->control, 0, t, &md, 10000);
  int parts = (!e && md->topic_cnt == 1 && !md->topics[0].err) ? md->topics[0].partition_cnt : 0;
  if (md) rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(t);
  if (parts <= 0) {
    snprintf(errbuf, cap, "control topic %s: no partitions (%s)", w->cfg->control_topic,
             e ? rd_kafka_err2str(e) : "topic missing");
    return IB_INVALID;
  }
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(parts);
  for (int i = 0; i < parts; i++)
    rd_kafka_topic_partition_list_add(l, w->cfg->control_topic, i)->offset = RD_KAFKA_OFFSET_END;
  e = rd_kafka_assign(w->control, l);
  rd_kafka_topic_partition_list_destroy(l);
  if (e) {
    snprintf(errbuf, cap, "control topic %s: %s", w->cfg->control_topic, rd_kafka_err2str(e));
    return IB_INVALID;
  }
  return IB_OK;
}

void ib_wcontrol_poll(ib_worker *w) {
  rd_kafka_message_t *m;
  while ((m = rd_kafka_consumer_poll(w->control, 0))) {
    if (!m->err) serve(w, m);
    rd_kafka_message_destroy(m);
  }
  uint64_t now = ib_wnow_us();
  for (size_t i = 0; i < w->n_handles;) {
    if (w->handles[i].expires_us <= now) {
      ib_wlog(w, "info", "lease_expired", "\"handle\":%" PRIu64, w->handles[i].id);
      drop_slot(w, &w->handles[i]);
    } else {
      i++;
    }
  }
}

void ib_wcontrol_stop(ib_worker *w) {
  while (w->n_handles) drop_slot(w, &w->handles[0]);
  free(w->handles);
  w->handles = NULL;
  if (w->control) {
    rd_kafka_consumer_close(w->control);
    rd_kafka_destroy(w->control);
    w->control = NULL;
  }
}
