/*
 * source_path.c - path sources: resolve beneath the source root, refuse
 * special files, admit the sizes, then read.
 */
#include "parse/source_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#include "core/error.h"

#define DEFAULT_MAX_SOURCE_BYTES (256ull << 20)
#define OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
#define MAX_LINKS 40 /* the kernel's own bound (ELOOP) */
#define MAX_DEPTH 256
#define OPENAT2_RETRIES 8

static atomic_bool no_openat2; /* latched on ENOSYS */
static atomic_bool force_walk;

void ib_path_test_force_walk(bool on) { atomic_store(&force_walk, on); }

/* Replaces buf's contents with `target` + "/" + `rest` (rest may be empty). */
static int splice_link(char **buf, size_t *cap, const char *target, size_t tlen, const char *rest) {
  size_t rlen = strlen(rest), need = tlen + 1 + rlen + 1;
  if (need > 2 * PATH_MAX) return -ENAMETOOLONG;
  char *nb = malloc(need > *cap ? need : *cap);
  if (!nb) return -ENOMEM;
  memcpy(nb, target, tlen);
  nb[tlen] = '/';
  memcpy(nb + tlen + 1, rest, rlen + 1);
  free(*buf);
  *buf = nb;
  *cap = need > *cap ? need : *cap;
  return 0;
}

/* `target` minus `name` when it lies under it ("/r/a" under "/r" -> "a"). */
static const char *strip_prefix(const char *name, const char *target) {
  size_t n = strlen(name);
  while (n > 1 && name[n - 1] == '/') n--;
  if (n == 0 || name[0] != '/' || strncmp(target, name, n) != 0) return NULL;
  if (n == 1) return target + 1; /* the root is "/" */
  if (target[n] == 0) return target + n;
  return target[n] == '/' ? target + n + 1 : NULL;
}

/* The part of an absolute symlink target below the root, or NULL. The root
 * has two names: the configured one (which may pass through symlinks) and
 * the kernel's for the fd, asked once per walk. Either way the walk goes on
 * from the root fd itself, so a stale name can only misplace the walk
 * inside the root, never lead out of it. */
static const char *below_root(const ib_path_root *root, const char *target, char *canon,
                              bool *asked) {
  const char *r = root->name ? strip_prefix(root->name, target) : NULL;
  if (r) return r;
  if (!*asked) {
    *asked = true;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", root->fd);
    ssize_t n = readlink(proc, canon, PATH_MAX - 1);
    canon[n > 0 ? n : 0] = 0;
  }
  return canon[0] ? strip_prefix(canon, target) : NULL;
}

int ib_path_walk_beneath(const ib_path_root *root, const char *rel) {
  if (!rel[0]) return -ENOENT;
  if (rel[0] == '/') return -EXDEV;
  size_t cap = strlen(rel) + 1;
  if (cap > PATH_MAX) return -ENAMETOOLONG;
  char *buf = malloc(cap);
  char *canon = malloc(PATH_MAX);
  if (!buf || !canon) {
    free(buf);
    free(canon);
    return -ENOMEM;
  }
  memcpy(buf, rel, cap);
  bool asked = false;
  /* dirs[0] is the root (not ours to close); dirs[depth] the current one. */
  int dirs[MAX_DEPTH + 1];
  int depth = 0, links = 0, result = -ENOENT;
  dirs[0] = root->fd;
  char name[NAME_MAX + 1];
  const char *p = buf;
  for (;;) {
    while (*p == '/') p++;
    if (!*p) { /* ended on a directory ("a/", "."): that directory itself */
      int fd = openat(dirs[depth], ".", OPEN_FLAGS);
      result = fd >= 0 ? fd : -errno;
      break;
    }
    const char *end = strchr(p, '/');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > NAME_MAX) {
      result = -ENAMETOOLONG;
      break;
    }
    memcpy(name, p, n);
    name[n] = 0;
    p += n;
    bool last = !end;
    if (strcmp(name, ".") == 0) continue;
    if (strcmp(name, "..") == 0) {
      /* Lexical, over the fds held: the kernel's ".." is never asked. */
      if (depth == 0) {
        result = -EXDEV;
        break;
      }
      close(dirs[depth--]);
      continue;
    }
    int fd = last ? openat(dirs[depth], name, OPEN_FLAGS | O_NOFOLLOW)
                  : openat(dirs[depth], name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      if (last) {
        result = fd;
        break;
      }
      if (depth == MAX_DEPTH) {
        close(fd);
        result = -ENAMETOOLONG;
        break;
      }
      dirs[++depth] = fd;
      continue;
    }
    int e = errno;
    if (e != ELOOP && e != ENOTDIR) {
      result = -e;
      break;
    }
    /* A symlink (or a plain non-directory, which readlinkat tells apart):
     * expand it ourselves, relative to the directory holding it. */
    char target[PATH_MAX];
    ssize_t tl = readlinkat(dirs[depth], name, target, sizeof target);
    if (tl < 0) {
      result = -e;
      break;
    }
    if ((size_t)tl == sizeof target) {
      result = -ENAMETOOLONG;
      break;
    }
    target[tl] = 0;
    if (++links > MAX_LINKS) {
      result = -ELOOP;
      break;
    }
    if (tl == 0) {
      result = -ENOENT;
      break;
    }
    const char *t = target;
    if (target[0] == '/') {
      /* Absolute: only a name under the root, walked from the root. */
      if (!(t = below_root(root, target, canon, &asked))) {
        result = -EXDEV;
        break;
      }
      while (depth > 0) close(dirs[depth--]);
    }
    /* A trailing name that was a symlink stays the last one: no "/" added
     * after its target (that would demand a directory). */
    size_t len = strlen(t);
    int r = splice_link(&buf, &cap, t, len, last ? "" : p);
    if (r < 0) {
      result = r;
      break;
    }
    if (last) buf[len] = 0;
    p = buf;
  }
  while (depth > 0) close(dirs[depth--]);
  free(buf);
  free(canon);
  return result;
}

