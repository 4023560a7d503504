/* ib_config: tuning and test settings by name, in the style of
 * rd_kafka_conf_set. One table row per key: its type, range and default;
 * docs/tuning.md says what each does. */
#include "exec/config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef enum { KEY_BOOL, KEY_U32, KEY_I32 } key_type;

typedef struct key_row {
  const char *name;
  key_type type;
  size_t off;
  int64_t min, max;
  int64_t off_value; /* KEY_I32: a value outside [min, max] that is accepted too (-1: off) */
} key_row;

#define ROW(n, t, lo, hi, extra) \
  { #n, t, offsetof(ib_config, n), lo, hi, extra }

static const key_row keys[] = {
    ROW(cuda_profile, KEY_BOOL, 0, 1, 0),        ROW(cuda_blur_global_rows, KEY_BOOL, 0, 1, 0),
    ROW(cuda_pieces, KEY_U32, 1, 4, 0),          ROW(cuda_batch_min, KEY_U32, 2, 65536, 0),
    ROW(cuda_pipe_kib, KEY_I32, 1, 1 << 20, -1), ROW(compile_queue, KEY_U32, 1, 65536, 0),
    ROW(ramp_jobs, KEY_U32, 0, UINT32_MAX, 0),   ROW(host_stream, KEY_BOOL, 0, 1, 0),
};

/* The defaults (docs/tuning.md gives the reasons for each). */
static const ib_config defaults = {
    .cuda_profile = false,
    .cuda_blur_global_rows = false,
    .cuda_pieces = 2,
    .cuda_batch_min = 2,
    .cuda_pipe_kib = 8192,
    .compile_queue = 64,
    .ramp_jobs = 0,
    .host_stream = false,
};
#define N_KEYS (sizeof keys / sizeof keys[0])

static const key_row *find(const char *name) {
  for (size_t i = 0; name && i < N_KEYS; i++)
    if (strcmp(keys[i].name, name) == 0) return &keys[i];
  return NULL;
}

static void store(ib_config *c, const key_row *k, int64_t v) {
  void *p = (char *)c + k->off;
  switch (k->type) {
    case KEY_BOOL: *(bool *)p = v != 0; break;
    case KEY_U32: *(uint32_t *)p = (uint32_t)v; break;
    case KEY_I32: *(int32_t *)p = (int32_t)v; break;
  }
}

static int64_t load(const ib_config *c, const key_row *k) {
  const void *p = (const char *)c + k->off;
  switch (k->type) {
    case KEY_BOOL: return *(const bool *)p;
    case KEY_U32: return *(const uint32_t *)p;
    case KEY_I32: return *(const int32_t *)p;
  }
  return 0;
}

void ib_config_defaults(ib_config *c) { *c = defaults; }

const ib_config *ib_config_of(const ib_executor_options *opts) {
  return opts && opts->config ? opts->config : &defaults;
}

ib_config *ib_config_new(void) {
  ib_config *c = malloc(sizeof *c);
  if (c) ib_config_defaults(c);
  return c;
}

ib_config *ib_config_dup(const ib_config *c) {
  ib_config *d = malloc(sizeof *d);
  if (d) {
    *d = c ? *c : defaults;
  }
  return d;
}

void ib_config_destroy(ib_config *c) { free(c); }

const char *ib_config_key(size_t i) { return i < N_KEYS ? keys[i].name : NULL; }

static void describe_range(const key_row *k, char *buf, size_t size) {
  if (k->type == KEY_BOOL)
    snprintf(buf, size, "true, false, 1 or 0");
  else if (k->type == KEY_I32)
    snprintf(buf, size, "%" PRId64 " (off) or %" PRId64 "..%" PRId64, k->off_value, k->min, k->max);
  else
    snprintf(buf, size, "%" PRId64 "..%" PRId64, k->min, k->max);
}

/* Decimal integer, the whole string; false on anything else. */
static bool parse_int(const char *v, int64_t *out) {
  if (!(*v == '-' || (*v >= '0' && *v <= '9'))) return false; /* strtoll would skip spaces */
  char *end = NULL;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (errno || *end || end == v) return false;
  *out = n;
  return true;
}

static bool parse_value(const key_row *k, const char *v, int64_t *out) {
  if (k->type == KEY_BOOL) {
    if (!strcmp(v, "true") || !strcmp(v, "1")) return (*out = 1), true;
    if (!strcmp(v, "false") || !strcmp(v, "0")) return (*out = 0), true;
    return false;
  }
  if (!parse_int(v, out)) return false;
  if (k->type == KEY_I32 && *out == k->off_value) return true;
  return *out >= k->min && *out <= k->max;
}

ib_status ib_config_set(ib_config *c, const char *key, const char *value, ib_error *err) {
  ib_error scratch;
  if (!err) err = &scratch;
  if (!c || !key || !value)
    return ib_error_set(err, IB_INVALID, IB_STAGE_NONE, "config: NULL %s",
                        !c     ? "config"
                        : !key ? "key"
                               : "value");
  const key_row *k = find(key);
  if (!k)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_NONE, "config: unknown key \"%s\"", key);
  int64_t v = 0;
  if (!parse_value(k, value, &v)) {
    char range[64];
    describe_range(k, range, sizeof range);
    return ib_error_set(err, IB_INVALID, IB_STAGE_NONE,
                        "config: %s: bad value \"%s\" (accepted: %s)", key, value, range);
  }
  store(c, k, v);
  return IB_OK;
}

ib_status ib_config_get(const ib_config *c, const char *key, char *dst, size_t size,
                        ib_error *err) {
  ib_error scratch;
  if (!err) err = &scratch;
  if (!c || !key || !dst)
    return ib_error_set(err, IB_INVALID, IB_STAGE_NONE, "config: NULL %s",
                        !c     ? "config"
                        : !key ? "key"
                               : "buffer");
  const key_row *k = find(key);
  if (!k)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_NONE, "config: unknown key \"%s\"", key);
  const int64_t v = load(c, k);
  const int n = k->type == KEY_BOOL ? snprintf(dst, size, "%s", v ? "true" : "false")
                                    : snprintf(dst, size, "%" PRId64, v);
  if (n < 0 || (size_t)n >= size)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_NONE, "config: %s: value needs %d bytes", key,
                        n + 1);
  return IB_OK;
}
