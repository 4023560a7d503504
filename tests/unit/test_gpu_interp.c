/* The pointwise interpreter tier without a GPU (worker/gpu/interp.h): its
 * generated source compiles with NVRTC for sm_90; every op row's
 * PIXEL / TABLE step has a dispatch case (and nothing else does); the step
 * table of a chain holds exactly the template arguments the specialised
 * kernel's source is generated with (over thousands of random chains, and
 * by hand for a few). Equal bytes on the device: tests/gpu/interp_check.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/codegen.h"
#include "gpu/interp.h"
#include "gpu/nvrtc_cache.h"
#include "gpu_nodes.h"

static const char *const fmad_opt[] = {"--fmad=false"};

Test(interp, source_compiles_for_sm_90, .timeout = 300) {
  char *src = ib_interp_source();
  cr_assert_not_null(src);
  ib_kcache *kc = ib_kcache_new(NULL, 0, 0);
  void *img = NULL;
  size_t len = 0;
  char *log = NULL;
  ib_error err = {0};
  ib_status st =
      ib_kcache_get(kc, "interp.cu", src, "sm_90", fmad_opt, 1, &img, &len, NULL, &log, &err);
  cr_assert_eq(st, IB_OK, "%s\n%s\n--- source ---\n%s", err.message, log ? log : "", src);
  /* Both kernels are in the image (ELF symbol names). */
  cr_assert_not_null(memmem(img, len, IB_INTERP_KERNEL "\0", sizeof IB_INTERP_KERNEL));
  cr_assert_not_null(memmem(img, len, IB_INTERP_LSUM_KERNEL "\0", sizeof IB_INTERP_LSUM_KERNEL));
  free(img);
  free(log);
  free(src);
  ib_kcache_free(kc);
}

static bool dispatches(const char *src, char tag, const char *rt) {
  char line[128];
  snprintf(line, sizeof line, "X('%c', %s)", tag, rt);
  return strstr(src, line) != NULL;
}

static bool listed(const ib_op_desc *op, const ib_dev_op *d) {
  for (const ib_dev_op *const *l = op->dev_ops; l && *l; l++)
    if (*l == d) return true;
  return false;
}

/* Every sample node of every row (each admitted mode): the description its
 * row's dev gives is one of the row's dev_ops (the list the dispatch is
 * generated from); a PIXEL / TABLE step has its case and runs in the
 * interpreter as a head and fused; a GATHER / PASSES head does not. */
Test(interp, every_pointwise_step_is_dispatched) {
  char *src = ib_interp_source();
  cr_assert_not_null(src);
  size_t n_rows;
  const ib_op_desc *const *rows = ib_op_all(&n_rows);
  int pixel = 0, table = 0, other = 0;
  for (size_t r = 0; r < n_rows; r++) {
    const ib_op_desc *op = rows[r];
    if (op->n_inputs == 0) continue;
    cr_assert_not_null(op->dev_ops, "op %s lists no device steps", op->name);
    /* The list itself: every PIXEL description has its twin, named after
     * its template. */
    for (const ib_dev_op *const *l = op->dev_ops; *l; l++) {
      const ib_dev_op *d = *l;
      if (d->role != IB_DEV_PIXEL) continue;
      cr_assert_not_null(d->rt, "op %s: step %c has no runtime twin", op->name, d->tag);
      char want[128];
      snprintf(want, sizeof want, "%s_rt", d->fn);
      cr_assert_str_eq(d->rt, want, "op %s", op->name);
      cr_assert(dispatches(src, d->tag, d->rt), "op %s: no case for %c\n%s", op->name, d->tag, src);
    }
    for (int v = 0, more = 1; more; v++) {
      for (int m = 1; m < IB_MODE_COUNT; m++) {
        if (!(op->modes & IB_MODE_BIT(m))) continue;
        tnode t;
        tnode_init(&t);
        if (!(more = sample_node(&t, op->op_case, v, m))) break;
        t.node.pb = &t.pb;
        t.node.op = op;
        const ib_shape in[2] = {{(ib_mode)m, 16, 12}, {(ib_mode)m, 16, 12}};
        ib_error err = {0};
        if (op->infer(&t.node, in, &t.node.shape, &err) != IB_OK) continue;
        const int in_modes[2] = {m, m};
        ib_gstep raw = {.mode_in = m, .mode_out = (int)t.node.shape.mode}, s;
        cr_assert_eq(op->dev(&t.node, in_modes, &raw, &err), IB_OK, "%s", err.message);
        cr_assert(listed(op, raw.dev), "op %s (mode %s): its step %c is not in dev_ops", op->name,
                  ib_mode_name((ib_mode)m), raw.dev->tag);
        cr_assert_eq(ib_gstep_for_node(&t.node, in_modes, &s, &err), IB_OK, "%s", err.message);
        ib_gchain c = {0};
        cr_assert(ib_gchain_push(&c, &s));
        if (c.n_inputs == 2) c.mode_in1 = m;
        const bool pointwise = s.dev->role == IB_DEV_PIXEL || s.dev->role == IB_DEV_TABLE;
        cr_assert_eq(ib_interp_can_run(&c), pointwise, "op %s (mode %s) as a head", op->name,
                     ib_mode_name((ib_mode)m));
        if (!pointwise) {
          ib_iprog prog;
          cr_assert_eq(ib_interp_prog(&c, &prog, &err), IB_UNSUPPORTED);
          cr_assert_not_null(strstr(err.message, "interpreter cannot run step"), "%s", err.message);
          other++;
          continue;
        }
        cr_assert(dispatches(src, s.dev->tag, s.dev->rt), "op %s: no case %c", op->name,
                  s.dev->tag);
        if (s.dev->role == IB_DEV_TABLE)
          table++;
        else
          pixel++;
        if (ib_gstep_fusable(&s)) {
          const ib_gstep first = {.dev = &ib_dev_copy, .mode_in = m, .mode_out = m};
          c = (ib_gchain){0};
          cr_assert(ib_gchain_push(&c, &first) && ib_gchain_push(&c, &s));
          cr_assert(ib_interp_can_run(&c), "op %s fused", op->name);
        }
      }
    }
  }
  cr_assert_gt(pixel, 30);
  cr_assert_gt(table, 10);
  cr_assert_gt(other, 10);
  /* Only pointwise steps have cases: no GATHER / PASSES template leaks in. */
  cr_assert_null(strstr(src, "ib_head_"));
  cr_assert_null(strstr(src, "blur.cuh"));
  free(src);
}

