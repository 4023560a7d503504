/*
 * cuda_internal.h - the CUDA backend's state and the passes of a submission
 * (internal to worker/gpu/cuda_*.c). ib_cuda_submit runs, in order:
 *   plan    (cuda_layout.c) each job's device plan;
 *   layout  (cuda_layout.c) the submission's offsets: device block
 *           [upload | direct | inter | download], pinned staging = upload,
 *           direct = raw sources in pinned memory, by host address, those
 *           lying one after the other in one allocation (a slab, pinned.h)
 *           at the same offsets as on the host, so they upload as one span,
 *           download arena = the download region's arena part;
 *   stage   (cuda_stage.c)  sources and parameter blocks into pinned staging,
 *           on the host pool;
 *   groups  (cuda_launch.c) launch groups per level and chain signature,
 *           their descriptor tables written into staging;
 *   enqueue (cuda_submit.c) upload, direct uploads, launches
 *           (cuda_launch.c), resident copies, the arena download, own-buffer
 *           downloads, the event: on the slot's stream (small
 *           submissions split over its aux streams), or for large jobs as a
 *           pipeline of pieces over the three pipe streams;
 * and ib_cuda_wait (cuda_submit.c) hands the results their lent memory.
 */
#ifndef IB_GPU_CUDA_INTERNAL_H
#define IB_GPU_CUDA_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/hostpar.h"
#include "core/log.h"
#include "exec/backend.h"
#include "gpu/charge.h"
#include "gpu/codegen.h"
#include "gpu/compile_pool.h"
#include "gpu/cu.h"
#include "gpu/gplan.h"
#include "gpu/interp.h"
#include "gpu/module_store.h"
#include "gpu/nvrtc_cache.h"
#include "gpu/pinned.h"
#include "gpu/pool.h"

/* Not cuda_backend.h: the backend's entry points call into the files that
 * include this one, never the other way round. */
typedef struct ib_cuda ib_cuda;

#define IB_MAX_STREAMS 8
/* Streams one submission may be split over (config key cuda_pieces,
 * docs/tuning.md): at most, and by default (more pieces' driver calls cost
 * more than they hide: bench/RESULTS.md). */
#define IB_MAX_PIECES 4
#define IB_DEFAULT_PIECES 2
/* Config key cuda_pipe_kib's default (docs/tuning.md): pieces of 8 MiB in +
 * out (one 2048^2 L image: long enough that a piece's four event calls
 * hide behind its copies, short enough to fill and drain fast). */
#define IB_DEFAULT_PIPE_BYTES ((size_t)8 << 20)
/* The pipe streams (ib_cuda.pipe): host-to-device copies, kernels,
 * device-to-host copies. */
enum { IB_PIPE_UP, IB_PIPE_RUN, IB_PIPE_DOWN, IB_PIPE_STREAMS };
#define IB_CUDA_THREADS 256u
/* ib_executor_options.compile_timeout_ms 0: below the worker's default
 * --stall-seconds (60), so a wedged compile is answered as the worker's
 * fault before the stall rule would answer its job with Timeout. */
#define IB_COMPILE_TIMEOUT_MS_DEFAULT 30000u

/* A loaded kernel module, an entry of ib_cuda.mods; or (interp) a chain
 * run by the interpreter tier, with its step table, for one submission. */
typedef struct ib_kfunc {
  char sig[512];
  CUmodule mod;
  CUfunction chain, lsum;
  /* A PASSES head's kernels (ib_dev_passes.kernels, in its order) and the
   * dynamic shared bytes its big_smem ones may take (0: none). */
  CUfunction pass[IB_DEV_MAX_KERNELS];
  unsigned smem_max;
  bool interp;
  ib_iprog prog;
} ib_kfunc;

/* A chain's kernel signature and the key of its module in ib_cuda.mods
 * (equal chains, equal signatures: one kernel). */
typedef struct ib_sigkey {
  char sig[512];
  uint64_t key[2];
} ib_sigkey;

/* A stage whose head the interpreter cannot run (gathers, passes): it
 * needs its specialised kernel. */
typedef struct ib_tier_head {
  ib_gchain chain;
  ib_sigkey sk;
  int stage;
} ib_tier_head;

/* A graph admission planned with the compile pool on: a graph whose nodes
 * equal `like`'s (ib_cuda_same_nodes) has the same stages. It keeps only
 * what the graph fixes - which heads it has; whether their kernels are
 * loaded is looked up afresh every time, so a finished compile is seen at
 * once. */
