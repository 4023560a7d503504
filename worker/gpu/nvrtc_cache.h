/*
 * nvrtc_cache.h - run-time compilation of kernel sources with NVRTC, cached
 * in memory and on disk. Every compile sees all embedded kernels/ files as
 * headers (the table cmake/embed.cmake generates). The cache key is a 128-bit
 * hash of: the source text, every embedded header's text, the options, the
 * NVRTC version and the target arch; so a second process start with the same
 * binary compiles nothing, and a changed header or compiler never reuses a
 * stale image. Disk entries are written to a temporary file and renamed, so a
 * concurrent reader sees a whole file or none.
 *
 * No GPU is needed: compiling produces a cubin for the named arch (sm_XX).
 */
#ifndef IB_GPU_NVRTC_CACHE_H
#define IB_GPU_NVRTC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "imgbatch.h"

typedef struct ib_kcache ib_kcache;

/* dir: the on-disk cache directory (created when missing); NULL selects
 * $IB_CACHE_DIR, else $XDG_CACHE_HOME/imgbatch, else $HOME/.cache/imgbatch;
 * "" disables the disk cache. */
ib_kcache *ib_kcache_new(const char *dir);
void ib_kcache_free(ib_kcache *c);

typedef enum ib_kcache_origin { IB_KC_MEMORY, IB_KC_DISK, IB_KC_COMPILED } ib_kcache_origin;

/* Returns the cubin for `src` compiled for `arch` ("sm_90") with the
 * standard options (-default-device, --std=c++17) plus `opts`. The image is
 * owned by the cache and stays valid until ib_kcache_free. On a compile
 * error: IB_DEVICE, stage EXECUTE, the message holds the head of NVRTC's log
 * and, when log is not NULL, *log the whole log (caller frees). */
ib_status ib_kcache_get(ib_kcache *c, const char *name, const char *src, const char *arch,
                        const char *const *opts, int n_opts, const void **image, size_t *len,
                        ib_kcache_origin *origin, char **log, ib_error *err);

/* Counters for tests and metrics. */
typedef struct ib_kcache_stats {
  uint64_t memory_hits, disk_hits, compiles, disk_writes;
} ib_kcache_stats;
ib_kcache_stats ib_kcache_stats_get(const ib_kcache *c);
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
