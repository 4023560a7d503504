/*
 * publish.c - Results onto the results topic (and the original bytes onto
 * the DLQ for job faults), keyed by the job's coordinates, with the job
 * message's trace headers; deliveries tracked until the broker
 * acknowledges them; results too large for a message written to the
 * output directory. A failed delivery is produced again: broker trouble is
 * waited out, never turned into a loss or an error Result.
 */
#include "kafka/publish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "kafka/clock.h"
#include "kafka/conf.h"
#include "kafka/control.h"
#include "kafka/fault.h"
#include "kafka/json_escape.h"
#include "kafka/log.h"
#include "kafka/phase.h"
#include "kafka/track.h"
#include "kafka/txn.h"
#include "kafka/wstate.h"
#include "result/result_msg.h"

/* Room kept for the Result envelope, key and headers inside a message. */
#define ENVELOPE_BYTES 4096u

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  ib_worker *w = opaque;
  ib_wjob *j = m->_private;
  if (!j) return;
  w->undelivered--;
  if (m->err) {
    char t[300];
    ib_wlog(w, "warn", "delivery_failed",
            "\"partition\":%" PRId32 ",\"offset\":%" PRId64 ",\"topic\":\"%s\",\"error\":\"%s\"",
            j->partition, j->offset, ib_json_escape(t, sizeof t, rd_kafka_topic_name(m->rkt)),
            rd_kafka_err2name(m->err));
    j->delivery_failed = true;
  }
  if (--j->pending > 0) return;
  w->delivering--;
  if (!j->delivery_failed) {
    j->acked_us = ib_wnow_us();
    ib_wphase(w, IB_WP_DELIVER, j->produced_us);
  }
  if (j->delivery_failed) {
    /* Produced again by ib_wpublish_poll, until acknowledged. */
    j->delivery_failed = false;
    j->not_before_us = ib_wnow_us() + 500000;
    ib_wq_push(&w->republish, j);
    return;
  }
  if (w->cfg->transactional) {
    j->state = IB_WJOB_ACKED; /* done when its transaction commits */
    ib_wq_push(&w->txn, j);
    return;
  }
  ib_wjob_done(w, j);
}

static rd_kafka_headers_t *trace_headers(const rd_kafka_message_t *m) {
  rd_kafka_headers_t *out = rd_kafka_headers_new(4);
  rd_kafka_headers_t *in = NULL;
  if (rd_kafka_message_headers(m, &in) != RD_KAFKA_RESP_ERR_NO_ERROR) return out;
  static const char *const names[] = {"traceparent", "correlation-id"};
  for (size_t i = 0; i < 2; i++) {
    const void *v;
    size_t n;
    if (rd_kafka_header_get_last(in, names[i], &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR)
      rd_kafka_header_add(out, names[i], -1, v, (ssize_t)n);
  }
  return out;
}

/* Produces, waiting out a full local queue (polling delivery reports). */
static bool produce(ib_worker *w, ib_wjob *j, const char *topic, const void *val, size_t len,
                    rd_kafka_headers_t *hdrs) {
  if (!ib_wtxn_begin(w)) {
    rd_kafka_headers_destroy(hdrs);
    return false;
  }
  for (;;) {
    rd_kafka_resp_err_t e = rd_kafka_producev(
        w->producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(j->result_key, strlen(j->result_key)),
        RD_KAFKA_V_VALUE((void *)val, len), RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(j),
        RD_KAFKA_V_END);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (j->pending++ == 0) w->delivering++;
      w->undelivered++;
      return true;
    }
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(w->producer, 100);
      continue;
    }
    rd_kafka_headers_destroy(hdrs);
    ib_wlog(w, "error", "produce_failed",
            "\"partition\":%" PRId32 ",\"offset\":%" PRId64 ",\"error\":\"%s\"", j->partition,
            j->offset, rd_kafka_err2name(e));
    return false;
  }
}