typedef struct ib_tier_graph {
  ib_graph like;
  bool valid;
  ib_gplan plan; /* like's plan: the charge (job_bytes) of a new graph takes it too */
  ib_tier_head *heads;
  int n_heads, cap;
  uint64_t used; /* the memo's clock at its last use */
} ib_tier_graph;

/* The last IB_TIER_MEMO_GRAPHS graphs admission planned (driving thread),
 * so a stream that interleaves a few graphs plans each once for admission,
 * job_ready and its charge. The least recently used one makes room. */
#define IB_TIER_MEMO_GRAPHS 8
typedef struct ib_tier_memo {
  ib_tier_graph g[IB_TIER_MEMO_GRAPHS];
  ib_tier_graph *last; /* the one looked up last (tests read its heads) */
  uint64_t clock;
  uint64_t plans; /* graphs planned for it (a memo miss each) */
} ib_tier_memo;

/* One submission on the profile's timeline (ib_cuda.prof_subs). Device
 * times: up0 when its first upload could start (the up stream reached it:
 * the previous submission's uploads done and this one enqueued), up1 when
 * its last upload ended (pipelined only), down1 when its last download
 * ended; -1 when unknown. */
#define IB_CUDA_PROF_SUBS 64
typedef struct ib_cuda_prof_sub {
  uint32_t jobs, pieces;
  double submit, enqueue, submitted, wait, waited; /* host ms after prof_base */
  float up0, up1, down1;                           /* device ms after prof_base_ev */
  uint64_t dev_allocs, pin_allocs;                 /* fresh blocks taken by its submit */
} ib_cuda_prof_sub;

struct ib_cuda {
  const ib_cu *cu;
  CUdevice dev;
  CUcontext ctx;
  int sm_count;
  int smem_optin; /* opt-in dynamic shared memory per block */
  char arch[16];
  char desc[200];
  ib_kcache *kc;
  ib_pool dpool;
  ib_pinned *pin; /* upload staging, download arenas, parsed Jobs */
  CUstream streams[IB_MAX_STREAMS];
  unsigned n_streams, next_stream;
  /* pieces > 1: per stream slot, the streams of a submission's other
   * pieces, the event they wait for (its staging upload) and the events
   * the slot's stream waits for (their ends). */
  unsigned pieces;
  /* Submissions' completion events, kept for the next ones (driving
   * thread): no cuEventCreate/cuEventDestroy per submission. */
  CUevent ev_free[2 * IB_MAX_STREAMS];
  unsigned n_ev_free;
  CUstream aux[IB_MAX_STREAMS][IB_MAX_PIECES - 1];
  CUevent fork_ev[IB_MAX_STREAMS], join_ev[IB_MAX_STREAMS][IB_MAX_PIECES - 1];
  /* pipe_bytes > 0: a submission of large jobs (ib_cuda_pipelined) runs as
   * pieces of about pipe_bytes in + out; each piece's uploads on pipe[UP],
   * its launches on pipe[RUN] after them, its downloads on pipe[DOWN] after
   * those (two events, recorded again for every piece: a wait takes the
   * record made before it). The streams are shared by every submission, so
   * the copies of the next submission queue behind this one's in each
   * direction instead of sharing the copy engine with them. */
  size_t pipe_bytes;
  CUstream pipe[IB_PIPE_STREAMS];
  CUevent pipe_ev[2];
  _Atomic uint64_t pipe_subs, pipe_pieces; /* ib_executor_counters.pipelined_* */
  /* Loaded modules by chain signature: the in-memory module cache, an LRU
   * bounded by module_cache_bytes (a module counts its image's bytes).
   * The rule that keeps eviction safe: every module a submission launches
   * from is pinned from the lookup in submit until ib_cuda_sub_release,
   * which runs only once the submission's work is complete or fenced; the
   * LRU never evicts a pinned entry, so cuModuleUnload never races a launch.
   * The memory layer of kc is off: a module is kept here or read from disk. */
  ib_lru mods;
  ib_hostpar *hp;
  /* Submissions returned by submit whose enqueue waits for their posted
   * staging, oldest first (cuda_submit.c, driving thread). */
  ib_backend_submission *staged_head, *staged_tail;
  /* compile_threads > 0: new signatures compile on the pool while the
   * interpreter module (imod: ifn, ilsum) runs pointwise stages. */
  ib_cpool *cpool;
  CUmodule imod;
  CUfunction ifn, ilsum;
  int no_batch_copy;  /* cuMemcpyBatchAsync refused once: copy one by one */
  unsigned batch_min; /* copies per cuMemcpyBatchAsync call, at least */
  ib_log_sink log;
  ib_charge_memo memo;
  ib_tier_memo tmemo;
  /* cuda_profile: host seconds per phase, logged at close (plan, staging,
   * launch = submit; device = blocked in wait; results = result copies). */
  int prof;
  /* Multi-pass heads get no shared memory (ib_dev_group.smem_max 0), so
   * they run their global-memory launches (tests). */
  bool pass_global;
  /* Launch groups of multi-pass heads that took a slow launch (a line or
   * tile too large for shared memory): counted, never silent
   * (ib_executor_counters' global-pass count). */
  _Atomic uint64_t pass_slow;
  /* Raw sources uploaded from where they lie in pinned memory, and the
   * copies they took: one per run of sources lying one after the other in
   * a slab; as many as sources when the slabs are not used (counted, not
   * silent: ib_executor_counters.upload_direct_*). */
  _Atomic uint64_t direct_sources, direct_copies;
  double t_plan, t_stage, t_stage_wait, t_launch, t_device, t_results;
  uint64_t n_sub, n_jobs;
  /* cuda_profile with a timeline asked for (ib_cuda_profile_reset): the
   * submissions since then, for the report - host times after prof_base
   * and, from timing events, device times after prof_base_ev (recorded
   * and waited for at the reset, so the two clocks start together). */
  bool prof_timeline;
  double prof_base;
  CUevent prof_base_ev;
  ib_cuda_prof_sub prof_subs[IB_CUDA_PROF_SUBS];
  unsigned n_prof_subs;
  CUevent prof_ev_free[3 * IB_CUDA_PROF_SUBS];
  unsigned n_prof_ev_free;
  uint64_t prof_dev_allocs, prof_dev_trims; /* dpool's at the reset */
  uint64_t prof_pin_allocs, prof_pin_trims; /* the pinned pool's */
  /* ... and on the driving thread beside submissions: module loads (any
   * caller) and the tier's admission and job_ready questions. */
  double t_load, t_load_max, t_tier;
  uint64_t n_load;
};

