/*
 * vips_thumb_bench.c - the libvips peer of bench/drivers/run.sh thumbs: the
 * JPEG files given -> vips_thumbnail_buffer(SIZE) (libvips' shrink-on-load,
 * its draft decode) -> vips_jpegsave_buffer(Q) in T processes at once, each
 * its own images with libvips' own threading at 1 (vips_concurrency_set as
 * worker/codec/codec.c), i.e. "libvips thumbnail on every core" with the
 * libvips our binaries link (on the GPU machine the only libvips there is,
 * carried in the pack). Processes, as the Pillow peers' pools: the threaded
 * version (several pipelines in one process) once aborted a CI run with heap
 * corruption inside libvips 8.14 (it runs no imgbatch code), and libvips
 * rewrote its thread set in 8.15 for races "under rare circumstances"; one
 * pipeline at a time per process keeps the peer a measurement of libvips'
 * speed rather than of that bug. Runs for about --seconds
 * after one warm-up image per process; prints img/s and appends rows (impl
 * libvips-mpT) to --csv. A process that fails or dies fails the run.
 *
 *   vips_thumb_bench [--size S] [--quality Q] [--threads T] [--seconds S]
 *                    [--row part,workload,mode,side] [--csv FILE] FILE.jpg...
 *   --threads 0 (default): every online CPU (T is the number of processes).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vips/vips.h>

typedef struct {
  uint8_t *p;
  size_t n;
} file;

static file *files;
static int nfiles, size = 256, quality = 85;
static double seconds = 3.0, t_stop;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int one(int i) {
  const file *f = &files[i % nfiles];
  VipsImage *t = NULL;
  void *out = NULL;
  size_t len = 0;
  if (vips_thumbnail_buffer(f->p, f->n, &t, size, NULL)) return -1;
  int rc = vips_jpegsave_buffer(t, &out, &len, "Q", quality, NULL);
  g_object_unref(t);
  g_free(out);
  return rc;
}

/* One process's loop; its image count goes to the parent through fd. */
static int child(int id, int fd) {
  if (VIPS_INIT("vips_thumb_bench")) {
    fprintf(stderr, "vips_thumb_bench: process %d: vips init: %s\n", id, vips_error_buffer());
    return 1;
  }
  vips_concurrency_set(1);
  vips_cache_set_max(0); /* no operation cache: every image decoded afresh */
  long n = 0;
  int rc = one(id); /* warm-up, off the count */
  for (int i = id; rc == 0 && now() < t_stop; i++) {
    rc = one(i);
    if (rc == 0) n++;
  }
  if (rc) {
    fprintf(stderr, "vips_thumb_bench: process %d: %s\n", id, vips_error_buffer());
    return 1;
  }
  return write(fd, &n, sizeof n) == (ssize_t)sizeof n ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *csv = NULL, *row = "thumbs,thumbnail,RGB,0";
  int threads = 0;
  files = calloc((size_t)argc, sizeof *files);
  if (!files) return 1;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--size") && v)
      size = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quality") && v)
      quality = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && v)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && v)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--csv") && v)
      csv = argv[++i];
    else if (!strcmp(argv[i], "--row") && v)
      row = argv[++i];
    else if (argv[i][0] == '-')
      goto usage;
    else {
      gchar *p = NULL;
      gsize n = 0;
      if (!g_file_get_contents(argv[i], &p, &n, NULL)) {
        fprintf(stderr, "vips_thumb_bench: cannot read %s\n", argv[i]);
        return 2;
      }
      files[nfiles++] = (file){(uint8_t *)p, n};
    }
  }
  if (!nfiles || size < 1 || quality < 1 || quality > 100 || seconds <= 0) goto usage;
  if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  char part[64] = "", wl[64] = "", mode[16] = "", side[32] = "";
  if (sscanf(row, "%63[^,],%63[^,],%15[^,],%31s", part, wl, mode, side) != 4) goto usage;
  /* Children fork before anything starts a thread (libvips does at init). */
  pid_t *pid = calloc((size_t)threads, sizeof *pid);
  int *fd = calloc((size_t)threads, sizeof *fd);
  if (!pid || !fd) {
    fprintf(stderr, "vips_thumb_bench: out of memory\n");
    return 1;
  }
  fflush(NULL);
  double t0 = now();
  t_stop = t0 + seconds;
  int started = 0;
  for (; started < threads; started++) {
    int p[2];
    if (pipe(p)) break;
    pid_t c = fork();
    if (c == 0) {
      close(p[0]);
      _exit(child(started, p[1]));
    }
    close(p[1]);
    if (c < 0) {
      close(p[0]);
      break;
    }
    pid[started] = c;
    fd[started] = p[0];
  }
  if (started < threads)
    fprintf(stderr, "vips_thumb_bench: started %d of %d processes: %s\n", started, threads,
            strerror(errno));
  long n = 0;
  int bad = started < threads;
  for (int i = 0; i < started; i++) {
    long c = 0;
    ssize_t got = read(fd[i], &c, sizeof c);
    close(fd[i]);
    int st = 0;
    while (waitpid(pid[i], &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(st)) {
      fprintf(stderr, "vips_thumb_bench: process %d died by signal %d (%s)\n", i, WTERMSIG(st),
              strsignal(WTERMSIG(st)));
      bad = 1;
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || got != (ssize_t)sizeof c) {
      bad = 1; /* the child said why */
    } else {
      n += c;
    }
  }
  double wall = now() - t0;
  free(pid);
  free(fd);
  if (bad) return 1;
  if (VIPS_INIT(argv[0])) vips_error_exit("vips init"); /* for its version string */
  double rate = n / wall; /* the warm-up images are inside the wall: a lower bound */
  printf(
      "  %s: %s: libvips-mp%d %.1f img/s (vips_thumbnail_buffer %d + jpegsave Q %d, libvips %s, "
      "%ld images in %.2f s)\n",
      part, wl, threads, rate, size, quality, vips_version_string(), n, wall);
  if (csv) {
    FILE *f = fopen(csv, "a");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    if (ftell(f) == 0)
      fprintf(f, "part,impl,workload,mode,side,n,metric,value,unit,setting,status,note\n");
    fprintf(f,
            "%s,libvips-mp%d,%s,%s,%s,%ld,img_per_s,%.6g,img/s,,ok,vips_thumbnail_buffer %d + "
            "jpegsave Q %d; libvips %s; %d processes at vips concurrency 1\n",
            part, threads, wl, mode, side, n, rate, size, quality, vips_version_string(), threads);
    fprintf(f, "%s,libvips-mp%d,%s,%s,%s,%ld,ms_per_img,%.6g,ms,,ok,\n", part, threads, wl, mode,
            side, n, 1e3 / rate);
    fclose(f);
  }
  return 0;
usage:
  fprintf(stderr,
          "usage: vips_thumb_bench [--size S] [--quality Q] [--threads T] [--seconds S]\n"
          "                        [--row part,workload,mode,side] [--csv FILE] FILE.jpg...\n");
  return 2;
}
