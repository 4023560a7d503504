/*
 * credits.h - admission credits (internal): the four caps of
 * ib_executor_options, what each job reserves against them, and the
 * executor's counters. All updates go through one lock so counters can be
 * read from any thread.
 */
#ifndef IB_EXEC_CREDITS_H
#define IB_EXEC_CREDITS_H

#include <pthread.h>

#include "imgbatch.h"
#include "model/graph.h"

/* A job's reservation. The working part returns when its submission
 * completes, the held part when its result is delivered or discarded. */
typedef struct ib_charge {
  uint64_t gpu_work, host_work;
  uint64_t gpu_held, host_held;
} ib_charge;

typedef struct ib_credits {
  pthread_mutex_t lock;
  ib_executor_counters c; /* caps live in c.<cap>.cap */
} ib_credits;

void ib_credits_init(ib_credits *cr, const ib_executor_options *o);
void ib_credits_destroy(ib_credits *cr);

/* What the charge of a job depends on besides its graph (see docs/credits.md for the formulas). */
typedef struct ib_charge_rules {
  uint64_t echo_bytes; /* the metadata/output-spec snapshot */
  /* Working buffers are host memory (the CPU backend): their peak while
   * running (backend.h host_working_set); NULL for a device backend. */
  uint64_t (*host_working_set)(const ib_graph *g);
  bool resident; /* output gpu */
  /* Device backends: the backend's job_bytes host figure covers the source
   * bytes and every upload/parameter staging it will use, so the core
   * charges the sources alone (no staging estimate of its own). */
  bool staging_by_backend;
  /* Device backends: results are lent ranges of the download arena (or
   * the backend's own allocation): one host copy of the output, not two. */
  bool lends;
  /* The output is downloaded into the Job buffer (backend.h
   * out_in_buffer): held = the buffer, working = sources outside it. */
  bool out_in_buffer;
} ib_charge_rules;

struct ib_backend;
/* The rules of a backend row. */
ib_charge_rules ib_charge_rules_of(const struct ib_backend *be, void *state, const ib_graph *g,
                                   uint64_t echo_bytes, bool resident);

/* The core's conservative charge of `g`. Saturates instead of wrapping. */
ib_charge ib_charge_for(const ib_graph *g, const ib_charge_rules *r);
/* Raises the working part to a backend's own estimate (backend.h job_bytes):
 * a backend can only raise a charge. */
void ib_charge_raise(ib_charge *ch, uint64_t gpu_bytes, uint64_t host_bytes);
uint64_t ib_charge_gpu_total(const ib_charge *ch);
uint64_t ib_charge_host_total(const ib_charge *ch);

/* Counter bumps (under the lock). */
typedef enum ib_count {
  IB_COUNT_ADMITTED,
  IB_COUNT_COMPLETED,
  IB_COUNT_FAILED,
  IB_COUNT_CANCELLED,
  IB_COUNT_DELIVERED,
  IB_COUNT_PARKED, /* held back until its kernel compiled (jobs_waited_compile) */
  IB_COUNT_NONE
} ib_count;

/* IB_LIMIT when the charge alone exceeds a cap (the job can never run). */
ib_status ib_credits_check_caps(ib_credits *cr, const ib_charge *ch, ib_error *err);
/* Reserves a job slot and the charge and counts the job admitted, or
 * IB_QUEUE_FULL naming the cap that has no room beside live work (counted
 * as a QueueFull rejection: a run stream's waiting input meets it about
 * once per job at a full window). */
ib_status ib_credits_reserve(ib_credits *cr, const ib_charge *ch, ib_error *err);
/* Returns the working part (zeroing it in *ch) and bumps `what` (as
 * ib_credits_count; IB_COUNT_NONE: nothing) under the same lock: the core
 * takes it a few times per job, and a 256² job's whole budget is ~5 us. */
void ib_credits_return_work(ib_credits *cr, ib_charge *ch, ib_count what);
/* Returns whatever *ch still holds and the job slot; bumps `what`. */
void ib_credits_return_all(ib_credits *cr, ib_charge *ch, ib_count what);

/* A delivered resident output keeps its held part (device buffer and
 * download workspace) beyond delivery: moves those bytes from the job to the
 * resident account and zeroes *ch (the job slot still returns through
 * ib_credits_return_all). release_resident returns the bytes. */
void ib_credits_keep_resident(ib_credits *cr, ib_charge *ch, uint64_t *gpu, uint64_t *host);
void ib_credits_release_resident(ib_credits *cr, uint64_t gpu, uint64_t host);
/* A lent download arena keeps `host` bytes (its jobs' held parts, already
 * in use) until release_lent. */
void ib_credits_lend(ib_credits *cr, uint64_t host);
void ib_credits_release_lent(ib_credits *cr, uint64_t host);
/* True while delivered outputs hold bytes - resident handles or lent
 * arenas (admission may wait on them). */
bool ib_credits_outputs_held(ib_credits *cr);

bool ib_credits_submission_room(ib_credits *cr);
void ib_credits_submission_begin(ib_credits *cr);
void ib_credits_submission_end(ib_credits *cr);

void ib_credits_count(ib_credits *cr, ib_count what);
void ib_credits_count_rejection(ib_credits *cr, ib_status st);

#endif