int ib_path_open_beneath(const ib_path_root *root, const char *rel) {
#ifdef SYS_openat2
  if (!atomic_load(&no_openat2) && !atomic_load(&force_walk)) {
    struct open_how how = {.flags = OPEN_FLAGS, .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    for (int i = 0; i < OPENAT2_RETRIES; i++) {
      long fd = syscall(SYS_openat2, root->fd, rel, &how, sizeof how);
      if (fd >= 0) return (int)fd;
      if (errno == EAGAIN) continue; /* a rename raced a ".." check; then walk */
      if (errno == ENOSYS) {
        atomic_store(&no_openat2, true);
        break;
      }
      /* Seccomp filters that predate openat2 answer EPERM; RESOLVE_BENEATH
       * refuses every absolute symlink, the walker those naming places
       * under the root too: both walk instead. */
      if (errno == EPERM || errno == EXDEV) break;
      return -errno;
    }
  }
#endif
  return ib_path_walk_beneath(root, rel);
}

/* Mirrors the wire rule: relative, no ".." component at all (symlink
 * targets may use "..": the resolver keeps those beneath the root). */
static bool lexically_inside(const char *rel) {
  if (!rel[0] || rel[0] == '/') return false;
  for (const char *p = rel; *p;) {
    const char *end = strchr(p, '/');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') return false;
    p += n;
    while (*p == '/') p++;
  }
  return true;
}

static const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

static ib_status open_error(ib_error *err, size_t idx, const char *rel, int e) {
  switch (e) {
    case EXDEV:
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                          "source %zu: path '%s' leads outside the source root", idx, rel);
    case ELOOP:
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                          "source %zu: path '%s': symlink loop or magic link under the source root",
                          idx, rel);
    case ENXIO: /* a socket (or a device without its driver) */
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                          "source %zu: path '%s' is not a regular file", idx, rel);
    case EMFILE:
    case ENFILE:
      return ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE,
                          "source %zu: path '%s': out of file descriptors", idx, rel);
    default:
      return ib_error_set(err, IB_DECODE, IB_STAGE_DECODE, "source %zu: path '%s': %s", idx, rel,
                          strerror(e));
  }
}

static const Imgbatch__V1__Source *source_pb(const ib_graph *g, size_t i) {
  return i == 0 ? g->job->source : g->job->extra_sources[i - 1];
}

static bool is_path(const Imgbatch__V1__Source *pb) {
  return pb && pb->kind_case == IMGBATCH__V1__SOURCE__KIND_PATH;
}

/* Reads exactly what fstat admitted: a file grown since is cut there, one
 * shrunk comes out short (and fails its decode). */
