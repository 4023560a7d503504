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
 * one result is ready. ib_executor_close, ib_results_close of an unfinished
 * stream and ib_executor_destroy block while in-flight work is fenced.
 * Nothing else blocks. ib_executor_counters_get may be called from any
 * thread at any time; ib_executor_destroy must not race any other call.
 *
 * How the executor and its backends work: docs/design.md. What a job
 * reserves: docs/credits.md. Tuning settings: docs/tuning.md. The wire
 * contract and versions: docs/wire.md.
 */
#ifndef IMGBATCH_H
#define IMGBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ version */

/* The version of this header. The library's own is ib_version(); they
 * differ when a program runs against a libimgbatch.so other than the one
 * it was built with. Before 1.0 every minor version may change the ABI
 * (0.2 added the renditions to ib_result and start_cb to
 * ib_executor_options, both of which callers allocate; a patch version
 * only adds: 0.2.1 ib_executor_pools_get, 0.2.2 ib_codec_scratch_get), so the
 * soname carries major and minor (libimgbatch.so.0.2) and only the same
 * major.minor is compatible; from 1.0 the same major. CMakeLists.txt takes
 * the project version from these lines. */
#define IB_VERSION_MAJOR 0
#define IB_VERSION_MINOR 2
#define IB_VERSION_PATCH 2

/* Functions of this header are the library's exported API; everything else
 * in libimgbatch.so is hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define IB_API __attribute__((visibility("default")))
#else
#define IB_API
#endif

/* "MAJOR.MINOR.PATCH" of the linked library (static storage). */
IB_API const char *ib_version(void);

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
  IB_RESULT_BACKPRESSURE, /* held outputs (resident handles, lent images) fill the budget: release,
                             retry */
  IB_CLOSED,              /* executor closed */
  IB_END,                 /* a result stream is exhausted */
  IB_AGAIN                /* run streams: no input ready now and nothing live (call again) */
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

IB_API const char *ib_status_name(ib_status s);
IB_API const char *ib_stage_name(ib_stage s);

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
/* Every node of a graph (sources included) is at most max_side pixels on
 * each side (ib_graph_limits.max_side): IB_DEFAULT_MAX_SIDE unless set,
 * at most IB_MAX_SIDE_LIMIT, so a side and a row of pixels fit 32 bits and
 * a pixel count fits 32 bits unsigned. The side bound refuses hostile
 * headers before any allocation; memory is bounded by the credit caps
 * (docs/credits.md), not by the side. */
#define IB_DEFAULT_MAX_SIDE 16384u
#define IB_MAX_SIDE_LIMIT 65535u

/* The wire contract version this library reads and writes
 * (Job.contract_version, Result.contract_version in proto/imgbatch.proto).
 * A Job newer than this is IB_UNSUPPORTED. Versioning rules: docs/wire.md.
 * v3 = renditions, Source.draft_scale and CpuOutput.metadata: a v2 worker
 * would skip each without an error, so a Job using one says 3. */
#define IB_CONTRACT_VERSION 3u
/* The first contract version with Job.renditions: a Job naming renditions
 * must say at least this. */
#define IB_CONTRACT_RENDITIONS 3u
/* Renditions one Job may name (IB_LIMIT past it): each is a host copy and
 * an encode, charged to the job (docs/credits.md). */
#define IB_MAX_RENDITIONS 16u

IB_API unsigned ib_mode_bands(ib_mode m);
IB_API const char *ib_mode_name(ib_mode m);
/* Returns IB_MODE_NONE for any string that is not an admitted mode. */
IB_API ib_mode ib_mode_parse(const char *name);

/* How an image's pixels are given back: free_fn(free_ctx, data). */
typedef void (*ib_image_free_fn)(void *ctx, uint8_t *data);

/* Pixels, interleaved, rows packed (no padding). `data` is owned by the
 * image: with free_fn NULL it is malloc'd; otherwise it is memory the
 * executor lent (a range of a device backend's pinned download arena, so a
 * result reaches the caller without a host copy) and ib_image_release gives
 * it back through free_fn. Either way release it with ib_image_release,
 * never free(); a copy of the struct is not a second owner. */
