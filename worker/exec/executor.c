/* Executor lifetime: options, backend start, close (cancel), counters. */
#include "exec/exec_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "exec/test_hooks.h"
#include "parse/parse.h"

void ib_executor_options_default(ib_executor_options *o) {
  *o = (ib_executor_options){
      .backend = IB_BACKEND_CPU,
      .device = 0,
      .gpu_bytes = 512ull << 20,
      .host_bytes = 256ull << 20,
      .max_jobs = 64,
      .max_in_flight = 2,
      .queue = true,
      .cache_dir = NULL,
      .module_cache_bytes = 256ull << 20,
      .disk_cache_bytes = 2ull << 30,
      .host_threads = -1,
  };
}

static ib_status check_options(const ib_executor_options *o, ib_error *err) {
  if (!o->gpu_bytes || !o->host_bytes || !o->max_jobs || !o->max_in_flight)
    return ib_error_set(err, IB_INVALID, IB_STAGE_NONE,
                        "executor: gpu_bytes, host_bytes, max_jobs and max_in_flight must be > 0");
  if (o->backend != IB_BACKEND_CPU && o->backend != IB_BACKEND_CUDA)
    return ib_error_set(err, IB_INVALID, IB_STAGE_NONE, "executor: unknown backend %d",
                        (int)o->backend);
  return IB_OK;
}

ib_status ib_executor_create(const ib_executor_options *opts, ib_executor **out, ib_error *err) {
  ib_error scratch;
  if (!err) err = &scratch;
  *out = NULL;
  ib_executor_options o;
  if (opts)
    o = *opts;
  else
    ib_executor_options_default(&o);
  ib_status st = check_options(&o, err);
  if (st != IB_OK) return st;
  const ib_backend *be = ib_backend_for(o.backend);
  if (!be) /* check_options admits only kinds that have a backend */
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_NONE, "executor: no backend for kind %d",
                        (int)o.backend);
  return ib_exec_create_with(&o, be, out, err);
}

ib_status ib_exec_create_with(const ib_executor_options *opts, const ib_backend *be,
                              ib_executor **out, ib_error *err) {
  *out = NULL;
  ib_executor_options o = *opts;
  ib_status st = check_options(&o, err);
  if (st != IB_OK) return st;
  ib_executor *ex = calloc(1, sizeof *ex);
  if (!ex) return ib_error_set(err, IB_INTERNAL, IB_STAGE_NONE, "executor: out of memory");
  if (o.cache_dir && !(ex->cache_dir = strdup(o.cache_dir))) {
    free(ex);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_NONE, "executor: out of memory");
  }
  o.cache_dir = ex->cache_dir;
  ex->config = *ib_config_of(&o);
  o.config = &ex->config;
  ex->opts = o;
  ex->start = (ib_start_sink){o.start_cb, o.start_opaque};
  ex->backend = be;
  ex->next_id = 1;
  atomic_flag_clear(&ex->driving);
  if (!(ex->dev = calloc(1, sizeof *ex->dev))) {
    free(ex->cache_dir);
    free(ex);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_NONE, "executor: out of memory");
  }
  if ((st = be->open(&ex->opts, &ex->backend_state, err)) != IB_OK) {
    free(ex->dev);
    free(ex->cache_dir);
    free(ex);
    return st;
  }
  atomic_init(&ex->dev->refs, 1);
  ex->dev->backend = be;
  ex->dev->state = ex->backend_state;
  ex->credits = &ex->dev->credits;
  ib_credits_init(ex->credits, &o);
  *out = ex;
  return IB_OK;
}

/* Stops the open stream: it pulls nothing more and frees its lookahead. */
static void stop_stream(ib_executor *ex) {
  ib_results *rs = ex->stream;
  if (!rs) return;
  rs->finished = true;
  rs->final = IB_CLOSED;
  if (rs->has_lookahead) {
    ib_graph_free(rs->lookahead.graph);
    ib_key_clear(&rs->lookahead.key);
    rs->has_lookahead = false;
  }
  ib_exec_unprepare(rs->prepared);
  rs->prepared = NULL;
  if (rs->has_held) {
    ib_result_free(&rs->held);
    rs->has_held = false;
  }
  ex->stream = NULL;
}

static void close_locked(ib_executor *ex) {
  stop_stream(ex);
  ib_exec_cancel_all(ex);
  ex->closed = true;
}

ib_status ib_executor_close(ib_executor *ex) {
  if (!ex) return IB_OK;
  if (!ib_exec_enter(ex)) return IB_BUSY;
  close_locked(ex);
  ib_exec_leave(ex);
  return IB_OK;
}

