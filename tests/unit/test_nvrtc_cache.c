/* The bounded module caches without a GPU (module_store.h, nvrtc_cache.h):
 * the byte-bounded LRU (order, bound, pins), the disk store (bound,
 * eviction by last use, corrupt files rejected and removed, several
 * processes at once, files deleted under us), and NVRTC compiling through
 * both layers into a temporary directory. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "gpu/module_store.h"
#include "gpu/nvrtc_cache.h"
#include "imgbatch.h"

/* ------------------------------------------------------------ helpers */

static void tmpdir(char *dir, size_t n) {
  snprintf(dir, n, "/tmp/ib_mcache_XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static void rmdir_all(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* Bytes and count of the store's files in dir (temporaries excluded). */
static uint64_t dir_bytes(const char *dir, int *count) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  uint64_t total = 0;
  int n = 0;
  for (struct dirent *de; (de = readdir(d));) {
    size_t l = strlen(de->d_name);
    if (l < 4 || strcmp(de->d_name + l - 4, IB_DSTORE_SUFFIX) != 0) continue;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    struct stat sb;
    if (stat(p, &sb) == 0) {
      total += (uint64_t)sb.st_size;
      n++;
    }
  }
  closedir(d);
  if (count) *count = n;
  return total;
}

static bool exists(const char *dir, const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s%s", dir, name, IB_DSTORE_SUFFIX);
  return access(p, F_OK) == 0;
}

static void set_mtime(const char *dir, const char *name, time_t t) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s%s", dir, name, IB_DSTORE_SUFFIX);
  struct timespec ts[2] = {{t, 0}, {t, 0}};
  cr_assert_eq(utimensat(AT_FDCWD, p, ts, 0), 0);
}

/* A payload whose every byte depends on the key and the length. */
static void fill(uint8_t *p, size_t n, unsigned key) {
  uint32_t s = key * 2654435761u + (uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    s = s * 1103515245u + 12345u;
    p[i] = (uint8_t)(s >> 16);
  }
}

/* ------------------------------------------------------------ memory LRU */

typedef struct drops {
  int n;
  intptr_t order[64];
} drops;

static void record_drop(void *ctx, void *v) {
  drops *d = ctx;
  if (d->n < 64) d->order[d->n] = (intptr_t)v;
  d->n++;
}

static void K(unsigned i, uint64_t key[2]) {
  key[0] = i;
  key[1] = ~(uint64_t)i;
}

Test(lru, evicts_least_recent_first_within_the_byte_bound) {
  ib_lru l;
  drops d = {0};
  cr_assert_eq(ib_lru_init(&l, 100, record_drop, &d), 0);
  uint64_t k[2];
  for (unsigned i = 1; i <= 3; i++) {
    K(i, k);
    cr_assert_not_null(ib_lru_put(&l, k, (void *)(intptr_t)i, 30, false));
  }
  cr_assert_eq(ib_lru_stats_get(&l).bytes, 90);
  /* Touch 1: now 2 is the least recent. */
  K(1, k);
  cr_assert_not_null(ib_lru_get(&l, k, false));
  K(4, k);
  cr_assert_not_null(ib_lru_put(&l, k, (void *)4, 30, false));
  cr_assert_eq(d.n, 1);
  cr_assert_eq(d.order[0], 2);
  ib_lru_stats s = ib_lru_stats_get(&l);
  cr_assert_eq(s.bytes, 90);
  cr_assert_eq(s.entries, 3);
  cr_assert_eq(s.evictions, 1);
  K(2, k);
  cr_assert_null(ib_lru_get(&l, k, false));
  /* A large entry pushes out as many as needed, least recent first: 3, 1. */
  K(5, k);
  cr_assert_not_null(ib_lru_put(&l, k, (void *)5, 70, false));
  cr_assert_eq(d.n, 3);
  cr_assert_eq(d.order[1], 3);
  cr_assert_eq(d.order[2], 1);
  s = ib_lru_stats_get(&l);
  cr_assert_leq(s.bytes, 100);
  cr_assert_eq(s.bytes, 100);
  /* Unpinned and larger than the bound: dropped at once. */
  K(6, k);
  cr_assert_null(ib_lru_put(&l, k, (void *)6, 101, false));
  cr_assert_eq(d.order[3], 6);
  /* A key already present keeps its entry; the newcomer is dropped. */
  K(5, k);
  ib_lru_entry *e = ib_lru_put(&l, k, (void *)55, 70, false);
  cr_assert_not_null(e);
  cr_assert_eq((intptr_t)ib_lru_value(e), 5);
  cr_assert_eq(d.order[4], 55);
  cr_assert_eq(ib_lru_stats_get(&l).bytes, 100);
  ib_lru_destroy(&l);
  cr_assert_eq(d.n, 7); /* 4 and 5 at destroy */
}

