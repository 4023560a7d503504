/* Byte-bounded memory LRU and multi-process disk store (module_store.h). */
#include "gpu/module_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t ib_fnv1a64(const void *p, size_t n) {
  const uint8_t *s = p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}

/* ------------------------------------------------------------ memory LRU */

struct ib_lru_entry {
  uint64_t key[2];
  void *value;
  uint64_t bytes;
  unsigned pins;
  ib_lru_entry *prev, *next; /* recency: prev is more recent */
  ib_lru_entry *chain;       /* hash bucket */
};

int ib_lru_init(ib_lru *l, uint64_t cap, ib_lru_drop_fn drop, void *ctx) {
  *l = (ib_lru){.cap = cap, .drop = drop, .ctx = ctx, .n_buckets = 1024};
  if (!(l->buckets = calloc(l->n_buckets, sizeof *l->buckets))) return -1;
  pthread_mutex_init(&l->mu, NULL);
  return 0;
}

static size_t bucket(const ib_lru *l, const uint64_t key[2]) {
  return (size_t)((key[0] ^ (key[1] >> 7)) % l->n_buckets);
}

static void unlink_recency(ib_lru *l, ib_lru_entry *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    l->mru = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    l->lru = e->prev;
  e->prev = e->next = NULL;
}

static void push_mru(ib_lru *l, ib_lru_entry *e) {
  e->prev = NULL;
  e->next = l->mru;
  if (l->mru) l->mru->prev = e;
  l->mru = e;
  if (!l->lru) l->lru = e;
}

static void remove_entry(ib_lru *l, ib_lru_entry *e) {
  unlink_recency(l, e);
  for (ib_lru_entry **p = &l->buckets[bucket(l, e->key)]; *p; p = &(*p)->chain)
    if (*p == e) {
      *p = e->chain;
      break;
    }
  l->st.bytes -= e->bytes;
  l->st.entries--;
  if (l->drop) l->drop(l->ctx, e->value);
  free(e);
}

static void trim(ib_lru *l) {
  for (ib_lru_entry *e = l->lru, *prev; e && l->st.bytes > l->cap; e = prev) {
    prev = e->prev;
    if (e->pins) continue;
    remove_entry(l, e);
    l->st.evictions++;
  }
}

void ib_lru_destroy(ib_lru *l) {
  if (!l->buckets) return;
  while (l->mru) remove_entry(l, l->mru);
  free(l->buckets);
  l->buckets = NULL;
  pthread_mutex_destroy(&l->mu);
}

static ib_lru_entry *find(ib_lru *l, const uint64_t key[2]) {
  for (ib_lru_entry *e = l->buckets[bucket(l, key)]; e; e = e->chain)
    if (e->key[0] == key[0] && e->key[1] == key[1]) return e;
  return NULL;
}

static void touch(ib_lru *l, ib_lru_entry *e, bool pin) {
  unlink_recency(l, e);
  push_mru(l, e);
  if (pin) e->pins++;
}

ib_lru_entry *ib_lru_get(ib_lru *l, const uint64_t key[2], bool pin) {
  pthread_mutex_lock(&l->mu);
  ib_lru_entry *e = find(l, key);
  if (e) {
    touch(l, e, pin);
    l->st.hits++;
  } else {
    l->st.misses++;
  }
  pthread_mutex_unlock(&l->mu);
  return e;
}

bool ib_lru_has(ib_lru *l, const uint64_t key[2]) {
  pthread_mutex_lock(&l->mu);
  const bool has = find(l, key) != NULL;
  pthread_mutex_unlock(&l->mu);
  return has;
}

ib_lru_entry *ib_lru_put(ib_lru *l, const uint64_t key[2], void *value, uint64_t bytes, bool pin) {
  pthread_mutex_lock(&l->mu);
  ib_lru_entry *e = find(l, key);
  if (e) {
    touch(l, e, pin);
    if (l->drop) l->drop(l->ctx, value);
    pthread_mutex_unlock(&l->mu);
    return e;
  }
  if ((!pin && bytes > l->cap) || !(e = calloc(1, sizeof *e))) {
    if (!pin && bytes > l->cap) l->st.evictions++;
    if (l->drop) l->drop(l->ctx, value);
    pthread_mutex_unlock(&l->mu);
    return NULL;
  }
  *e = (ib_lru_entry){.key = {key[0], key[1]}, .value = value, .bytes = bytes, .pins = pin};
  size_t b = bucket(l, key);
  e->chain = l->buckets[b];
  l->buckets[b] = e;
  push_mru(l, e);
  l->st.bytes += bytes;
  l->st.entries++;
  trim(l);
  pthread_mutex_unlock(&l->mu);
  return e;
}

