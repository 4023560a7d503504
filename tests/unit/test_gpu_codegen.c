/* CUDA backend pieces that need no GPU: fused-chain codegen compiled by
 * NVRTC for sm_90 (every op row's device step as a head and fused, and a
 * few hundred random chains, all built from nodes by the real step
 * builder), each embedded kernel header alone, compile errors naming the
 * kernels/ file and line, the module cache (memory, disk, compile errors
 * with the log), the size-class pool. */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/codegen.h"
#include "gpu/nvrtc_cache.h"
#include "gpu/pool.h"
#include "gpu_nodes.h"
#include "kernels/chops.h"
#include "kernels/enhance.h"
#include "ops/op.h"

static const char *const fmad_opt[] = {"--fmad=false"};

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
    random_chain(&seed, seed, &c);
    char *src = ib_gchain_source(&c);
    cr_assert_not_null(src);
    ib_gchain_signature(&c, sig, sizeof sig);
    compile_ok(kc, sig, src);
    free(src);
  }
  ib_kcache_free(kc);
}

#define CHAIN_TEST(k)                                                  \
  Test(gpu_codegen, random_fused_chains_compile_##k, .timeout = 600) { \
    compile_random_chains(1000u * (k) + 7u);                           \
  }
CHAIN_TEST(1)
CHAIN_TEST(2)
CHAIN_TEST(3)
CHAIN_TEST(4)
CHAIN_TEST(5)
CHAIN_TEST(6)

/* The CUDA backend batches jobs into one launch by signature, so equal
 * signatures must mean equal sources: per-job values (LUTs, factors, boxes,
 * sizes) may only reach the kernel through the parameter block, and the
 * block's layout may only depend on what the signature names. Checked over
 * twins (one structure, different values) and over every pair of a few
 * thousand random chains whose signatures collide. */
#define N_SIG 3000
Test(gpu_codegen, signature_determines_source) {
  static char sigs[N_SIG][512];
  static char *srcs[N_SIG];
  int collisions = 0;
  for (int i = 0; i < N_SIG; i++) {
    unsigned s1 = (unsigned)i * 7919u + 1u, s2 = s1;
    ib_gchain a, b;
    random_chain(&s1, (unsigned)i, &a);
    random_chain(&s2, (unsigned)i * 31u + 17u, &b);
    char sb[512];
    ib_gchain_signature(&a, sigs[i], sizeof sigs[i]);
    ib_gchain_signature(&b, sb, sizeof sb);
    cr_assert_str_eq(sigs[i], sb, "per-job values changed the signature");
    srcs[i] = ib_gchain_source(&a);
    char *xb = ib_gchain_source(&b);
    cr_assert_str_eq(srcs[i], xb, "per-job values changed the source of %s", sigs[i]);
    free(xb);
    for (int j = 0; j < i; j++)
      if (strcmp(sigs[i], sigs[j]) == 0) {
        collisions++;
        cr_assert_str_eq(srcs[i], srcs[j], "one signature %s, two sources", sigs[i]);
        break;
      }
  }
  cr_assert_gt(collisions, 100, "the draw has signature collisions to compare (%d)", collisions);
  for (int i = 0; i < N_SIG; i++) free(srcs[i]);
}

Test(gpu_codegen, pixels_per_thread_keep_accesses_at_most_16_bytes) {
  ib_gchain c = {0};
  ib_gstep s = {.dev = &ib_dev_copy, .mode_in = IB_MODE_RGBA, .mode_out = IB_MODE_RGBA};
  ib_gchain_push(&c, &s);
  cr_assert_eq(ib_gchain_ppt(&c), 4);
  c = (ib_gchain){0};
  s.mode_in = s.mode_out = IB_MODE_L;
  ib_gchain_push(&c, &s);
  cr_assert_eq(ib_gchain_ppt(&c), 16);
  s.mode_out = IB_MODE_RGB; /* a step widening the pixel */
  ib_gchain_push(&c, &s);
  cr_assert_eq(ib_gchain_ppt(&c), 4);
}

