/* cli.h - the imgbatch front ends; each subcommand returns its exit code. */
#ifndef IB_CLI_H
#define IB_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/frame.h"
#include "imgbatch.h"

/* Exit codes shared by all subcommands. */
enum {
  IB_EXIT_OK = 0,      /* done (per-job failures travel as error Results) */
  IB_EXIT_FAILURE = 1, /* the command could not do its work (I/O, framing, start-up) */
  IB_EXIT_USAGE = 2    /* bad command line */
};

int ib_cmd_version(int argc, char **argv);
int ib_cmd_broker(int argc, char **argv);
int ib_cmd_run(int argc, char **argv);
int ib_cmd_worker(int argc, char **argv);
int ib_cmd_demo(int argc, char **argv);

bool ib_wants_help(int argc, char **argv);

/* A command's arguments with each "--name=value" given as "--name" "value"
 * (what users of GNU tools type), the rest as they are: a new argv of
 * *out_argc entries and a NULL (free it), or NULL when out of memory. Only
 * arguments that start with "--" are split, at their first '=' (which
 * becomes the name's NUL, in place), so values such as -X key=value and
 * --tune KEY=VALUE stay whole. */
char **ib_cli_split_equals(int argc, char **argv, int *out_argc);

/* What main returns: rc, unless a kernel compile that the library let go of
 * at its close (ib_cpool_orphans: NVRTC stuck past the compile time bound)
 * is still running. Then it says so on stderr, flushes stdio and ends the
 * process at once with rc (_exit), so exit's teardown of the libraries
 * does not run under that thread. */
int ib_cli_exit(int rc);

/* Unsigned decimal; with `sized`, an optional K, M or G suffix (powers of
 * 1024). False on anything else or overflow. */
bool ib_cli_parse_u64(const char *v, bool sized, uint64_t *out);
bool ib_cli_parse_u32(const char *v, uint32_t *out);
/* --max-side N (ib_graph_limits.max_side) for command `cmd`: false, with a
 * line on stderr naming the value and the range 1..IB_MAX_SIDE_LIMIT, for
 * anything else. */
bool ib_cli_parse_max_side(const char *cmd, const char *v, uint32_t *out);

/* The kernel module cache directory (ib_executor_options.cache_dir):
 * $IB_CACHE_DIR, else $XDG_CACHE_HOME/imgbatch, else $HOME/.cache/imgbatch;
 * NULL when none is set or IB_CACHE_DIR is set but empty (no disk cache).
 * Static storage. */
const char *ib_cli_cache_dir(void);

/* The commands' default --compile-threads (cuda). The library's default is
 * 0 (compile inside the submission); the commands turn the interpreter tier
 * on: in a compile storm (1 job in 10 with a new signature) it keeps the
 * other jobs' latency near a warm run's, where compiling inline builds a
 * backlog of many seconds (storm_check; bench/RESULTS.md). */
#define IB_CLI_COMPILE_THREADS 2

/* An ib_log_fn printing "<opaque or imgbatch>: <level>: <message>" on
 * stderr (imgbatch run, the GPU tools). */
void ib_cli_log_stderr(void *opaque, ib_log_level level, const char *message);
const char *ib_cli_log_level_name(ib_log_level level);

/* One "KEY=VALUE" onto cfg through ib_config_set (--tune, IB_TUNE). False
 * with err filled (naming the key, or the value and its range) otherwise. */
bool ib_cli_tune(ib_config *cfg, const char *key_value, ib_error *err);

/* The GPU tools' environment onto executor options: cache_dir as above,
 * IB_COMPILE_THREADS=N, the library's log on stderr, and a config
 * (o->config, returned: the caller destroys it after ib_executor_create)
 * from IB_TUNE="KEY=VALUE[,KEY=VALUE...]" and the older names
 * IB_CUDA_PROFILE, IB_BLUR_GLOBAL_ROWS, IB_CUDA_PIECES, IB_CUDA_BATCH_MIN,
 * IB_CUDA_PIPE_KIB, IB_RAMP_JOBS (keys of docs/tuning.md). NULL, said on
 * stderr, for a bad value or no memory. */
ib_config *ib_cli_tool_options(ib_executor_options *o);

#endif