Test(lru, pinned_entries_are_never_evicted_until_unpinned) {
  ib_lru l;
  drops d = {0};
  cr_assert_eq(ib_lru_init(&l, 100, record_drop, &d), 0);
  uint64_t k[2];
  K(1, k);
  ib_lru_entry *a = ib_lru_put(&l, k, (void *)1, 60, true); /* in flight */
  cr_assert_not_null(a);
  K(2, k);
  ib_lru_entry *b = ib_lru_put(&l, k, (void *)2, 60, true);
  cr_assert_not_null(b);
  /* Over the bound, but both are in use: nothing is unloaded. */
  cr_assert_eq(d.n, 0);
  cr_assert_eq(ib_lru_stats_get(&l).bytes, 120);
  /* A second pin of a (two submissions use it). */
  K(1, k);
  cr_assert_eq(ib_lru_get(&l, k, true), a);
  ib_lru_unpin(&l, a);
  cr_assert_eq(d.n, 0, "a still has a pin");
  ib_lru_unpin(&l, a);
  /* a is unpinned and the least recent... but it was touched by the get
   * after b's insert, so b is older; b is pinned: a goes. */
  cr_assert_eq(d.n, 1);
  cr_assert_eq(d.order[0], 1);
  cr_assert_eq(ib_lru_stats_get(&l).bytes, 60);
  /* A pinned newcomer larger than the bound stays until its unpin. */
  K(3, k);
  ib_lru_entry *c = ib_lru_put(&l, k, (void *)3, 150, true);
  cr_assert_not_null(c);
  cr_assert_eq(d.n, 1);
  ib_lru_unpin(&l, b); /* b may go now: the bytes are still over */
  cr_assert_eq(d.n, 2);
  cr_assert_eq(d.order[1], 2);
  ib_lru_unpin(&l, c);
  cr_assert_eq(d.n, 3);
  cr_assert_eq(d.order[2], 3);
  cr_assert_eq(ib_lru_stats_get(&l).bytes, 0);
  cr_assert_eq(ib_lru_stats_get(&l).evictions, 3);
  ib_lru_destroy(&l);
}

Test(lru, many_keys_hash_and_evict_consistently) {
  ib_lru l;
  drops d = {0};
  cr_assert_eq(ib_lru_init(&l, 1000, record_drop, &d), 0);
  uint64_t k[2];
  for (unsigned i = 0; i < 5000; i++) {
    K(i, k);
    ib_lru_put(&l, k, (void *)(intptr_t)i, 10, false);
    cr_assert_leq(ib_lru_stats_get(&l).bytes, 1000);
  }
  ib_lru_stats s = ib_lru_stats_get(&l);
  cr_assert_eq(s.entries, 100);
  cr_assert_eq(s.evictions, 4900);
  for (unsigned i = 0; i < 5000; i++) {
    K(i, k);
    ib_lru_entry *e = ib_lru_get(&l, k, false);
    if (i < 4900)
      cr_assert_null(e, "%u", i);
    else
      cr_assert(e && (intptr_t)ib_lru_value(e) == (intptr_t)i, "%u", i);
  }
  ib_lru_destroy(&l);
}

/* ------------------------------------------------------------ disk store */

