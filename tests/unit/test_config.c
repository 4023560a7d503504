/* ib_config (imgbatch.h): tuning and test settings set by name. Unknown
 * keys and bad values are errors that name them and leave the config as it
 * was; the executor takes a copy; every key is documented in
 * docs/tuning.md. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/config.h"
#include "exec/exec_internal.h"
#include "imgbatch.h"

static void get(const ib_config *c, const char *key, char *buf, size_t n) {
  ib_error err = {0};
  cr_assert_eq(ib_config_get(c, key, buf, n, &err), IB_OK, "%s: %s", key, err.message);
}

/* Whether a and b read the same on every key (padding aside). */
static bool same(const ib_config *a, const ib_config *b) {
  for (size_t i = 0; ib_config_key(i); i++) {
    char x[32], y[32];
    get(a, ib_config_key(i), x, sizeof x);
    get(b, ib_config_key(i), y, sizeof y);
    if (strcmp(x, y) != 0) return false;
  }
  return true;
}

Test(config, a_new_config_holds_the_documented_defaults) {
  ib_config *c = ib_config_new();
  cr_assert_not_null(c);
  static const char *const want[][2] = {
      {"cuda_profile", "false"}, {"cuda_blur_global_rows", "false"}, {"cuda_pieces", "2"},
      {"cuda_batch_min", "2"},   {"cuda_pipe_kib", "8192"},          {"compile_queue", "64"},
      {"ramp_jobs", "0"},        {"host_stream", "false"},
  };
  char buf[32];
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    get(c, want[i][0], buf, sizeof buf);
    cr_assert_str_eq(buf, want[i][1], "%s", want[i][0]);
  }
  ib_config_destroy(c);
}

Test(config, every_key_is_listed_and_reads_back_what_was_set) {
  ib_config *c = ib_config_new();
  size_t n = 0;
  for (const char *k; (k = ib_config_key(n)); n++) {
    char before[32], after[32];
    get(c, k, before, sizeof before);
    /* Setting a key to the value it reads as is accepted and changes nothing. */
    cr_assert_eq(ib_config_set(c, k, before, NULL), IB_OK, "%s=%s", k, before);
    get(c, k, after, sizeof after);
    cr_assert_str_eq(before, after, "%s", k);
  }
  cr_assert_eq(n, 8, "keys: %zu", n);
  cr_assert_null(ib_config_key(n));
  ib_config_destroy(c);
}

Test(config, values_round_trip_through_set_and_get) {
  ib_config *c = ib_config_new();
  static const char *const kv[][3] = {
      {"cuda_profile", "true", "true"},
      {"cuda_profile", "0", "false"},
      {"cuda_blur_global_rows", "1", "true"},
      {"cuda_pieces", "4", "4"},
      {"cuda_pieces", "1", "1"},
      {"cuda_batch_min", "9", "9"},
      {"cuda_pipe_kib", "-1", "-1"},
      {"cuda_pipe_kib", "64", "64"},
      {"compile_queue", "3", "3"},
      {"ramp_jobs", "4294967295", "4294967295"},
      {"host_stream", "1", "true"},
  };
  char buf[32];
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
    ib_error err = {0};
    cr_assert_eq(ib_config_set(c, kv[i][0], kv[i][1], &err), IB_OK, "%s", err.message);
    get(c, kv[i][0], buf, sizeof buf);
    cr_assert_str_eq(buf, kv[i][2], "%s=%s", kv[i][0], kv[i][1]);
  }
  ib_config_set(c, "cuda_pieces", "3", NULL);
  ib_config_set(c, "ramp_jobs", "8", NULL);
  cr_assert_eq(c->cuda_pieces, 3);
  cr_assert_eq(c->ramp_jobs, 8);
  cr_assert_eq(c->cuda_pipe_kib, 64);
  cr_assert(c->cuda_profile == false && c->cuda_blur_global_rows == true);
  ib_config_destroy(c);
}

Test(config, an_unknown_key_is_unsupported_and_named) {
  ib_config *c = ib_config_new();
  ib_error err = {0};
  cr_assert_eq(ib_config_set(c, "cuda_peices", "2", &err), IB_UNSUPPORTED);
  cr_assert(strstr(err.message, "\"cuda_peices\"") != NULL, "%s", err.message);
  cr_assert_eq(ib_config_get(c, "gpu_bytes", (char[8]){0}, 8, &err), IB_UNSUPPORTED);
  cr_assert(strstr(err.message, "\"gpu_bytes\"") != NULL, "%s", err.message);
  ib_config_destroy(c);
}