static void produce_all(ib_worker *w, ib_wjob *j) {
  j->pending = 0;
  j->produced_us = ib_wnow_us();
  j->state = IB_WJOB_PUBLISHING;
  bool ok = produce(w, j, w->cfg->results_topic, j->result, j->result_len,
                    rd_kafka_headers_copy(j->result_headers));
  if (ok && j->to_dlq) {
    rd_kafka_headers_t *h = rd_kafka_headers_copy(j->result_headers);
    char num[32];
    rd_kafka_header_add(h, "imgbatch-stage", -1, j->dlq_stage, -1);
    rd_kafka_header_add(h, "imgbatch-kind", -1, j->dlq_kind, -1);
    rd_kafka_header_add(h, "imgbatch-error", -1, j->dlq_error, -1);
    rd_kafka_header_add(h, "imgbatch-topic", -1, rd_kafka_topic_name(j->msg->rkt), -1);
    snprintf(num, sizeof num, "%" PRId32, j->partition);
    rd_kafka_header_add(h, "imgbatch-partition", -1, num, -1);
    snprintf(num, sizeof num, "%" PRId64, j->offset);
    rd_kafka_header_add(h, "imgbatch-offset", -1, num, -1);
    ok = produce(w, j, w->cfg->dlq_topic, j->msg->payload, j->msg->len, h);
  }
  if (!ok && j->pending == 0) {
    /* Nothing is on its way: try again later, like a failed delivery. */
    j->not_before_us = ib_wnow_us() + 500000;
    ib_wq_push(&w->republish, j);
  }
}

/* Packs `rm` as job j's Result: its coordinates and the worker's fields. */
static uint8_t *pack_result(const ib_worker *w, const ib_wjob *j, ib_result_msg *rm, size_t *len) {
  Imgbatch__V1__SourceCoordinates src = IMGBATCH__V1__SOURCE_COORDINATES__INIT;
  src.topic = (char *)rd_kafka_topic_name(j->msg->rkt);
  src.partition = j->partition;
  src.offset = j->offset;
  rm->msg.source = &src;
  rm->msg.worker_id = (char *)w->worker_id;
  rm->msg.contract_version = IB_CONTRACT_VERSION;
  uint8_t *buf = ib_result_msg_pack(rm, len);
  rm->msg.source = NULL;
  return buf;
}

/* Sends job j's Result (held in j->result): it joins the answered jobs
 * that no acknowledged commit covers yet. */
static void send_now(ib_worker *w, ib_wjob *j) {
  if (!j->counted) j->counted = true, w->unsettled++;
  if (j->result_headers) rd_kafka_headers_destroy(j->result_headers);
  j->result_headers = trace_headers(j->msg);
  snprintf(j->result_key, sizeof j->result_key, "%s/%" PRId32 "/%" PRId64,
           rd_kafka_topic_name(j->msg->rkt), j->partition, j->offset);
  w->counters[IB_WC_RESULTS]++;
  w->result_bytes += j->result_len;
  produce_all(w, j);
}

uint64_t ib_wlive_jobs(const ib_worker *w) {
  return w->running + w->pooled + w->ready.n + w->delivering + w->republish.n;
}

/* The kill bound: at most max_uncommitted Results are out that no
 * acknowledged commit covers (a crash repeats only those). The gate sits
 * here, at the send, not at admission: executing and encoding overlap the
 * commit round trips of earlier jobs instead of waiting for them. A Result
 * that may not go yet waits in w->ready (holding its max_jobs slot, so a
 * full kill bound stops admission too).
 * Only a partition's head (its first unfinished job) moves its watermark,
 * so Results sent behind a head that cannot be sent could hold every slot
 * and never settle (deadlock). Slots are therefore kept for unsent heads:
 * a head (or an orphan of a revoked partition, freed at its delivery) goes
 * while any slot is free; another Result only while the slots free exceed
 * the partitions whose head is unsent. A sent head always frees its slot
 * (delivery, then a commit), so the heads behind it get theirs in turn.
 * Waiting Results also hold max_jobs slots, and a full max_jobs window
 * stops admission; that never starves a head: a partition's jobs are
 * admitted in offset order (the waiting queue is FIFO; a retried one runs
 * alone, past the window), so no Result of a partition is out before its
 * head was admitted, and an admitted head reaches w->ready and goes out
 * with one free slot. */
static bool is_head(const ib_wjob *j) { return !j->part || j->part->head == j; }

static size_t unsent_heads(const ib_worker *w) {
  size_t n = 0;
  for (int32_t i = 0; i < w->n_parts; i++) {
    const ib_wjob *h = w->parts[i].head;
    n += w->parts[i].assigned && h && h->state <= IB_WJOB_RUNNING;
  }
  return n;
}