Test(dstore, roundtrip_miss_and_hash_header) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  ib_dstore *d = ib_dstore_open(dir, 1 << 20);
  cr_assert_not_null(d);
  void *p;
  size_t n;
  cr_assert_eq(ib_dstore_get(d, "absent", &p, &n), IB_DS_MISS);
  cr_assert_null(p);
  uint8_t buf[5000];
  fill(buf, sizeof buf, 7);
  cr_assert(ib_dstore_put(d, "k7", buf, sizeof buf));
  cr_assert_eq(ib_dstore_get(d, "k7", &p, &n), IB_DS_HIT);
  cr_assert_eq(n, sizeof buf);
  cr_assert_eq(memcmp(p, buf, n), 0);
  free(p);
  /* The file is the header plus the payload. */
  int count;
  cr_assert_eq(dir_bytes(dir, &count), sizeof buf + 24);
  cr_assert_eq(count, 1);
  /* A FIFO under a key's name is not waited on: rejected as corrupt. */
  char fifo[1024];
  snprintf(fifo, sizeof fifo, "%s/fifo%s", dir, IB_DSTORE_SUFFIX);
  cr_assert_eq(mkfifo(fifo, 0644), 0);
  cr_assert_eq(ib_dstore_get(d, "fifo", &p, &n), IB_DS_CORRUPT);
  cr_assert_not(exists(dir, "fifo"));
  /* Files of the unbounded cache before this store are removed at a scan;
   * unrelated files stay. */
  char old[1024], other[1024];
  snprintf(old, sizeof old, "%s/0123456789abcdef0123456789abcdef-sm_90.cubin", dir);
  snprintf(other, sizeof other, "%s/notes.txt", dir);
  FILE *f = fopen(old, "w");
  cr_assert_not_null(f);
  fclose(f);
  cr_assert_not_null(f = fopen(other, "w"));
  fclose(f);
  ib_dstore_trim(d);
  cr_assert_neq(access(old, F_OK), 0);
  cr_assert_eq(access(other, F_OK), 0);
  /* Names are checked: nothing outside the directory. */
  cr_assert_not(ib_dstore_put(d, "../escape", buf, 10));
  cr_assert_eq(ib_dstore_get(d, "../k7", &p, &n), IB_DS_MISS);
  ib_dstore_stats s = ib_dstore_stats_get(d);
  cr_assert_eq(s.hits, 1);
  cr_assert_eq(s.writes, 1);
  cr_assert_eq(s.corrupt, 1);
  ib_dstore_close(d);
  rmdir_all(dir);
}

Test(dstore, bound_holds_and_eviction_follows_last_use) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  enum { SZ = 1000, FILE_SZ = SZ + 24 };
  const uint64_t cap = 8 * FILE_SZ; /* eight files */
  ib_dstore *d = ib_dstore_open(dir, cap);
  cr_assert_not_null(d);
  uint8_t buf[SZ];
  char name[32];
  for (unsigned i = 0; i < 8; i++) {
    snprintf(name, sizeof name, "f%u", i);
    fill(buf, SZ, i);
    cr_assert(ib_dstore_put(d, name, buf, SZ));
    set_mtime(dir, name, 1000000 + i); /* written in order, oldest f0 */
  }
  cr_assert_eq(dir_bytes(dir, NULL), cap);
  /* Use f0 and f1: their mtimes become now, the newest. */
  void *p;
  size_t n;
  cr_assert_eq(ib_dstore_get(d, "f0", &p, &n), IB_DS_HIT);
  free(p);
  cr_assert_eq(ib_dstore_get(d, "f1", &p, &n), IB_DS_HIT);
  free(p);
  /* One more file passes the bound: down to 7/8 of it, oldest last use
   * first - f2 and f3 go (7/8 of 8 files = 7 files: 9 - 2), f0, f1 stay. */
  fill(buf, SZ, 100);
  cr_assert(ib_dstore_put(d, "f8", buf, SZ));
  int count;
  uint64_t bytes = dir_bytes(dir, &count);
  cr_assert_leq(bytes, cap);
  cr_assert_eq(count, 7);
  cr_assert_not(exists(dir, "f2"));
  cr_assert_not(exists(dir, "f3"));
  cr_assert(exists(dir, "f0"));
  cr_assert(exists(dir, "f1"));
  cr_assert(exists(dir, "f8"));
  cr_assert_eq(ib_dstore_stats_get(d).evictions, 2);
  /* Many more writes: the bound holds after every one. */
  for (unsigned i = 0; i < 100; i++) {
    snprintf(name, sizeof name, "g%u", i);
    fill(buf, SZ, 200 + i);
    cr_assert(ib_dstore_put(d, name, buf, SZ));
    cr_assert_leq(dir_bytes(dir, NULL), cap, "after write %u", i);
  }
  /* Another process start over the same directory sees the same bound. */
  ib_dstore_close(d);
  d = ib_dstore_open(dir, 3 * FILE_SZ);
  cr_assert_leq(dir_bytes(dir, NULL), 3 * FILE_SZ);
  ib_dstore_close(d);
  rmdir_all(dir);
}