Test(gpu_codegen, chain_limits) {
  ib_gchain c = {0};
  ib_gstep s = {
      .dev = &ib_gdev_table, .mode_in = IB_MODE_RGBA, .mode_out = IB_MODE_RGBA, .param_len = 1024};
  int pushed = 0;
  while (ib_gchain_push(&c, &s)) pushed++;
  cr_assert_eq(pushed, IB_CHAIN_MAX_PARAMS / 1024);
  cr_assert_leq(c.param_bytes, IB_CHAIN_MAX_PARAMS);
}

/* A signature letter stands for one device template: two descriptions
 * sharing a tag must generate the same code. */
static void check_tag(const ib_dev_op **by_tag, const ib_dev_op *d, const char *op) {
  const ib_dev_op *o = by_tag[(unsigned char)d->tag];
  if (!o) {
    by_tag[(unsigned char)d->tag] = d;
    return;
  }
  cr_assert(o->role == d->role && o->flags == d->flags && o->passes == d->passes &&
                strcmp(o->header, d->header) == 0 &&
                ((!o->fn && !d->fn) || (o->fn && d->fn && strcmp(o->fn, d->fn) == 0)),
            "op %s: tag %c names two device steps", op, d->tag);
}

static bool same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* A tag is part of the module signature: two device steps that share one
 * must be the same step (the blurs share their kernels, crop and expand
 * their window head). Checked over every step a row declares (dev_ops),
 * which covers the steps a sample node cannot reach (a filtered resize
 * plans from its input's shape); tables fold into one step and share 'P'. */
Test(gpu_codegen, every_declared_device_step_has_a_tag_of_its_own) {
  size_t n_rows;
  const ib_op_desc *const *rows = ib_op_all(&n_rows);
  const ib_dev_op *by_tag[256] = {0};
  const char *owner[256] = {0};
  int n = 0;
  for (size_t r = 0; r < n_rows; r++)
    for (const ib_dev_op *const *d = rows[r]->dev_ops; d && *d; d++, n++) {
      if ((*d)->role == IB_DEV_TABLE) continue;
      const unsigned char t = (unsigned char)(*d)->tag;
      const ib_dev_op *o = by_tag[t];
      if (!o) {
        by_tag[t] = *d;
        owner[t] = rows[r]->name;
        continue;
      }
      cr_assert(o->role == (*d)->role && o->flags == (*d)->flags && o->passes == (*d)->passes &&
                    same_str(o->header, (*d)->header) && same_str(o->fn, (*d)->fn),
                "tag %c names a step of op %s and another of op %s", t, owner[t], rows[r]->name);
    }
  cr_assert_gt(n, 20);
}

/* A multi-pass head's module holds every kernel its row names (ops/op_dev.h
 * ib_dev_passes): the backend looks each one up by name when it loads the
 * module. The cubin's symbol table holds each name NUL-terminated. */
static void check_pass_kernels(ib_kcache *kc, const char *sig, const char *src,
                               const ib_dev_passes *ps) {
  cr_assert_not_null(ps, "a PASSES head (%s) without its launch recipe", sig);
  cr_assert(ps->n_kernels > 0 && ps->n_kernels <= IB_DEV_MAX_KERNELS && ps->plan, "%s", sig);
  void *img;
  size_t len = 0;
  char *log = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_kcache_get(kc, sig, src, "sm_90", fmad_opt, 1, &img, &len, NULL, &log, &err),
               IB_OK, "%s", err.message);
  for (int k = 0; k < ps->n_kernels; k++) {
    const char *name = ps->kernels[k].name;
    const size_t n = strlen(name) + 1;
    bool found = false;
    for (size_t i = 0; !found && i + n <= len; i++) found = memcmp((char *)img + i, name, n) == 0;
    cr_assert(found, "%s: kernel %s is not in the module", sig, name);
  }
  free(img);
  free(log);
}

