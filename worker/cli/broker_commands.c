/* The fault-injection commands of `imgbatch broker`, each mapped onto one
 * rd_kafka_mock_* call of librdkafka 2.0.2. */
#include "cli/broker_commands.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Kafka protocol ApiKeys: librdkafka 2.0.2 keeps its RD_KAFKAP_* names in a
 * private header, so the numbers are those of the protocol itself. */
static const struct {
  const char *name;
  int16_t key;
} api_keys[] = {
    {"Produce", 0},
    {"Fetch", 1},
    {"ListOffsets", 2},
    {"Metadata", 3},
    {"OffsetCommit", 8},
    {"OffsetFetch", 9},
    {"FindCoordinator", 10},
    {"JoinGroup", 11},
    {"Heartbeat", 12},
    {"LeaveGroup", 13},
    {"SyncGroup", 14},
    {"DescribeGroups", 15},
    {"ListGroups", 16},
    {"SaslHandshake", 17},
    {"ApiVersions", 18},
    {"CreateTopics", 19},
    {"DeleteTopics", 20},
    {"DeleteRecords", 21},
    {"InitProducerId", 22},
    {"OffsetForLeaderEpoch", 23},
    {"AddPartitionsToTxn", 24},
    {"AddOffsetsToTxn", 25},
    {"EndTxn", 26},
    {"TxnOffsetCommit", 28},
    {"DescribeConfigs", 32},
    {"AlterConfigs", 33},
    {"SaslAuthenticate", 36},
    {"CreatePartitions", 37},
    {"DeleteGroups", 42},
    {"OffsetDelete", 47},
};

static bool parse_long(const char *s, long lo, long hi, long *out) {
  if (!s || !*s) return false;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool ib_broker_topic_spec(const char *spec, char name[IB_BROKER_TOPIC_NAME_MAX + 1],
                          int *partitions, char *why, size_t why_size) {
  const char *colon = strrchr(spec, ':');
  long parts = 1;
  size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
  if (len == 0 || (colon && !parse_long(colon + 1, 1, 1024, &parts))) {
    snprintf(why, why_size, "bad topic '%s' (want NAME:PARTITIONS, 1..1024 partitions)", spec);
    return false;
  }
  if (len > IB_BROKER_TOPIC_NAME_MAX) {
    snprintf(why, why_size, "topic name longer than %d bytes", IB_BROKER_TOPIC_NAME_MAX);
    return false;
  }
  memcpy(name, spec, len);
  name[len] = 0;
  *partitions = (int)parts;
  return true;
}

bool ib_broker_topic_ensure(rd_kafka_mock_cluster_t *mc, ib_broker_topics *topics, const char *name,
                            int partitions, char *why, size_t why_size) {
  for (size_t i = 0; i < topics->count; i++) {
    if (strcmp(topics->topic[i].name, name) != 0) continue;
    if (topics->topic[i].partitions == partitions) return true;
    snprintf(why, why_size, "topic %s exists with %d partitions, not %d", name,
             topics->topic[i].partitions, partitions);
    return false;
  }
  if (topics->count == IB_BROKER_TOPICS_MAX) {
    snprintf(why, why_size, "more than %d topics", IB_BROKER_TOPICS_MAX);
    return false;
  }
  rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, name, partitions, 1);
  if (e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
    snprintf(why, why_size, "topic %s already exists (auto-created by a client)", name);
    return false;
  }
  if (e) {
    snprintf(why, why_size, "create topic %s: %s", name, rd_kafka_err2str(e));
    return false;
  }
  snprintf(topics->topic[topics->count].name, sizeof topics->topic[0].name, "%s", name);
  topics->topic[topics->count].partitions = partitions;
  topics->count++;
  return true;
}

static bool api_key_named(const char *s, int16_t *key) {
  for (size_t i = 0; i < sizeof api_keys / sizeof api_keys[0]; i++)
    if (strcasecmp(s, api_keys[i].name) == 0) return (*key = api_keys[i].key), true;
  long v;
  if (!parse_long(s, 0, INT16_MAX, &v)) return false;
  *key = (int16_t)v;
  return true;
}

/* Accepts librdkafka's error names as rd_kafka_err2name spells them
 * (REQUEST_TIMED_OUT, _TRANSPORT), with or without RD_KAFKA_RESP_ERR_, or a
 * number. */
static bool error_named(const char *s, rd_kafka_resp_err_t *err) {
  static const char prefix[] = "RD_KAFKA_RESP_ERR_";
  if (strncasecmp(s, prefix, sizeof prefix - 1) == 0) s += sizeof prefix - 1;
  const struct rd_kafka_err_desc *descs = NULL;
  size_t n = 0;
  rd_kafka_get_err_descs(&descs, &n);
  for (size_t i = 0; i < n; i++)
    if (descs[i].name && strcasecmp(s, descs[i].name) == 0) return (*err = descs[i].code), true;
  long v;
  if (!parse_long(s, INT_MIN, INT_MAX, &v) || v == 0) return false;
  *err = (rd_kafka_resp_err_t)v;
  return true;
}