static void corrupt_file(const char *dir, const char *name, long off, int truncate_to) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s%s", dir, name, IB_DSTORE_SUFFIX);
  if (truncate_to >= 0) {
    cr_assert_eq(truncate(p, truncate_to), 0);
    return;
  }
  FILE *f = fopen(p, "r+b");
  cr_assert_not_null(f);
  cr_assert_eq(fseek(f, off, SEEK_SET), 0);
  int c = fgetc(f);
  cr_assert_eq(fseek(f, off, SEEK_SET), 0);
  fputc(c ^ 0x10, f);
  fclose(f);
}

Test(dstore, truncated_and_bit_flipped_files_are_rejected_and_removed) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  ib_dstore *d = ib_dstore_open(dir, 1 << 20);
  cr_assert_not_null(d);
  uint8_t buf[3000];
  fill(buf, sizeof buf, 3);
  const char *names[] = {"trunc", "flip_payload", "flip_header", "empty", "short_header"};
  for (int i = 0; i < 5; i++) cr_assert(ib_dstore_put(d, names[i], buf, sizeof buf));
  corrupt_file(dir, "trunc", 0, 24 + 2999); /* one payload byte short */
  corrupt_file(dir, "flip_payload", 24 + 1500, -1);
  corrupt_file(dir, "flip_header", 9, -1); /* the length field */
  corrupt_file(dir, "empty", 0, 0);
  corrupt_file(dir, "short_header", 0, 10);
  for (int i = 0; i < 5; i++) {
    void *p = (void *)1;
    size_t n = 1;
    cr_assert_eq(ib_dstore_get(d, names[i], &p, &n), IB_DS_CORRUPT, "%s", names[i]);
    cr_assert_null(p);
    cr_assert_eq(n, 0);
    cr_assert_not(exists(dir, names[i]), "%s removed", names[i]);
    /* Gone now: the next look is a plain miss. */
    cr_assert_eq(ib_dstore_get(d, names[i], &p, &n), IB_DS_MISS);
  }
  cr_assert_eq(ib_dstore_stats_get(d).corrupt, 5);
  cr_assert_eq(ib_dstore_stats_get(d).hits, 0);
  ib_dstore_close(d);
  rmdir_all(dir);
}

Test(dstore, a_file_deleted_under_us_is_a_miss) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  ib_dstore *a = ib_dstore_open(dir, 1 << 20), *b = ib_dstore_open(dir, 1 << 20);
  cr_assert(a && b);
  uint8_t buf[100];
  fill(buf, sizeof buf, 1);
  cr_assert(ib_dstore_put(a, "x", buf, sizeof buf));
  char p[1024];
  snprintf(p, sizeof p, "%s/x%s", dir, IB_DSTORE_SUFFIX);
  cr_assert_eq(unlink(p), 0); /* another process evicted it */
  void *out;
  size_t n;
  cr_assert_eq(ib_dstore_get(b, "x", &out, &n), IB_DS_MISS);
  cr_assert_eq(ib_dstore_stats_get(b).corrupt, 0);
  /* A scan that meets files vanishing, and a directory removed outright,
   * are no errors either. */
  ib_dstore_trim(a);
  rmdir_all(dir);
  cr_assert_eq(ib_dstore_get(b, "x", &out, &n), IB_DS_MISS);
  cr_assert_not(ib_dstore_put(b, "y", buf, sizeof buf));
  ib_dstore_trim(b);
  ib_dstore_close(a);
  ib_dstore_close(b);
}

