/*
 * fuzz_job.c - libFuzzer target: bytes as an `imgbatch run` input stream
 * (varint-length-delimited Jobs) through the public API exactly as the run
 * command drives it: frame -> ib_executor_parse_buffer (parse, validate)
 * -> ib_executor_run (admit, plan, execute on the CPU backend with small
 * caps) -> every Result built and packed (ib_result_msg_from_result,
 * ib_result_msg_pack), the way it would be written.
 *
 * Path sources resolve in a private source root made at start-up: a PNG, a
 * JPEG in a subfolder, a symlink inside the root, one pointing out of it
 * and a FIFO (a path naming it must be refused, never
 * block - a hang is reported as a libFuzzer timeout).
 *
 * Oracles beyond the sanitizers: one Result per input pulled; every Result
 * packs, unpacks again, and all its strings are UTF-8 (a Result must parse
 * in every protobuf runtime); no error says a read was
 * interrupted (libFuzzer's timeout alarm interrupts a blocking open() of a
 * FIFO after timeout/2 s: that EINTR is how a hang shows here).
 *
 * IB_FUZZ_SKIP_UTF8=1 turns the UTF-8 oracle off, for long runs while
 * item 4 is open (invalid UTF-8 is one mutation away from every seed, so
 * it would stop every run at once); tests/fuzz/README.md says when it was
 * used.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/frame.h"
#include "result/result_msg.h"
#include "fuzz_util.h"
#include "imgbatch.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_root[200];
static bool fz_skip_utf8;
/* The input itself carries the EINTR text (e.g. in a path the error
 * quotes): the oracle below cannot tell, so it stands aside. */
static bool fz_quotes_eintr;

/* A 2x1 red RGB PNG (as Pillow writes it). */
static const uint8_t fz_png[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
    0x52, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x7b,
    0x40, 0xe8, 0xdd, 0x00, 0x00, 0x00, 0x0f, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xfc,
    0xcf, 0xc0, 0xc0, 0xc0, 0xc0, 0x00, 0x00, 0x06, 0x08, 0x01, 0x01, 0xcb, 0x47, 0x76, 0x75,
    0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};

static void fz_write(const char *rel, const uint8_t *b, size_t n) {
  char p[320];
  snprintf(p, sizeof p, "%s/%s", fz_root, rel);
  FILE *f = fopen(p, "wb");
  if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
    fprintf(stderr, "fuzz_job: cannot write %s\n", p);
    abort();
  }
}

