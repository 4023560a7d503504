/* imgbatch broker: librdkafka's mock cluster on loopback, topics created up
 * front (the mock has no Admin API), until SIGTERM/SIGINT. */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char *const default_topics[] = {"imgbatch.jobs:4", "imgbatch.results:4",
                                             "imgbatch.control:1"};

static void broker_usage(FILE *f) {
  fprintf(f,
          "usage: imgbatch broker [--brokers N] [--topic NAME:PARTITIONS]...\n\n"
          "Runs librdkafka's mock Kafka cluster on 127.0.0.1 with N brokers (default 1).\n"
          "Creates imgbatch.jobs:4, imgbatch.results:4, imgbatch.control:1 and every --topic.\n"
          "The first stdout line is 'bootstrap=HOST:PORT[,HOST:PORT...]'. Runs until SIGTERM or\n"
          "SIGINT. The mock is for development and tests; it does not implement transactions\n"
          "faithfully (see README).\n"
          "exit codes: 0 stopped by a signal, 1 start-up failed, 2 usage error\n");
}

static int create_topic(rd_kafka_mock_cluster_t *mc, const char *spec) {
  const char *colon = strrchr(spec, ':');
  char *end = NULL;
  long parts = colon ? strtol(colon + 1, &end, 10) : 1;
  if ((colon && (*end || parts < 1 || parts > 1024)) || colon == spec) {
    fprintf(stderr, "imgbatch broker: bad --topic '%s' (want NAME:PARTITIONS)\n", spec);
    return IB_EXIT_USAGE;
  }
  size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
  char name[250];
  if (len >= sizeof name) {
    fprintf(stderr, "imgbatch broker: topic name too long\n");
    return IB_EXIT_USAGE;
  }
  memcpy(name, spec, len);
  name[len] = 0;
  rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, name, (int)parts, 1);
  if (e) {
    fprintf(stderr, "imgbatch broker: create topic %s: %s\n", name, rd_kafka_err2str(e));
    return IB_EXIT_FAILURE;
  }
  return IB_EXIT_OK;
}

int ib_cmd_broker(int argc, char **argv) {
  if (ib_wants_help(argc, argv)) {
    broker_usage(stdout);
    return IB_EXIT_OK;
  }
  int brokers = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--brokers") == 0 && i + 1 < argc) {
      brokers = atoi(argv[++i]);
      if (brokers < 1 || brokers > 16) {
        fprintf(stderr, "imgbatch broker: --brokers must be 1..16\n");
        return IB_EXIT_USAGE;
      }
    } else if (strcmp(argv[i], "--topic") == 0 && i + 1 < argc) {
      i++;
    } else {
      fprintf(stderr, "imgbatch broker: unexpected argument '%s'\n", argv[i]);
      broker_usage(stderr);
      return IB_EXIT_USAGE;
    }
  }
  /* Block the stop signals before librdkafka starts threads so that only
   * sigwait below receives them. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);

  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) {
    fprintf(stderr, "imgbatch broker: %s\n", errstr);
    return IB_EXIT_FAILURE;
  }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
  if (!mc) {
    fprintf(stderr, "imgbatch broker: could not start the mock cluster\n");
    rd_kafka_destroy(rk);
    return IB_EXIT_FAILURE;
  }
  int rc = IB_EXIT_OK;
  for (size_t i = 0; i < sizeof default_topics / sizeof default_topics[0] && rc == IB_EXIT_OK; i++)
    rc = create_topic(mc, default_topics[i]);
  for (int i = 1; i < argc && rc == IB_EXIT_OK; i++)
    if (strcmp(argv[i], "--topic") == 0) rc = create_topic(mc, argv[++i]);
  if (rc == IB_EXIT_OK) {
    printf("bootstrap=%s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "imgbatch broker: signal %d, stopping\n", sig);
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return rc;
}