/* Several processes write and read the same keys at once over a bound
 * small enough that they also evict each other's files: every read is a
 * miss or the exact payload, never a partial or foreign one. */
static int hammer(const char *dir, unsigned seed, int rounds) {
  ib_dstore *d = ib_dstore_open(dir, 600 << 10);
  if (!d) return 10;
  uint8_t *buf = malloc(256 << 10);
  if (!buf) return 11;
  int hits = 0;
  for (int r = 0; r < rounds; r++) {
    seed = seed * 1103515245u + 12345u;
    unsigned key = (seed >> 8) % 12;
    size_t len = 1000 + (size_t)key * 20000; /* a key always has its length */
    char name[32];
    snprintf(name, sizeof name, "key%u", key);
    void *p;
    size_t n;
    ib_dstore_result got = ib_dstore_get(d, name, &p, &n);
    if (got == IB_DS_CORRUPT) return 12; /* whole files only: never seen */
    if (got == IB_DS_HIT) {
      fill(buf, len, key);
      if (n != len || memcmp(p, buf, len) != 0) return 13;
      free(p);
      hits++;
    } else {
      fill(buf, len, key);
      ib_dstore_put(d, name, buf, len); /* may fail only for I/O reasons */
    }
  }
  ib_dstore_close(d);
  free(buf);
  return hits > 0 ? 0 : 14;
}

Test(dstore, concurrent_processes_never_read_a_partial_file, .timeout = 120) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  enum { PROCS = 4 };
  pid_t pids[PROCS];
  for (int i = 0; i < PROCS; i++) {
    pids[i] = fork();
    cr_assert_geq(pids[i], 0);
    if (pids[i] == 0) _exit(hammer(dir, 17u + (unsigned)i * 31u, 1500));
  }
  for (int i = 0; i < PROCS; i++) {
    int st = 0;
    cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
    cr_assert(WIFEXITED(st), "child %d died", i);
    cr_assert_eq(WEXITSTATUS(st), 0, "child %d: code %d", i, WEXITSTATUS(st));
  }
  /* No temporaries left behind by completed writes. */
  DIR *dd = opendir(dir);
  cr_assert_not_null(dd);
  for (struct dirent *de; (de = readdir(dd));)
    cr_assert_neq(strncmp(de->d_name, ".tmp.", 5), 0, "%s", de->d_name);
  closedir(dd);
  rmdir_all(dir);
}

/* One process's threads (a compile pool's) writing at once never show the
 * store over its bound, in its counter or on disk: room is made before a
 * file is renamed in. A watcher reads both all along. */
typedef struct put_thread {
  ib_dstore *d;
  unsigned id;
  int failed;
} put_thread;

enum { PUT_SZ = 3000, PUT_FILES = 300, PUT_CAP = 10 * (PUT_SZ + 24) };

static void *put_many(void *arg) {
  put_thread *t = arg;
  uint8_t buf[PUT_SZ];
  for (unsigned i = 0; i < PUT_FILES; i++) {
    char name[32];
    snprintf(name, sizeof name, "t%u_%u", t->id, i);
    fill(buf, PUT_SZ, t->id * 1000 + i);
    if (!ib_dstore_put(t->d, name, buf, PUT_SZ)) t->failed++;
  }
  return NULL;
}