/* One job of a submission. */
typedef struct ib_jstate {
  ib_gplan plan;
  int planned;
  size_t *buf_off; /* per plan buffer: offset in the device block */
  size_t *par_off; /* per stage: offset of its parameter block (host = device) */
  size_t dl_off;   /* terminal image: offset in the download region */
  /* A job with renditions (Job.renditions, in order): each one's offset in
   * the submission's rendition block (place_renditions); the terminal is
   * not downloaded then unless it is a rendition. */
  size_t *rend_off;
  size_t n_rend;
  bool own;            /* terminal image downloaded into the Job buffer */
  uint8_t *direct;     /* per plan buffer: 1 = a raw source uploaded from its
                        * own pinned memory (ib_executor_parse), not staged */
  size_t up_lo, up_hi; /* its part of the upload region: staged sources, parameter blocks */
  /* A pipelined submission (ib_backend_submission.pipe): the job's device
   * buffers - raw sources, stage outputs, its terminal image - lie in a
   * block of its own (blk, dev_bytes), so blocks keep one size from
   * submission to submission whatever their job counts (a block per
   * submission of 32 large jobs took a fresh GiB-sized cuMemAlloc, or a
   * synchronising cuMemFree over the cap, whenever the count changed).
   * Their buf_off entries hold blk.addr + offset - the submission's
   * device block, in modular arithmetic, so ib_sub_dev(s) + buf_off still
   * addresses them. */
  size_t dev_bytes;
  ib_pool_block blk;
} ib_jstate;

/* A raw source uploaded from where it lies in pinned memory (the layout's
 * order: by host address). `joins`: it lies in the same host allocation as
 * the previous entry, and its device offset is that entry's plus the
 * distance between them on the host, so both upload in one span. */
typedef struct ib_direct_src {
  const uint8_t *src;
  uint64_t region; /* the host allocation (ib_pinned_region) */
  size_t bytes, job;
  int buf;
  bool joins;
} ib_direct_src;

/* A submission's download arena, lent to its results (backend.h), or one
 * job's own Job buffer holding its output (job_buf set). */
typedef struct ib_lent_arena {
  ib_cuda *c;
  ib_pool_block blk;
  uint8_t *job_buf;
} ib_lent_arena;