static bool may_send(const ib_worker *w, const ib_wjob *j, size_t heads) {
  uint64_t cap = w->max_uncommitted;
  if (j->counted) return true; /* already in the bound */
  return is_head(j) ? w->unsettled < cap : w->unsettled + heads < cap;
}

void ib_wsend_ready(ib_worker *w) {
  if (!w->ready.head) return;
  size_t heads = unsent_heads(w);
  ib_wjob_queue keep = {0};
  ib_wjob *j;
  while ((j = ib_wq_pop(&w->ready))) {
    if (!may_send(w, j, heads)) {
      ib_wq_push(&keep, j);
      continue;
    }
    bool head = is_head(j) && j->part;
    send_now(w, j);
    if (head && heads) heads--; /* its partition's head is out now */
  }
  w->ready = keep;
}

/* Sends a packed Result (taking it) with the job's trace headers under the
 * job's coordinates, and its DLQ copy when marked; or holds it in w->ready
 * while the kill bound has no slot for it. */
static void send_packed(ib_worker *w, ib_wjob *j, uint8_t *packed, size_t len) {
  if (j->result) w->held_bytes -= j->result_len;
  free(j->result);
  j->result = packed;
  j->result_len = len;
  w->held_bytes += len;
  if (!may_send(w, j, unsent_heads(w))) {
    ib_wq_push(&w->ready, j);
    return;
  }
  send_now(w, j);
}

/* Out of memory packing is a worker fault: ib_wjob_fault may answer the job
 * through ib_wpublish_error, which comes back here (mutual recursion with
 * fault.c, one round per failed pack). */
static void send_result(ib_worker *w, ib_wjob *j, ib_result_msg *rm) {
  size_t len = 0;
  uint8_t *packed = pack_result(w, j, rm, &len);
  if (!packed) {
    ib_wjob_fault(w, j, "alloc", "publish: out of memory packing the Result");
    return;
  }
  send_packed(w, j, packed, len);
}

static void mark_dlq(ib_worker *w, ib_wjob *j, const ib_error *e) {
  j->to_dlq = w->cfg->dlq_topic != NULL;
  snprintf(j->dlq_stage, sizeof j->dlq_stage, "%s", ib_stage_name(e->stage));
  snprintf(j->dlq_kind, sizeof j->dlq_kind, "%s", ib_status_name(e->status));
  snprintf(j->dlq_error, sizeof j->dlq_error, "%s", e->message);
}

static const char *ext_of(Imgbatch__V1__Format f) {
  switch (f) {
    case IMGBATCH__V1__FORMAT__PNG: return "png";
    case IMGBATCH__V1__FORMAT__JPEG: return "jpg";
    case IMGBATCH__V1__FORMAT__WEBP: return "webp";
    case IMGBATCH__V1__FORMAT__TIFF: return "tiff";
    default: return "raw";
  }
}

/* Writes `data` atomically (temporary file, fsync, rename, directory
 * fsync) as <topic>-<partition>-<offset>.<ext> under the output directory;
 * rendition i (>= 0) as <topic>-<partition>-<offset>.r<i>.<ext>. */
static int write_file(const ib_worker *w, const ib_wjob *j, const Imgbatch__V1__ImageData *im,
                      int rendition, char *name, size_t cap) {
  if (w->sink_fault) return EIO;
  char part[16] = "";
  if (rendition >= 0) snprintf(part, sizeof part, ".r%d", rendition);
  snprintf(name, cap, "%s-%" PRId32 "-%" PRId64 "%s.%s", rd_kafka_topic_name(j->msg->rkt),
           j->partition, j->offset, part, ext_of(im->format));
  for (char *c = name; *c; c++)
    if (*c == '/') *c = '_';
  char tmp[1200], final[1200];
  snprintf(final, sizeof final, "%s/%s", w->cfg->output_dir, name);
  snprintf(tmp, sizeof tmp, "%s/.%s.%s.tmp", w->cfg->output_dir, name, w->worker_id);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  size_t off = 0;
  int e = 0;
  while (off < im->data.len && !e) {
    ssize_t n = write(fd, im->data.data + off, im->data.len - off);
    if (n < 0 && errno != EINTR) e = errno;
    if (n > 0) off += (size_t)n;
  }
  if (!e && fsync(fd) != 0) e = errno;
  if (close(fd) != 0 && !e) e = errno;
  if (!e && rename(tmp, final) != 0) e = errno;
  if (e) {
    unlink(tmp);
    return e;
  }
  int dfd = open(w->cfg->output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    if (fsync(dfd) != 0) e = errno;
    close(dfd);
  }
  return e;
}

