/*
 * module_store.h - the two bounded stores behind the kernel module cache,
 * free of CUDA and NVRTC so they are tested on machines without either.
 *
 * ib_lru: an in-memory LRU bounded by bytes over 128-bit keys. Values are
 * opaque; the store calls drop(ctx, value) when it evicts one. An entry can
 * be pinned (a count): a pinned entry is never evicted, so a value still in
 * use (a CUmodule that an in-flight submission launches from) is dropped
 * only after its last unpin - the bound may be exceeded while pins hold
 * entries, and is restored at the next unpin or insert. Thread-safe (one
 * mutex); drop runs under it.
 *
 * ib_dstore: an on-disk store bounded by bytes, shared safely by several
 * processes (one worker per GPU on a host). Each file is a header (magic,
 * payload length, FNV-1a 64 of the payload) and the payload. Writes go to a
 * temporary file that is renamed into place, so a name always holds a whole
 * file; a reader checks length and hash, and a file that fails either
 * (truncated, bit-flipped, foreign) is counted, deleted and reported as a
 * miss - never returned. A hit touches the file's mtime, the "last use"
 * that eviction orders by (oldest first). A file another process deletes
 * under us is a miss (ENOENT). Before a write is renamed into place the
 * directory is scanned (sizes, mtimes) when this process's estimate of its
 * total plus the new file would pass the bound, and at least every
 * IB_DSTORE_SCAN_WRITES writes to see other processes' files; a scan that
 * finds no room deletes the oldest files until the new one fits within 7/8
 * of the bound. Scan and rename hold one lock, so one process's threads
 * never take the store past its bound; a file larger than the bound is not
 * written. With several processes the bound can be passed between scans by
 * what the others wrote since this process last looked.
 */
#ifndef IB_GPU_MODULE_STORE_H
#define IB_GPU_MODULE_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ memory LRU */

typedef struct ib_lru_entry ib_lru_entry;
typedef void (*ib_lru_drop_fn)(void *ctx, void *value);

typedef struct ib_lru_stats {
  uint64_t bytes, entries, hits, misses, evictions;
} ib_lru_stats;

typedef struct ib_lru {
  pthread_mutex_t mu;
  uint64_t cap;
  ib_lru_drop_fn drop;
  void *ctx;
  ib_lru_entry **buckets;
  size_t n_buckets;
  ib_lru_entry *mru, *lru; /* recency list */
  ib_lru_stats st;
} ib_lru;

/* cap: the byte bound (0 keeps nothing that is not pinned). */
int ib_lru_init(ib_lru *l, uint64_t cap, ib_lru_drop_fn drop, void *ctx);
/* Drops every entry, pinned or not (the owner fenced all users). */
void ib_lru_destroy(ib_lru *l);

/* Looks `key` up: on a hit marks it most recent, pins it when `pin`, and
 * returns its entry (else NULL). Counts a hit or a miss. */
ib_lru_entry *ib_lru_get(ib_lru *l, const uint64_t key[2], bool pin);
/* Whether `key` is present; touches and counts nothing (admission asks
 * ahead of the lookup that uses it). */
bool ib_lru_has(ib_lru *l, const uint64_t key[2]);
/* Inserts value (its size `bytes`) as the most recent entry, pinned when
 * `pin`, then evicts unpinned entries, least recent first, until the bytes
 * fit the cap. The store owns value from the call on: the result is its
 * entry, or NULL when it was dropped at once (unpinned and larger than the
 * cap, or out of memory; drop has run). A key already present keeps its
 * entry (equal keys mean equal contents): the newcomer is dropped and the
 * present entry returned as by ib_lru_get. */
ib_lru_entry *ib_lru_put(ib_lru *l, const uint64_t key[2], void *value, uint64_t bytes, bool pin);
/* Releases one pin; an entry left unpinned may then be evicted. */
void ib_lru_unpin(ib_lru *l, ib_lru_entry *e);
/* The value of an entry the caller holds pinned. */
void *ib_lru_value(const ib_lru_entry *e);
ib_lru_stats ib_lru_stats_get(ib_lru *l);

/* ------------------------------------------------------------ disk store */

#define IB_DSTORE_SCAN_WRITES 16
#define IB_DSTORE_SUFFIX ".ibk"

typedef struct ib_dstore ib_dstore;

typedef struct ib_dstore_stats {
  uint64_t hits, misses, corrupt, writes, evictions;
  uint64_t bytes; /* the directory's total at the last scan plus our writes since */
} ib_dstore_stats;

typedef enum ib_dstore_result { IB_DS_MISS = 0, IB_DS_HIT, IB_DS_CORRUPT } ib_dstore_result;

/* dir is created when missing; NULL when it cannot be (the caller then
 * keeps no disk cache). cap: the byte bound over the store's files. */
ib_dstore *ib_dstore_open(const char *dir, uint64_t cap);
void ib_dstore_close(ib_dstore *d);
/* name: a file name without directory or suffix ([0-9A-Za-z_-]). On a hit
 * *data (malloc'd, the caller frees) and *len hold the exact payload.
 * IB_DS_CORRUPT: the file failed its check and was deleted (a miss for
 * the caller). */
ib_dstore_result ib_dstore_get(ib_dstore *d, const char *name, void **data, size_t *len);
/* Best effort: false when the file could not be written or is larger than
 * the cap (nothing is left behind). */
bool ib_dstore_put(ib_dstore *d, const char *name, const void *data, size_t len);
/* Scans now and evicts down to 7/8 of the cap when over it. */
void ib_dstore_trim(ib_dstore *d);
ib_dstore_stats ib_dstore_stats_get(ib_dstore *d);
const char *ib_dstore_dir(const ib_dstore *d);

uint64_t ib_fnv1a64(const void *p, size_t n);

#endif
