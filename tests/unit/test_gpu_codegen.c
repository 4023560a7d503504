/* CUDA backend pieces that need no GPU: fused-chain codegen compiled by
 * NVRTC for sm_90 (a few hundred random chain signatures), the module cache
 * (memory, disk, compile errors with the log), the size-class pool. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/codegen.h"
#include "gpu/nvrtc_cache.h"
#include "gpu/pool.h"
#include "kernels/chops.h"
#include "kernels/enhance.h"

static const char *const fmad_opt[] = {"--fmad=false"};

static unsigned rnd(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) & 0xffffff;
}

/* A random valid chain: a head (maybe two-input or contrast) then
 * fusable steps whose modes connect. */
static void random_chain(unsigned *seed, ib_gchain *c) {
  memset(c, 0, sizeof *c);
  int m = 1 + (int)(rnd(seed) % 6);
  int n = 1 + (int)(rnd(seed) % 6);
  for (int i = 0; i < n; i++) {
    ib_gstep s = {0};
    s.mode_in = m;
    s.mode_out = m;
    unsigned pick = rnd(seed) % (i == 0 ? 17 : 7);
    switch (pick) {
      case 0: s.kind = IB_GS_COPY; break;
      case 1: s.kind = IB_GS_POINT; s.param_len = 256u * ib_mode_bands((ib_mode)m); break;
      case 2: s.kind = IB_GS_CONVERT; s.a = m; s.mode_out = 1 + (int)(rnd(seed) % 6); break;
      case 3: s.kind = IB_GS_GETCHANNEL; s.a = (int)(rnd(seed) % ib_mode_bands((ib_mode)m)); s.mode_out = 1; break;
      case 4: s.kind = IB_GS_CONSTANT; s.param_len = 4; s.mode_out = 1; break;
      case 5: s.kind = IB_GS_ENHANCE; s.a = (int)(rnd(seed) % 2); s.param_len = 16; break;
      case 6:
        if (m == IB_MODE_RGB || m == IB_MODE_RGBA) { s.kind = IB_GS_TONE; s.param_len = 24; }
        else s.kind = IB_GS_COPY;
        break;
      case 7: s.kind = IB_GS_CHOPS; s.a = (int)(rnd(seed) % IB_CHOP_COUNT); s.param_len = 8; break;
      case 8: s.kind = IB_GS_BLEND; s.param_len = 4; break;
      case 9: s.kind = IB_GS_ENHANCE; s.a = IB_ENHANCE_CONTRAST; s.param_len = 16; break;
      case 10: s.kind = IB_GS_TRANSPOSE; s.a = (int)(rnd(seed) % 7); break;
      case 11: s.kind = IB_GS_WINDOW; s.param_len = 24; break;
      case 12: s.kind = IB_GS_PASTE; s.param_len = 16; break;
      case 13: s.kind = IB_GS_RESIZE; break;
      case 14: s.kind = IB_GS_RANK; s.a = 3 + 2 * (int)(rnd(seed) % 4); s.param_len = 4; break;
      case 15: s.kind = IB_GS_KERNEL; s.a = (rnd(seed) & 1) ? 5 : 3; s.param_len = 4u * (unsigned)(s.a * s.a + 1); break;
      default: s.kind = IB_GS_BLUR; s.a = (rnd(seed) & 1) ? 3 : 1; s.param_len = 32; n = 1; break;
    }
    cr_assert(ib_gchain_push(c, &s));
    if (i == 0 && s.kind == IB_GS_PASTE) {
      c->mode_in1 = m == IB_MODE_RGB && (rnd(seed) & 1) ? IB_MODE_RGBA : m;
    } else if (i == 0 && c->n_inputs == 2) {
      /* Same band count, mode may differ (RGBA with CMYK). */
      unsigned b = ib_mode_bands((ib_mode)m);
      c->mode_in1 = b == 4 ? (int[]){IB_MODE_RGBA, IB_MODE_CMYK, IB_MODE_RGBX}[rnd(seed) % 3] : m;
    }
    m = s.mode_out;
  }
}

static void compile_ok(ib_kcache *kc, const char *name, const char *src) {
  void *img;
  size_t len;
  char *log = NULL;
  ib_error err = {0};
  ib_status st = ib_kcache_get(kc, name, src, "sm_90", fmad_opt, 1, &img, &len, NULL, &log, &err);
  cr_expect_eq(st, IB_OK, "%s: %s\n--- source ---\n%s", name, err.message, src);
  cr_expect_gt(len, 0);
  free(img);
  free(log);
}