/* The step table equals the specialised source's template arguments:
 * the configuration lines and each IB_STEPS instance fn<A, MI, MO, NI, NO,
 * OFFu> (whose twin, fn_rt, is the case of its tag). */
static void check_against_source(const ib_gchain *c, const ib_iprog *prog) {
  char *src = ib_gchain_source(c);
  cr_assert_not_null(src);
  unsigned b0, b1, bo, pb;
  int nin;
  const char *k;
  cr_assert((k = strstr(src, "#define IB_B0 ")) && sscanf(k, "#define IB_B0 %u", &b0) == 1);
  cr_assert((k = strstr(src, "#define IB_B1 ")) && sscanf(k, "#define IB_B1 %u", &b1) == 1);
  cr_assert((k = strstr(src, "#define IB_BO ")) && sscanf(k, "#define IB_BO %u", &bo) == 1);
  cr_assert((k = strstr(src, "#define IB_NIN ")) && sscanf(k, "#define IB_NIN %d", &nin) == 1);
  cr_assert((k = strstr(src, "#define IB_PBYTES ")) && sscanf(k, "#define IB_PBYTES %u", &pb) == 1);
  cr_assert_eq(prog->b0, (int)b0);
  cr_assert_eq(prog->b1, (int)b1);
  cr_assert_eq(prog->bo, (int)bo);
  cr_assert_eq(prog->nin, nin);
  cr_assert_eq(prog->pbytes, pb);
  cr_assert_eq(prog->luma != 0, strstr(src, "#define IB_LUMA_OFF ") != NULL);
  if (prog->luma) {
    unsigned off;
    int mi0;
    cr_assert(sscanf(strstr(src, "#define IB_LUMA_OFF "), "#define IB_LUMA_OFF %u", &off) == 1);
    cr_assert(sscanf(strstr(src, "#define IB_MI0 "), "#define IB_MI0 %d", &mi0) == 1);
    cr_assert_eq(prog->steps[0].off, off);
    cr_assert_eq(prog->steps[0].mi, mi0);
  }
  const char *p = strstr(src, "#define IB_STEPS ib_steps<");
  cr_assert_not_null(p);
  p += strlen("#define IB_STEPS ib_steps<");
  cr_assert_eq(prog->n_steps, c->n_steps);
  for (int i = 0; i < prog->n_steps; i++) {
    char fn[64];
    int a, mi, mo, ni, no, used = 0;
    unsigned off;
    cr_assert_eq(
        sscanf(p, " %63[a-z_]<%d, %d, %d, %d, %d, %uu>%n", fn, &a, &mi, &mo, &ni, &no, &off, &used),
        7, "step %d of %s", i, src);
    p += used;
    if (*p == ',') p++;
    const ib_istep *s = &prog->steps[i];
    cr_assert_eq(s->a, a);
    cr_assert_eq(s->mi, mi);
    cr_assert_eq(s->mo, mo);
    cr_assert_eq(s->ni, ni);
    cr_assert_eq(s->no, no);
    cr_assert_eq(s->off, off);
    cr_assert_eq(s->tag, (unsigned char)c->steps[i].dev->tag);
    char rt[80];
    snprintf(rt, sizeof rt, "%s_rt", fn);
    cr_assert_str_eq(c->steps[i].dev->rt, rt);
  }
  free(src);
}

