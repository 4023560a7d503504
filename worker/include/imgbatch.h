/*
 * imgbatch.h - the whole public contract of the imgbatch executor library.
 *
 * The executor turns image graphs (parsed from the protobuf `Job` of
 * proto/imgbatch.proto) into images, bit-exact with Pillow 12.3, on a
 * backend: the CPU reference backend or the CUDA backend.
 *
 * Ownership: every pointer returned through an `out` parameter is owned by
 * the caller and released with the matching *_free/_destroy call unless
 * stated otherwise. Strings passed in are copied.
 *
 * Threads: an executor is driven by one thread at a time; concurrent or
 * recursive driving (submit/join/run while a result stream is being
 * iterated) is rejected with IB_BUSY, never undefined. Distinct executors
 * are independent. ib_graph and ib_result objects may move between threads.
 *
 * Blocking: submit validates synchronously and, with queue mode off, also
 * waits for its job's submission to complete. ib_results_next blocks until
 * one result is ready. Nothing else blocks.
 */
#ifndef IMGBATCH_H
#define IMGBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ status */

typedef enum ib_status {
  IB_OK = 0,
  IB_QUEUE_FULL,          /* valid job, no room beside live work: retry later */
  IB_LIMIT,               /* exceeds a hard cap or an identity bound */
  IB_UNSUPPORTED,         /* op / mode / parameter context not proven */
  IB_INVALID,             /* malformed graph or parameter out of range */
  IB_DECODE,              /* source bytes could not be decoded */
  IB_DEVICE,              /* GPU driver, compiler or device failure */
  IB_TIMEOUT,             /* deadline passed */
  IB_INTERNAL,            /* a bug or resource failure (allocation) */
  IB_BUSY,                /* another driver owns the executor */
  IB_RESULT_BACKPRESSURE, /* held resident outputs fill the budget: release, retry */
  IB_CLOSED,              /* executor closed */
  IB_END                  /* a result stream is exhausted */
} ib_status;

/* Stages match proto enum imgbatch.v1.Stage numerically. */
typedef enum ib_stage {
  IB_STAGE_NONE = 0,
  IB_STAGE_PARSE = 1,
  IB_STAGE_VALIDATE = 2,
  IB_STAGE_ADMIT = 3,
  IB_STAGE_DECODE = 4,
  IB_STAGE_UPLOAD = 5,
  IB_STAGE_EXECUTE = 6,
  IB_STAGE_DOWNLOAD = 7,
  IB_STAGE_ENCODE = 8,
  IB_STAGE_PUBLISH = 9
} ib_stage;

/* An error as a value: status, stage and a message naming what was wrong. */
typedef struct ib_error {
  ib_status status;
  ib_stage stage;
  char message[320];
} ib_error;

const char *ib_status_name(ib_status s);
const char *ib_stage_name(ib_stage s);

/* ------------------------------------------------------------ images */

/* Admitted 8-bit modes. Pixels are chunky (interleaved) exactly as Pillow's
 * Image.tobytes() lays them out: width * bands bytes per row, no padding. */
typedef enum ib_mode {
  IB_MODE_NONE = 0,
  IB_MODE_L,
  IB_MODE_LA,
  IB_MODE_RGB,
  IB_MODE_RGBA,
  IB_MODE_CMYK,
  IB_MODE_RGBX,
  IB_MODE_COUNT
} ib_mode;

#define IB_MODE_BIT(m) (1u << (m))
#define IB_MAX_SIDE 4096u /* per-graph bound: 4096 x 4096 peak pixels */

unsigned ib_mode_bands(ib_mode m);
const char *ib_mode_name(ib_mode m);
/* Returns IB_MODE_NONE for any string that is not an admitted mode. */
ib_mode ib_mode_parse(const char *name);

typedef struct ib_image {
  ib_mode mode;
  uint32_t width, height;
  uint8_t *data; /* width * height * bands bytes, owned by the image */
} ib_image;

size_t ib_image_bytes(const ib_image *im);
/* Allocates data for the given shape (zeroed). */
ib_status ib_image_alloc(ib_image *im, ib_mode mode, uint32_t width, uint32_t height);
void ib_image_release(ib_image *im);

/* ------------------------------------------------------------ jobs */

/* Input keys: a string (empty allowed) or an unsigned 64-bit integer. */
typedef struct ib_key {
  bool is_u64;
  uint64_t u64;
  char *str; /* owned; NULL when is_u64 */
} ib_key;

ib_status ib_key_copy(ib_key *dst, const ib_key *src);
void ib_key_clear(ib_key *k);

/* A parsed, validated job graph (opaque). Built from the serialized protobuf
 * `Job`; parsing also reads each encoded source's header (never decodes)
 * and checks it against limits. */
typedef struct ib_graph ib_graph;

typedef struct ib_graph_limits {
  uint64_t max_source_bytes; /* encoded source size; 0 = 256 MiB */
  uint64_t max_metadata_bytes; /* 0 = 64 KiB */
  const char *source_root;   /* path sources resolve inside it; NULL = paths rejected */
} ib_graph_limits;

/* On failure, *key_on_error (when not NULL) receives the job's key if the
 * message unpacked, so the error result can still name its input; release
 * it with ib_key_clear. */
ib_status ib_graph_parse(const uint8_t *job_bytes, size_t len, const ib_graph_limits *limits,
                         ib_graph **out, ib_key *key_on_error, ib_error *err);
void ib_graph_free(ib_graph *g);
/* The key the job carried (absent key = empty string). Borrowed. */
const ib_key *ib_graph_key(const ib_graph *g);

/* ------------------------------------------------------------ executor */

typedef enum ib_backend_kind { IB_BACKEND_CPU = 0, IB_BACKEND_CUDA = 1 } ib_backend_kind;

typedef struct ib_executor_options {
  ib_backend_kind backend;
  int device;              /* CUDA device ordinal */
  uint64_t gpu_bytes;      /* default 512 MiB */
  uint64_t host_bytes;     /* default 256 MiB */
  uint32_t max_jobs;       /* default 64 */
  uint32_t max_in_flight;  /* default 2 */
  bool queue;              /* false: submit completes its own submission */
  const char *cache_dir;   /* NVRTC module cache; NULL = $XDG_CACHE_HOME/imgbatch */
} ib_executor_options;

void ib_executor_options_default(ib_executor_options *o);

typedef struct ib_executor ib_executor;

typedef struct ib_result {
  uint64_t job_id;
  bool has_job_id;  /* false only for errors before an id was assigned */
  ib_key key;
  bool ok;
  ib_image image;   /* when ok */
  ib_error error;   /* when !ok */
  void *metadata;   /* the packed metadata snapshot (serialized Job.metadata entries) */
  size_t metadata_len;
} ib_result;

void ib_result_free(ib_result *r);

#ifdef __cplusplus
}
#endif
#endif