typedef struct ib_image {
  ib_mode mode;
  uint32_t width, height;
  uint8_t *data; /* width * height * bands bytes */
  ib_image_free_fn free_fn;
  void *free_ctx;
} ib_image;

IB_API size_t ib_image_bytes(const ib_image *im);
/* Allocates data for the given shape (zeroed, malloc'd). */
IB_API ib_status ib_image_alloc(ib_image *im, ib_mode mode, uint32_t width, uint32_t height);
/* Gives the pixels back (free or free_fn) and sets data NULL. Safe on any
 * thread, also after the executor that lent them was destroyed. */
IB_API void ib_image_release(ib_image *im);

/* ------------------------------------------------------------ jobs */

/* Input keys: a string (empty allowed) or an unsigned 64-bit integer. */
typedef struct ib_key {
  bool is_u64;
  uint64_t u64;
  char *str; /* owned; NULL when is_u64 */
} ib_key;

IB_API ib_status ib_key_copy(ib_key *dst, const ib_key *src);
IB_API void ib_key_clear(ib_key *k);

/* A parsed, validated job graph (opaque). Built from the serialized protobuf
 * `Job`; parsing also reads each encoded source's header (never decodes)
 * and checks it against limits. */
typedef struct ib_graph ib_graph;

/*
 * Parse-time limits. Path sources are opened and sized before any byte of
 * any of them is read: each against max_source_bytes, their sum against
 * max_job_source_bytes (IB_LIMIT, stage VALIDATE, naming the source and the
 * sizes), so a job cannot make the parser hold more than it admits.
 * ib_executor_parse and ib_executor_parse_buffer lower max_job_source_bytes
 * to the executor's host_bytes: a job whose files alone exceed it could
 * never be admitted. A path resolves beneath source_root without leaving it
 * at any step (openat2 RESOLVE_BENEATH, or a component walk where the kernel
 * lacks it): absolute paths, ".." components and symlinks leading out are
 * IB_INVALID; so is anything not a regular file (FIFOs, devices, sockets,
 * directories), refused without blocking.
 */
#define IB_DEFAULT_MAX_JOB_SOURCE_BYTES (256ull << 20)

typedef struct ib_graph_limits {
  uint64_t max_source_bytes;     /* encoded source size; 0 = 256 MiB */
  uint64_t max_metadata_bytes;   /* 0 = 64 KiB */
  const char *source_root;       /* path sources resolve inside it; NULL = paths rejected */
  uint64_t max_job_source_bytes; /* a job's path sources together; 0 = 256 MiB */
  uint32_t max_side;             /* width and height of every node, decoded sources included (their
                                  * headers are read, never decoded, to check it); a side past it is
                                  * IB_LIMIT naming the size and the bound. 0 = IB_DEFAULT_MAX_SIDE;
                                  * above IB_MAX_SIDE_LIMIT is IB_INVALID */
} ib_graph_limits;

/* On failure, *key_on_error (when not NULL) receives the job's key if the
 * message unpacked, so the error result can still name its input; release
 * it with ib_key_clear. */
IB_API ib_status ib_graph_parse(const uint8_t *job_bytes, size_t len, const ib_graph_limits *limits,
                                ib_graph **out, ib_key *key_on_error, ib_error *err);
IB_API void ib_graph_free(ib_graph *g);
/* The key the job carried (absent key = empty string). Borrowed. */
IB_API const ib_key *ib_graph_key(const ib_graph *g);

/* ------------------------------------------------------------ executor */

typedef enum ib_backend_kind { IB_BACKEND_CPU = 0, IB_BACKEND_CUDA = 1 } ib_backend_kind;

/* What the library has to say besides errors (a backend's profile, a
 * fallback it took), handed to the options' log_cb - as librdkafka's log_cb
 * - on the thread that noticed it; the library itself prints nothing. */
typedef enum ib_log_level { IB_LOG_DEBUG = 0, IB_LOG_INFO = 1, IB_LOG_WARN = 2 } ib_log_level;
typedef void (*ib_log_fn)(void *opaque, ib_log_level level, const char *message);