/* 300 chains in 6 tests of 50, so criterion's --jobs spreads them. */
static void compile_random_chains(unsigned seed) {
  ib_kcache *kc = ib_kcache_new(NULL, 64ull << 20, 0);
  int n = getenv("IB_CHAINS") ? atoi(getenv("IB_CHAINS")) : 50;
  char sig[512];
  for (int i = 0; i < n; i++) {
    ib_gchain c;
    random_chain(&seed, &c);
    char *src = ib_gchain_source(&c);
    cr_assert_not_null(src);
    ib_gchain_signature(&c, sig, sizeof sig);
    compile_ok(kc, sig, src);
    free(src);
  }
  ib_kcache_free(kc);
}

#define CHAIN_TEST(k) \
  Test(gpu_codegen, random_fused_chains_compile_##k, .timeout = 600) { compile_random_chains(1000u * (k) + 7u); }
CHAIN_TEST(1)
CHAIN_TEST(2)
CHAIN_TEST(3)
CHAIN_TEST(4)
CHAIN_TEST(5)
CHAIN_TEST(6)

Test(gpu_codegen, signature_determines_source) {
  unsigned s1 = 7, s2 = 7;
  ib_gchain a, b;
  random_chain(&s1, &a);
  random_chain(&s2, &b);
  char sa[512], sb[512];
  ib_gchain_signature(&a, sa, sizeof sa);
  ib_gchain_signature(&b, sb, sizeof sb);
  cr_assert_str_eq(sa, sb);
  char *xa = ib_gchain_source(&a), *xb = ib_gchain_source(&b);
  cr_assert_str_eq(xa, xb);
  free(xa);
  free(xb);
}

Test(gpu_codegen, pixels_per_thread_keep_accesses_at_most_16_bytes) {
  ib_gchain c = {0};
  ib_gstep s = {.kind = IB_GS_COPY, .mode_in = IB_MODE_RGBA, .mode_out = IB_MODE_RGBA};
  ib_gchain_push(&c, &s);
  cr_assert_eq(ib_gchain_ppt(&c), 4);
  c = (ib_gchain){0};
  s.mode_in = s.mode_out = IB_MODE_L;
  ib_gchain_push(&c, &s);
  cr_assert_eq(ib_gchain_ppt(&c), 16);
  s = (ib_gstep){.kind = IB_GS_CONVERT, .a = IB_MODE_L, .mode_in = IB_MODE_L, .mode_out = IB_MODE_RGB};
  ib_gchain_push(&c, &s);
  cr_assert_eq(ib_gchain_ppt(&c), 4);
}

Test(gpu_codegen, chain_limits) {
  ib_gchain c = {0};
  ib_gstep s = {.kind = IB_GS_POINT, .mode_in = IB_MODE_RGBA, .mode_out = IB_MODE_RGBA, .param_len = 1024};
  int pushed = 0;
  while (ib_gchain_push(&c, &s)) pushed++;
  cr_assert_eq(pushed, IB_CHAIN_MAX_PARAMS / 1024);
  cr_assert_leq(c.param_bytes, IB_CHAIN_MAX_PARAMS);
}

Test(gpu_kernels, every_embedded_cu_compiles) {
  ib_kcache *kc = ib_kcache_new(NULL, 64ull << 20, 0);
  for (size_t i = 0; i < ib_embedded_kernel_count; i++) {
    const ib_embedded_file *f = &ib_embedded_kernels[i];
    size_t len = strlen(f->name);
    if (len > 3 && strcmp(f->name + len - 3, ".cu") == 0) compile_ok(kc, f->name, f->text);
  }
  ib_kcache_free(kc);
}

Test(kcache, memory_then_disk_then_error_log) {
  char dir[] = "/tmp/ib_kcache_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  const char *src = "extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = 1; }\n";
  void *img;
  size_t len;
  ib_kcache_origin o;
  ib_error err = {0};
  ib_kcache *a = ib_kcache_new(dir, 64ull << 20, 64ull << 20);
  cr_assert_eq(ib_kcache_get(a, "k.cu", src, "sm_90", NULL, 0, &img, &len, &o, NULL, &err), IB_OK);
  free(img);
  cr_assert_eq(o, IB_KC_COMPILED);
  cr_assert_eq(ib_kcache_get(a, "k.cu", src, "sm_90", NULL, 0, &img, &len, &o, NULL, &err), IB_OK);
  free(img);
  cr_assert_eq(o, IB_KC_MEMORY);
  /* Other options or arch: another key. */
  cr_assert_eq(ib_kcache_get(a, "k.cu", src, "sm_90", fmad_opt, 1, &img, &len, &o, NULL, &err), IB_OK);
  free(img);
  cr_assert_eq(o, IB_KC_COMPILED);
  cr_assert_eq(ib_kcache_stats_get(a).disk_writes, 2);
  ib_kcache_free(a);
  /* A new process start (a new cache over the same dir) compiles nothing. */
  ib_kcache *b = ib_kcache_new(dir, 64ull << 20, 64ull << 20);
  cr_assert_eq(ib_kcache_get(b, "k.cu", src, "sm_90", NULL, 0, &img, &len, &o, NULL, &err), IB_OK);
  free(img);
  cr_assert_eq(o, IB_KC_DISK);
  cr_assert_eq(ib_kcache_stats_get(b).compiles, 0);
  /* Compile errors surface with NVRTC's log. */
  char *log = NULL;
  ib_status st = ib_kcache_get(b, "bad.cu", "__global__ void k() { undefined_thing(); }", "sm_90",
                               NULL, 0, &img, &len, &o, &log, &err);
  cr_assert_eq(st, IB_DEVICE);
  cr_assert_not_null(strstr(err.message, "undefined_thing"), "%s", err.message);
  cr_assert_not_null(log);
  cr_assert_not_null(strstr(log, "undefined_thing"));
  free(log);
  ib_kcache_free(b);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

static uint64_t t_alloc(void *ctx, size_t n) {
  (*(int *)ctx)++;
  return (uint64_t)(uintptr_t)malloc(n);
}
static void t_free(void *ctx, uint64_t a, size_t n) {
  (void)n;
  (*(int *)ctx)--;
  free((void *)(uintptr_t)a);
}

Test(pool, steady_state_reuses_blocks_and_respects_cap) {
  int outstanding = 0;
  ib_pool p;
  ib_pool_init(&p, t_alloc, t_free, &outstanding, 4u << 20);
  cr_assert_eq(ib_pool_class(1), 0);
  cr_assert_eq(ib_pool_class(65536), 0);
  cr_assert_eq(ib_pool_class(65537), 1);
  ib_pool_block a, b;
  for (int round = 0; round < 100; round++) {
    cr_assert(ib_pool_get(&p, 1000000, &a));
    cr_assert(ib_pool_get(&p, 70000, &b));
    ib_pool_put(&p, &a);
    ib_pool_put(&p, &b);
  }
  cr_assert_eq(p.allocs, 2, "steady state allocates nothing new");
  /* 4 MiB cap: a 3.5 MiB + 1 request (4 MiB class) must evict the cached
   * 1 MiB and 80 KiB blocks first. */
  cr_assert(ib_pool_get(&p, (7u << 19) + 1, &a));
  cr_assert_eq(p.held, 4u << 20);
  cr_assert_not(ib_pool_get(&p, 1, &b), "over the cap");
  ib_pool_put(&p, &a);
  ib_pool_destroy(&p);
  cr_assert_eq(outstanding, 0);
}

Test(pool, classes_waste_under_a_quarter) {
  cr_assert_eq(ib_pool_class_size(0), 64u << 10);
  cr_assert_eq(ib_pool_class_size(4), 128u << 10);
  /* A 4096^2 RGBA Job: its pixels and a header. */
  cr_assert_eq(ib_pool_class_size(ib_pool_class((64u << 20) + 40)), 80u << 20);
  for (size_t b = 65536; b < ((size_t)1 << 34); b = b * 9 / 8 + 12345) {
    int k = ib_pool_class(b);
    cr_assert_geq(k, 0);
    cr_assert_geq(ib_pool_class_size(k), b);
    cr_assert_lt((double)ib_pool_class_size(k), 1.25 * (double)b, "%zu -> %zu", b,
                 ib_pool_class_size(k));
    cr_assert(k == 0 || ib_pool_class_size(k - 1) < b, "the smallest class that fits");
  }
}

/* IB_DUMP_CHAIN=path writes one generated source for inspection. */
Test(gpu_codegen, dump_example) {
  const char *path = getenv("IB_DUMP_CHAIN");
  if (!path) return;
  unsigned seed = (unsigned)atoi(getenv("IB_DUMP_SEED") ? getenv("IB_DUMP_SEED") : "3");
  ib_gchain c;
  random_chain(&seed, &c);
  char *src = ib_gchain_source(&c);
  FILE *f = fopen(path, "w");
  fputs(src, f);
  fclose(f);
  free(src);
}