Test(interp, step_table_is_the_specialised_template_arguments) {
  int ran = 0, refused = 0;
  for (unsigned i = 0; i < 3000; i++) {
    unsigned seed = i * 7919u + 3u;
    ib_gchain c;
    random_chain(&seed, i, &c);
    ib_iprog prog;
    ib_error err = {0};
    bool gather_or_passes = false;
    for (int k = 0; k < c.n_steps; k++)
      gather_or_passes |=
          c.steps[k].dev->role == IB_DEV_GATHER || c.steps[k].dev->role == IB_DEV_PASSES;
    cr_assert_eq(ib_interp_can_run(&c), !gather_or_passes);
    if (gather_or_passes) {
      cr_assert_eq(ib_interp_prog(&c, &prog, &err), IB_UNSUPPORTED);
      refused++;
      continue;
    }
    cr_assert_eq(ib_interp_prog(&c, &prog, &err), IB_OK, "%s", err.message);
    check_against_source(&c, &prog);
    ran++;
  }
  cr_assert_gt(ran, 1000);
  cr_assert_gt(refused, 300);
}

/* A chain from nodes (the real step builder), inputs in `m`. */
static void push_node(ib_gchain *c, tnode *t, Imgbatch__V1__Node__OpCase op, int v, int m,
                      int in1) {
  tnode_init(t);
  cr_assert(sample_node(t, op, v, m));
  t->node.pb = &t->pb;
  t->node.op = ib_op_for_case(op);
  const ib_shape in[2] = {{(ib_mode)m, 8, 8}, {(ib_mode)in1, 8, 8}};
  ib_error err = {0};
  cr_assert_eq(t->node.op->infer(&t->node, in, &t->node.shape, &err), IB_OK, "%s", err.message);
  const int in_modes[2] = {m, in1};
  ib_gstep s;
  cr_assert_eq(ib_gstep_for_node(&t->node, in_modes, &s, &err), IB_OK, "%s", err.message);
  cr_assert(ib_gchain_push(c, &s));
  if (c->n_steps == 1 && c->n_inputs == 2) c->mode_in1 = in1;
}

static void expect_step(const ib_istep *s, char tag, int a, int mi, int mo, int ni, int no,
                        unsigned off) {
  cr_expect_eq(s->tag, tag);
  cr_expect_eq(s->a, a, "step %c: a %d, want %d", tag, s->a, a);
  cr_expect_eq(s->mi, mi);
  cr_expect_eq(s->mo, mo);
  cr_expect_eq(s->ni, ni, "step %c: ni %d, want %d", tag, s->ni, ni);
  cr_expect_eq(s->no, no, "step %c: no %d, want %d", tag, s->no, no);
  cr_expect_eq(s->off, off, "step %c: off %u, want %u", tag, s->off, off);
}