/* Every rendition image of a Result past --max-result-bytes becomes a file
 * (as a single image does); 0 or the errno of the write that failed, with
 * its file's name in `name`. `files`/`names` are the caller's, one per
 * rendition, and must live until the Result is packed. */
static int renditions_to_files(const ib_worker *w, const ib_wjob *j, ib_result_msg *rm,
                               Imgbatch__V1__ImageFile *files, char (*names)[600]) {
  for (size_t i = 0; i < rm->msg.n_renditions; i++) {
    Imgbatch__V1__RenditionResult *r = rm->msg.renditions[i];
    Imgbatch__V1__ImageData *im = r->image;
    int e = write_file(w, j, im, (int)i, names[i], sizeof names[i]);
    if (e) return e;
    Imgbatch__V1__ImageFile *f = &files[i];
    imgbatch__v1__image_file__init(f);
    f->path = names[i];
    f->mode = im->mode;
    f->width = im->width;
    f->height = im->height;
    f->format = im->format;
    f->size = im->data.len;
    f->worker_id = (char *)w->worker_id;
    r->outcome_case = IMGBATCH__V1__RENDITION_RESULT__OUTCOME_FILE;
    r->file = f;
  }
  return 0;
}

/* Off the driving thread (the encode pool): encodes the image per the
 * job's output spec, writes a result too large for a message to the output
 * directory, packs the Result. Reads only immutable worker state. */