/* Compiles the chain, then fills step `k`'s values from `node` (and, for
 * a head, its extra tables): they must stay inside the reserved block. */
static int compile_chain(ib_kcache *kc, const ib_gchain *c, int k, const ib_node *node) {
  char sig[512];
  ib_gchain_signature(c, sig, sizeof sig);
  char *src = ib_gchain_source(c);
  cr_assert_not_null(src);
  compile_ok(kc, sig, src);
  if (ib_gchain_passes(c)) check_pass_kernels(kc, sig, src, c->steps[0].dev->passes);
  free(src);
  /* Table steps fold into 256 * bands; other steps write at most
   * param_len bytes (the chain pads each step to 16). */
  ib_gstep st = c->steps[k];
  const size_t extra = k == 0 ? ib_gstep_extra_bytes(&st, node) : 0,
               n = st.dev->role == IB_DEV_TABLE ? st.param_len : st.param_len + extra;
  st.param_off = 0;
  uint8_t *block = calloc(n + 64, 1);
  cr_assert_not_null(block);
  memset(block + st.param_len, 0xa5, n + 64 - st.param_len);
  if (st.dev->role == IB_DEV_TABLE)
    ib_gtable_fold(&st, &node, 1, block);
  else
    ib_gstep_fill(&st, node, block);
  for (size_t i = st.param_len; i < n + 64; i++)
    cr_assert_eq(block[i], 0xa5, "step %c fills past its %u bytes", st.dev->tag, st.param_len);
  if (extra) {
    const ib_shape in = {(ib_mode)st.mode_in, 16, 12};
    ib_gstep_fill_extra(&st, node, &in, block + st.param_len);
  }
  for (size_t i = n; i < n + 64; i++) cr_assert_eq(block[i], 0xa5, "extra tables overrun");
  free(block);
  return 1;
}

/* Every op row's device step, built by the real step builder from a node
 * its row admits (infer), compiles with NVRTC: in the head position (with
 * a table step fused after it unless it has its own pass kernels) and,
 * when it is fusable, fused after another step. Every admitted mode is
 * tried on the first variant, one mode on each other. */
/* .timeout 600 like the other compile tests: Criterion's runner leaks 48 bytes
 * when one file mixes different timeouts (an ASan failure under --jobs 2). */
Test(gpu_codegen, every_op_row_compiles_as_head_and_fused, .timeout = 600) {
  size_t n_rows;
  const ib_op_desc *const *rows = ib_op_all(&n_rows);
  ib_kcache *kc = ib_kcache_new(NULL, 256ull << 20, 0);
  const ib_dev_op *by_tag[256] = {0};
  by_tag['P'] = &ib_gdev_table;
  int total = 0;
  for (size_t r = 0; r < n_rows; r++) {
    const ib_op_desc *op = rows[r];
    if (op->n_inputs == 0) continue;
    cr_assert_not_null(op->dev, "op %s has no device step", op->name);
    int compiled = 0;
    for (int v = 0, more = 1; more; v++) {
      int tried = 0;
      for (int m = 1; m < IB_MODE_COUNT; m++) {
        if (!(op->modes & IB_MODE_BIT(m))) continue;
        tnode t;
        tnode_init(&t);
        if (!(more = sample_node(&t, op->op_case, v, m))) break;
        if (v > 0 && tried++ != v % 2) continue;
        t.node.pb = &t.pb;
        t.node.op = op;
        const ib_shape in[2] = {{(ib_mode)m, 16, 12}, {(ib_mode)m, 16, 12}};
        ib_error err = {0};
        if (op->infer(&t.node, in, &t.node.shape, &err) != IB_OK) continue;
        const int in_modes[2] = {m, m};
        ib_gstep s;
        cr_assert_eq(ib_gstep_for_node(&t.node, in_modes, &s, &err), IB_OK, "%s", err.message);
        check_tag(by_tag, s.dev, op->name);
        const ib_node *node = &t.node;
        const int out = (int)t.node.shape.mode;
        ib_gstep after = {.dev = &ib_gdev_table,
                          .mode_in = out,
                          .mode_out = out,
                          .param_len = 256u * ib_mode_bands((ib_mode)out)};
        ib_gchain c = {0};
        cr_assert(ib_gchain_push(&c, &s));
        if (c.n_inputs == 2) c.mode_in1 = in_modes[1];
        if (s.dev->role != IB_DEV_PASSES) cr_assert(ib_gchain_push(&c, &after));
        compiled += compile_chain(kc, &c, 0, node);
        if (ib_gstep_fusable(&s)) {
          ib_gstep first = {.dev = &ib_dev_copy, .mode_in = m, .mode_out = m};
          c = (ib_gchain){0};
          cr_assert(ib_gchain_push(&c, &first) && ib_gchain_push(&c, &s));
          compiled += compile_chain(kc, &c, 1, node);
        }
      }
    }
    cr_assert_gt(compiled, 0, "op %s: no sample node compiled (add its variants)", op->name);
    total += compiled;
  }
  cr_assert_gt(total, 100);
  ib_kcache_free(kc);
}