/* A job began executing (ib_executor_options.start_cb): its id and the tag
 * of the run input it came from (NULL for ib_executor_submit). Called once
 * per submitted job, on the thread that drives the executor, from inside
 * the call that runs it (ib_results_next; ib_executor_submit with queue
 * mode off), without the executor's locks: it must not call into the
 * executor. A host backend (cpu) runs a submission's jobs one after
 * another and reports each as it begins it; a device backend's jobs start
 * together as their submission is enqueued (it may still queue behind the
 * one before it on the device). A job that never ran (cancelled, past its
 * deadline before its submission) is not reported. */
typedef void (*ib_start_fn)(void *opaque, uint64_t job_id, void *tag);

/*
 * Tuning and test settings, set by name (as librdkafka's rd_kafka_conf_set):
 * how the CUDA backend splits and pipelines submissions, the compile pool's
 * bound, the start ramp, its profile. They are not part of the stable API:
 * a key may change or go in any release, and ib_config_set then answers
 * IB_UNSUPPORTED naming it. Keys, ranges and defaults: docs/tuning.md.
 * An ib_config is owned by its creator; ib_executor_create copies it, so it
 * may be destroyed right after. Not thread-safe: one thread sets it.
 */
typedef struct ib_config ib_config;

/* Every key at its default; NULL when out of memory. */
IB_API ib_config *ib_config_new(void);
/* A copy (of the defaults for NULL); NULL when out of memory. */
IB_API ib_config *ib_config_dup(const ib_config *c);
IB_API void ib_config_destroy(ib_config *c);
/* Sets `key` from its text form (decimal integers; booleans "true", "false",
 * "1", "0"). IB_UNSUPPORTED for a key this library does not know (the
 * message names it), IB_INVALID for a value outside the key's range (the
 * message names key, value and the accepted range); `c` is then unchanged. */
IB_API ib_status ib_config_set(ib_config *c, const char *key, const char *value, ib_error *err);
/* Writes the key's value in the form ib_config_set reads into dst (size
 * bytes, NUL included). IB_UNSUPPORTED for an unknown key, IB_LIMIT when
 * it does not fit. */
IB_API ib_status ib_config_get(const ib_config *c, const char *key, char *dst, size_t size,
                               ib_error *err);
/* The i-th key (0, 1, ...), NULL past the last one. Static storage. */
IB_API const char *ib_config_key(size_t i);

/* What a user sets. A zero cap (gpu_bytes, host_bytes, max_jobs,
 * max_in_flight) is IB_INVALID at create; other zero fields take the
 * defaults named here. docs/credits.md explains the four caps. */
typedef struct ib_executor_options {
  ib_backend_kind backend;
  int device;                  /* CUDA device ordinal */
  uint64_t gpu_bytes;          /* device working sets of admitted jobs; default 512 MiB */
  uint64_t host_bytes;         /* host memory of admitted jobs; default 256 MiB */
  uint32_t max_jobs;           /* jobs from admission until their result is handed out; 64 */
  uint32_t max_in_flight;      /* backend submissions outstanding; 2 */
  bool queue;                  /* false: submit completes its own submission */
  const char *cache_dir;       /* compiled-kernel cache directory, shared safely by several
                                * processes; NULL = no disk cache. The library reads no
                                * environment (the CLI picks one: README) */
  uint64_t module_cache_bytes; /* loaded kernel modules, LRU; 0 = 256 MiB */
  uint64_t disk_cache_bytes;   /* cache_dir's bound, evicted by last use; 0 = 2 GiB */
  int host_threads;            /* cuda: host threads for decodes and staging copies, the
                                * driving thread included; -1 = every online CPU, 0 or 1 =
                                * the driving thread alone */
  int compile_threads;         /* cuda: 0 = a new kernel compiles inside its submission;
                                * N > 0 = N threads compile off the submission while
                                * pointwise stages run on an interpreter (docs/design.md) */
  uint32_t compile_timeout_ms; /* cuda, compile_threads > 0: a compile still running past
                                * this fails the jobs waiting for it with IB_INTERNAL (a
                                * fault of the worker, not of the job); 0 = 30000 */
  ib_log_fn log_cb;            /* NULL: the library's messages are dropped */
  void *log_opaque;
  ib_start_fn start_cb; /* NULL: job starts are not reported */
  void *start_opaque;
  const ib_config *config; /* tuning and test settings; NULL = defaults. Copied */
} ib_executor_options;