void ib_wout_prepare(const ib_worker *w, ib_wout *o) {
  ib_result *res = &o->res;
  ib_result_msg rm;
  ib_result_msg_init(&rm);
  ib_error err = {0};
  ib_status st = ib_result_msg_from_result(&rm, res, &err);
  if (st != IB_OK && err.status == IB_INTERNAL) {
    /* The encoder failed, not the job's parameters: a worker fault until
     * it follows this job (README, "The Kafka worker"). */
    o->fault_kind = "encode";
    snprintf(o->fault_msg, sizeof o->fault_msg, "%s", err.message);
    ib_result_msg_clear(&rm);
    return;
  }
  if (rm.msg.outcome_case == IMGBATCH__V1__RESULT__OUTCOME_RESIDENT) {
    rm.handle.worker_id = (char *)w->worker_id;
    rm.handle.handle_id = o->handle_id;
    rm.handle.generation = w->generation;
  }
  rm.timings.queue_us = res->queue_us;
  rm.timings.gpu_us = res->exec_us;
  Imgbatch__V1__ImageFile file = IMGBATCH__V1__IMAGE_FILE__INIT;
  char name[600];
  Imgbatch__V1__ImageFile rfiles[IB_MAX_RENDITIONS];
  char(*rnames)[600] = NULL;
  if (rm.msg.n_renditions && rm.msg.n_renditions <= IB_MAX_RENDITIONS &&
      imgbatch__v1__result__get_packed_size(&rm.msg) > w->max_result_bytes) {
    ib_error e;
    int werr = 0;
    if (!w->cfg->output_dir) {
      ib_error_set(&e, IB_LIMIT, IB_STAGE_PUBLISH,
                   "publish: result of %zu bytes (%zu renditions) exceeds --max-result-bytes "
                   "%" PRIu64 " and no --output-dir is set",
                   imgbatch__v1__result__get_packed_size(&rm.msg), rm.msg.n_renditions,
                   w->max_result_bytes);
      ib_result_msg_clear(&rm);
      ib_result_msg_error(&rm, res->has_job_id, res->job_id, &res->key, &e);
      o->dlq = e;
    } else if (!(rnames = calloc(IB_MAX_RENDITIONS, sizeof *rnames)) ||
               (werr = renditions_to_files(w, o->j, &rm, rfiles, rnames))) {
      o->fault_kind = rnames ? "sink" : "alloc";
      snprintf(o->fault_msg, sizeof o->fault_msg, "write %.100s/%.150s: %.60s", w->cfg->output_dir,
               rnames ? "rendition" : "-", strerror(werr ? werr : ENOMEM));
      free(rnames);
      ib_result_msg_clear(&rm);
      return;
    }
  } else if (rm.msg.outcome_case == IMGBATCH__V1__RESULT__OUTCOME_IMAGE &&
             imgbatch__v1__result__get_packed_size(&rm.msg) > w->max_result_bytes) {
    Imgbatch__V1__ImageData *im = rm.msg.image;
    if (!w->cfg->output_dir) {
      ib_error e;
      ib_error_set(&e, IB_LIMIT, IB_STAGE_PUBLISH,
                   "publish: result of %zu bytes exceeds --max-result-bytes %" PRIu64
                   " and no --output-dir is set",
                   im->data.len, w->max_result_bytes);
      ib_result_msg_clear(&rm);
      ib_result_msg_error(&rm, res->has_job_id, res->job_id, &res->key, &e);
      o->dlq = e;
    } else {
      int e = write_file(w, o->j, im, -1, name, sizeof name);
      if (e) {
        o->fault_kind = "sink";
        snprintf(o->fault_msg, sizeof o->fault_msg, "write %.100s/%.150s: %.60s",
                 w->cfg->output_dir, name, strerror(e));
        ib_result_msg_clear(&rm);
        return;
      }
      file.path = name;
      file.mode = im->mode;
      file.width = im->width;
      file.height = im->height;
      file.format = im->format;
      file.size = im->data.len;
      file.worker_id = (char *)w->worker_id;
      rm.msg.outcome_case = IMGBATCH__V1__RESULT__OUTCOME_FILE;
      rm.msg.file = &file;
    }
  } else if (rm.msg.outcome_case == IMGBATCH__V1__RESULT__OUTCOME_ERROR) {
    o->dlq = st != IB_OK ? err : res->error;
  }
  o->error = rm.msg.outcome_case == IMGBATCH__V1__RESULT__OUTCOME_ERROR;
  o->outcome = o->error                                                        ? IB_WO_ERROR
               : rm.msg.outcome_case == IMGBATCH__V1__RESULT__OUTCOME_FILE     ? IB_WO_FILE
               : rm.msg.outcome_case == IMGBATCH__V1__RESULT__OUTCOME_RESIDENT ? IB_WO_RESIDENT
                                                                               : IB_WO_IMAGE;
  o->packed = pack_result(w, o->j, &rm, &o->len);
  free(rnames);
  if (!o->packed) {
    o->fault_kind = "alloc";
    snprintf(o->fault_msg, sizeof o->fault_msg, "publish: out of memory packing the Result");
  }
  ib_result_msg_clear(&rm);
}

bool ib_wout_send(ib_worker *w, ib_wout *o) {
  ib_wjob *j = o->j;
  if (o->fault_kind) {
    ib_wjob_fault(w, j, o->fault_kind, o->fault_msg);
    return false;
  }
  if (o->error) {
    w->counters[IB_WC_ERRORS]++;
    mark_dlq(w, j, &o->dlq);
  }
  w->outcomes[o->outcome]++;
  send_packed(w, j, o->packed, o->len);
  o->packed = NULL;
  return true;
}

bool ib_wpublish_result(ib_worker *w, ib_wjob *j, ib_result *res) {
  ib_wout o = {.j = j, .res = *res};
  if (res->ok && res->kind == IB_RESULT_RESIDENT && !ib_whandle_keep(w, res, &o.handle_id)) {
    ib_wjob_fault(w, j, "alloc", "publish: out of memory keeping a resident handle");
    return false;
  }
  ib_wout_prepare(w, &o);
  return ib_wout_send(w, &o);
}

void ib_wpublish_error(ib_worker *w, ib_wjob *j, ib_status st, ib_stage stage, const char *msg) {
  ib_error e = {.status = st, .stage = stage};
  snprintf(e.message, sizeof e.message, "%s", msg);
  ib_result_msg rm;
  ib_result_msg_init(&rm);
  ib_result_msg_error(&rm, j->has_job_id, j->job_id, j->has_key ? &j->key : NULL, &e);
  w->counters[IB_WC_ERRORS]++;
  w->outcomes[IB_WO_ERROR]++;
  mark_dlq(w, j, &e);
  send_result(w, j, &rm);
  ib_result_msg_clear(&rm);
}