/* The submission's layout (ib_cuda_sub_layout). Device block:
 * [upload | direct | inter | download]. */
typedef struct ib_sub_layout {
  size_t upload;       /* staged sources, parameter blocks, descriptor tables */
  size_t direct;       /* raw sources copied from where they lie in pinned memory */
  size_t inter;        /* stage outputs that stay on the device, resident outputs */
  size_t download;     /* the other terminal images: the arena's, then own-buffer ones */
  size_t arena_bytes;  /* the download region's arena part (one copy) */
  size_t rend_bytes;   /* the rendition block (pinned host only) */
  size_t desc_off;     /* descriptor tables, in the upload region */
  size_t out_base;     /* device offset of the download region */
  size_t total_stages; /* descriptors: one per job and stage */
  int max_stages;      /* levels */
} ib_sub_layout;

/* One launch of a stage of one job: group `group` at level `stage`. */
typedef struct ib_launch_ent {
  int group;
  size_t job;
  int stage;
} ib_launch_ent;

/* Launch groups (ib_cuda_sub_groups): entries sorted by group, then job;
 * group g launches kernel gfunc[g] at level glevel[g]; entry e's
 * descriptor is descs[e]. */
typedef struct ib_launch_plan {
  ib_launch_ent *ents;
  size_t n_ent;
  ib_kfunc **gfunc;
  int *glevel;
  int n_groups;
  ib_gdesc *descs; /* in the pinned staging block, at desc_off */
  ib_kfunc **ikf;  /* interpreter-tier kernels of this submission (owned) */
  size_t n_ikf;
} ib_launch_plan;

struct ib_backend_submission {
  ib_cuda *c;
  ib_lru_entry **pins; /* modules this submission launches from (see mods) */
  size_t n_pins;
  CUstream stream; /* its stream slot's (another while a piece is enqueued; the pipe's down
                    * stream once a pipeline is enqueued) */
  unsigned slot;
  CUevent ev;
  ib_pool_block hblk, dblk;
  ib_lent_arena *arena; /* NULL when nothing comes back to the host */
  /* Renditions' downloads (ib_sub_layout.rend_bytes), lent to the jobs'
   * rendition images at the wait (ib_lent_arena), else given back there. */
  ib_pool_block rblk;
  ib_backend_job *jobs;
  size_t n;
  ib_jstate *js;
  ib_direct_src *dsrc; /* the direct region's sources, in its order */
  size_t n_dsrc, cap_dsrc;
  ib_sub_layout lay;
  bool pipe; /* enqueued as a pipeline (ib_cuda_pipelined), its jobs in blocks of their own */
  ib_launch_plan lp;
  ib_error device_err; /* the device's failure (ib_cuda_device_fail), every job's at the wait */
  /* Its entry on the profile's timeline (-1: none) and timing events
   * (ib_cuda_prof_sub up0, up1, down1; NULL: not recorded). */
  int prof_i;
  CUevent prof_ev[3];
  /* Posted staging not yet ended (cuda_stage.c), and the next submission
   * in ib_cuda.staged: submissions whose enqueue waits for their staging,
   * enqueued in submission order (ib_cuda_advance). */
  struct ib_cuda_staging *staging;
  struct ib_backend_submission *staged_next;
  bool staged_listed;
  /* A failure of the deferred enqueue: the wait answers it. */
  ib_status late_status;
  ib_error late_err;
};

static inline size_t ib_cuda_up(size_t v) {
  return (v + IB_CUDA_ALIGN - 1) & ~(size_t)(IB_CUDA_ALIGN - 1);
}
static inline uint8_t *ib_sub_host(const ib_backend_submission *s) {
  return (uint8_t *)(uintptr_t)s->hblk.addr;
}
static inline CUdeviceptr ib_sub_dev(const ib_backend_submission *s) {
  return (CUdeviceptr)s->dblk.addr;
}

/* cuda_module.c: a chain's kernel signature and its module key. */
void ib_cuda_sigkey(const ib_gchain *ch, ib_sigkey *out);
/* The compiled kernel of a chain signature, pinned in *pin until the work
 * launched from it completed (see ib_cuda.mods). */
ib_status ib_cuda_chain_func(ib_cuda *c, const ib_gchain *ch, ib_kfunc **out, ib_lru_entry **pin,
                             ib_error *err);
/* The module of `sk` when loaded, pinned in *pin; NULL otherwise. */
ib_kfunc *ib_cuda_module_find(ib_cuda *c, const ib_sigkey *sk, ib_lru_entry **pin, ib_error *err);
/* Loads a compiled image as the module of `sig` and keeps it in the LRU
 * (pinned in *pin when pin is not NULL). */
