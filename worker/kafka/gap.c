/*
 * gap.c - jobs the broker deleted before this worker consumed them. A
 * broker with little retention (the embedded broker keeps about 5 MiB a
 * partition, README "The embedded broker") deletes the oldest messages of a
 * backlog. librdkafka then finds its fetch position out of range and moves
 * it to the new log start (auto.offset.reset=earliest) without an error
 * event, so the only trace is a jump in the offsets consumed. A jump is a
 * loss where the partition's log start now lies past the offset expected
 * next; other jumps (transaction markers, aborted or compacted messages)
 * lose no job and are not counted.
 */
#include "kafka/gap.h"

#include <inttypes.h>
#include <string.h>

#include "kafka/log.h"

/* Broker round trips, made only at a jump or at a partition's first
 * message past offset 0: their time is the driving thread's. */
#define GAP_QUERY_TIMEOUT_MS 2000

/* The offset a fresh assignment starts from: the group's committed offset,
 * or 0 for a group that never committed (auto.offset.reset=earliest, unless
 * -X set another policy: then nothing is expected). -1: unknown. */
static int64_t start_offset(ib_worker *w, int32_t partition) {
  for (int i = 0; i < w->cfg->n_props; i++)
    if (strcmp(w->cfg->props[i][0], "auto.offset.reset") == 0 &&
        strcmp(w->cfg->props[i][1], "earliest") != 0 &&
        strcmp(w->cfg->props[i][1], "smallest") != 0 &&
        strcmp(w->cfg->props[i][1], "beginning") != 0)
      return -1;
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, w->cfg->jobs_topic, partition);
  rd_kafka_resp_err_t e = rd_kafka_committed(w->consumer, l, GAP_QUERY_TIMEOUT_MS);
  if (!e) e = l->elems[0].err;
  int64_t at = e ? -1 : l->elems[0].offset >= 0 ? l->elems[0].offset : 0;
  rd_kafka_topic_partition_list_destroy(l);
  if (e)
    ib_wlog(w, "warn", "offset_gap_unchecked",
            "\"partition\":%" PRId32 ",\"why\":\"committed offset: %s\"", partition,
            rd_kafka_err2name(e));
  return at;
}

void ib_wgap_check(ib_worker *w, ib_wpart *p, const rd_kafka_message_t *m) {
  int64_t expected = p->next_offset;
  p->next_offset = m->offset + 1;
  if (expected < 0 && m->offset > 0) expected = start_offset(w, m->partition);
  if (expected < 0 || m->offset <= expected) return;
  int64_t lo = -1, hi = -1;
  rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
      w->consumer, w->cfg->jobs_topic, m->partition, &lo, &hi, GAP_QUERY_TIMEOUT_MS);
  if (e) {
    ib_wlog(w, "warn", "offset_gap_unchecked",
            "\"partition\":%" PRId32 ",\"from\":%" PRId64 ",\"to\":%" PRId64
            ",\"why\":\"low watermark: %s\"",
            m->partition, expected, m->offset, rd_kafka_err2name(e));
    return;
  }
  if (lo <= expected) return;
  int64_t deleted = (lo < m->offset ? lo : m->offset) - expected;
  w->counters[IB_WC_DELETED] += (uint64_t)deleted;
  ib_wlog(w, "warn", "jobs_deleted_unconsumed",
          "\"topic\":\"%s\",\"partition\":%" PRId32 ",\"from\":%" PRId64 ",\"to\":%" PRId64
          ",\"count\":%" PRId64 ",\"low_watermark\":%" PRId64
          ",\"why\":\"the broker deleted these jobs (retention) before this worker fetched them; "
          "they have no Result\"",
          w->cfg->jobs_topic, m->partition, expected, expected + deleted, deleted, lo);
}