/* Fills the defaults: CPU backend, device 0, 512 MiB / 256 MiB, 64 jobs,
 * 2 submissions in flight, queue mode on, host_threads -1, no cache
 * directory, module caches of 256 MiB (memory) and 2 GiB (disk), compiles
 * inline, no config. */
IB_API void ib_executor_options_default(ib_executor_options *o);

/*
 * Credits. Admission reserves, up front, every buffer a job can hold against
 * four caps (gpu_bytes, host_bytes, max_jobs, max_in_flight). A job that
 * exceeds a cap on its own is IB_LIMIT before any decode or device
 * allocation; one that would fit an idle executor but not beside live work
 * is IB_QUEUE_FULL. Credits come back when the job's submission completes
 * (its working buffers) and when its result is handed out (the rest), except
 * what the caller still holds: lent result pixels until ib_image_release, a
 * resident output until its last handle is released. These are reservations,
 * not measurements of memory in use. The formulas per backend and a worked
 * example: docs/credits.md.
 */
typedef struct ib_credit_counter {
  uint64_t cap, in_use, peak;
} ib_credit_counter;

/* Counters only: the executor keeps no per-job history. */
typedef struct ib_executor_counters {
  uint64_t admitted;            /* jobs admitted (each got an id) */
  uint64_t rejected_queue_full; /* by status; each consumed an id */
  uint64_t rejected_limit;
  uint64_t rejected_unsupported;
  uint64_t rejected_invalid;
  uint64_t rejected_other;      /* decode (header), internal */
  uint64_t completed;           /* executed successfully */
  uint64_t failed;              /* execution failed (decode, device, ...) */
  uint64_t cancelled;           /* dropped by close before delivery */
  uint64_t delivered;           /* results handed out by ib_results_next */
  uint64_t submissions;         /* backend submissions issued */
  uint64_t resident_live;       /* resident outputs whose handle (or a clone) is held */
  uint64_t resident_gpu_bytes;  /* of gpu_bytes.in_use: held by those handles */
  uint64_t resident_host_bytes; /* of host_bytes.in_use: their download workspaces */
  uint64_t lent_arenas;         /* download arenas with a delivered image still held */
  uint64_t lent_host_bytes;     /* of host_bytes.in_use: those arenas' charges */
  /* Kernel modules (cuda backend; 0 on cpu). */
  uint64_t nvrtc_compiles;           /* NVRTC compiles run (failed ones included) */
  uint64_t nvrtc_compile_us;         /* their total time, microseconds */
  uint64_t module_cache_hits_memory; /* a module found loaded */
  uint64_t module_cache_hits_disk;   /* an image read from cache_dir (no compile) */
  uint64_t module_cache_evictions;   /* modules unloaded by the memory bound */
  uint64_t module_cache_bytes;       /* in use by loaded modules (their image sizes) */
  uint64_t disk_cache_corrupt;       /* cache files that failed their hash: deleted, recompiled */
  uint64_t compile_queue_depth;      /* signatures queued or compiling now (compile pool) */
  uint64_t compile_queue_full;       /* compile requests refused at the pool's bound (QueueFull) */
  uint64_t jobs_waited_compile;      /* jobs held until their kernel compiled */
  uint64_t interp_executions;        /* stages run on the pointwise interpreter tier */
  uint64_t blur_global_passes;       /* multi-pass launch groups (blur; resize's wide windows) run
                                      * as global-memory passes without shared memory (too large
                                      * a line or radius, or none to take): slower, same bytes */
  uint64_t upload_direct_sources;    /* raw sources uploaded from where they lie in pinned memory */
  uint64_t upload_direct_copies;     /* the copies they took: one per run of sources lying one
                                      * after the other in a pinned slab; as many as sources when
                                      * the slabs are not used */
  uint64_t pinned_slab_misses;       /* parsed Jobs' pinned allocations not carved from a slab
                                      * (above 1 MiB, or none to be had): a copy of their own */
  uint64_t pipelined_submissions;    /* submissions of large jobs run as a pipeline of pieces
                                      * (docs/design.md) */
  uint64_t pipelined_pieces;         /* their pieces: each one's uploads, kernels and downloads
                                      * overlap the pieces beside it */
  /* Gauges of what a long run must hold flat (cuda backend; 0 on cpu). */
  uint64_t module_cache_entries; /* kernel modules loaded now */
  uint64_t pinned_pool_bytes;    /* pinned host memory the pool holds (in use or kept) */
  uint64_t disk_cache_bytes;     /* the kernel disk cache's size (this process's view) */
  ib_credit_counter gpu_bytes, host_bytes, jobs, in_flight;
} ib_executor_counters;

