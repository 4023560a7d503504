/* imgbatch broker: librdkafka's mock cluster on loopback, topics created up
 * front (the mock has no Admin API), fault-injection commands read from
 * standard input, until SIGTERM/SIGINT. */
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/broker_commands.h"
#include "cli/cli.h"

/* librdkafka 2.0.2's mock keeps at most 5 MiB and 100,000 message sets a
 * partition (fixed in rdkafka_mock.c, no setting) and deletes the oldest
 * message sets beyond that. Many partitions multiply that room at no cost
 * until it is used: 64 hold a 1,500-job burst of 160x160 RGBA (150 MB)
 * spread by key. */
#define MOCK_PARTITION_BYTES (5u << 20)
#define MOCK_PARTITION_SETS 100000u
static const char *const default_topics[] = {"imgbatch.jobs:64", "imgbatch.results:64",
                                             "imgbatch.control:1"};

static void broker_usage(FILE *f) {
  fprintf(
      f,
      "usage: imgbatch broker [--brokers N] [--topic NAME:PARTITIONS]...\n\n"
      "Runs librdkafka's mock Kafka cluster on 127.0.0.1 with N brokers (default 1, ids 1..N).\n"
      "Creates imgbatch.jobs:64, imgbatch.results:64, imgbatch.control:1 and every --topic; a\n"
      "--topic naming a default topic sets its partition count, and naming a topic twice with\n"
      "the same count is harmless. The first stdout line is\n"
      "'bootstrap=HOST:PORT[,HOST:PORT...]'. Runs until SIGTERM or SIGINT; the end of standard\n"
      "input does not stop it.\n\n"
      "Fault injection for tests: each line on standard input is one command, answered on\n"
      "stdout with one line 'ok' or 'error: <why>' (blank lines are ignored):\n"
      "  down N | up N          broker N (or 'all') refuses / accepts connections\n"
      "  rtt N MS               broker N (or 'all') answers every request MS ms late\n"
      "  error API COUNT [ERR]  the next COUNT requests of API (Produce, Fetch, ListOffsets,\n"
      "                         Metadata, OffsetCommit, OffsetFetch, FindCoordinator,\n"
      "                         JoinGroup, Heartbeat, LeaveGroup, SyncGroup, InitProducerId,\n"
      "                         ... or a protocol ApiKey number) fail with ERR, a librdkafka\n"
      "                         error name (default REQUEST_TIMED_OUT; _TRANSPORT disconnects)\n"
      "  clear API              drops the errors still queued for API\n"
      "  create NAME:PARTITIONS creates a topic (ok if it exists with that count)\n\n"
      "The mock is for development and tests: it keeps at most 5 MiB (100,000 message sets)\n"
      "a partition, deleting the oldest beyond that (320 MiB for a topic of 64 partitions; a\n"
      "line on stderr at start states each topic's room), and it does not implement\n"
      "transactions faithfully (see README). A worker counts jobs deleted before it consumed\n"
      "them (imgbatch_jobs_deleted_unconsumed_total, event jobs_deleted_unconsumed).\n"
      "exit codes: 0 stopped by a signal, 1 start-up failed, 2 usage error\n");
}

/* Collects the topics to create: every --topic, then the defaults that no
 * --topic named. */
static int plan_topics(int argc, char **argv, ib_broker_topics *plan) {
  char why[512];
  for (int pass = 0; pass < 2; pass++) {
    size_t n = pass == 0 ? (size_t)argc : sizeof default_topics / sizeof default_topics[0];
    for (size_t i = 0; i < n; i++) {
      const char *spec = NULL;
      if (pass == 1)
        spec = default_topics[i];
      else if (strcmp(argv[i], "--topic") == 0)
        spec = argv[++i];
      if (!spec) continue;
      char name[IB_BROKER_TOPIC_NAME_MAX + 1];
      int parts;
      if (!ib_broker_topic_spec(spec, name, &parts, why, sizeof why)) {
        fprintf(stderr, "imgbatch broker: %s\n", why);
        return IB_EXIT_USAGE;
      }
      size_t j = 0;
      while (j < plan->count && strcmp(plan->topic[j].name, name) != 0) j++;
      if (j < plan->count) {
        if (pass == 1 || plan->topic[j].partitions == parts) continue;
        fprintf(stderr, "imgbatch broker: --topic %s given with %d and %d partitions\n", name,
                plan->topic[j].partitions, parts);
        return IB_EXIT_USAGE;
      }
      if (plan->count == IB_BROKER_TOPICS_MAX) {
        fprintf(stderr, "imgbatch broker: more than %d topics\n", IB_BROKER_TOPICS_MAX);
        return IB_EXIT_USAGE;
      }
      memcpy(plan->topic[plan->count].name, name, sizeof name);
      plan->topic[plan->count++].partitions = parts;
    }
  }
  return IB_EXIT_OK;
}

/* One stderr line: what each topic holds before the mock deletes messages
 * nobody may have read yet. */
static void print_capacity(const ib_broker_topics *t) {
  fprintf(stderr,
          "imgbatch broker: keeps at most %u MiB and %u message sets a partition, then "
          "deletes the oldest:",
          MOCK_PARTITION_BYTES >> 20, MOCK_PARTITION_SETS);
  for (size_t i = 0; i < t->count; i++)
    fprintf(stderr, "%s %s %d x %u MiB = %u MiB", i ? "," : "", t->topic[i].name,
            t->topic[i].partitions, MOCK_PARTITION_BYTES >> 20,
            (unsigned)t->topic[i].partitions * (MOCK_PARTITION_BYTES >> 20));
  fprintf(stderr, "\n");
}