Test(dstore, threads_writing_at_once_never_pass_the_bound, .timeout = 120) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  ib_dstore *d = ib_dstore_open(dir, PUT_CAP);
  cr_assert_not_null(d);
  enum { THREADS = 4 };
  put_thread t[THREADS];
  pthread_t th[THREADS];
  for (unsigned i = 0; i < THREADS; i++) {
    t[i] = (put_thread){.d = d, .id = i};
    cr_assert_eq(pthread_create(&th[i], NULL, put_many, &t[i]), 0);
  }
  uint64_t max_counted = 0, max_on_disk = 0;
  unsigned looks = 0;
  for (bool running = true; running; looks++) {
    running = ib_dstore_stats_get(d).writes < THREADS * PUT_FILES;
    const uint64_t counted = ib_dstore_stats_get(d).bytes, on_disk = dir_bytes(dir, NULL);
    if (counted > max_counted) max_counted = counted;
    if (on_disk > max_on_disk) max_on_disk = on_disk;
  }
  for (unsigned i = 0; i < THREADS; i++) {
    cr_assert_eq(pthread_join(th[i], NULL), 0);
    cr_assert_eq(t[i].failed, 0, "thread %u: %d writes failed", i, t[i].failed);
  }
  cr_assert_gt(looks, 10u, "the watcher looked while the writers wrote");
  cr_assert_leq(max_counted, PUT_CAP, "counted bytes passed the bound");
  cr_assert_leq(max_on_disk, PUT_CAP, "the directory passed the bound");
  cr_assert_gt(ib_dstore_stats_get(d).evictions, 0);
  /* A file larger than the whole bound is not written (nothing left). */
  uint8_t *big = calloc(1, PUT_CAP);
  cr_assert_not_null(big);
  cr_assert_not(ib_dstore_put(d, "big", big, PUT_CAP));
  cr_assert_not(exists(dir, "big"));
  free(big);
  ib_dstore_close(d);
  rmdir_all(dir);
}

/* ------------------------------------------------------------ NVRTC */

static const char *const fmad_opt[] = {"--fmad=false"};

static char *kernel_src(unsigned i) {
  char *s = malloc(200);
  snprintf(s, 200, "extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = %u; }\n", i);
  return s;
}

static ib_kcache_origin get(ib_kcache *kc, unsigned i, size_t *len_out) {
  char *src = kernel_src(i);
  void *img;
  size_t len;
  ib_kcache_origin o;
  ib_error err = {0};
  cr_assert_eq(ib_kcache_get(kc, "k.cu", src, "sm_90", fmad_opt, 1, &img, &len, &o, NULL, &err),
               IB_OK, "%s", err.message);
  cr_assert_gt(len, 0);
  /* A cubin is an ELF image. */
  cr_assert_eq(memcmp(img, "\177ELF", 4), 0);
  free(img);
  free(src);
  if (len_out) *len_out = len;
  return o;
}