typedef struct ib_executor ib_executor;

/*
 * Resident (GPU) outputs. A job whose OutputSpec is `gpu` keeps its terminal
 * image in device memory; its result carries an opaque, immutable handle
 * instead of pixels. The cpu backend keeps no device memory and rejects such
 * jobs at admission (IB_UNSUPPORTED).
 *
 * Credits: while any clone of a handle is held, the output and a reserved
 * download workspace stay charged (docs/credits.md), so a download can
 * never be starved by later admission. The job slot is returned at delivery.
 * Everything returns when the last clone is released. When held handles
 * fill the budget so that nothing can be admitted, a run stream's
 * ib_results_next answers IB_RESULT_BACKPRESSURE (retryable: the stream
 * stays open, at most the one pending input is retained and nothing beyond
 * it is pulled; release handles and call it again); ib_executor_submit
 * answers IB_QUEUE_FULL as for any other lack of room.
 *
 * Lifetime: a handle stays valid after its executor is closed or destroyed
 * while the device is healthy (the backend stays open until the last handle
 * is released). Threads: a handle may move between threads; clones may be
 * used from different threads at once. Downloads from clones of one output
 * serialize through its one reserved workspace. download blocks for the
 * device copy; release does not wait for anything but an ongoing download
 * of the same output.
 */
typedef struct ib_handle ib_handle;

IB_API ib_mode ib_handle_mode(const ib_handle *h);
IB_API uint32_t ib_handle_width(const ib_handle *h);
IB_API uint32_t ib_handle_height(const ib_handle *h);
/* The id of the job that produced it (clones share it). */
IB_API uint64_t ib_handle_job_id(const ib_handle *h);
/* Copies the native bytes (the layout of ib_image) into `out`, newly
 * allocated and owned by the caller (release with ib_image_release).
 * IB_INVALID for a NULL (released) handle; IB_DEVICE when the device
 * failed. The handle stays valid and charged. */
IB_API ib_status ib_handle_download(ib_handle *h, ib_image *out, ib_error *err);
/* Another reference to the same output (released on its own). IB_INVALID
 * for NULL, IB_INTERNAL out of memory. */
IB_API ib_status ib_handle_clone(ib_handle *h, ib_handle **out);
/* Releases this reference and sets *h to NULL (a later download through it
 * is IB_INVALID). The last release frees the device buffer and returns its
 * credits. NULL or *h NULL is a no-op. */
IB_API void ib_handle_release(ib_handle **h);

typedef enum ib_result_kind {
  IB_RESULT_ERROR = 0,
  IB_RESULT_IMAGE,   /* pixels in `image` */
  IB_RESULT_RESIDENT /* output kept on the device: `handle` */
} ib_result_kind;

/* One outcome. Every field is owned by the result; release with
 * ib_result_free. A result stays valid after its executor is closed or
 * destroyed. */