static bool mock_result(rd_kafka_resp_err_t e, const char *what, char *why, size_t why_size) {
  if (!e) return true;
  snprintf(why, why_size, "%s: %s", what, rd_kafka_err2str(e));
  return false;
}

static bool broker_id(const char *s, int brokers, int32_t *id, char *why, size_t why_size) {
  long v;
  if (s && strcmp(s, "all") == 0) return (*id = -1), true;
  if (!parse_long(s, 1, brokers, &v)) {
    snprintf(why, why_size, "broker id '%s' is not 1..%d or 'all'", s ? s : "", brokers);
    return false;
  }
  *id = (int32_t)v;
  return true;
}

static bool cmd_error(rd_kafka_mock_cluster_t *mc, char **arg, int nargs, char *why,
                      size_t why_size) {
  int16_t key;
  long count;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT;
  if (nargs < 2 || nargs > 3) {
    snprintf(why, why_size, "usage: error APINAME COUNT [ERRNAME]");
    return false;
  }
  if (!api_key_named(arg[0], &key)) {
    snprintf(why, why_size, "unknown API '%s' (Produce, Fetch, OffsetCommit, JoinGroup, ...)",
             arg[0]);
    return false;
  }
  if (!parse_long(arg[1], 1, 1000000, &count)) {
    snprintf(why, why_size, "COUNT '%s' is not 1..1000000", arg[1]);
    return false;
  }
  if (nargs == 3 && !error_named(arg[2], &err)) {
    snprintf(why, why_size, "unknown error '%s' (REQUEST_TIMED_OUT, NOT_LEADER_FOR_PARTITION, ...)",
             arg[2]);
    return false;
  }
  rd_kafka_resp_err_t *errs = malloc((size_t)count * sizeof *errs);
  if (!errs) {
    snprintf(why, why_size, "out of memory for %ld errors", count);
    return false;
  }
  for (long i = 0; i < count; i++) errs[i] = err;
  rd_kafka_mock_push_request_errors_array(mc, key, (size_t)count, errs);
  free(errs);
  return true;
}

bool ib_broker_command(rd_kafka_mock_cluster_t *mc, int brokers, ib_broker_topics *topics,
                       char *line, char *why, size_t why_size) {
  char *arg[5] = {0};
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
    if (n == 5) {
      snprintf(why, why_size, "too many words");
      return false;
    }
    arg[n++] = t;
  }
  if (n == 0) return snprintf(why, why_size, "empty command"), false;
  const char *cmd = arg[0];
  int32_t id;
  if (strcmp(cmd, "down") == 0 || strcmp(cmd, "up") == 0) {
    if (n != 2) return snprintf(why, why_size, "usage: %s N", cmd), false;
    if (!broker_id(arg[1], brokers, &id, why, why_size)) return false;
    rd_kafka_resp_err_t e =
        cmd[0] == 'd' ? rd_kafka_mock_broker_set_down(mc, id) : rd_kafka_mock_broker_set_up(mc, id);
    return mock_result(e, cmd, why, why_size);
  }
  if (strcmp(cmd, "rtt") == 0) {
    long ms;
    if (n != 3) return snprintf(why, why_size, "usage: rtt N MS"), false;
    if (!broker_id(arg[1], brokers, &id, why, why_size)) return false;
    if (!parse_long(arg[2], 0, 3600000, &ms))
      return snprintf(why, why_size, "MS '%s' is not 0..3600000", arg[2]), false;
    return mock_result(rd_kafka_mock_broker_set_rtt(mc, id, (int)ms), "rtt", why, why_size);
  }
  if (strcmp(cmd, "error") == 0) return cmd_error(mc, arg + 1, n - 1, why, why_size);
  if (strcmp(cmd, "clear") == 0) {
    int16_t key;
    if (n != 2) return snprintf(why, why_size, "usage: clear APINAME"), false;
    if (!api_key_named(arg[1], &key))
      return snprintf(why, why_size, "unknown API '%s'", arg[1]), false;
    rd_kafka_mock_clear_request_errors(mc, key);
    return true;
  }
  if (strcmp(cmd, "create") == 0) {
    char name[IB_BROKER_TOPIC_NAME_MAX + 1];
    int parts;
    if (n != 2) return snprintf(why, why_size, "usage: create NAME:PARTITIONS"), false;
    return ib_broker_topic_spec(arg[1], name, &parts, why, why_size) &&
           ib_broker_topic_ensure(mc, topics, name, parts, why, why_size);
  }
  snprintf(why, why_size, "unknown command '%s' (down, up, rtt, error, clear, create)", cmd);
  return false;
}