Test(kcache, compiles_once_then_disk_hit_then_corrupt_file_recompiles, .timeout = 120) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  ib_kcache *a = ib_kcache_new(dir, 0, 64 << 20);
  cr_assert_eq(get(a, 1, NULL), IB_KC_COMPILED);
  ib_kcache_stats s = ib_kcache_stats_get(a);
  cr_assert_eq(s.compiles, 1);
  cr_assert_gt(s.compile_us, 0);
  cr_assert_eq(s.disk_writes, 1);
  /* No memory layer here: the next get reads the disk. */
  cr_assert_eq(get(a, 1, NULL), IB_KC_DISK);
  ib_kcache_free(a);
  /* A new process start over the directory compiles nothing. */
  ib_kcache *b = ib_kcache_new(dir, 1 << 20, 64 << 20);
  cr_assert_eq(get(b, 1, NULL), IB_KC_DISK);
  cr_assert_eq(get(b, 1, NULL), IB_KC_MEMORY);
  cr_assert_eq(ib_kcache_stats_get(b).compiles, 0);
  ib_kcache_free(b);
  /* Flip one byte of the cached image: detected, deleted, recompiled. */
  DIR *dd = opendir(dir);
  char name[256] = "";
  for (struct dirent *de; (de = readdir(dd));)
    if (strstr(de->d_name, IB_DSTORE_SUFFIX)) snprintf(name, sizeof name, "%s", de->d_name);
  closedir(dd);
  cr_assert_neq(name[0], 0);
  *strstr(name, IB_DSTORE_SUFFIX) = 0;
  corrupt_file(dir, name, 24 + 100, -1);
  ib_kcache *c = ib_kcache_new(dir, 1 << 20, 64 << 20);
  cr_assert_eq(get(c, 1, NULL), IB_KC_COMPILED);
  s = ib_kcache_stats_get(c);
  cr_assert_eq(s.disk_corrupt, 1);
  cr_assert_eq(s.compiles, 1);
  cr_assert_eq(s.disk_writes, 1); /* rewritten whole */
  ib_kcache_free(c);
  ib_kcache *e = ib_kcache_new(dir, 1 << 20, 64 << 20);
  cr_assert_eq(get(e, 1, NULL), IB_KC_DISK);
  /* A failed compile is counted (its time was spent) and cached nowhere. */
  void *img = NULL;
  size_t len = 0;
  ib_error err = {0};
  for (int i = 0; i < 2; i++)
    cr_assert_eq(ib_kcache_get(e, "bad.cu", "__global__ void k() { nope(); }", "sm_90", NULL, 0,
                               &img, &len, NULL, NULL, &err),
                 IB_DEVICE);
  cr_assert_null(img);
  s = ib_kcache_stats_get(e);
  cr_assert_eq(s.compiles, 2);
  cr_assert_eq(s.disk_writes, 0);
  ib_kcache_free(e);
  rmdir_all(dir);
}

/* Many distinct kernels through small bounds (a few images each): both
 * bounds hold after every get, and an evicted image recompiles on demand. */
Test(kcache, bounds_hold_and_evicted_entries_recompile, .timeout = 300) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  size_t one;
  {
    ib_kcache *probe = ib_kcache_new(NULL, 0, 0);
    get(probe, 1000, &one);
    ib_kcache_free(probe);
  }
  const uint64_t mem_cap = 3 * (one + 64), disk_cap = 5 * (one + 24) + (one + 24) / 2;
  ib_kcache *kc = ib_kcache_new(dir, mem_cap, disk_cap);
  int n = getenv("IB_CACHE_KERNELS") ? atoi(getenv("IB_CACHE_KERNELS")) : 16;
  for (int i = 0; i < n; i++) {
    cr_assert_eq(get(kc, (unsigned)i, NULL), IB_KC_COMPILED);
    ib_kcache_stats s = ib_kcache_stats_get(kc);
    cr_assert_leq(s.memory_bytes, mem_cap);
    cr_assert_leq(dir_bytes(dir, NULL), disk_cap, "after kernel %d", i);
    cr_assert_leq(s.disk_bytes, disk_cap);
  }
  ib_kcache_stats s = ib_kcache_stats_get(kc);
  cr_assert_eq(s.compiles, (uint64_t)n);
  cr_assert_geq(s.memory_evictions, (uint64_t)n - 3);
  cr_assert_gt(s.disk_evictions, 0);
  /* The newest is in memory; the first was evicted from both: compiled. */
  cr_assert_eq(get(kc, (unsigned)n - 1, NULL), IB_KC_MEMORY);
  cr_assert_eq(get(kc, 0, NULL), IB_KC_COMPILED);
  cr_assert_eq(ib_kcache_stats_get(kc).compiles, (uint64_t)n + 1);
  /* One evicted from memory but still on disk (the fourth newest). */
  cr_assert_eq(get(kc, (unsigned)n - 4, NULL), IB_KC_DISK);
  cr_assert_leq(dir_bytes(dir, NULL), disk_cap);
  ib_kcache_free(kc);
  rmdir_all(dir);
}

/* Two processes share one cache directory and compile the same kernels at
 * once: every get succeeds with a valid image. */