ib_status ib_cuda_module_add(ib_cuda *c, const ib_gchain *ch, const char *sig, const void *img,
                             size_t len, ib_kfunc **out, ib_lru_entry **pin, ib_error *err);
void ib_cuda_sig_key(const char *sig, uint64_t key[2]);
/* Compiles (or reads from disk) and loads the module of `sig` (not loaded
 * yet), pinned in *pin. */
ib_status ib_cuda_chain_compile(ib_cuda *c, const ib_gchain *ch, const char *sig, ib_kfunc **out,
                                ib_lru_entry **pin, ib_error *err);
/* Equal chains have equal signatures, so they share a kernel. */
bool ib_cuda_chain_eq(const ib_gchain *a, const ib_gchain *b);
/* The module cache's drop (ib_lru_init). */
void ib_cuda_unload_module(void *ctx, void *value);

/* cuda_tier.c: the compile pool and the interpreter tier (compile_threads). */
ib_status ib_cuda_tier_open(ib_cuda *c, const ib_executor_options *o, ib_error *err);
void ib_cuda_tier_close(ib_cuda *c);
/* Admission with the pool on: requests the compile of every stage the
 * interpreter cannot run and whose module is not loaded; IB_QUEUE_FULL
 * when the pool's table is full (the compile queue's backpressure). */
ib_status ib_cuda_tier_admit(ib_cuda *c, const ib_graph *g, ib_error *err);
/* Blocks until a compile finished (or timeout_ms); false when none runs. */
bool ib_cuda_tier_admit_wait(ib_cuda *c, int timeout_ms);
/* backend.h job_ready: false while a head kernel of `g` is queued or
 * compiling in the pool (moved to the front of its queue); a finished one
 * is loaded here. A head neither loaded nor in the pool (not requested,
 * let go, or failed) counts as ready: its stage compiles inline, as
 * without the pool, from the disk cache where the pool left it. */
bool ib_cuda_tier_ready(ib_cuda *c, const ib_graph *g);
/* The plan admission made of `g` (a graph whose nodes equal one in the
 * tier memo), for its charge; NULL when there is none. */
const ib_gplan *ib_cuda_tier_plan(ib_cuda *c, const ib_graph *g);
/* backend.h ready_epoch: compiles the pool finished. */
uint64_t ib_cuda_tier_epoch(ib_cuda *c);
/* The kernel of one stage: its module when compiled (pinned in the
 * submission), else with the pool on, the interpreter while the module
 * compiles (pointwise chains) or an inline compile (other heads). */
ib_status ib_cuda_stage_func(ib_backend_submission *s, const ib_gchain *ch, ib_kfunc **out,
                             ib_error *err);
/* Launches an interpreter-tier group over `gy` descriptors at `table`. */
ib_status ib_cuda_interp_launch(ib_backend_submission *s, const ib_kfunc *f, CUdeviceptr table,
                                unsigned gy, uint64_t most_px, size_t job, ib_error *err);

/* cuda_layout.c */
bool ib_cuda_source_pinned(void *state, const ib_graph *g, size_t index);
/* ib_cuda_source_pinned, and the host allocation the source lies in. */
bool ib_cuda_source_region(ib_cuda *c, const ib_graph *g, size_t index, uint64_t *region);
bool ib_cuda_own_download(ib_cuda *c, const ib_graph *g);
/* The plan buffer holding rendition i (Job.renditions[i]) of job js. */
int ib_cuda_rend_buf(const ib_jstate *js, const ib_graph *g, size_t i);
/* The first rendition of g naming rendition r's node (r itself when none
 * before it does): a node named twice comes down once, into the first's
 * range of the rendition block. */
size_t ib_cuda_rend_first(const ib_graph *g, size_t r);
void ib_cuda_sub_plan(ib_backend_submission *s);
void ib_cuda_sub_layout(ib_backend_submission *s);
ib_status ib_cuda_sub_blocks(ib_backend_submission *s, ib_error *err);

/* cuda_stage.c: begin builds the tasks and runs them, or posts them to the
 * host pool when the submission decodes (s->staging stays set); staged:
 * every task returned; end waits for them, copies the parameter blocks
 * of equal jobs and fails the jobs whose decode failed. stage = begin +
 * end. */