static int parse_args(int argc, char **argv, int *brokers) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--brokers") == 0 && i + 1 < argc) {
      char *end = NULL;
      long n = strtol(argv[++i], &end, 10);
      if (*end || n < 1 || n > 16) {
        fprintf(stderr, "imgbatch broker: --brokers must be 1..16\n");
        return IB_EXIT_USAGE;
      }
      *brokers = (int)n;
    } else if (strcmp(argv[i], "--topic") == 0 && i + 1 < argc) {
      i++;
    } else {
      fprintf(stderr, "imgbatch broker: unexpected argument '%s'\n", argv[i]);
      broker_usage(stderr);
      return IB_EXIT_USAGE;
    }
  }
  return IB_EXIT_OK;
}

/* Standard input, split into lines; a line longer than the buffer is
 * answered with an error and skipped up to its newline. */
typedef struct {
  char buf[4096];
  size_t len;
  bool overlong;
} line_reader;

static void answer(bool ok, const char *why) {
  if (ok)
    printf("ok\n");
  else
    printf("error: %s\n", why);
  fflush(stdout);
}

static void run_lines(line_reader *in, rd_kafka_mock_cluster_t *mc, int brokers,
                      ib_broker_topics *topics) {
  char *start = in->buf, *nl;
  while ((nl = memchr(start, '\n', in->len - (size_t)(start - in->buf)))) {
    *nl = 0;
    if (in->overlong) {
      in->overlong = false;
      answer(false, "line too long");
    } else if (start[strspn(start, " \t\r")] != 0) {
      char why[512];
      bool ok = ib_broker_command(mc, brokers, topics, start, why, sizeof why);
      answer(ok, why);
    }
    start = nl + 1;
  }
  size_t rest = in->len - (size_t)(start - in->buf);
  if (rest == sizeof in->buf) {
    in->overlong = true;
    rest = 0;
  }
  memmove(in->buf, start, rest);
  in->len = rest;
}

/* Waits for a stop signal while serving commands. At EOF or a read error on
 * stdin it stops reading and only waits: tests may start it on /dev/null. */
static int serve(int sigfd, rd_kafka_mock_cluster_t *mc, int brokers, ib_broker_topics *topics) {
  static line_reader in;
  struct pollfd fds[2] = {{.fd = sigfd, .events = POLLIN}, {.fd = 0, .events = POLLIN}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      perror("imgbatch broker: poll");
      return IB_EXIT_FAILURE;
    }
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        fprintf(stderr, "imgbatch broker: signal %u, stopping\n", si.ssi_signo);
        return IB_EXIT_OK;
      }
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) {
      ssize_t got =
          (fds[1].revents & POLLNVAL) ? 0 : read(0, in.buf + in.len, sizeof in.buf - in.len);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[1].fd = -1;
        continue;
      }
      in.len += (size_t)got;
      run_lines(&in, mc, brokers, topics);
    }
  }
}

int ib_cmd_broker(int argc, char **argv) {
  if (ib_wants_help(argc, argv)) {
    broker_usage(stdout);
    return IB_EXIT_OK;
  }
  int brokers = 1;
  static ib_broker_topics plan, created;
  int rc = parse_args(argc, argv, &brokers);
  if (rc == IB_EXIT_OK) rc = plan_topics(argc, argv, &plan);
  if (rc != IB_EXIT_OK) return rc;
  /* Block the stop signals before librdkafka starts threads so that only the
   * signalfd below receives them. A test that closes its end of stdout must
   * not kill the cluster with SIGPIPE. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  signal(SIGPIPE, SIG_IGN);
  int sigfd = signalfd(-1, &stop, SFD_CLOEXEC);
  if (sigfd < 0) {
    perror("imgbatch broker: signalfd");
    return IB_EXIT_FAILURE;
  }

  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  /* This handle only hosts the mock cluster and never connects, so its
   * notice that it has no bootstrap.servers is noise: warnings and worse
   * still show. */
  if (rd_kafka_conf_set(conf, "log_level", "4", errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "imgbatch broker: %s\n", errstr);
    rd_kafka_conf_destroy(conf);
    close(sigfd);
    return IB_EXIT_FAILURE;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) {
    fprintf(stderr, "imgbatch broker: %s\n", errstr);
    close(sigfd);
    return IB_EXIT_FAILURE;
  }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
  if (!mc) {
    fprintf(stderr, "imgbatch broker: could not start the mock cluster\n");
    rd_kafka_destroy(rk);
    close(sigfd);
    return IB_EXIT_FAILURE;
  }
  for (size_t i = 0; i < plan.count && rc == IB_EXIT_OK; i++) {
    if (!ib_broker_topic_ensure(mc, &created, plan.topic[i].name, plan.topic[i].partitions, errstr,
                                sizeof errstr)) {
      fprintf(stderr, "imgbatch broker: %s\n", errstr);
      rc = IB_EXIT_FAILURE;
    }
  }
  if (rc == IB_EXIT_OK) {
    print_capacity(&created);
    printf("bootstrap=%s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
    rc = serve(sigfd, mc, brokers, &created);
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  close(sigfd);
  return rc;
}
