/*
 * vips_thumb_bench.c - the libvips peer of bench/drivers/run.sh thumbs: the
 * JPEG files given -> vips_thumbnail_buffer(SIZE) (libvips' shrink-on-load,
 * its draft decode) -> vips_jpegsave_buffer(Q) on T threads at once, each
 * thread its own images with libvips' own threading at 1 (vips_concurrency_set
 * as worker/codec/codec.c), i.e. "libvips thumbnail on every core" with the
 * libvips our binaries link (on the GPU machine the only libvips there is,
 * carried in the pack). Runs for about --seconds after one warm-up image per
 * thread; prints img/s and appends rows (impl libvips-mtT) to --csv.
 *
 *   vips_thumb_bench [--size S] [--quality Q] [--threads T] [--seconds S]
 *                    [--row part,workload,mode,side] [--csv FILE] FILE.jpg...
 *   --threads 0 (default): every online CPU.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
static atomic_long done_imgs;
static atomic_int failed;

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

static void *worker(void *arg) {
  long id = (long)arg;
  if (one((int)id)) atomic_store(&failed, 1); /* warm-up, off the count */
  for (int i = (int)id; now() < t_stop; i++) {
    if (one(i)) {
      atomic_store(&failed, 1);
      break;
    }
    atomic_fetch_add(&done_imgs, 1);
  }
  vips_thread_shutdown();
  return NULL;
}

int main(int argc, char **argv) {
  const char *csv = NULL, *row = "thumbs,thumbnail,RGB,0";
  int threads = 0;
  if (VIPS_INIT(argv[0])) vips_error_exit("vips init");
  vips_concurrency_set(1);
  vips_cache_set_max(0); /* no operation cache: every image decoded afresh */
  files = calloc((size_t)argc, sizeof *files);
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
  pthread_t *th = calloc((size_t)threads, sizeof *th);
  if (!th) {
    fprintf(stderr, "vips_thumb_bench: out of memory\n");
    return 1;
  }
  double t0 = now();
  t_stop = t0 + seconds;
  int started = 0;
  while (started < threads &&
         pthread_create(&th[started], NULL, worker, (void *)(long)started) == 0)
    started++;
  if (started < threads) {
    /* the ones running stop at t_stop as usual */
    fprintf(stderr, "vips_thumb_bench: started %d of %d threads\n", started, threads);
  }
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  if (started < threads) return 1;
  double wall = now() - t0;
  free(th);
  if (atomic_load(&failed)) {
    fprintf(stderr, "vips_thumb_bench: %s\n", vips_error_buffer());
    return 1;
  }
  long n = atomic_load(&done_imgs);
  double rate = n / wall; /* the warm-up images are inside the wall: a lower bound */
  printf(
      "  %s: %s: libvips-mt%d %.1f img/s (vips_thumbnail_buffer %d + jpegsave Q %d, libvips %s, "
      "%ld images in %.2f s)\n",
      part, wl, threads, rate, size, quality, vips_version_string(), n, wall);
  if (csv) {
    FILE *f = fopen(csv, "a");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    if (ftell(f) == 0)
      fprintf(f, "part,impl,workload,mode,side,n,metric,value,unit,setting,status,note\n");
    fprintf(f,
            "%s,libvips-mt%d,%s,%s,%s,%ld,img_per_s,%.6g,img/s,,ok,vips_thumbnail_buffer %d + "
            "jpegsave Q %d; libvips %s; %d threads at vips concurrency 1\n",
            part, threads, wl, mode, side, n, rate, size, quality, vips_version_string(), threads);
    fprintf(f, "%s,libvips-mt%d,%s,%s,%s,%ld,ms_per_img,%.6g,ms,,ok,\n", part, threads, wl, mode,
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
