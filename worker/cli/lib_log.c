/* The library's messages (ib_executor_options.log_cb) as the CLI prints
 * them: a plain line for run and the tools, a JSON log line for the worker. */
#include <stdio.h>

#include "cli/cli.h"

static const char *level_name(ib_log_level l) {
  return l == IB_LOG_WARN ? "warn" : l == IB_LOG_INFO ? "info" : "debug";
}

void ib_cli_log_stderr(void *opaque, ib_log_level level, const char *message) {
  const char *who = opaque ? opaque : "imgbatch";
  fprintf(stderr, "%s: %s: %s\n", who, level_name(level), message);
}

const char *ib_cli_log_level_name(ib_log_level level) { return level_name(level); }