static ib_status read_admitted(int fd, uint64_t size, ib_source *s, size_t idx, const char *rel,
                               ib_error *err) {
  s->file_bytes = malloc(size ? (size_t)size : 1);
  if (!s->file_bytes)
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_DECODE, "source %zu: out of memory", idx);
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, s->file_bytes + got, (size_t)size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return ib_error_set(err, IB_DECODE, IB_STAGE_DECODE, "source %zu: read '%s': %s", idx, rel,
                          strerror(errno));
    if (n == 0) break;
    got += (size_t)n;
  }
  s->bytes = s->file_bytes;
  s->len = got;
  return IB_OK;
}

/* A path source the graph reads (`wanted` NULL: every one). */
static bool wanted_path(const ib_graph *g, const bool *wanted, size_t i) {
  return is_path(source_pb(g, i)) && (!wanted || wanted[i]);
}

ib_status ib_path_sources_read(ib_graph *g, const ib_graph_limits *lim, const bool *wanted,
                               ib_error *err) {
  size_t n_paths = 0;
  for (size_t i = 0; i < g->n_sources; i++) n_paths += wanted_path(g, wanted, i);
  if (!n_paths) return IB_OK;
  uint64_t per_source = lim->max_source_bytes ? lim->max_source_bytes : DEFAULT_MAX_SOURCE_BYTES;
  uint64_t per_job =
      lim->max_job_source_bytes ? lim->max_job_source_bytes : IB_DEFAULT_MAX_JOB_SOURCE_BYTES;
  if (!lim->source_root) {
    for (size_t i = 0; i < g->n_sources; i++)
      if (wanted_path(g, wanted, i))
        return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                            "source %zu: path sources need a configured source root", i);
  }
  int *fds = malloc(g->n_sources * sizeof *fds);
  uint64_t *sizes = malloc(g->n_sources * sizeof *sizes);
  if (!fds || !sizes) {
    free(fds);
    free(sizes);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_PARSE, "out of memory");
  }
  for (size_t i = 0; i < g->n_sources; i++) fds[i] = -1;
  ib_status st = IB_OK;
  int root = open(lim->source_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  ib_path_root at = {root, lim->source_root};
  if (root < 0) {
    st = ib_error_set(err, IB_INTERNAL, IB_STAGE_DECODE, "source root '%s': %s", lim->source_root,
                      strerror(errno));
    goto out;
  }
  /* Pass 1: open and size every path source; nothing is read yet. */
  uint64_t total = 0;
  for (size_t i = 0; i < g->n_sources && st == IB_OK; i++) {
    const Imgbatch__V1__Source *pb = source_pb(g, i);
    if (!wanted_path(g, wanted, i)) continue;
    const char *rel = pb->path ? pb->path : "";
    if (!lexically_inside(rel)) {
      st = ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "source %zu: path '%s' must be relative and stay inside the source root", i,
                        rel);
      break;
    }
    int fd = ib_path_open_beneath(&at, rel);
    if (fd < 0) {
      st = open_error(err, i, rel, -fd);
      break;
    }
    fds[i] = fd;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
      st = open_error(err, i, rel, errno);
      break;
    }
    if (!S_ISREG(sb.st_mode)) {
      st = ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "source %zu: path '%s' is %s, not a regular file", i, rel,
                        file_kind(sb.st_mode));
      break;
    }
    sizes[i] = (uint64_t)sb.st_size;
    if (sizes[i] > per_source) {
      st = ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE,
                        "source %zu: path '%s' has %llu bytes, over the %llu byte source limit", i,
                        rel, (unsigned long long)sizes[i], (unsigned long long)per_source);
      break;
    }
    total += sizes[i];
    if (total > per_job)
      st = ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE,
                        "source %zu: path '%s' (%llu bytes) brings the job's path sources to %llu "
                        "bytes, over its %llu byte cap (max_job_source_bytes, at most host_bytes)",
                        i, rel, (unsigned long long)sizes[i], (unsigned long long)total,
                        (unsigned long long)per_job);
  }
  /* Pass 2: everything is admitted; read it. */
  for (size_t i = 0; i < g->n_sources && st == IB_OK; i++) {
    if (fds[i] < 0) continue;
    st = read_admitted(fds[i], sizes[i], &g->sources[i], i, source_pb(g, i)->path, err);
  }
out:
  for (size_t i = 0; i < g->n_sources; i++)
    if (fds[i] >= 0) close(fds[i]);
  if (root >= 0) close(root);
  free(fds);
  free(sizes);
  return st;
}