Test(interp, step_tables_of_known_chains) {
  tnode t[4];
  ib_iprog p;
  ib_error err = {0};
  /* RGB -> convert L -> invert (a 256-byte table) -> convert RGBA. */
  ib_gchain c = {0};
  push_node(&c, &t[0], IMGBATCH__V1__NODE__OP_CONVERT, IB_MODE_L - 1, IB_MODE_RGB, IB_MODE_RGB);
  push_node(&c, &t[1], IMGBATCH__V1__NODE__OP_INVERT, 0, IB_MODE_L, IB_MODE_L);
  push_node(&c, &t[2], IMGBATCH__V1__NODE__OP_CONVERT, IB_MODE_RGBA - 1, IB_MODE_L, IB_MODE_L);
  cr_assert_eq(ib_interp_prog(&c, &p, &err), IB_OK, "%s", err.message);
  cr_expect_eq(p.n_steps, 3);
  cr_expect_eq(p.nin, 1);
  cr_expect_eq(p.b0, 3);
  cr_expect_eq(p.b1, 1);
  cr_expect_eq(p.bo, 4);
  cr_expect_eq(p.luma, 0);
  cr_expect_eq(p.pbytes, 256);
  expect_step(&p.steps[0], 'V', IB_MODE_RGB, IB_MODE_RGB, IB_MODE_L, 3, 1, 0);
  expect_step(&p.steps[1], 'P', 0, IB_MODE_L, IB_MODE_L, 1, 1, 0);
  expect_step(&p.steps[2], 'V', IB_MODE_L, IB_MODE_L, IB_MODE_RGBA, 1, 4, 256);

  /* blend(RGBA, CMYK) -> getchannel(2) -> constant: two inputs, 4 + 4
   * bytes of parameters each padded to 16. */
  c = (ib_gchain){0};
  push_node(&c, &t[0], IMGBATCH__V1__NODE__OP_BLEND, 0, IB_MODE_RGBA, IB_MODE_CMYK);
  push_node(&c, &t[1], IMGBATCH__V1__NODE__OP_GETCHANNEL, 2, IB_MODE_RGBA, IB_MODE_RGBA);
  push_node(&c, &t[2], IMGBATCH__V1__NODE__OP_CONSTANT, 0, IB_MODE_L, IB_MODE_L);
  cr_assert_eq(ib_interp_prog(&c, &p, &err), IB_OK, "%s", err.message);
  cr_expect_eq(p.nin, 2);
  cr_expect_eq(p.b0, 4);
  cr_expect_eq(p.b1, 4);
  cr_expect_eq(p.bo, 1);
  cr_expect_eq(p.pbytes, 32);
  expect_step(&p.steps[0], 'B', 0, IB_MODE_RGBA, IB_MODE_RGBA, 4, 4, 0);
  expect_step(&p.steps[1], 'G', 2, IB_MODE_RGBA, IB_MODE_L, 4, 1, 16);
  expect_step(&p.steps[2], 'K', 0, IB_MODE_L, IB_MODE_L, 1, 1, 16);

  /* Contrast heads with the luma pre-pass; tone after it (LA: 2 bands). */
  c = (ib_gchain){0};
  push_node(&c, &t[0], IMGBATCH__V1__NODE__OP_ENHANCE, 2, IB_MODE_RGB, IB_MODE_RGB);
  push_node(&c, &t[1], IMGBATCH__V1__NODE__OP_TONE, 0, IB_MODE_RGB, IB_MODE_RGB);
  push_node(&c, &t[2], IMGBATCH__V1__NODE__OP_CONVERT, IB_MODE_LA - 1, IB_MODE_RGB, IB_MODE_RGB);
  cr_assert_eq(ib_interp_prog(&c, &p, &err), IB_OK, "%s", err.message);
  cr_expect_eq(p.luma, 1);
  cr_expect_eq(p.bo, 2);
  expect_step(&p.steps[0], 'Q', 2, IB_MODE_RGB, IB_MODE_RGB, 3, 3, 0);
  expect_step(&p.steps[1], 'T', c.steps[1].a, IB_MODE_RGB, IB_MODE_RGB, 3, 3, 16);
  expect_step(&p.steps[2], 'V', IB_MODE_RGB, IB_MODE_RGB, IB_MODE_LA, 3, 2, c.steps[2].param_off);

  /* A gather head (transpose) or a blur: not the interpreter's. */
  c = (ib_gchain){0};
  push_node(&c, &t[0], IMGBATCH__V1__NODE__OP_TRANSPOSE, 1, IB_MODE_RGB, IB_MODE_RGB);
  push_node(&c, &t[1], IMGBATCH__V1__NODE__OP_INVERT, 0, IB_MODE_RGB, IB_MODE_RGB);
  cr_assert_not(ib_interp_can_run(&c));
  cr_assert_eq(ib_interp_prog(&c, &p, &err), IB_UNSUPPORTED);
  cr_expect_not_null(strstr(err.message, "step R"), "%s", err.message);
  c = (ib_gchain){0};
  push_node(&c, &t[0], IMGBATCH__V1__NODE__OP_BOX_BLUR, 0, IB_MODE_L, IB_MODE_L);
  cr_assert_not(ib_interp_can_run(&c));
  /* A description outside every row's list has no case: refused. */
  static const ib_dev_op stray = {.tag = 'Z',
                                  .role = IB_DEV_PIXEL,
                                  .header = "convert.cuh",
                                  .fn = "ib_step_convert",
                                  .rt = "ib_step_convert_rt"};
  c = (ib_gchain){0};
  const ib_gstep s = {.dev = &stray, .mode_in = IB_MODE_L, .mode_out = IB_MODE_L};
  cr_assert(ib_gchain_push(&c, &s));
  cr_assert_not(ib_interp_can_run(&c));
}