static uint64_t message_max_bytes(ib_worker *w) {
  const rd_kafka_conf_t *c = rd_kafka_conf(w->producer);
  char v[32];
  size_t n = sizeof v;
  if (rd_kafka_conf_get(c, "message.max.bytes", v, &n) != RD_KAFKA_CONF_OK) return 1000000;
  return strtoull(v, NULL, 10);
}

/* librdkafka learns an output topic's partitions when it first produces to
 * it, at its next 1 s metadata scan, so the first Result waited about a
 * second. A topic handle made now starts that lookup at once, without
 * blocking the start (the broker may be down); the handles are held until
 * shutdown so the topics stay known. */
static void warm_out_topics(ib_worker *w) {
  const char *names[2] = {w->cfg->results_topic, w->cfg->dlq_topic};
  for (int i = 0; i < 2; i++)
    if (names[i]) w->out_topics[i] = rd_kafka_topic_new(w->producer, names[i], NULL);
}

ib_status ib_wpublish_start(ib_worker *w, char *errbuf, size_t cap) {
  rd_kafka_conf_t *c = ib_wconf_new(w, errbuf, cap);
  if (!c) return IB_INVALID;
  char txid[300];
  snprintf(txid, sizeof txid, "imgbatch-%s", w->worker_id);
  bool ok = (!w->cfg->transactional || ib_wconf_set(w, c, "transactional.id", txid, errbuf, cap)) &&
            ib_wconf_set(w, c, "enable.idempotence", "true", errbuf, cap) &&
            ib_wconf_set(w, c, "acks", "all", errbuf, cap) &&
            ib_wconf_set(w, c, "compression.type", "none", errbuf, cap) &&
            /* A job holds its max_jobs slot until its delivery comes back
             * (and its kill-bound slot until the commit after that), so
             * delivery latency caps throughput at max_jobs per round trip:
             * librdkafka's 5 ms default linger cost much of it; 0 (a
             * request per Result) queues behind idempotence's 5 requests in
             * flight. */
            ib_wconf_set(w, c, "linger.ms", "1", errbuf, cap) && ib_wconf_props(w, c, errbuf, cap);
  if (!ok) {
    rd_kafka_conf_destroy(c);
    return IB_INVALID;
  }
  rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
  w->producer = rd_kafka_new(RD_KAFKA_PRODUCER, c, errbuf, cap);
  if (!w->producer) {
    rd_kafka_conf_destroy(c);
    return IB_INVALID;
  }
  if (w->cfg->transactional && !ib_wtxn_init(w)) {
    snprintf(errbuf, cap, "init_transactions failed (see the txn_failed log line)");
    return IB_INVALID;
  }
  warm_out_topics(w);
  uint64_t mmb = message_max_bytes(w);
  w->max_result_bytes = w->cfg->max_result_bytes
                            ? w->cfg->max_result_bytes
                            : (mmb > 2 * ENVELOPE_BYTES ? mmb - ENVELOPE_BYTES : mmb / 2);
  return IB_OK;
}

void ib_wpublish_poll(ib_worker *w, int timeout_ms) {
  rd_kafka_poll(w->producer, timeout_ms);
  /* Deliveries that failed past librdkafka's retries go out again, the
   * same bytes under the same key; the job stays uncommitted meanwhile. */
  uint64_t now = ib_wnow_us();
  size_t n = w->republish.n;
  while (n-- > 0) {
    ib_wjob *j = ib_wq_pop(&w->republish);
    if (j->not_before_us > now) {
      ib_wq_push(&w->republish, j);
      continue;
    }
    w->counters[IB_WC_REPRODUCED]++;
    produce_all(w, j);
  }
}

/* Removes result files older than --output-ttl (ours by their name). */
void ib_woutdir_sweep(ib_worker *w) {
  if (!w->cfg->output_dir || !w->cfg->output_ttl_s) return;
  DIR *d = opendir(w->cfg->output_dir);
  if (!d) return;
  time_t now = time(NULL);
  struct dirent *e;
  int dfd = dirfd(d);
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' && !strstr(e->d_name, ".tmp")) continue;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if ((uint64_t)(now - st.st_mtime) > w->cfg->output_ttl_s) unlinkat(dfd, e->d_name, 0);
  }
  closedir(d);
}