ib_status ib_cuda_sub_stage_begin(ib_backend_submission *s, ib_error *err);
bool ib_cuda_sub_staged(ib_backend_submission *s);
void ib_cuda_sub_stage_end(ib_backend_submission *s);
ib_status ib_cuda_sub_stage(ib_backend_submission *s, ib_error *err);

/* cuda_launch.c */
ib_status ib_cuda_sub_groups(ib_backend_submission *s, ib_error *err);
/* The launches of jobs [a, b) on s->stream. */
ib_status ib_cuda_sub_launch(ib_backend_submission *s, size_t a, size_t b, ib_error *err);

/* cuda_fail.c: failures, for every pass. A job's own (its status and
 * message, at `stage` unless the error names a later one). */
void ib_cuda_job_fail(ib_backend_job *j, const ib_error *e, ib_stage stage);
/* The device's: the submission's device_err (naming `what` and the job),
 * copied to *err when err is not NULL; IB_DEVICE. */
ib_status ib_cuda_device_fail(ib_backend_submission *s, CUresult rc, const char *what, size_t job,
                              ib_error *err);
ib_status ib_cuda_oom(ib_error *err);

/* The profile's clock (host seconds; 0 when cuda_profile is off). */
static inline double ib_cuda_prof_now(const ib_cuda *c) {
  if (!c->prof) return 0.0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* cuda_submit.c */
/* A submission's host-to-device copies (ib_cuda_sub_copies): the staging
 * block, then the raw sources lying in pinned memory, one span per run the
 * layout joined (place_direct), each copied from where it lies. Counts
 * the sources and copies (ib_cuda.direct_*). */
typedef struct ib_up_copies {
  CUdeviceptr *dst, *src;
  size_t *len, *job, n;
} ib_up_copies;
/* Those of jobs [a, b) (a run never spans a job outside), after the
 * staging block when `staging`. */
ib_status ib_cuda_sub_copies(ib_backend_submission *s, size_t a, size_t b, bool staging,
                             ib_up_copies *d, ib_error *err);
/* Ranges [lo, hi) of the staging block a piece's copies start with. */
typedef struct ib_stage_ranges {
  size_t lo[2], hi[2];
  int n;
} ib_stage_ranges;
/* ib_cuda_sub_copies with the staging ranges `st` first. */
ib_status ib_cuda_sub_copies_in(ib_backend_submission *s, size_t a, size_t b,
                                const ib_stage_ranges *st, ib_up_copies *d, ib_error *err);
void ib_cuda_copies_free(ib_up_copies *d);
/* The pipeline of a submission of large jobs (ib_cuda.pipe_bytes): whether
 * it runs as one (two pieces at least, and on average at least 1/8 of a
 * piece per job: smaller jobs keep the slot's stream, whose batched
 * launches cost fewer driver calls); the end of the piece starting at job
 * a (jobs until their bytes in + out reach piece_bytes); and what of the
 * staging block that piece uploads first: the whole block with the first
 * piece when it is small (parameters, descriptors), else the descriptor
 * tables with the first piece and each piece its own jobs' part
 * (ib_jstate.up_lo/up_hi: staged sources, parameter blocks). */
bool ib_cuda_pipelined(const ib_backend_submission *s, size_t piece_bytes);
/* A large job, the one notion of the pipeline and the executor's start
 * ramp and window cut (backend.h large_job): its PCIe traffic (sources
 * in, the terminal image out unless resident) is at least
 * ib_cuda_large_io of a piece (the pipeline's piece, or the default one
 * when it is off), as ib_cuda_pipelined averages it over a submission. */
size_t ib_cuda_large_io(size_t piece_bytes);
bool ib_cuda_large_job(const ib_cuda *c, const ib_graph *g, bool resident);
size_t ib_cuda_pipe_next(const ib_backend_submission *s, size_t a, size_t piece_bytes);
void ib_cuda_piece_staging(const ib_backend_submission *s, size_t a, size_t b, ib_stage_ranges *r);
ib_status ib_cuda_submit(void *state, ib_backend_job *jobs, size_t n, ib_backend_submission **out,
                         ib_error *err);
ib_status ib_cuda_wait(void *state, ib_backend_submission *s, ib_error *err);
bool ib_cuda_ready(void *state, ib_backend_submission *s);
void ib_cuda_lent_release(void *state, void *token);
/* The timeline's timing event k of s recorded on `stream` (profile only). */
void ib_cuda_prof_mark(ib_backend_submission *s, int k, CUstream stream);

#endif