void ib_lru_unpin(ib_lru *l, ib_lru_entry *e) {
  if (!e) return;
  pthread_mutex_lock(&l->mu);
  if (e->pins) e->pins--;
  if (!e->pins) trim(l);
  pthread_mutex_unlock(&l->mu);
}

void *ib_lru_value(const ib_lru_entry *e) { return e->value; }

ib_lru_stats ib_lru_stats_get(ib_lru *l) {
  pthread_mutex_lock(&l->mu);
  ib_lru_stats s = l->st;
  pthread_mutex_unlock(&l->mu);
  return s;
}

/* ------------------------------------------------------------ disk store */

/* File layout: this header, then `len` payload bytes. */
typedef struct dheader {
  char magic[8]; /* "IBKMOD1\0" */
  uint64_t len;
  uint64_t fnv;
} dheader;
static const char k_magic[8] = "IBKMOD1";

/* Files beyond this are not ours (a cubin is far smaller): corrupt. */
#define MAX_FILE (256ull << 20)

struct ib_dstore {
  char dir[512];
  uint64_t cap;
  pthread_mutex_t mu; /* the estimate, write counter and scan */
  uint64_t est_bytes;
  unsigned writes_since_scan;
  atomic_uint_fast64_t hits, misses, corrupt, writes, evictions, bytes;
  atomic_uint_fast64_t tmp_seq;
};

static int mkdirs(const char *path) {
  char tmp[512];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return -1;
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

ib_dstore *ib_dstore_open(const char *dir, uint64_t cap) {
  if (!dir || !*dir || strlen(dir) >= 400 || mkdirs(dir) != 0) return NULL;
  ib_dstore *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  snprintf(d->dir, sizeof d->dir, "%s", dir);
  d->cap = cap;
  pthread_mutex_init(&d->mu, NULL);
  ib_dstore_trim(d);
  return d;
}

void ib_dstore_close(ib_dstore *d) {
  if (!d) return;
  pthread_mutex_destroy(&d->mu);
  free(d);
}

const char *ib_dstore_dir(const ib_dstore *d) { return d->dir; }

ib_dstore_stats ib_dstore_stats_get(ib_dstore *d) {
  return (ib_dstore_stats){.hits = atomic_load(&d->hits),
                           .misses = atomic_load(&d->misses),
                           .corrupt = atomic_load(&d->corrupt),
                           .writes = atomic_load(&d->writes),
                           .evictions = atomic_load(&d->evictions),
                           .bytes = atomic_load(&d->bytes)};
}

static bool path_of(const ib_dstore *d, const char *name, char *out, size_t n) {
  for (const char *p = name; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          *p == '_' || *p == '-'))
      return false;
  return *name && snprintf(out, n, "%s/%s%s", d->dir, name, IB_DSTORE_SUFFIX) < (int)n;
}

static bool read_all(int fd, void *buf, size_t n) {
  uint8_t *p = buf;
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= (size_t)r;
  }
  return true;
}

static bool write_all(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n) {
    ssize_t r = write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= (size_t)r;
  }
  return true;
}

static ib_dstore_result corrupt(ib_dstore *d, const char *path) {
  /* Another process may have replaced the file since we opened it (a whole
   * new one, by rename): deleting that loses one entry, nothing worse. */
  unlink(path);
  atomic_fetch_add(&d->corrupt, 1);
  atomic_fetch_add(&d->misses, 1);
  return IB_DS_CORRUPT;
}

ib_dstore_result ib_dstore_get(ib_dstore *d, const char *name, void **data, size_t *len) {
  *data = NULL;
  *len = 0;
  char path[600];
  if (!path_of(d, name, path, sizeof path)) {
    atomic_fetch_add(&d->misses, 1);
    return IB_DS_MISS;
  }
  /* A renamed-in file is whole; the fd keeps it readable even when another
   * process deletes or replaces the name meanwhile. */
  /* O_NONBLOCK: something not a regular file under our name (a FIFO)
   * must not block us; fstat below rejects it. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) { /* ENOENT: absent, or evicted by another process */
    atomic_fetch_add(&d->misses, 1);
    return IB_DS_MISS;
  }
  struct stat sb;
  dheader h;
  void *buf = NULL;
  bool ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size >= sizeof h &&
            (uint64_t)sb.st_size <= MAX_FILE && read_all(fd, &h, sizeof h) &&
            memcmp(h.magic, k_magic, sizeof k_magic) == 0 &&
            h.len == (uint64_t)sb.st_size - sizeof h && h.len > 0 && (buf = malloc(h.len)) &&
            read_all(fd, buf, h.len) && ib_fnv1a64(buf, h.len) == h.fnv;
  close(fd);
  if (!ok) {
    free(buf);
    return corrupt(d, path);
  }
  /* Last use for eviction; a failure (file just evicted) does not matter. */
  utimensat(AT_FDCWD, path, NULL, 0);
  *data = buf;
  *len = h.len;
  atomic_fetch_add(&d->hits, 1);
  return IB_DS_HIT;
}

