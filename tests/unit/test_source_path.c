/* Path resolution beneath the source root: the kernel's openat2 and the
 * component walker used where it is missing agree, and neither can be
 * steered outside the root, by a symlink or by a component swapped mid-walk. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "parse/source_path.h"

static char base[64]; /* holds root/ and outside.png */
static char root[128];

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert(f, "%s", path);
  fputs(text, f);
  fclose(f);
}

static void at(char *out, size_t n, const char *dir, const char *name) {
  int w = snprintf(out, n, "%s/%s", dir, name);
  cr_assert(w > 0 && (size_t)w < n);
}

/* dir/name, a symlink to target. */
static void link_at(const char *dir, const char *name, const char *target) {
  char p[256];
  at(p, sizeof p, dir, name);
  cr_assert_eq(symlink(target, p), 0, "%s/%s", dir, name);
}

static void setup(void) {
  strcpy(base, "/tmp/ib_source_path_XXXXXX");
  cr_assert(mkdtemp(base));
  at(root, sizeof root, base, "root");
  char p[256];
  cr_assert_eq(mkdir(root, 0700), 0);
  at(p, sizeof p, base, "outside.png");
  put(p, "OUTSIDE");
  at(p, sizeof p, root, "a.png");
  put(p, "A");
  at(p, sizeof p, root, "sub");
  cr_assert_eq(mkdir(p, 0700), 0);
  at(p, sizeof p, root, "sub/b.png");
  put(p, "B");
  link_at(root, "sub/up", "../a.png");
  link_at(root, "sub/loop", "loop");
  link_at(root, "linkdir", "sub");
  link_at(root, "esc", "../outside.png");
  link_at(root, "abs", "/etc/passwd");
  link_at(root, "escdir", "..");
  link_at(root, "sub/deep", "../escdir/outside.png");
  at(p, sizeof p, root, "fifo");
  cr_assert_eq(mkfifo(p, 0600), 0);
  /* Absolute links: under the root's real name, under the configured name
   * (base/rootlink, a symlink to the root), and out of it. */
  char t[256];
  link_at(base, "rootlink", "root");
  at(t, sizeof t, root, "a.png");
  link_at(root, "absin", t);
  at(t, sizeof t, root, "sub");
  link_at(root, "absdir", t);
  at(t, sizeof t, base, "rootlink/sub/b.png");
  link_at(root, "absconf", t);
  at(t, sizeof t, root, "../outside.png");
  link_at(root, "absdotdot", t);
  at(t, sizeof t, base, "rootx/a.png"); /* shares the root's name as a prefix */
  link_at(root, "absprefix", t);
}

static void teardown(void) {
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  cr_assert_eq(system(cmd), 0);
}

/* The file's text, or "-errno". */
static void outcome(int fd, char *out, size_t n) {
  if (fd < 0) {
    snprintf(out, n, "-%s", strerrorname_np(-fd));
    return;
  }
  struct stat sb;
  cr_assert_eq(fstat(fd, &sb), 0);
  if (!S_ISREG(sb.st_mode)) {
    snprintf(out, n, "%s", S_ISDIR(sb.st_mode) ? "<dir>" : S_ISFIFO(sb.st_mode) ? "<fifo>" : "<?>");
  } else {
    ssize_t got = read(fd, out, n - 1);
    out[got < 0 ? 0 : got] = 0;
  }
  close(fd);
}

static const struct {
  const char *rel, *want;
} cases[] = {
    {"a.png", "A"},
    {"sub/b.png", "B"},
    {"sub/./b.png", "B"},
    {"sub//b.png", "B"},
    {"sub/up", "A"},        /* symlink with "..", staying inside */
    {"linkdir/b.png", "B"}, /* directory symlink inside */
    {"linkdir/up", "A"},
    {"sub/../a.png", "A"},
    {"esc", "-EXDEV"}, /* symlink to a file outside */
    {"abs", "-EXDEV"}, /* absolute symlink */
    {"escdir/outside.png", "-EXDEV"},
    {"sub/deep", "-EXDEV"}, /* chained: inside link to an escaping one */
    {"/etc/passwd", "-EXDEV"},
    {"../outside.png", "-EXDEV"},
    {"sub/../../outside.png", "-EXDEV"},
    {"sub/loop", "-ELOOP"},
    {"missing.png", "-ENOENT"},
    {"a.png/x", "-ENOTDIR"},
    {"absin", "A"},
    {"absdir/b.png", "B"},
    {"absdir/up", "A"},
    {"absconf", "B"},
    {"absdotdot", "-EXDEV"},
    {"absprefix", "-EXDEV"},
    {"fifo", "<fifo>"}, /* opened without blocking */
    {"sub", "<dir>"},
    {".", "<dir>"},
};