static void fz_cleanup(void) {
  static const char *names[] = {"a.png", "sub/b.png", "link.png", "escape",
                                "fifo",  "empty",     "notimg"};
  char p[320];
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    snprintf(p, sizeof p, "%s/%s", fz_root, names[i]);
    unlink(p);
  }
  snprintf(p, sizeof p, "%s/sub", fz_root);
  rmdir(p);
  rmdir(fz_root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* Under $TMPDIR: run.sh points it at a folder it removes, so roots left
   * by crashed processes (no atexit) go too. */
  const char *tmp = getenv("TMPDIR");
  snprintf(fz_root, sizeof fz_root, "%s/ib-fuzz-root.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(fz_root)) abort();
  char p[320];
  snprintf(p, sizeof p, "%s/sub", fz_root);
  if (mkdir(p, 0700) != 0) abort();
  fz_write("a.png", fz_png, sizeof fz_png);
  fz_write("sub/b.png", fz_png, sizeof fz_png);
  fz_write("empty", fz_png, 0);
  fz_write("notimg", (const uint8_t *)"hello", 5);
  snprintf(p, sizeof p, "%s/link.png", fz_root);
  if (symlink("a.png", p) != 0) abort();
  snprintf(p, sizeof p, "%s/escape", fz_root);
  if (symlink("/etc/hostname", p) != 0) abort();
  snprintf(p, sizeof p, "%s/fifo", fz_root);
  if (mkfifo(p, 0600) != 0) abort();
  atexit(fz_cleanup);
  const char *skip = getenv("IB_FUZZ_SKIP_UTF8");
  fz_skip_utf8 = skip && strcmp(skip, "1") == 0;
  fz_quiet_vips();
  return 0;
}

/* ------------------------------------------------------------ input */

typedef struct fz_input {
  ib_executor *ex;
  FILE *in;
  size_t max_frame; /* the input's own size: no frame can be longer */
  ib_graph_limits limits;
  bool failed;
  size_t pulled; /* inputs handed to the stream (ok or failed) */
} fz_input;

/* As the run command's next_input: a frame read into an executor buffer
 * and parsed in place; a framing fault ends the stream after its error. */
static ib_status fz_next(void *user, ib_input *in, ib_error *err) {
  fz_input *fi = user;
  if (fi->failed) return IB_END;
  size_t len = 0;
  ib_frame_status fs = ib_frame_read_len(fi->in, fi->max_frame, &len);
  if (fs == IB_FRAME_EOF) return IB_END;
  fi->pulled++;
  uint8_t *buf = NULL;
  if (fs == IB_FRAME_OK) {
    buf = ib_executor_buffer(fi->ex, len);
    if (!buf) abort(); /* len is bounded by the input size */
    fs = ib_frame_read_body(fi->in, buf, len);
  }
  if (fs != IB_FRAME_OK) {
    if (buf) ib_executor_buffer_free(fi->ex, buf);
    fi->failed = true;
    *err = (ib_error){.status = IB_INVALID, .stage = IB_STAGE_PARSE};
    snprintf(err->message, sizeof err->message, "parse: bad frame");
    return IB_INVALID;
  }
  ib_key key = {0};
  ib_status st = ib_executor_parse_buffer(fi->ex, buf, len, &fi->limits, &in->graph, &key, err);
  if (st != IB_OK && err->stage != IB_STAGE_PARSE) {
    in->key = key;
    in->has_key = true;
  } else {
    ib_key_clear(&key);
  }
  return st;
}

/* ------------------------------------------------------------ oracles */

static void fz_check_value(const Imgbatch__V1__Value *v, unsigned depth);

static void fz_check_map(size_t n, Imgbatch__V1__ValueMap__EntriesEntry **e, unsigned depth) {
  for (size_t i = 0; i < n; i++) {
    fz_check_str("Result metadata map key is not UTF-8", e[i]->key);
    fz_check_value(e[i]->value, depth + 1);
  }
}

static void fz_check_value(const Imgbatch__V1__Value *v, unsigned depth) {
  if (!v) return;
  /* The worker bounds echoed nesting to 8; far deeper means it did not. */
  if (depth > 64) fz_fail("Result metadata nested deeper than 64", "");
  switch (v->kind_case) {
    case IMGBATCH__V1__VALUE__KIND_STRING_VALUE:
      fz_check_str("Result metadata string is not UTF-8", v->string_value);
      break;
    case IMGBATCH__V1__VALUE__KIND_LIST_VALUE:
      if (v->list_value)
        for (size_t i = 0; i < v->list_value->n_items; i++)
          fz_check_value(v->list_value->items[i], depth + 1);
      break;
    case IMGBATCH__V1__VALUE__KIND_MAP_VALUE:
      if (v->map_value) fz_check_map(v->map_value->n_entries, v->map_value->entries, depth);
      break;
    default: break;
  }
}

/* The packed Result as a reader sees it. protobuf-c does not check UTF-8,
 * so the strings are checked here as stricter runtimes (Python upb, Java)
 * would. */
static void fz_check_packed(const uint8_t *buf, size_t len) {
  Imgbatch__V1__Result *r = imgbatch__v1__result__unpack(NULL, len, buf);
  if (!r) fz_fail("packed Result does not unpack", "");
  if (r->outcome_case == IMGBATCH__V1__RESULT__OUTCOME__NOT_SET)
    fz_fail("Result without an outcome", "");
  if (fz_skip_utf8) {
    imgbatch__v1__result__free_unpacked(r, NULL);
    return;
  }
  if (r->input_key_case == IMGBATCH__V1__RESULT__INPUT_KEY_KEY_STRING)
    fz_check_str("Result key_string is not UTF-8", r->key_string);
  if (r->correlation_present_case == IMGBATCH__V1__RESULT__CORRELATION_PRESENT_CORRELATION_ID)
    fz_check_str("Result correlation_id is not UTF-8", r->correlation_id);
  fz_check_str("Result worker_id is not UTF-8", r->worker_id);
  switch (r->outcome_case) {
    case IMGBATCH__V1__RESULT__OUTCOME_ERROR:
      fz_check_str("JobError message is not UTF-8", r->error->message);
      if (r->error->input_key_case == IMGBATCH__V1__JOB_ERROR__INPUT_KEY_KEY_STRING)
        fz_check_str("JobError key_string is not UTF-8", r->error->key_string);
      break;
    case IMGBATCH__V1__RESULT__OUTCOME_IMAGE:
      fz_check_str("ImageData mode is not UTF-8", r->image->mode);
      break;
    default: break;
  }
  for (size_t i = 0; i < r->n_metadata; i++) {
    fz_check_str("Result metadata key is not UTF-8", r->metadata[i]->key);
    fz_check_value(r->metadata[i]->value, 1);
  }
  imgbatch__v1__result__free_unpacked(r, NULL);
}

static void fz_emit(ib_result *res) {
  if (!res->ok && !fz_quotes_eintr && strstr(res->error.message, "Interrupted system call"))
    fz_fail("a source read blocked until a signal interrupted it", res->error.message);
  ib_result_msg rm;
  ib_result_msg_init(&rm);
  ib_error err = {0};
  ib_result_msg_from_result(&rm, res, &err);
  size_t len = 0;
  uint8_t *buf = ib_result_msg_pack(&rm, &len);
  if (!buf) abort();
  fz_check_packed(buf, len);
  free(buf);
  ib_result_msg_clear(&rm);
}

/* ------------------------------------------------------------ target */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  fz_quotes_eintr = memmem(data, size, "Interrupted", 11) != NULL;
  FILE *in = fmemopen((void *)data, size, "rb");
  if (!in) abort();
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.backend = IB_BACKEND_CPU;
  o.host_bytes = 16u << 20;
  o.gpu_bytes = 16u << 20;
  o.max_jobs = 4;
  ib_executor *ex = NULL;
  ib_error err = {0};
  if (ib_executor_create(&o, &ex, &err) != IB_OK) {
    fprintf(stderr, "fuzz_job: executor: %s\n", err.message);
    abort();
  }
  fz_input fi = {.ex = ex, .in = in, .max_frame = size, .limits = {.source_root = fz_root}};
  ib_results *rs = NULL;
  if (ib_executor_run(ex, fz_next, &fi, &rs) != IB_OK) abort();
  size_t results = 0;
  ib_result res;
  ib_status st;
  while ((st = ib_results_next(rs, &res)) == IB_OK) {
    results++;
    fz_emit(&res);
    ib_result_free(&res);
  }
  if (st != IB_END) fz_fail("result stream ended with", ib_status_name(st));
  if (results != fi.pulled) {
    fprintf(stderr, "results %zu pulled %zu\n", results, fi.pulled);
    fz_fail("not one Result per input", "");
  }
  ib_results_close(rs);
  ib_executor_destroy(ex);
  fclose(in);
  return 0;
}
