/* NVRTC compile with a memory + disk cache (see nvrtc_cache.h). */
#include "gpu/nvrtc_cache.h"

#include <nvrtc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/module_store.h"

struct ib_kcache {
  ib_lru mem;      /* key -> image (an mimage), bounded by bytes */
  ib_dstore *disk; /* NULL: no disk layer */
  char ver[64];    /* "nvrtc X.Y", part of every key */
  atomic_uint_fast64_t memory_hits, compiles, compile_us;
  atomic_int refs;
};

/* An image kept by the memory layer. */
typedef struct mimage {
  size_t len;
  uint8_t bytes[];
} mimage;

static void drop_image(void *ctx, void *v) {
  (void)ctx;
  free(v);
}

const ib_embedded_file *ib_embedded_find(const char *name) {
  for (size_t i = 0; i < ib_embedded_kernel_count; i++)
    if (strcmp(ib_embedded_kernels[i].name, name) == 0) return &ib_embedded_kernels[i];
  return NULL;
}

/* Two independent FNV-1a style 64-bit streams (different offsets/primes) make
 * a 128-bit key; collisions are not a security concern here, staleness is. */
typedef struct hash2 {
  uint64_t a, b;
} hash2;

static void hash_bytes(hash2 *h, const void *p, size_t n) {
  const uint8_t *s = p;
  for (size_t i = 0; i < n; i++) {
    h->a = (h->a ^ s[i]) * 0x100000001b3ull;
    h->b = (h->b ^ s[i]) * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  }
}
static void hash_str(hash2 *h, const char *s) { hash_bytes(h, s, strlen(s) + 1); }

ib_kcache *ib_kcache_new(const char *dir, uint64_t memory_bytes, uint64_t disk_bytes) {
  ib_kcache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  atomic_init(&c->refs, 1);
  if (ib_lru_init(&c->mem, memory_bytes, drop_image, NULL) != 0) {
    free(c);
    return NULL;
  }
  /* An unusable directory only disables the disk layer. */
  if (dir && *dir && disk_bytes) c->disk = ib_dstore_open(dir, disk_bytes);
  int maj = 0, min = 0;
  if (nvrtcVersion(&maj, &min) != NVRTC_SUCCESS) maj = min = -1;
  snprintf(c->ver, sizeof c->ver, "nvrtc %d.%d", maj, min);
  return c;
}

ib_kcache *ib_kcache_retain(ib_kcache *c) {
  atomic_fetch_add(&c->refs, 1);
  return c;
}

void ib_kcache_free(ib_kcache *c) {
  if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
  ib_lru_destroy(&c->mem);
  ib_dstore_close(c->disk);
  free(c);
}

ib_kcache_stats ib_kcache_stats_get(ib_kcache *c) {
  ib_lru_stats m = ib_lru_stats_get(&c->mem);
  ib_dstore_stats d = c->disk ? ib_dstore_stats_get(c->disk) : (ib_dstore_stats){0};
  return (ib_kcache_stats){.memory_hits = atomic_load(&c->memory_hits),
                           .disk_hits = d.hits,
                           .compiles = atomic_load(&c->compiles),
                           .compile_us = atomic_load(&c->compile_us),
                           .disk_writes = d.writes,
                           .memory_evictions = m.evictions,
                           .memory_bytes = m.bytes,
                           .disk_corrupt = d.corrupt,
                           .disk_evictions = d.evictions,
                           .disk_bytes = d.bytes};
}

const char *ib_kcache_dir(const ib_kcache *c) { return c->disk ? ib_dstore_dir(c->disk) : ""; }

static const char *const std_opts[] = {"-default-device", "--std=c++17"};
#define N_STD ((int)(sizeof std_opts / sizeof std_opts[0]))