/* ChopsOp's charge is the block its device step uploads: float scale and
 * int32 offset (the function is baked into the kernel), not 16. */
Test(gpu_codegen, chops_charges_its_device_block) {
  tnode t;
  tnode_init(&t);
  cr_assert(sample_node(&t, IMGBATCH__V1__NODE__OP_CHOPS, IB_CHOP_ADD, IB_MODE_RGB));
  t.node.pb = &t.pb;
  t.node.op = ib_op_for_case(IMGBATCH__V1__NODE__OP_CHOPS);
  t.node.shape = (ib_shape){IB_MODE_RGB, 8, 8};
  const int in_modes[2] = {IB_MODE_RGB, IB_MODE_RGB};
  ib_gstep s;
  ib_error err = {0};
  cr_assert_eq(ib_gstep_for_node(&t.node, in_modes, &s, &err), IB_OK, "%s", err.message);
  cr_assert_eq(s.param_len, 8);
  cr_assert_eq(t.node.op->param_bytes(&t.node), s.param_len);
  uint8_t block[16];
  memset(block, 0xa5, sizeof block);
  ib_gstep_fill(&s, &t.node, block);
  float scale;
  int32_t offset;
  memcpy(&scale, block, 4);
  memcpy(&offset, block + 4, 4);
  cr_assert(scale == 2.0f && offset == 3, "%g %d", (double)scale, offset);
  cr_assert_eq(block[8], 0xa5, "nothing past the 8 bytes");
}

/* NVRTC's messages name the kernels/ file and line (cmake/embed.cmake
 * starts each embedded file with a #line). */
Test(gpu_kernels, compile_errors_name_the_kernels_file_and_line) {
  const char *root = getenv("IB_SOURCE_DIR");
  cr_assert_not_null(root, "ctest sets IB_SOURCE_DIR");
  char path[4096], line[512];
  snprintf(path, sizeof path, "%s/kernels/blur.cuh", root);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  int want = 0;
  for (int n = 1; !want && fgets(line, sizeof line, f); n++)
    if (strstr(line, "rb = d.width * IB_B0")) want = n;
  fclose(f);
  cr_assert_gt(want, 0);
  ib_kcache *kc = ib_kcache_new(NULL, 64ull << 20, 0);
  void *img;
  size_t len;
  char *log = NULL;
  ib_error err = {0};
  const char *src = "#define IB_B0 ib_no_such_value\n#include \"blur.cuh\"\n";
  cr_assert_eq(
      ib_kcache_get(kc, "broken.cu", src, "sm_90", fmad_opt, 1, &img, &len, NULL, &log, &err),
      IB_DEVICE);
  char expect[64];
  snprintf(expect, sizeof expect, "kernels/blur.cuh(%d)", want);
  cr_assert_not_null(log);
  cr_assert_not_null(strstr(log, expect), "want %s in:\n%s", expect, log);
  free(log);
  ib_kcache_free(kc);
}