typedef struct ib_result {
  uint64_t job_id;
  bool has_job_id; /* false only for errors before an id was assigned */
  ib_key key;
  bool ok; /* kind != IB_RESULT_ERROR */
  ib_result_kind kind;
  ib_image image;    /* kind IMAGE */
  ib_handle *handle; /* kind RESIDENT: owned by the result (ib_result_free
                      * releases it); keep it beyond the result by taking it
                      * (set handle = NULL) or by ib_handle_clone */
  ib_error error;    /* when !ok */
  void *metadata;    /* the packed metadata snapshot (serialized Job.metadata entries) */
  size_t metadata_len;
  /* Also snapshotted at admission: the packed imgbatch.v1.OutputSpec the job
   * asked for (NULL/0 when absent) and its correlation id (NULL when absent). */
  void *output_spec;
  size_t output_spec_len;
  char *correlation_id;
  /* The source's EXIF/XMP/ICC its CpuOutput's metadata policy keeps, as
   * the encoder reads them (internal layout; NULL/0 when nothing is kept). */
  void *source_meta;
  size_t source_meta_len;
  void *tag;         /* ib_input.tag of the run input it came from (NULL otherwise) */
  uint64_t queue_us; /* admission to the start of its submission */
  uint64_t exec_us;  /* its submission's duration (shared by the submission's jobs) */
  /* A Job with renditions (contract version 3): kind IMAGE with `image`
   * empty and one image per Job.renditions entry here, in that order (owned
   * by the result), and the packed renditions (a serialized Job holding
   * only its renditions field) snapshotted at admission. */
  ib_image *renditions;
  size_t n_renditions;
  void *renditions_spec;
  size_t renditions_spec_len;
} ib_result;

IB_API void ib_result_free(ib_result *r);

/* Creates an executor. Fails with IB_INVALID for zero caps, IB_DEVICE when
 * the backend cannot start (the cuda backend where no CUDA driver or device
 * is present). `opts` NULL = defaults; it is copied (cache_dir too).
 * Does not block beyond backend start-up. */
IB_API ib_status ib_executor_create(const ib_executor_options *opts, ib_executor **out,
                                    ib_error *err);

/* Closes (as ib_executor_close) and frees. Resident handles it delivered
 * stay valid (the backend closes with the last of them). A result stream still open is
 * detached: its ib_results_next answers IB_CLOSED; the caller still frees
 * it with ib_results_close. NULL is a no-op. Blocks while in-flight
 * submissions are fenced. Must not be called from inside a run input
 * callback. */
IB_API void ib_executor_destroy(ib_executor *ex);

/*
 * ib_graph_parse for this executor's backend: large byte fields (raw source
 * pixels, encoded sources) are unpacked straight into memory the backend
 * uploads from without another host copy - pinned host memory on the CUDA
 * backend (bounded by host_bytes; past that they land on the heap and are
 * staged as usual), the heap on the CPU backend. That unpack is the one
 * CPU pass over raw pixels. The graph may be submitted to any executor and
 * may outlive this one (it keeps the backend's memory alive). Safe to call
 * from any number of threads at once, also while another thread drives the
 * executor and from inside a run input callback; not concurrently with
 * ib_executor_destroy.
 */
IB_API ib_status ib_executor_parse(ib_executor *ex, const uint8_t *job_bytes, size_t len,
                                   const ib_graph_limits *limits, ib_graph **out,
                                   ib_key *key_on_error, ib_error *err);

/*
 * Zero-copy ingest. ib_executor_buffer returns a buffer of `len` bytes in
 * the memory ib_executor_parse unpacks into (pinned on the CUDA backend
 * while the parse budget allows, else the heap); NULL when out of memory.
 * Read or write one serialized Job into it and hand it to
 * ib_executor_parse_buffer, which takes the buffer in every case (freed
 * with the graph, or at once on failure) and parses it without copying its
 * raw source pixels: the graph reads them where they lie and the upload
 * DMAs them from there, so they cross host memory only when the caller put
 * them in the buffer. A buffer not handed over is given back with
 * ib_executor_buffer_free (before the executor is destroyed). Same threads
 * rules as ib_executor_parse.
 */
IB_API uint8_t *ib_executor_buffer(ib_executor *ex, size_t len);
IB_API void ib_executor_buffer_free(ib_executor *ex, uint8_t *buf);
IB_API ib_status ib_executor_parse_buffer(ib_executor *ex, uint8_t *buf, size_t len,
                                          const ib_graph_limits *limits, ib_graph **out,
                                          ib_key *key_on_error, ib_error *err);