static ib_status compile(const char *name, const char *src, const char *arch,
                         const char *const *opts, int n_opts, void **image, size_t *len,
                         char **log_out, ib_error *err) {
  size_t n = ib_embedded_kernel_count;
  const char **hsrc = calloc(n ? n : 1, sizeof *hsrc), **hname = calloc(n ? n : 1, sizeof *hname);
  const char **all = calloc((size_t)(n_opts + N_STD + 1), sizeof *all);
  char archopt[64];
  nvrtcProgram prog = NULL;
  ib_status st = IB_INTERNAL;
  char *log = NULL;
  if (!hsrc || !hname || !all) goto out;
  for (size_t i = 0; i < n; i++) {
    hsrc[i] = ib_embedded_kernels[i].text;
    hname[i] = ib_embedded_kernels[i].name;
  }
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
  int k = 0;
  all[k++] = archopt;
  for (int i = 0; i < N_STD; i++) all[k++] = std_opts[i];
  for (int i = 0; i < n_opts; i++) all[k++] = opts[i];
  nvrtcResult rc = nvrtcCreateProgram(&prog, src, name, (int)n, hsrc, hname);
  if (rc != NVRTC_SUCCESS) {
    st = IB_DEVICE;
    snprintf(err->message, sizeof err->message, "nvrtc: %s: %s", name, nvrtcGetErrorString(rc));
    goto out;
  }
  rc = nvrtcCompileProgram(prog, k, all);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  log = malloc(log_size + 1);
  if (log) {
    log[0] = '\0';
    nvrtcGetProgramLog(prog, log);
    log[log_size] = '\0';
  }
  if (rc != NVRTC_SUCCESS) {
    st = IB_DEVICE;
    snprintf(err->message, sizeof err->message, "nvrtc: %s (%s) failed to compile: %s", name, arch,
             log ? log : nvrtcGetErrorString(rc));
    goto out;
  }
  size_t sz = 0;
  if (nvrtcGetCUBINSize(prog, &sz) != NVRTC_SUCCESS || sz == 0 || !(*image = malloc(sz)) ||
      nvrtcGetCUBIN(prog, *image) != NVRTC_SUCCESS) {
    st = IB_DEVICE;
    snprintf(err->message, sizeof err->message, "nvrtc: %s: no cubin for %s", name, arch);
    goto out;
  }
  *len = sz;
  st = IB_OK;
out:
  if (st != IB_OK) {
    free(*image);
    *image = NULL;
    err->status = st;
    err->stage = IB_STAGE_EXECUTE;
    if (st == IB_INTERNAL) snprintf(err->message, sizeof err->message, "nvrtc: out of memory");
  }
  if (log_out)
    *log_out = log;
  else
    free(log);
  if (prog) nvrtcDestroyProgram(&prog);
  free(hsrc);
  free(hname);
  free(all);
  return st;
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static ib_status oom(ib_error *err) {
  err->status = IB_INTERNAL;
  err->stage = IB_STAGE_EXECUTE;
  snprintf(err->message, sizeof err->message, "nvrtc cache: out of memory");
  return IB_INTERNAL;
}

/* Keeps a copy of the caller's image in the memory layer (best effort). */
static void remember(ib_kcache *c, const uint64_t key[2], const void *image, size_t len) {
  if (!c->mem.cap) return;
  mimage *m = malloc(sizeof *m + len);
  if (!m) return;
  m->len = len;
  memcpy(m->bytes, image, len);
  ib_lru_put(&c->mem, key, m, sizeof *m + len, false);
}

ib_status ib_kcache_get(ib_kcache *c, const char *name, const char *src, const char *arch,
                        const char *const *opts, int n_opts, void **image, size_t *len,
                        ib_kcache_origin *origin, char **log, ib_error *err) {
  if (log) *log = NULL;
  *image = NULL;
  *len = 0;
  hash2 h = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
  hash_str(&h, c->ver);
  hash_str(&h, arch);
  for (int i = 0; i < N_STD; i++) hash_str(&h, std_opts[i]);
  for (int i = 0; i < n_opts; i++) hash_str(&h, opts[i]);
  hash_str(&h, src);
  for (size_t i = 0; i < ib_embedded_kernel_count; i++) {
    hash_str(&h, ib_embedded_kernels[i].name);
    hash_str(&h, ib_embedded_kernels[i].text);
  }
  const uint64_t key[2] = {h.a, h.b};
  /* Memory: copy out under a pin, so an eviction meanwhile cannot free it. */
  ib_lru_entry *e = c->mem.cap ? ib_lru_get(&c->mem, key, true) : NULL;
  if (e) {
    const mimage *m = ib_lru_value(e);
    void *copy = malloc(m->len);
    if (copy) memcpy(copy, m->bytes, m->len);
    size_t n = m->len;
    ib_lru_unpin(&c->mem, e);
    if (!copy) return oom(err);
    atomic_fetch_add(&c->memory_hits, 1);
    *image = copy;
    *len = n;
    if (origin) *origin = IB_KC_MEMORY;
    return IB_OK;
  }
  char fname[128] = "";
  if (c->disk && strlen(arch) < 32)
    snprintf(fname, sizeof fname, "%016llx%016llx-%s", (unsigned long long)h.a,
             (unsigned long long)h.b, arch);
  /* Disk: a corrupt file was deleted by the store and is recompiled below. */
  if (fname[0] && ib_dstore_get(c->disk, fname, image, len) == IB_DS_HIT) {
    remember(c, key, *image, *len);
    if (origin) *origin = IB_KC_DISK;
    return IB_OK;
  }
  const uint64_t t0 = now_us();
  ib_status st = compile(name, src, arch, opts, n_opts, image, len, log, err);
  /* Failed compiles count too: the time was spent. */
  atomic_fetch_add(&c->compile_us, now_us() - t0);
  atomic_fetch_add(&c->compiles, 1);
  if (st != IB_OK) return st;
  if (fname[0]) ib_dstore_put(c->disk, fname, *image, *len);
  remember(c, key, *image, *len);
  if (origin) *origin = IB_KC_COMPILED;
  return IB_OK;
}