/* The root as a parse opens it: by its configured name, base/rootlink. */
static char conf_name[160];
static ib_path_root open_root(void) {
  at(conf_name, sizeof conf_name, base, "rootlink");
  ib_path_root r = {open(conf_name, O_PATH | O_DIRECTORY | O_CLOEXEC), conf_name};
  cr_assert_geq(r.fd, 0);
  return r;
}

static void check_all(int (*open_fn)(const ib_path_root *, const char *), const char *who) {
  ib_path_root r = open_root();
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char got[64];
    outcome(open_fn(&r, cases[i].rel), got, sizeof got);
    cr_expect_str_eq(got, cases[i].want, "%s('%s'): got %s, want %s", who, cases[i].rel, got,
                     cases[i].want);
  }
  close(r.fd);
}

TestSuite(source_path, .init = setup, .fini = teardown);

Test(source_path, the_walker_resolves_beneath_the_root) { check_all(ib_path_walk_beneath, "walk"); }

Test(source_path, openat2_or_its_fallback_resolves_beneath_the_root) {
  check_all(ib_path_open_beneath, "open");
}

Test(source_path, a_unix_socket_is_refused_without_blocking) {
  char p[256];
  at(p, sizeof p, root, "sock");
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  cr_assert_lt(strlen(p), sizeof a.sun_path);
  memcpy(a.sun_path, p, strlen(p) + 1);
  cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
  ib_path_root r = open_root();
  cr_expect_eq(ib_path_walk_beneath(&r, "sock"), -ENXIO);
  cr_expect_eq(ib_path_open_beneath(&r, "sock"), -ENXIO);
  close(r.fd);
  close(s);
}

/* A swapper exchanges root/sw (a directory holding f.png = "IN") with
 * root/alt (a symlink to the outside directory holding f.png = "OUTSIDE")
 * while the resolver opens sw/f.png: it may fail, it must never read
 * outside. */
typedef struct swap_ctx {
  char sw[256], alt[256];
  atomic_bool stop;
  atomic_long swaps;
} swap_ctx;

static void *swapper(void *arg) {
  swap_ctx *c = arg;
  while (!atomic_load(&c->stop)) {
    cr_assert_eq(renameat2(AT_FDCWD, c->sw, AT_FDCWD, c->alt, RENAME_EXCHANGE), 0, "%s",
                 strerror(errno));
    atomic_fetch_add(&c->swaps, 1);
  }
  return NULL;
}

/* Counts reads inside and outside; returns the outside count. */
static long race(int (*open_fn)(const ib_path_root *, const char *), const char *who) {
  swap_ctx c = {0};
  char p[256], outdir[256];
  at(c.sw, sizeof c.sw, root, "sw");
  at(c.alt, sizeof c.alt, root, "alt");
  at(outdir, sizeof outdir, base, "outdir");
  cr_assert_eq(mkdir(outdir, 0700), 0);
  at(p, sizeof p, outdir, "f.png");
  put(p, "OUTSIDE");
  cr_assert_eq(mkdir(c.sw, 0700), 0);
  at(p, sizeof p, c.sw, "f.png");
  put(p, "IN");
  cr_assert_eq(symlink("../outdir", c.alt), 0);
  ib_path_root r = open_root();
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, swapper, &c), 0);
  long inside = 0, failed = 0, outside = 0;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    for (int i = 0; i < 200; i++) {
      char got[64];
      outcome(open_fn(&r, "sw/f.png"), got, sizeof got);
      if (strcmp(got, "IN") == 0)
        inside++;
      else if (strcmp(got, "OUTSIDE") == 0)
        outside++;
      else
        failed++;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < 500);
  atomic_store(&c.stop, true);
  pthread_join(t, NULL);
  close(r.fd);
  cr_log_info("%s: %ld inside, %ld refused, %ld outside, %ld swaps", who, inside, failed, outside,
              atomic_load(&c.swaps));
  cr_expect_gt(inside, 0, "%s never read the file inside", who);
  cr_expect_gt(atomic_load(&c.swaps), 100, "the swapper barely ran");
  return outside;
}