/* Every file of kernels/ is embedded, and each compiles on its own under
 * NVRTC (includes what it uses, no host-only code): a header that only
 * compiles after another one breaks the first chain that includes it
 * alone, on a GPU machine, at run time. */
Test(gpu_kernels, every_kernel_header_is_embedded_and_compiles_alone, .timeout = 600) {
  const char *root = getenv("IB_SOURCE_DIR");
  cr_assert_not_null(root, "ctest sets IB_SOURCE_DIR");
  char pattern[4096];
  snprintf(pattern, sizeof pattern, "%s/kernels/*.*", root);
  glob_t g;
  cr_assert_eq(glob(pattern, 0, NULL, &g), 0, "%s", pattern);
  size_t sources = 0;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    const char *name = strrchr(g.gl_pathv[i], '/') + 1;
    const char *ext = strrchr(name, '.');
    if (strcmp(ext, ".h") && strcmp(ext, ".cuh") && strcmp(ext, ".cu")) continue;
    sources++;
    cr_expect_not_null(ib_embedded_find(name), "kernels/%s is not embedded", name);
  }
  globfree(&g);
  cr_assert_gt(sources, 0);
  cr_assert_eq(ib_embedded_kernel_count, sources, "embedded files = kernels/ sources");
  ib_kcache *kc = ib_kcache_new(NULL, 64ull << 20, 0);
  for (size_t i = 0; i < ib_embedded_kernel_count; i++) {
    const ib_embedded_file *f = &ib_embedded_kernels[i];
    char src[512], name[300];
    snprintf(src, sizeof src,
             "#include \"%s\"\nextern \"C\" __global__ void ib_alone(int *p) { p[0] = 1; }\n",
             f->name);
    snprintf(name, sizeof name, "alone_%s.cu", f->name);
    compile_ok(kc, name, src);
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
  cr_assert_eq(ib_kcache_get(a, "k.cu", src, "sm_90", fmad_opt, 1, &img, &len, &o, NULL, &err),
               IB_OK);
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
  /* 4 MiB cap: a 3.75 MiB + 1 request (4 MiB class) must evict the cached
   * 1 MiB and 72 KiB blocks first. */
  cr_assert(ib_pool_get(&p, (15u << 18) + 1, &a));
  cr_assert_eq(p.held, 4u << 20);
  cr_assert_not(ib_pool_get(&p, 1, &b), "over the cap");
  ib_pool_put(&p, &a);
  ib_pool_destroy(&p);
  cr_assert_eq(outstanding, 0);
}

/* Submissions of a varying number of jobs ask for neighbouring classes
 * (four in flight here, 48-96 MiB each, released in order). A free block up
 * to an octave larger serves them, so the pool stops allocating once it
 * holds a few large blocks (8 allocations, 684 MiB held at the end); by
 * exact class it kept allocating each class's own (23). */
