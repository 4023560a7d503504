/*
 * exec_internal.h - the executor core's internal state and the functions its
 * files share (worker/exec; the public API is imgbatch.h).
 * A job moves pending -> (submission) in flight -> completed -> delivered;
 * each list is a FIFO. Credits are reserved at admission and returned in
 * two parts: the working part when the job's submission completes, the
 * held part when its result is delivered or discarded.
 */
#ifndef IB_EXEC_INTERNAL_H
#define IB_EXEC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "exec/backend.h"
#include "exec/config.h"
#include "exec/credits.h"
#include "imgbatch.h"
#include "model/graph.h"

#define IB_MAX_OPS_PER_SUBMISSION 256u

/* What a result echoes of its job, copied at admission. */
typedef struct ib_snapshot {
  uint8_t *metadata;
  size_t metadata_len;
  uint8_t *output_spec;
  size_t output_spec_len;
  char *correlation_id;
  uint8_t *source_meta; /* codec/metadata.h ib_meta_pack */
  size_t source_meta_len;
  uint8_t *renditions; /* a packed Job holding only its renditions */
  size_t renditions_len;
} ib_snapshot;

/* The backend state and the credits, shared by an executor and the
 * resident handles it delivered: the last of them to let go closes the
 * backend (so handles outlive the executor while the device is healthy). */
typedef struct ib_devref {
  atomic_uint refs;
  const ib_backend *backend;
  void *state;
  ib_credits credits;
} ib_devref;

/* devref.c: one reference more; one fewer (the last closes the backend). */
ib_devref *ib_devref_get(ib_devref *d);
void ib_devref_put(ib_devref *d);

/* A large job for a backend without large_job: its device charge. */
#define IB_EXEC_LARGE_JOB_BYTES ((uint64_t)1 << 20)

typedef struct ib_job {
  uint64_t id;
  ib_key key;
  ib_graph *graph;  /* owned; freed once its submission completed */
  ib_charge charge; /* reserved credits (working part zeroed once returned) */
  ib_snapshot snap;
  ib_status status; /* outcome once completed */
  ib_error err;
  ib_image out;
  ib_image *renditions; /* a job with renditions: its images, in the Job's order */
  size_t n_renditions;
  void *dev;     /* resident output kept by the backend (until a handle owns it) */
  bool resident; /* output gpu */
  bool large;    /* a large job (backend large_job, asked at admission) */
  void *tag;     /* ib_input.tag, handed back on the result */
  uint64_t admitted_us, queue_us, exec_us;
  struct ib_job *next;
} ib_job;

typedef struct ib_job_fifo {
  ib_job *head, *tail;
  size_t n;
} ib_job_fifo;

typedef struct ib_sub {
  ib_backend_submission *backend_sub;
  ib_backend_job *bjobs;
  ib_job **jobs;
  size_t n;
  uint64_t started_us;
  struct ib_sub *next;
} ib_sub;

/* Test-only fault injection (IB_FAULTS builds; fault.c). */
typedef struct ib_fault_plan {
  uint64_t device_at; /* submission number (1-based) that fails as a device error */
  bool device_sticky; /* ... and every one after it */
  uint64_t alloc_at;  /* the Nth job to run fails its host allocation, once */
  uint64_t jobs_run;
  bool has_key;
  char key[128];     /* every submission holding a job with this string key fails */
  uint64_t stall_ms; /* the first submission holding a job keyed stall_key blocks this long */
  char stall_key[128];
} ib_fault_plan;

struct ib_executor {
  ib_executor_options opts; /* cache_dir and config point at the two below */
  char *cache_dir;
  ib_config config;
  const ib_backend *backend; /* = dev->backend */
  void *backend_state;       /* = dev->state */
  ib_devref *dev;            /* one reference */
  atomic_flag driving;       /* set while one call drives the executor */
  bool closed;
  uint64_t next_id;
  bool ids_exhausted;
  ib_credits *credits; /* = &dev->credits: caps, usage, counters (own lock) */
  ib_job_fifo pending, completed;
  /* Admitted jobs whose kernel is still compiling (backend job_ready):
   * they hold their credits and join pending once ready (dispatch.c). */
  ib_job_fifo parked;
  uint64_t parked_epoch; /* backend ready_epoch when they were last asked about */
  bool parked_force;     /* the backend has nothing left to wait for: submit them */
  ib_sub *in_flight_head, *in_flight_tail;
  struct ib_results *stream; /* the open, unexhausted stream, if any */
  uint64_t submissions_issued;
  /* Jobs of the last submission issued since the executor was last idle
   * (nothing pending or in flight): the start ramp doubles it (dispatch.c
   * due_jobs); 0 once idle. */
  size_t ramp_last;
  uint64_t polled_us;  /* when ready() was last asked with results waiting (results.c) */
  bool backend_full;   /* the last admission's QueueFull came from backend->admit */
  ib_start_sink start; /* opts.start_cb (dispatch.c: job starts) */
  ib_fault_plan fault;
};

struct ib_results {
  ib_executor *ex; /* NULL once detached (executor destroyed) */
  bool finished;   /* exhausted, closed or cancelled */
  ib_status final; /* IB_END or IB_CLOSED once finished */
  bool is_run;
  ib_input_next_fn next;
  void *user;
  bool input_end;
  bool input_again;   /* the callback answered IB_AGAIN in this step */
  bool has_lookahead; /* one pulled input waiting for credits */
  ib_input lookahead;
  ib_job *prepared; /* the lookahead's checked job, once the reservation failed */
  bool has_held;    /* an error result to yield before anything else */
  ib_result held;
  bool due; /* fill stopped admitting for a due submission (ib_exec_batch_due) */
};