/*
 * Admits one job. `g` is a graph from ib_graph_parse; `key` overrides its
 * input key (NULL = the key the Job carried). A key is a string (empty
 * allowed; NULL str means the empty string; must be UTF-8 as the wire's
 * string is) or a u64; duplicates are allowed (ids tell them apart).
 *
 * Ownership: on IB_OK the executor owns `g` (the caller must not touch it
 * again); on any other status the caller keeps it (so it can retry after
 * IB_QUEUE_FULL). The key is copied.
 *
 * Ids: every admission decision consumes the next id, accepted or rejected
 * (QueueFull, Limit, Unsupported, Invalid): `*job_id` is set whenever an id
 * was consumed, a retry gets a new one. IB_BUSY, IB_CLOSED and id
 * exhaustion (IB_LIMIT with *job_id untouched, after id UINT64_MAX was
 * used) consume none. Ids start at 1 and never wrap.
 *
 * Blocking: validation and admission are synchronous. Queue mode on: the
 * job waits for a results stream to drive it. Queue mode off: the job's own
 * one-job submission runs to completion before submit returns; its result
 * stays undelivered (occupying its credits) until a join stream yields it.
 *
 * IB_BUSY when a result stream is open and not exhausted, or when called
 * from inside a run input callback or concurrently with another call.
 */
IB_API ib_status ib_executor_submit(ib_executor *ex, ib_graph *g, const ib_key *key,
                                    uint64_t *job_id, ib_error *err);

/* A stream of results (opaque); owned by the caller, freed by
 * ib_results_close. One open, unexhausted stream per executor at a time. */
typedef struct ib_results ib_results;

/* A stream over every job admitted so far. Creating it does not wait and
 * runs nothing; each ib_results_next drives execution (groups pending jobs
 * into submissions of at most max_jobs / max_in_flight jobs and 256 ops,
 * at most max_in_flight outstanding) until one result is ready. Exhausted (IB_END) once every
 * admitted job was delivered. */
IB_API ib_status ib_executor_join(ib_executor *ex, ib_results **out);

/* One input for run. On IB_OK the callback sets `graph` (ownership passes to
 * the executor) and optionally `key` with has_key (ownership of key.str
 * passes too; without has_key the graph's key is used). */
typedef struct ib_input {
  ib_graph *graph;
  bool has_key;
  ib_key key;
  void *tag; /* the caller's, handed back untouched on this input's result */
} ib_input;

/* The input iterator of run: called only from inside ib_results_next, on
 * the caller's thread. Returns IB_OK with an input, IB_END when there are
 * no more inputs (it is not called again), IB_AGAIN when no input is ready
 * now but more may come (a live source such as a pipe or a Kafka
 * consumer: it is asked again at the next opportunity, and meanwhile the
 * stream delivers what completes), or another status with `err`
 * filled for an input that failed before it could be admitted: the stream
 * yields that as an error result (carrying `in->key` when has_key, and `in->tag`) and goes
 * on pulling. With err->stage IB_STAGE_PARSE (the bytes were not a Job) the
 * result has no id; any later stage (a Job that failed validation, e.g.
 * ib_graph_parse's IB_STAGE_VALIDATE) is an admission rejection: it
 * consumes an id, counts as rejected, and the result carries the id. A producer that
 * must stop after such an error returns IB_END on its next call. Any call
 * into the executor from inside the callback answers IB_BUSY. */
typedef ib_status (*ib_input_next_fn)(void *user, ib_input *in, ib_error *err);

/*
 * A streaming stream: pulls inputs lazily from `next`, keeps at most the
 * credit window admitted plus one pulled input waiting for credits (an
 * input that got IB_QUEUE_FULL is retried by the stream itself after work
 * drains), groups admitted jobs into submissions and yields one result at
 * a time. It never collects all inputs or all outputs. An input rejected at
 * admission (Invalid, Unsupported, Limit) is yielded as an error result
 * with its consumed id and the stream goes on. Jobs admitted earlier by
 * submit are driven and delivered by this stream too. `user` is borrowed
 * until the stream is exhausted or closed. Creating the stream pulls
 * nothing.
 */
IB_API ib_status ib_executor_run(ib_executor *ex, ib_input_next_fn next, void *user,
                                 ib_results **out);

