/* imgbatch: one binary, one subcommand per front end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "cli/cli.h"

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *summary;
} commands[] = {
    {"version", ib_cmd_version, "print library versions and the CUDA device found"},
    {"broker", ib_cmd_broker, "run librdkafka's mock Kafka cluster on loopback"},
    {"run", ib_cmd_run, "execute delimited Job messages from a file/stdin, write Results"},
    {"worker", ib_cmd_worker, "consume jobs from Kafka and publish results"},
    {"demo", ib_cmd_demo, "start broker + worker, publish sample jobs, write result images"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: imgbatch <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(f,
          "\n'imgbatch <command> --help' describes each command.\n"
          "exit codes: 0 done, 1 failure, 2 usage error\n");
}

/* Image buffers of 4 MiB and more are mapped for each job and unmapped when
 * it ends. glibc would otherwise raise its mmap threshold to the largest
 * buffer freed so far (up to 32 MiB), serve later large buffers from its
 * arenas and keep what they leave behind: a long-running worker's RSS then
 * climbs in steps to its highest peak and stays there (tests/soak/, 40,000
 * mixed cpu jobs on one worker: last-quarter median RSS 189 MB with glibc's
 * default, 154 MB with this, 528-540 jobs/s either way). Setting the
 * threshold turns glibc's adjustment off. A process setting, so the CLI's,
 * never the library's. */
static void set_alloc_policy(void) {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
#endif
}

int main(int argc, char **argv) {
  set_alloc_policy();
  if (argc < 2) {
    usage(stderr);
    return IB_EXIT_USAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return IB_EXIT_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(argv[1], commands[i].name) != 0) continue;
    int n;
    char **args = ib_cli_split_equals(argc - 1, argv + 1, &n);
    if (!args) {
      fprintf(stderr, "imgbatch: out of memory reading the arguments\n");
      return IB_EXIT_FAILURE;
    }
    int rc = commands[i].run(n, args);
    free(args);
    return ib_cli_exit(rc);
  }
  fprintf(stderr, "imgbatch: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return IB_EXIT_USAGE;
}
