/* NVRTC compile with a memory + disk cache (see nvrtc_cache.h). */
#include <errno.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/nvrtc_cache.h"

typedef struct kentry {
  uint64_t key[2];
  void *image;
  size_t len;
  struct kentry *next;
} kentry;

struct ib_kcache {
  char dir[512];
  kentry *head;
  ib_kcache_stats stats;
  pthread_mutex_t mu;
};

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

static int mkdirs(const char *path) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

ib_kcache *ib_kcache_new(const char *dir) {
  ib_kcache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  pthread_mutex_init(&c->mu, NULL);
  if (!dir) {
    const char *env = getenv("IB_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    if (env)
      snprintf(c->dir, sizeof c->dir, "%s", env);
    else if (xdg && *xdg)
      snprintf(c->dir, sizeof c->dir, "%s/imgbatch", xdg);
    else if (home && *home)
      snprintf(c->dir, sizeof c->dir, "%s/.cache/imgbatch", home);
  } else {
    snprintf(c->dir, sizeof c->dir, "%s", dir);
  }
  /* An unusable directory only disables the disk layer. */
  if (c->dir[0] && mkdirs(c->dir) != 0) c->dir[0] = '\0';
  return c;
}

void ib_kcache_free(ib_kcache *c) {
  if (!c) return;
  for (kentry *e = c->head, *n; e; e = n) {
    n = e->next;
    free(e->image);
    free(e);
  }
  pthread_mutex_destroy(&c->mu);
  free(c);
}

ib_kcache_stats ib_kcache_stats_get(const ib_kcache *c) { return c->stats; }
const char *ib_kcache_dir(const ib_kcache *c) { return c->dir; }

static const char *const std_opts[] = {"-default-device", "--std=c++17"};
#define N_STD ((int)(sizeof std_opts / sizeof std_opts[0]))

static void *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  void *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
      free(buf);
      buf = NULL;
    }
    *len = n > 0 ? (size_t)n : 0;
  }
  fclose(f);
  return buf;
}

static void write_file(ib_kcache *c, const char *path, const void *data, size_t len) {
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return;
  bool ok = fwrite(data, 1, len, f) == len;
  ok = fclose(f) == 0 && ok;
  if (ok && rename(tmp, path) == 0)
    c->stats.disk_writes++;
  else
    unlink(tmp);
}

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

ib_status ib_kcache_get(ib_kcache *c, const char *name, const char *src, const char *arch,
                        const char *const *opts, int n_opts, const void **image, size_t *len,
                        ib_kcache_origin *origin, char **log, ib_error *err) {
  if (log) *log = NULL;
  hash2 h = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
  int maj = 0, min = 0;
  nvrtcVersion(&maj, &min);
  char ver[64];
  snprintf(ver, sizeof ver, "nvrtc %d.%d", maj, min);
  hash_str(&h, ver);
  hash_str(&h, arch);
  for (int i = 0; i < N_STD; i++) hash_str(&h, std_opts[i]);
  for (int i = 0; i < n_opts; i++) hash_str(&h, opts[i]);
  hash_str(&h, src);
  for (size_t i = 0; i < ib_embedded_kernel_count; i++) {
    hash_str(&h, ib_embedded_kernels[i].name);
    hash_str(&h, ib_embedded_kernels[i].text);
  }
  pthread_mutex_lock(&c->mu);
  for (kentry *e = c->head; e; e = e->next)
    if (e->key[0] == h.a && e->key[1] == h.b) {
      c->stats.memory_hits++;
      *image = e->image;
      *len = e->len;
      if (origin) *origin = IB_KC_MEMORY;
      pthread_mutex_unlock(&c->mu);
      return IB_OK;
    }
  kentry *e = calloc(1, sizeof *e);
  if (!e) {
    pthread_mutex_unlock(&c->mu);
    err->status = IB_INTERNAL;
    snprintf(err->message, sizeof err->message, "nvrtc cache: out of memory");
    return IB_INTERNAL;
  }
  e->key[0] = h.a;
  e->key[1] = h.b;
  char path[600] = "";
  if (c->dir[0])
    snprintf(path, sizeof path, "%s/%016llx%016llx-%s.cubin", c->dir, (unsigned long long)h.a,
             (unsigned long long)h.b, arch);
  ib_kcache_origin from = IB_KC_DISK;
  if (path[0]) e->image = read_file(path, &e->len);
  if (e->image) {
    c->stats.disk_hits++;
  } else {
    ib_status st = compile(name, src, arch, opts, n_opts, &e->image, &e->len, log, err);
    if (st != IB_OK) {
      free(e);
      pthread_mutex_unlock(&c->mu);
      return st;
    }
    from = IB_KC_COMPILED;
    c->stats.compiles++;
    if (path[0]) write_file(c, path, e->image, e->len);
  }
  e->next = c->head;
  c->head = e;
  *image = e->image;
  *len = e->len;
  if (origin) *origin = from;
  pthread_mutex_unlock(&c->mu);
  return IB_OK;
}