/*
 * The next result. IB_OK: `*out` holds a result (owned by the caller; every
 * credit it held is returned, but a lent image's arena charge, which
 * returns with the arena's last ib_image_release). IB_END: exhausted (again on every later
 * call); another stream may then be opened. IB_CLOSED: the executor was
 * closed or destroyed. IB_BUSY: called recursively (from a run input
 * callback) or concurrently. IB_RESULT_BACKPRESSURE (run streams): held
 * resident handles or lent result images fill the budget so the pending
 * input cannot be admitted
 * and nothing else is live; the stream stays open - release handles and call
 * again. IB_AGAIN (run streams): the input callback answered IB_AGAIN and
 * nothing is pending or in flight, so there is nothing to wait for: the
 * caller waits for its source by its own means and calls again (the stream
 * stays open). IB_INTERNAL: out of memory in the core. A
 * failed submission (device-wide failure) is not a stream error: each of
 * its jobs is yielded as an error result. Blocks until a result is ready
 * (running CPU work inline, waiting on device events).
 */
IB_API ib_status ib_results_next(ib_results *rs, ib_result *out);

/* Frees a stream. Closing a stream that is not exhausted cancels its
 * executor (ib_executor_close): nothing more is pulled, unsubmitted jobs are
 * dropped, in-flight submissions are fenced, undelivered results are
 * discarded and every credit returns. NULL is a no-op. Called from inside a
 * run input callback (or while another thread drives the executor) it does
 * nothing: the stream stays open and must be closed again later. */
IB_API void ib_results_close(ib_results *rs);

/* Cancels: stops pulling inputs (the iterator is not called again; the
 * input it yielded last, if waiting for credits, is freed), cancels jobs not
 * yet submitted, waits for in-flight submissions (fence) and discards their
 * outputs, discards undelivered results, returns every credit to zero (but
 * the bytes of delivered resident handles still held: they stay valid) and
 * marks the executor closed (later submit/join/run: IB_CLOSED). Delivered
 * results stay valid. Idempotent. IB_BUSY from inside a run callback or
 * while another thread drives the executor. Blocks on the fence. */
IB_API ib_status ib_executor_close(ib_executor *ex);

/* A consistent copy of the counters. Safe from any thread (takes a lock). */
IB_API void ib_executor_counters_get(ib_executor *ex, ib_executor_counters *out);

/*
 * Memory the backend keeps for reuse, and the most each pool may hold
 * (docs/credits.md, "Pools"): besides its heap, what a long-running
 * process's memory is made of. A pool fills towards its cap as new sizes
 * arrive and stays there; past the cap a freed block goes back.
 *   host:   cuda: the pinned pool (in use or kept), cap 4 x host_bytes;
 *           cpu: the large blocks (1 MiB and up) cached or handed out, cap
 *           host_bytes
 *   device: cuda: the device block pool (in use or kept), cap 2 x
 *           gpu_bytes; cpu: 0
 * Safe from any thread. Added in 0.2.1.
 */
typedef struct ib_executor_pools {
  uint64_t host_bytes, host_cap;
  uint64_t device_bytes, device_cap;
} ib_executor_pools;
IB_API void ib_executor_pools_get(ib_executor *ex, ib_executor_pools *out);

/*
 * Codec scratch: the PNG decoders' and encoders' large buffers that each
 * codec thread keeps for its next image (docs/credits.md, "What the caps do
 * not count"). Process-wide, not per executor: *kept is what all threads
 * keep now, *cap the most they may keep together (a buffer past it is used
 * once and freed). Either pointer may be NULL. Safe from any thread. Added
 * in 0.2.2.
 */
IB_API void ib_codec_scratch_get(uint64_t *kept, uint64_t *cap);

#ifdef IB_FAULTS
/* Test hook, compiled only with the CMake option IB_FAULTS (the test build):
 * makes later submissions fail as a sick worker would, in front of the
 * backend's driver calls. `spec`: "device@N" (the Nth submission fails with
 * IB_DEVICE, once), "device@N+" (the Nth and every later one), "alloc@N"
 * (the Nth job to run fails with IB_INTERNAL, host allocation), "key=K" (every
 * submission holding a job keyed K fails with IB_DEVICE), "stall=MS:K" (the
 * first submission holding a job keyed K blocks MS milliseconds before it
 * runs, as a hung decode or kernel would). */
ib_status ib_executor_test_fault(ib_executor *ex, const char *spec, ib_error *err);
#endif

#ifdef __cplusplus
}
#endif
#endif