Test(config, a_bad_value_names_key_value_and_range_and_changes_nothing) {
  ib_config *c = ib_config_new();
  static const char *const bad[][3] = {
      {"cuda_pieces", "5", "1..4"},
      {"cuda_pieces", "0", "1..4"},
      {"cuda_pieces", "2x", "1..4"},
      {"cuda_pieces", "", "1..4"},
      {"cuda_pieces", " 2", "1..4"},
      {"cuda_batch_min", "1", "2..65536"},
      {"cuda_pipe_kib", "0", "-1 (off) or 1..1048576"},
      {"cuda_pipe_kib", "-2", "-1 (off) or 1..1048576"},
      {"compile_queue", "0", "1..65536"},
      {"ramp_jobs", "-1", "0..4294967295"},
      {"ramp_jobs", "4294967296", "0..4294967295"},
      {"ramp_jobs", "99999999999999999999", "0..4294967295"},
      {"cuda_profile", "yes", "true, false, 1 or 0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ib_error err = {0};
    cr_assert_eq(ib_config_set(c, bad[i][0], bad[i][1], &err), IB_INVALID, "%s=%s", bad[i][0],
                 bad[i][1]);
    char want[128];
    snprintf(want, sizeof want, "%s: bad value \"%s\" (accepted: %s)", bad[i][0], bad[i][1],
             bad[i][2]);
    cr_assert(strstr(err.message, want) != NULL, "%s | %s", err.message, want);
  }
  ib_config *fresh = ib_config_new();
  cr_assert(same(c, fresh), "a refused value changed the config");
  ib_config_destroy(fresh);
  cr_assert_eq(ib_config_set(c, NULL, "1", NULL), IB_INVALID);
  cr_assert_eq(ib_config_set(c, "cuda_pieces", NULL, NULL), IB_INVALID);
  cr_assert_eq(ib_config_set(NULL, "cuda_pieces", "1", NULL), IB_INVALID);
  ib_config_destroy(c);
}

Test(config, get_says_when_the_buffer_is_too_small) {
  ib_config *c = ib_config_new();
  char buf[5];
  ib_error err = {0};
  cr_assert_eq(ib_config_get(c, "cuda_pipe_kib", buf, 4, &err), IB_LIMIT);
  cr_assert_eq(ib_config_get(c, "cuda_pipe_kib", buf, sizeof buf, &err), IB_OK);
  cr_assert_str_eq(buf, "8192");
  ib_config_destroy(c);
}

Test(config, dup_copies_and_null_dups_the_defaults) {
  ib_config *c = ib_config_new();
  ib_config_set(c, "ramp_jobs", "12", NULL);
  ib_config *d = ib_config_dup(c), *e = ib_config_dup(NULL), *f = ib_config_new();
  cr_assert_eq(d->ramp_jobs, 12);
  cr_assert(same(e, f));
  ib_config_destroy(c);
  ib_config_destroy(d);
  ib_config_destroy(e);
  ib_config_destroy(f);
  ib_config_destroy(NULL);
}

Test(config, options_without_a_config_read_the_defaults) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  cr_assert_null(o.config);
  ib_config def;
  ib_config_defaults(&def);
  cr_assert(same(ib_config_of(&o), &def));
  cr_assert(same(ib_config_of(NULL), &def));
}

Test(config, the_executor_keeps_its_own_copy) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  ib_config *c = ib_config_new();
  cr_assert_eq(ib_config_set(c, "ramp_jobs", "8", NULL), IB_OK);
  o.config = c;
  ib_executor *ex = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_executor_create(&o, &ex, &err), IB_OK, "%s", err.message);
  ib_config_set(c, "ramp_jobs", "3", NULL);
  ib_config_destroy(c);
  cr_assert_eq(ex->config.ramp_jobs, 8);
  cr_assert_eq(ib_config_of(&ex->opts)->ramp_jobs, 8);
  ib_executor_destroy(ex);
}

/* docs/tuning.md is where a user reads what a key does: every key the
 * library knows has its row there, as `key`. */
Test(config, every_key_is_documented) {
  const char *root = getenv("IB_SOURCE_DIR");
  cr_assert_not_null(root, "ctest sets IB_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/docs/tuning.md", root);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  static char text[1 << 16];
  const size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  for (size_t i = 0; ib_config_key(i); i++) {
    char want[64];
    snprintf(want, sizeof want, "| `%s` |", ib_config_key(i));
    cr_assert(strstr(text, want) != NULL, "docs/tuning.md has no row %s", want);
  }
}
