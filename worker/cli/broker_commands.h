/* broker_commands.h - the mock cluster's topic table and the fault-injection
 * commands `imgbatch broker` reads on standard input. */
#ifndef IB_BROKER_COMMANDS_H
#define IB_BROKER_COMMANDS_H

/* rdkafka_mock.h needs rdkafka.h first. */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdbool.h>
#include <stddef.h>

enum { IB_BROKER_TOPIC_NAME_MAX = 249, IB_BROKER_TOPICS_MAX = 256 };

/* The topics this process created, with their partition counts: the mock
 * cannot be asked, and creation must be idempotent for an equal count. */
typedef struct {
  struct {
    char name[IB_BROKER_TOPIC_NAME_MAX + 1];
    int partitions;
  } topic[IB_BROKER_TOPICS_MAX];
  size_t count;
} ib_broker_topics;

/* Splits "NAME[:PARTITIONS]" (1..1024 partitions, 1 when absent). Returns
 * false with a reason in why[why_size]. */
bool ib_broker_topic_spec(const char *spec, char name[IB_BROKER_TOPIC_NAME_MAX + 1],
                          int *partitions, char *why, size_t why_size);

/* Creates NAME with PARTITIONS on mc unless this table already holds it with
 * the same count (then a no-op). A different count, a topic a client created
 * behind our back, or a full table is an error in why[why_size]. */
bool ib_broker_topic_ensure(rd_kafka_mock_cluster_t *mc, ib_broker_topics *topics, const char *name,
                            int partitions, char *why, size_t why_size);

/* Runs one command line (without its newline) against mc, a cluster of
 * `brokers` brokers with ids 1..brokers. Returns true for `ok`, false with
 * the reason in why[why_size]. */
bool ib_broker_command(rd_kafka_mock_cluster_t *mc, int brokers, ib_broker_topics *topics,
                       char *line, char *why, size_t why_size);

#endif
