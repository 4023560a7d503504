/*
 * nvrtc_cache.h - run-time compilation of kernel sources with NVRTC, cached
 * in memory and on disk. Every compile sees all embedded kernels/ files as
 * headers (the table cmake/embed.cmake generates). The cache key is a 128-bit
 * hash of: the source text, every embedded header's text, the options, the
 * NVRTC version and the target arch; so a second process start with the same
 * binary compiles nothing, and a changed header or compiler never reuses a
 * stale image.
 *
 * Two bounded layers (module_store.h): an in-memory LRU of images bounded by
 * bytes, and an on-disk store bounded by bytes, evicted by last use, safe to
 * share between processes, whose files carry a hash of their payload: a
 * corrupt or truncated file is deleted and recompiled, never returned. The
 * library reads no environment: the directory comes from the caller (the
 * CLI resolves $IB_CACHE_DIR / $XDG_CACHE_HOME / $HOME).
 *
 * Thread-safe; no lock is held while NVRTC compiles (two threads asking for
 * one new key at once both compile it; the stores keep one copy).
 *
 * No GPU is needed: compiling produces a cubin for the named arch (sm_XX).
 */
#ifndef IB_GPU_NVRTC_CACHE_H
#define IB_GPU_NVRTC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "imgbatch.h"

typedef struct ib_kcache ib_kcache;

/* dir: the on-disk cache directory (created when missing); NULL or "" (or
 * one that cannot be created) keeps no disk layer. memory_bytes: the
 * in-memory LRU's bound (0: no memory layer); disk_bytes: the disk store's
 * bound (0: no disk layer). NULL only when out of memory. */
ib_kcache *ib_kcache_new(const char *dir, uint64_t memory_bytes, uint64_t disk_bytes);
/* Drops a reference: the cache is freed with its last one. ib_kcache_new
 * gives one; ib_kcache_retain adds one (returns c), so a compile thread
 * left running past its owner's close (compile_pool.h) keeps the cache it
 * stores into. */
void ib_kcache_free(ib_kcache *c);
ib_kcache *ib_kcache_retain(ib_kcache *c);

typedef enum ib_kcache_origin { IB_KC_MEMORY, IB_KC_DISK, IB_KC_COMPILED } ib_kcache_origin;

/* Returns the cubin for `src` compiled for `arch` ("sm_90") with the
 * standard options (-default-device, --std=c++17) plus `opts`. *image is
 * the caller's (malloc'd, free it): the cache may evict its own copy at
 * any time. On a compile
 * error: IB_DEVICE, stage EXECUTE, the message holds the head of NVRTC's log
 * and, when log is not NULL, *log the whole log (caller frees). */
ib_status ib_kcache_get(ib_kcache *c, const char *name, const char *src, const char *arch,
                        const char *const *opts, int n_opts, void **image, size_t *len,
                        ib_kcache_origin *origin, char **log, ib_error *err);

/* Counters for tests and metrics; any thread, never blocks on a compile.
 * compiles and compile_us count failed compiles too. */
typedef struct ib_kcache_stats {
  uint64_t memory_hits, disk_hits, compiles, compile_us, disk_writes;
  uint64_t memory_evictions, memory_bytes;           /* in-memory layer */
  uint64_t disk_corrupt, disk_evictions, disk_bytes; /* disk layer (this process's view) */
} ib_kcache_stats;
ib_kcache_stats ib_kcache_stats_get(ib_kcache *c);
/* "" when there is no disk layer. */
const char *ib_kcache_dir(const ib_kcache *c);

/* Embedded kernels/ files (generated). */
typedef struct ib_embedded_file {
  const char *name;
  const char *text;
  size_t size;
} ib_embedded_file;
extern const ib_embedded_file ib_embedded_kernels[];
extern const size_t ib_embedded_kernel_count;
const ib_embedded_file *ib_embedded_find(const char *name);

#endif