Test(kcache, two_processes_share_a_directory, .timeout = 300) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  pid_t pids[2];
  for (int p = 0; p < 2; p++) {
    pids[p] = fork();
    cr_assert_geq(pids[p], 0);
    if (pids[p] == 0) {
      ib_kcache *kc = ib_kcache_new(dir, 0, 64 << 20);
      int bad = 0;
      for (int r = 0; r < 3; r++)
        for (unsigned i = 0; i < 6; i++) {
          char *src = kernel_src(500 + (p ? 5 - i : i));
          void *img;
          size_t len;
          ib_error err = {0};
          if (ib_kcache_get(kc, "k.cu", src, "sm_90", fmad_opt, 1, &img, &len, NULL, NULL, &err) !=
                  IB_OK ||
              len < 4 || memcmp(img, "\177ELF", 4) != 0)
            bad++;
          else
            free(img);
          free(src);
        }
      bad += ib_kcache_stats_get(kc).disk_corrupt != 0;
      ib_kcache_free(kc);
      _exit(bad ? 1 : 0);
    }
  }
  for (int p = 0; p < 2; p++) {
    int st = 0;
    cr_assert_eq(waitpid(pids[p], &st, 0), pids[p]);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d", p);
  }
  int count;
  dir_bytes(dir, &count);
  cr_assert_eq(count, 6);
  rmdir_all(dir);
}

/* ------------------------------------------------------------ executor */

Test(counters, cpu_backend_reports_no_module_activity) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  cr_assert_eq(o.module_cache_bytes, 256ull << 20);
  cr_assert_eq(o.disk_cache_bytes, 2ull << 30);
  cr_assert_null(o.cache_dir);
  ib_executor *ex = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_executor_create(&o, &ex, &err), IB_OK, "%s", err.message);
  ib_executor_counters c;
  memset(&c, 0xab, sizeof c);
  ib_executor_counters_get(ex, &c);
  cr_assert_eq(c.nvrtc_compiles, 0);
  cr_assert_eq(c.nvrtc_compile_us, 0);
  cr_assert_eq(c.module_cache_hits_memory, 0);
  cr_assert_eq(c.module_cache_hits_disk, 0);
  cr_assert_eq(c.module_cache_evictions, 0);
  cr_assert_eq(c.module_cache_bytes, 0);
  cr_assert_eq(c.disk_cache_corrupt, 0);
  ib_executor_destroy(ex);
}

/* A backend's counters hook reaches ib_executor_counters_get (the CUDA
 * backend fills these fields from its module caches). */
static void fake_counters(void *state, ib_executor_counters *out) {
  (void)state;
  out->nvrtc_compiles = 3;
  out->nvrtc_compile_us = 480000;
  out->module_cache_hits_memory = 40;
  out->module_cache_hits_disk = 2;
  out->module_cache_evictions = 1;
  out->module_cache_bytes = 12345;
  out->disk_cache_corrupt = 1;
}

Test(counters, a_backend_hook_fills_the_module_fields) {
  ib_backend be = ib_backend_cpu;
  be.counters = fake_counters;
  ib_executor_options o;
  ib_executor_options_default(&o);
  ib_executor *ex = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_exec_create_with(&o, &be, &ex, &err), IB_OK, "%s", err.message);
  ib_executor_counters c;
  ib_executor_counters_get(ex, &c);
  cr_assert_eq(c.nvrtc_compiles, 3);
  cr_assert_eq(c.nvrtc_compile_us, 480000);
  cr_assert_eq(c.module_cache_hits_memory, 40);
  cr_assert_eq(c.module_cache_hits_disk, 2);
  cr_assert_eq(c.module_cache_evictions, 1);
  cr_assert_eq(c.module_cache_bytes, 12345);
  cr_assert_eq(c.disk_cache_corrupt, 1);
  cr_assert_eq(c.jobs.cap, 64); /* the core's own fields are still there */
  /* Still answered after close (the backend state lives until destroy). */
  cr_assert_eq(ib_executor_close(ex), IB_OK);
  ib_executor_counters_get(ex, &c);
  cr_assert_eq(c.nvrtc_compiles, 3);
  ib_executor_destroy(ex);
}