Test(pool, neighbouring_classes_share_free_blocks) {
  int outstanding = 0;
  ib_pool p;
  ib_pool_init(&p, t_alloc, t_free, &outstanding, 1ull << 40);
  ib_pool_block q[4];
  uint32_t x = 12345;
  for (int i = 0; i < 400; i++) {
    if (i >= 4) ib_pool_put(&p, &q[i % 4]);
    x = x * 1103515245u + 12345u;
    const size_t bytes = ((size_t)48 << 20) + (size_t)((double)x / 4294967296.0 * (48 << 20));
    cr_assert(ib_pool_get(&p, bytes, &q[i % 4]));
    cr_assert_geq(q[i % 4].size, bytes);
    cr_assert_leq(q[i % 4].size, 2 * ib_pool_class_size(ib_pool_class(bytes)));
    cr_assert_eq(ib_pool_class_size(q[i % 4].cls), q[i % 4].size);
  }
  cr_assert_leq(p.allocs, 12, "%llu allocations", (unsigned long long)p.allocs);
  cr_assert_gt(p.reuses_up, 0);
  for (int k = 0; k < 4; k++) ib_pool_put(&p, &q[k]);
  cr_assert_eq(p.live, 0);
  /* A request never takes a block more than an octave larger. */
  ib_pool_block big, small;
  ib_pool_trim(&p);
  cr_assert(ib_pool_get(&p, (size_t)64 << 20, &big));
  ib_pool_put(&p, &big);
  cr_assert(ib_pool_get(&p, (size_t)28 << 20, &small));
  cr_assert_eq(small.size, (size_t)28 << 20);
  ib_pool_put(&p, &small);
  cr_assert(ib_pool_get(&p, (size_t)32 << 20, &small));
  cr_assert_eq(small.size, (size_t)64 << 20, "an octave up is in reach");
  ib_pool_put(&p, &small);
  ib_pool_destroy(&p);
  cr_assert_eq(outstanding, 0);
}

/* Larger blocks are lent only while their spare bytes stay within an eighth
 * of the cap, so the rounding the caps allow for is not eaten up. */
Test(pool, spare_bytes_lent_stay_under_an_eighth_of_the_cap) {
  int outstanding = 0;
  ib_pool p;
  ib_pool_init(&p, t_alloc, t_free, &outstanding, (size_t)1 << 30);
  const size_t mib = (size_t)1 << 20;
  ib_pool_block q[4];
  for (int k = 0; k < 4; k++) cr_assert(ib_pool_get(&p, 128 * mib, &q[k]));
  for (int k = 0; k < 4; k++) ib_pool_put(&p, &q[k]);
  for (int k = 0; k < 3; k++) cr_assert(ib_pool_get(&p, 72 * mib, &q[k]));
  cr_assert_eq(q[0].size, 128 * mib);
  cr_assert_eq(q[1].size, 128 * mib);
  cr_assert_eq(q[2].size, 72 * mib, "a third 56 MiB spare would pass 128 MiB");
  cr_assert_eq(p.spare_live, 112 * mib);
  for (int k = 0; k < 3; k++) ib_pool_put(&p, &q[k]);
  cr_assert_eq(p.spare_live, 0);
  cr_assert_eq(p.live, 0);
  ib_pool_destroy(&p);
  cr_assert_eq(outstanding, 0);
}

Test(pool, classes_waste_under_an_eighth) {
  cr_assert_eq(ib_pool_class_size(0), 64u << 10);
  cr_assert_eq(ib_pool_class_size(8), 128u << 10);
  /* A 4096^2 RGBA Job: its pixels and a header. */
  cr_assert_eq(ib_pool_class_size(ib_pool_class((64u << 20) + 40)), 72u << 20);
  cr_assert_eq(ib_pool_class_size(ib_pool_class(64u << 20)), 64u << 20);
  for (size_t b = 65536; b < ((size_t)1 << 36); b = b * 17 / 16 + 12345) {
    for (size_t d = 0; d < 3; d++) { /* a class size, and one byte either side */
      size_t x = b - 1 + d;
      int k = ib_pool_class(x);
      cr_assert_geq(k, 0);
      cr_assert_geq(ib_pool_class_size(k), x);
      cr_assert_lt((double)ib_pool_class_size(k), 1.125 * (double)x, "%zu -> %zu", x,
                   ib_pool_class_size(k));
      cr_assert(k == 0 || ib_pool_class_size(k - 1) < x, "the smallest class that fits");
    }
    int k = ib_pool_class(b);
    cr_assert_eq(ib_pool_class(ib_pool_class_size(k)), k, "a class's own size");
    cr_assert_eq(ib_pool_class(ib_pool_class_size(k) + 1), k + 1);
  }
  cr_assert_eq(ib_pool_class(ib_pool_class_size(IB_POOL_CLASSES - 1) + 1), -1);
}