/* What realpath-then-open amounts to: the kernel follows the swapped link. */
static int follows_links(const ib_path_root *root, const char *rel) {
  int fd = openat(root->fd, rel, O_RDONLY | O_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

Test(source_path, the_race_catches_a_resolver_that_follows_links) {
  cr_expect_gt(race(follows_links, "naive"), 0);
}

Test(source_path, the_walker_never_reads_outside_while_a_component_is_swapped) {
  cr_expect_eq(race(ib_path_walk_beneath, "walk"), 0);
}

Test(source_path, openat2_never_reads_outside_while_a_component_is_swapped) {
  cr_expect_eq(race(ib_path_open_beneath, "open"), 0);
}

/* A one-source Job naming `path`, packed (extra: as many extra sources). */
static uint8_t *path_job(const char *path, size_t extra, size_t *len) {
  Imgbatch__V1__Job j;
  imgbatch__v1__job__init(&j);
  Imgbatch__V1__Source src;
  imgbatch__v1__source__init(&src);
  src.kind_case = IMGBATCH__V1__SOURCE__KIND_PATH;
  src.path = (char *)path;
  j.source = &src;
  Imgbatch__V1__Source *extras[8];
  cr_assert_leq(extra, 8);
  for (size_t i = 0; i < extra; i++) extras[i] = &src;
  j.extra_sources = extras;
  j.n_extra_sources = extra;
  /* One SourceOp per source: only sources a node reads are opened. */
  Imgbatch__V1__Node node[9], *nodes[9];
  Imgbatch__V1__SourceOp op[9];
  for (size_t i = 0; i <= extra; i++) {
    imgbatch__v1__node__init(&node[i]);
    imgbatch__v1__source_op__init(&op[i]);
    op[i].index = (uint32_t)i;
    node[i].op_case = IMGBATCH__V1__NODE__OP_SOURCE;
    node[i].source = &op[i];
    nodes[i] = &node[i];
  }
  j.nodes = nodes;
  j.n_nodes = extra + 1;
  *len = imgbatch__v1__job__get_packed_size(&j);
  uint8_t *buf = malloc(*len);
  imgbatch__v1__job__pack(&j, buf);
  return buf;
}

static ib_status parse_path(const char *path, size_t extra, uint64_t job_cap, ib_error *err) {
  size_t len;
  uint8_t *buf = path_job(path, extra, &len);
  ib_graph_limits lim = {.source_root = conf_name, .max_job_source_bytes = job_cap};
  ib_graph *g = NULL;
  ib_status st = ib_graph_parse(buf, len, &lim, &g, NULL, err);
  ib_graph_free(g);
  free(buf);
  return st;
}

/* The whole parse through the walker, as on a kernel without openat2. */
Test(source_path, a_parse_through_the_walker_refuses_escapes_special_files_and_oversize) {
  ib_path_test_force_walk(true);
  ib_path_root r = open_root(); /* sets conf_name */
  close(r.fd);
  ib_error err = {0};
  cr_expect_eq(parse_path("esc", 0, 0, &err), IB_INVALID);
  cr_expect_eq(err.stage, IB_STAGE_VALIDATE);
  cr_expect(strstr(err.message, "source 0") && strstr(err.message, "'esc'"), "%s", err.message);
  cr_expect_eq(parse_path("fifo", 0, 0, &err), IB_INVALID);
  cr_expect(strstr(err.message, "FIFO"), "%s", err.message);
  cr_expect_eq(parse_path("sub", 0, 0, &err), IB_INVALID);
  cr_expect(strstr(err.message, "directory"), "%s", err.message);
  /* Read (an "A" is no image): the path itself was fine. */
  cr_expect_eq(parse_path("sub/up", 0, 0, &err), IB_DECODE);
  cr_expect(strstr(err.message, "unrecognised"), "%s", err.message);
  /* Three one-byte files against a two-byte job cap: refused unread. */
  cr_expect_eq(parse_path("sub/up", 2, 2, &err), IB_LIMIT);
  cr_expect(strstr(err.message, "source 2") && strstr(err.message, "3 bytes"), "%s", err.message);
  ib_path_test_force_walk(false);
}