void ib_executor_destroy(ib_executor *ex) {
  if (!ex) return;
  ib_results *rs = ex->stream;
  close_locked(ex);
  if (rs) rs->ex = NULL;
  /* The backend closes with the last resident handle, if any outlive us. */
  ib_devref_put(ex->dev);
  free(ex->cache_dir);
  free(ex);
}

void ib_executor_counters_get(ib_executor *ex, ib_executor_counters *out) {
  pthread_mutex_lock(&ex->credits->lock);
  *out = ex->credits->c;
  pthread_mutex_unlock(&ex->credits->lock);
  if (ex->dev->backend->counters) ex->dev->backend->counters(ex->dev->state, out);
}

void ib_executor_pools_get(ib_executor *ex, ib_executor_pools *out) {
  *out = (ib_executor_pools){0};
  if (ex->dev->backend->pools) ex->dev->backend->pools(ex->dev->state, out);
}

void ib_executor_test_set_next_id(ib_executor *ex, uint64_t next_id) {
  ex->next_id = next_id ? next_id : 1;
  ex->ids_exhausted = false;
}

static void parse_unref(void *owner) { ib_devref_put(owner); }

/* A job whose path sources alone exceed host_bytes could never be admitted:
 * the parse refuses it before reading them (imgbatch.h, ib_graph_limits). */
static ib_graph_limits parse_limits(const ib_executor *ex, const ib_graph_limits *limits) {
  ib_graph_limits lim = limits ? *limits : (ib_graph_limits){0};
  uint64_t cap =
      lim.max_job_source_bytes ? lim.max_job_source_bytes : IB_DEFAULT_MAX_JOB_SOURCE_BYTES;
  lim.max_job_source_bytes = cap < ex->opts.host_bytes ? cap : ex->opts.host_bytes;
  return lim;
}

/* Where a parsed graph's memory comes from: the backend's allocator, when it
 * has one, and then the graph holds the backend state alive while its
 * memory is in use; else malloc. */
static ib_graph_memory parse_memory(ib_executor *ex) {
  ib_graph_memory mem = {NULL, NULL, NULL};
  if (ex->backend->parse_allocator) {
    mem.alloc = ex->backend->parse_allocator(ex->backend_state);
    mem.unref = parse_unref;
    mem.owner = ib_devref_get(ex->dev);
  }
  return mem;
}

ib_status ib_executor_parse(ib_executor *ex, const uint8_t *job_bytes, size_t len,
                            const ib_graph_limits *limits, ib_graph **out, ib_key *key_on_error,
                            ib_error *err) {
  ib_error scratch;
  if (!err) err = &scratch;
  if (!ex || !out) {
    if (out) *out = NULL;
    return ib_error_set(err, IB_INVALID, IB_STAGE_PARSE, "parse: no executor or no output");
  }
  ib_graph_memory mem = parse_memory(ex);
  ib_graph_limits lim = parse_limits(ex, limits);
  return ib_graph_parse_in(job_bytes, len, &lim, &mem, out, key_on_error, err);
}

uint8_t *ib_executor_buffer(ib_executor *ex, size_t len) {
  if (!ex) return NULL;
  if (!ex->backend->parse_allocator) return malloc(len ? len : 1);
  ProtobufCAllocator *a = ex->backend->parse_allocator(ex->backend_state);
  return a->alloc(a->allocator_data, len ? len : 1);
}

void ib_executor_buffer_free(ib_executor *ex, uint8_t *buf) {
  if (!ex || !buf) return;
  if (!ex->backend->parse_allocator) {
    free(buf);
    return;
  }
  ProtobufCAllocator *a = ex->backend->parse_allocator(ex->backend_state);
  a->free(a->allocator_data, buf);
}

ib_status ib_executor_parse_buffer(ib_executor *ex, uint8_t *buf, size_t len,
                                   const ib_graph_limits *limits, ib_graph **out,
                                   ib_key *key_on_error, ib_error *err) {
  ib_error scratch;
  if (!err) err = &scratch;
  if (!ex || !out || !buf) {
    if (out) *out = NULL;
    if (ex && buf) ib_executor_buffer_free(ex, buf);
    return ib_error_set(err, IB_INVALID, IB_STAGE_PARSE, "parse: no executor, buffer or output");
  }
  ib_graph_memory mem = parse_memory(ex);
  ib_graph_limits lim = parse_limits(ex, limits);
  return ib_graph_parse_buffer(buf, len, &lim, &mem, out, key_on_error, err);
}