/* ib_executor_create over a given backend (tests drive fake backends). */
ib_status ib_exec_create_with(const ib_executor_options *opts, const ib_backend *be,
                              ib_executor **out, ib_error *err);

/* Driving guard: true when the caller now owns the executor. */
static inline bool ib_exec_enter(ib_executor *ex) {
  return !atomic_flag_test_and_set(&ex->driving);
}
static inline void ib_exec_leave(ib_executor *ex) { atomic_flag_clear(&ex->driving); }

/* Admission (submit.c). On IB_OK the job owns `g`; `*job_id` is set when an
 * id was consumed. With queue mode off the job also runs to completion. */
ib_status ib_exec_admit(ib_executor *ex, ib_graph *g, const ib_key *key, void *tag,
                        uint64_t *job_id, bool *id_consumed, ib_error *err);

/* Admission in two steps, for the run stream's input that waits for
 * credits: every check of its outcome cannot change while it waits (but
 * the backend's own admit, which already passed), so a retry only takes
 * a new id and tries the reservation again (one job in a full window was
 * checked, snapshotted, charged and freed twice, with a QueueFull message
 * formatted each time). prepare: every check but the reservation; on
 * IB_OK `*out` is the job (no id taken yet); on failure the decision
 * consumed an id as ib_exec_admit's would. commit: takes the id and
 * reserves; on IB_OK the job (and `g`) are the executor's, else the
 * caller keeps the job for a retry or gives it back with unprepare.
 * quiet_full: a QueueFull gets no message (the stream drops it). */
ib_status ib_exec_prepare(ib_executor *ex, ib_graph *g, const ib_key *key, void *tag, ib_job **out,
                          uint64_t *job_id, bool *id_consumed, ib_error *err);
ib_status ib_exec_commit(ib_executor *ex, ib_job *job, ib_graph *g, bool quiet_full,
                         uint64_t *job_id, bool *id_consumed, ib_error *err);
void ib_exec_unprepare(ib_job *job);

/* A rejection decided before admission (validation by the producer):
 * consumes an id and counts it; false when ids are exhausted. */
bool ib_exec_reject(ib_executor *ex, ib_status st, uint64_t *job_id);

/* Dispatch (dispatch.c). */
/* Issues submissions while max_in_flight allows: full batches only, or
 * whatever is pending when `partial`. */
ib_status ib_exec_dispatch(ib_executor *ex, bool partial);
/* A run stream stops admitting (results.c fill) to issue a submission
 * now: one of the start ramp (config key ramp_jobs, docs/tuning.md) or a full
 * batch beside running work, once max_in_flight has room or the oldest
 * submission completed (collected next, which makes room). */
bool ib_exec_batch_due(const ib_executor *ex);
/* Waits for the oldest submission (block) or collects finished ones
 * (non-blocking); completed jobs move to the completed FIFO. */
void ib_exec_wait_oldest(ib_executor *ex);
void ib_exec_collect_ready(ib_executor *ex);
/* Queues an admitted job (queue mode): pending, or parked while the
 * backend says its kernel is not ready. */
void ib_exec_queue(ib_executor *ex, ib_job *job);
/* Only parked jobs are live: blocks until a compile finished, the nearest
 * parked deadline or a second, whichever comes first; with a live source
 * (more input may come) only about 100 us. */
void ib_exec_wait_parked(ib_executor *ex, bool source_live);
/* Runs one job alone to completion (queue mode off). */
void ib_exec_run_alone(ib_executor *ex, ib_job *job);
bool ib_exec_has_live(const ib_executor *ex);

#ifdef IB_FAULTS
bool ib_fault_submission(ib_executor *ex, ib_sub *s, uint64_t n);
void ib_fault_job(ib_executor *ex, const ib_job *j, ib_backend_job *bj);
void ib_fault_stall(ib_executor *ex, const ib_sub *s);
#endif

/* Jobs (job.c). */
void ib_job_fifo_push(ib_job_fifo *f, ib_job *j);
ib_job *ib_job_fifo_pop(ib_job_fifo *f);
/* Frees a job and returns every credit it still holds, counting it as
 * `what` (IB_COUNT_NONE: not counted). */
void ib_job_discard(ib_executor *ex, ib_job *j, ib_count what);
/* Moves a completed job into `out` and returns its remaining credits. */
void ib_job_deliver(ib_executor *ex, ib_job *j, ib_result *out);
/* Cancels everything live (close). */
void ib_exec_cancel_all(ib_executor *ex);

/* Resident handles (handle.c): a new handle owning j->dev and j's held
 * charge (the job slot returns); NULL when out of memory. */
ib_handle *ib_handle_adopt(ib_executor *ex, ib_job *j);
/* Gives a kept device buffer back to the backend (failed/discarded jobs). */
void ib_exec_release_dev(ib_executor *ex, ib_job *j);

/* Lent outputs (lent.c): after a submission's wait, the images of each
 * arena token the backend set get a free hook that keeps the arena and
 * its jobs' held charge until the last one is released. */
void ib_exec_adopt_lent(ib_executor *ex, ib_sub *s);

/* Metadata / echo snapshot (snapshot.c). */
ib_status ib_snapshot_take(const ib_graph *g, ib_snapshot *s, ib_error *err);
void ib_snapshot_clear(ib_snapshot *s);
uint64_t ib_snapshot_bytes(const ib_snapshot *s);

uint64_t ib_now_us(void);

#endif