static void scan_locked(ib_dstore *d, uint64_t incoming);

bool ib_dstore_put(ib_dstore *d, const char *name, const void *data, size_t len) {
  char path[600], tmp[700];
  if (!len || !path_of(d, name, path, sizeof path)) return false;
  /* Unique per process and call: concurrent writers never share a temp. */
  snprintf(tmp, sizeof tmp, "%s/.tmp.%ld.%llu", d->dir, (long)getpid(),
           (unsigned long long)atomic_fetch_add(&d->tmp_seq, 1));
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  dheader h = {.len = len, .fnv = ib_fnv1a64(data, len)};
  memcpy(h.magic, k_magic, sizeof k_magic);
  bool ok = write_all(fd, &h, sizeof h) && write_all(fd, data, len);
  ok = close(fd) == 0 && ok;
  const uint64_t need = sizeof h + len;
  /* Room is made before the rename, under the lock, so this process never
   * shows the store over its bound - not even between two threads' puts. */
  pthread_mutex_lock(&d->mu);
  if (ok && need <= d->cap &&
      (d->est_bytes + need > d->cap || ++d->writes_since_scan >= IB_DSTORE_SCAN_WRITES))
    scan_locked(d, need);
  ok = ok && need <= d->cap && rename(tmp, path) == 0;
  if (ok) {
    /* A replaced name is counted twice until the next scan: an over-estimate
     * only scans early. */
    d->est_bytes += need;
    atomic_store(&d->bytes, d->est_bytes);
    atomic_fetch_add(&d->writes, 1);
  }
  pthread_mutex_unlock(&d->mu);
  if (!ok) unlink(tmp);
  return ok;
}

typedef struct dfile {
  char name[256];
  uint64_t bytes;
  struct timespec mtime;
} dfile;

static int older(const void *a, const void *b) {
  const dfile *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

static bool ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The unbounded cache's files before this store ("<32 hex>-sm_XX.cubin",
 * unhashed): never read, so removed when met. */
static bool legacy(const char *name) {
  for (int i = 0; i < 32; i++)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return false;
  return strncmp(name + 32, "-sm_", 4) == 0 && ends_with(name, ".cubin");
}

/* Temp files older than this were left by a process that died mid-write. */
#define STALE_TMP_S 600

/* Scans the directory; when its files and `incoming` more bytes would pass
 * the cap, deletes the oldest until they fit within 7/8 of it. d->mu held. */
static void scan_locked(ib_dstore *d, uint64_t incoming) {
  DIR *dir = opendir(d->dir);
  if (!dir) return;
  dfile *files = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  time_t now = time(NULL);
  int dfd = dirfd(dir);
  for (struct dirent *de; (de = readdir(dir));) {
    struct stat sb;
    bool ours = ends_with(de->d_name, IB_DSTORE_SUFFIX), tmp = strncmp(de->d_name, ".tmp.", 5) == 0;
    if (legacy(de->d_name)) {
      unlinkat(dfd, de->d_name, 0);
      continue;
    }
    if ((!ours && !tmp) || strlen(de->d_name) >= sizeof files->name) continue;
    if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
      continue; /* ENOENT: deleted by another process meanwhile */
    if (tmp) {
      if (now - sb.st_mtime > STALE_TMP_S) unlinkat(dfd, de->d_name, 0);
      continue;
    }
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 64;
      dfile *g = realloc(files, nc * sizeof *g);
      if (!g) break;
      files = g;
      cap = nc;
    }
    snprintf(files[n].name, sizeof files[n].name, "%s", de->d_name);
    files[n].bytes = (uint64_t)sb.st_size;
    files[n].mtime = sb.st_mtim;
    total += files[n].bytes;
    n++;
  }
  if (total + incoming > d->cap) {
    qsort(files, n, sizeof *files, older);
    const uint64_t low = d->cap / 8 * 7;
    for (size_t i = 0; i < n && total + incoming > low; i++) {
      /* ENOENT: another process evicted it first; it is gone either way. */
      if (unlinkat(dfd, files[i].name, 0) == 0) atomic_fetch_add(&d->evictions, 1);
      total -= files[i].bytes;
    }
  }
  closedir(dir);
  free(files);
  d->est_bytes = total;
  d->writes_since_scan = 0;
  atomic_store(&d->bytes, total);
}

void ib_dstore_trim(ib_dstore *d) {
  pthread_mutex_lock(&d->mu);
  scan_locked(d, 0);
  pthread_mutex_unlock(&d->mu);
}
