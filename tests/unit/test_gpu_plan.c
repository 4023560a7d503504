/* CUDA backend planning without a GPU: which nodes fuse into one kernel,
 * which start a stage, which buffers exist, and that folded table runs
 * (point/invert/solarize/posterize/Brightness composed into one LUT) give
 * the CPU reference's bytes. */
#include <criterion/criterion.h>

#include "tools/jobgen.h"
#include "cpu/cpu_backend.h"
#include "gpu/cuda_internal.h"
#include "gpu/charge.h"
#include "gpu/gplan.h"
#include "gpu/graph_like.h"
#include "kernels/point.h"

static jg_arena arena;
static void setup(void) { arena = (jg_arena){malloc(1u << 24), 0, 1u << 24}; }
static void teardown(void) { free(arena.p); }

TestSuite(gpu_plan, .init = setup, .fini = teardown);

static ib_graph *finish(jg_job *j) {
  ib_error err = {0};
  ib_graph *g = jg_finish(j, &err);
  cr_assert_not_null(g, "%s", err.message);
  return g;
}

/* The job's graph, planned into pl (both checked). */
static ib_graph *planned(jg_job *j, ib_gplan *pl) {
  ib_graph *g = finish(j);
  ib_error err = {0};
  cr_assert_eq(ib_gplan_build(g, pl, &err), IB_OK, "%s", err.message);
  return g;
}

Test(gpu_plan, pointwise_chain_is_one_stage_with_folded_tables) {
  jg_rng r = {1};
  jg_job j;
  jg_begin(&j, &arena, &r, IB_MODE_RGB, 31, 7, 1);
  int p = jg_op(&j, &r, JG_INVERT, 0, IB_MODE_RGB, 31, 7, -1);
  p = jg_op(&j, &r, JG_POINT, p, IB_MODE_RGB, 31, 7, -1);
  p = jg_op(&j, &r, JG_BRIGHTNESS, p, IB_MODE_RGB, 31, 7, -1);
  p = jg_op(&j, &r, JG_CONVERT, p, IB_MODE_RGB, 31, 7, 0); /* -> L */
  jg_op(&j, &r, JG_POSTERIZE, p, IB_MODE_L, 31, 7, -1);
  ib_gplan pl;
  ib_graph *g = planned(&j, &pl);
  cr_assert_eq(pl.n_stages, 1);
  cr_assert_eq(pl.n_bufs, 2, "source upload + output only: no intermediate buffers");
  const ib_gstage *s = &pl.stages[0];
  cr_assert_eq(s->chain.n_steps, 3);
  cr_assert_eq(s->chain.steps[0].dev, &ib_gdev_table);
  cr_assert_eq(s->n_fold[0], 3);
  cr_assert_eq(s->chain.steps[1].dev->role, IB_DEV_PIXEL);
  cr_assert_str_eq(s->chain.steps[1].dev->fn, "ib_step_convert");
  cr_assert_eq(s->chain.steps[2].dev, &ib_gdev_table);
  cr_assert_eq(s->chain.steps[2].mode_in, IB_MODE_L);
  cr_assert(pl.bufs[pl.out_buf].is_output);
  cr_assert_eq(pl.bufs[pl.out_buf].bytes, 31u * 7u);
  ib_gplan_free(&pl);
  ib_graph_free(g);
}

Test(gpu_plan, shared_intermediate_is_materialised) {
  jg_rng r = {2};
  jg_job j;
  jg_begin(&j, &arena, &r, IB_MODE_L, 9, 9, 1);
  int a = jg_op(&j, &r, JG_INVERT, 0, IB_MODE_L, 9, 9, -1); /* node 1, read twice */
  int b = jg_op(&j, &r, JG_POINT, a, IB_MODE_L, 9, 9, -1);  /* node 2 */
  Imgbatch__V1__Node *n = jg_node(&j, IMGBATCH__V1__NODE__OP_CHOPS, b, a);
  n->chops = jg_alloc(j.a, sizeof *n->chops);
  imgbatch__v1__chops_op__init(n->chops);
  n->chops->function = IMGBATCH__V1__CHOPS_FUNCTION__DIFFERENCE;
  ib_gplan pl;
  ib_graph *g = planned(&j, &pl);
  cr_assert_eq(pl.n_stages, 3, "invert | point | chops");
  cr_assert_eq(pl.stages[2].chain.n_inputs, 2);
  cr_assert_eq(pl.stages[2].in_buf[1], pl.stages[0].out_buf);
  ib_gplan_free(&pl);
  ib_graph_free(g);
}

Test(gpu_plan, contrast_starts_a_stage_and_later_ops_fuse_after_it) {
  jg_rng r = {3};
  jg_job j;
  jg_begin(&j, &arena, &r, IB_MODE_RGBA, 5, 3, 1);
  int p = jg_op(&j, &r, JG_POINT, 0, IB_MODE_RGBA, 5, 3, -1);
  p = jg_op(&j, &r, JG_CONTRAST, p, IB_MODE_RGBA, 5, 3, -1);
  p = jg_op(&j, &r, JG_COLOR, p, IB_MODE_RGBA, 5, 3, -1);
  ib_gplan pl;
  ib_graph *g = planned(&j, &pl);
  cr_assert_eq(pl.n_stages, 2);
  cr_assert(pl.stages[1].chain.reduce_luma);
  cr_assert_eq(pl.stages[1].chain.n_steps, 2);
  ib_gplan_free(&pl);
  ib_graph_free(g);
}

Test(gpu_plan, source_only_graph_gets_a_copy_stage) {
  jg_rng r = {4};
  jg_job j;
  jg_begin(&j, &arena, &r, IB_MODE_LA, 3, 3, 1);
  ib_gplan pl;
  ib_graph *g = planned(&j, &pl);
  cr_assert_eq(pl.n_stages, 1);
  cr_assert_eq(pl.stages[0].chain.steps[0].dev, &ib_dev_copy);
  cr_assert_neq(pl.out_buf, pl.stages[0].in_buf[0]);
  ib_gplan_free(&pl);
  ib_graph_free(g);
}

/* Folded tables equal the CPU rows run one after another. */
Test(gpu_plan, folded_tables_match_cpu_reference) {
  static const int table_ops[] = {JG_POINT, JG_INVERT, JG_SOLARIZE, JG_POSTERIZE, JG_BRIGHTNESS};
  jg_rng r = {5};
  for (int t = 0; t < 200; t++) {
    ib_mode m = (ib_mode)(1 + jg_below(&r, 6));
    uint32_t w = 1 + jg_below(&r, 40), h = 1 + jg_below(&r, 20);
    jg_job j;
    jg_begin(&j, &arena, &r, m, w, h, 1);
    int p = 0, len = 1 + (int)jg_below(&r, 6);
    for (int k = 0; k < len; k++) {
      int op = table_ops[jg_below(&r, 5)];
      if ((op == JG_INVERT || op == JG_SOLARIZE || op == JG_POSTERIZE) && m != IB_MODE_L &&
          m != IB_MODE_RGB)
        op = JG_POINT;
      p = jg_op(&j, &r, op, p, m, w, h, -1);
    }
    ib_gplan pl;
    ib_graph *g = planned(&j, &pl);
    cr_assert_eq(pl.n_stages, 1);
    cr_assert_eq(pl.stages[0].chain.n_steps, 1);
    cr_assert_eq(pl.stages[0].n_fold[0], len);
    uint8_t block[8192] = {0};
    ib_gstage_fill(&pl.stages[0], g, block);
    ib_image ref = {0};
    ib_error err = {0};
    cr_assert_eq(ib_cpu_execute(g, &ref, &err), IB_OK, "%s", err.message);
    const Imgbatch__V1__RawImage *raw = g->job->source->raw;
    unsigned bands = ib_mode_bands(m);
    uint8_t *got = malloc((size_t)w * h * bands);
    ib_point_row(block, bands, raw->data.data, got, w * h);
    cr_assert_arr_eq(got, ref.data, (size_t)w * h * bands, "case %d mode %s len %d", t,
                     ib_mode_name(m), len);
    free(got);
    ib_image_release(&ref);
    ib_gplan_free(&pl);
    ib_graph_free(g);
  }
}

Test(gpu_plan, blur_gets_scratch_and_its_own_stage) {
  jg_rng r = {6};
  jg_job j;
  jg_begin(&j, &arena, &r, IB_MODE_RGB, 20, 10, 1);
  int p = jg_op(&j, &r, JG_INVERT, 0, IB_MODE_RGB, 20, 10, -1);
  p = jg_op(&j, &r, JG_GAUSS, p, IB_MODE_RGB, 20, 10, -1);
  jg_op(&j, &r, JG_POINT, p, IB_MODE_RGB, 20, 10, -1);
  ib_gplan pl;
  ib_graph *g = planned(&j, &pl);
  cr_assert_eq(pl.n_stages, 3, "invert | blur | point (nothing fuses into a blur)");
  cr_assert(ib_gchain_passes(&pl.stages[1].chain));
  cr_assert_geq(pl.stages[1].scratch_buf, 0);
  cr_assert_eq(pl.bufs[pl.stages[1].scratch_buf].bytes, 20u * 10u * 3u);
  cr_assert_eq(pl.stages[0].scratch_buf, -1);
  ib_gplan_free(&pl);
  ib_graph_free(g);
}

/* The one "same plan" check (ib_cuda_same_nodes) that lets a submission
 * copy an equal predecessor's parameter blocks and admission reuse the last
 * charge: graphs whose nodes are equal on the wire and in shape, over other
 * pixels, are the same and fill byte-equal parameter blocks; other
 * parameters, another size or missing wire bytes are not the same. */
static ib_graph *one_op(int op, uint64_t pixels, uint64_t params, uint32_t w) {
  jg_rng r = {pixels}, same = {params};
  jg_job j;
  jg_begin(&j, &arena, &r, IB_MODE_RGB, w, 19, 1);
  jg_op(&j, &same, op, 0, IB_MODE_RGB, w, 19, -1);
  return finish(&j);
}

static void blocks_equal(const ib_graph *a, const ib_graph *b, const char *name) {
  ib_gplan pa, pb;
  ib_error err = {0};
  cr_assert_eq(ib_gplan_build(a, &pa, &err), IB_OK, "%s: %s", name, err.message);
  cr_assert_eq(ib_gplan_build(b, &pb, &err), IB_OK, "%s: %s", name, err.message);
  cr_assert_eq(pa.n_stages, pb.n_stages, "%s", name);
  for (int q = 0; q < pa.n_stages; q++) {
    const size_t n = pa.stages[q].chain.param_bytes + pa.stages[q].extra_bytes;
    cr_assert_eq(n, pb.stages[q].chain.param_bytes + pb.stages[q].extra_bytes, "%s", name);
    uint8_t *x = calloc(1, n + 1), *y = calloc(1, n + 1);
    ib_gstage_fill(&pa.stages[q], a, x);
    ib_gstage_fill(&pb.stages[q], b, y);
    cr_assert_eq(memcmp(x, y, n), 0, "%s: stage %d parameter blocks differ", name, q);
    free(x);
    free(y);
  }
  ib_gplan_free(&pa);
  ib_gplan_free(&pb);
}

Test(gpu_plan, same_nodes_means_same_parameter_blocks) {
  for (int op = 0; op < JG_COUNT; op++) {
    ib_graph *a = one_op(op, 1, 500 + (uint64_t)op, 37), *b = one_op(op, 2, 500 + (uint64_t)op, 37);
    cr_assert(ib_cuda_same_nodes(a, b), "%s over other pixels", jg_names[op]);
    blocks_equal(a, b, jg_names[op]);
    ib_graph *wider = one_op(op, 1, 500 + (uint64_t)op, 38);
    cr_assert_not(ib_cuda_same_nodes(a, wider), "%s: another source size", jg_names[op]);
    ib_graph_free(wider);
    free(b->nodes_wire);
    b->nodes_wire = NULL;
    cr_assert_not(ib_cuda_same_nodes(a, b), "%s: no wire bytes, never the same", jg_names[op]);
    cr_assert_not(ib_cuda_same_nodes(b, b));
    ib_graph_free(a);
    ib_graph_free(b);
  }
  ib_graph *a = one_op(JG_GAUSS, 1, 7, 37), *b = one_op(JG_GAUSS, 1, 8, 37);
  cr_assert_not(ib_cuda_same_nodes(a, b), "another radius");
  ib_graph_free(a);
  ib_graph_free(b);
}

/* Renditions (Job.renditions) of the job's nodes, each RAW with a distinct
 * compression field so a node may be named twice. */
static void renditions(jg_job *j, const uint32_t *nodes, size_t n) {
  j->job.contract_version = 3;
  Imgbatch__V1__Rendition **rl = jg_alloc(j->a, n * sizeof *rl);
  for (size_t i = 0; i < n; i++) {
    rl[i] = jg_alloc(j->a, sizeof *rl[i]);
    imgbatch__v1__rendition__init(rl[i]);
    rl[i]->node = nodes[i];
    rl[i]->output = jg_alloc(j->a, sizeof *rl[i]->output);
    imgbatch__v1__cpu_output__init(rl[i]->output);
    rl[i]->output->compression = (uint32_t)i;
  }
  j->job.renditions = rl;
  j->job.n_renditions = n;
}

/* source -> invert -> point -> brightness -> convert L -> posterize. */
static void table_chain(jg_job *j, jg_rng *r) {
  jg_begin(j, &arena, r, IB_MODE_RGB, 31, 7, 1);
  int p = jg_op(j, r, JG_INVERT, 0, IB_MODE_RGB, 31, 7, -1);
  p = jg_op(j, r, JG_POINT, p, IB_MODE_RGB, 31, 7, -1);
  p = jg_op(j, r, JG_BRIGHTNESS, p, IB_MODE_RGB, 31, 7, -1);
  p = jg_op(j, r, JG_CONVERT, p, IB_MODE_RGB, 31, 7, 0); /* -> L */
  jg_op(j, r, JG_POSTERIZE, p, IB_MODE_L, 31, 7, -1);
}

Test(gpu_plan, a_rendition_node_ends_its_stage_and_keeps_its_buffer) {
  jg_rng r = {5};
  jg_job j;
  table_chain(&j, &r);
  const uint32_t nodes[] = {2, 0, 5, 2};
  renditions(&j, nodes, 4);
  ib_gplan pl;
  ib_graph *g = planned(&j, &pl);
  cr_assert_eq(pl.n_rendition_nodes, 3);
  cr_assert_eq(pl.n_stages, 2, "invert+point | brightness, convert, posterize");
  const ib_gstage *s0 = &pl.stages[0], *s1 = &pl.stages[1];
  cr_assert_eq(s0->chain.n_steps, 1);
  cr_assert_eq(s0->n_fold[0], 2, "invert and point still fold into one table");
  cr_assert_eq(s0->fold[0][1], 2);
  cr_assert_eq(pl.node_buf[2], s0->out_buf, "the rendition's image is its stage's output");
  cr_assert_eq(s1->in_buf[0], s0->out_buf);
  cr_assert_eq(s1->chain.n_steps, 3, "the chain after the rendition fuses as before");
  cr_assert_eq(pl.node_buf[5], pl.out_buf);
  cr_assert_eq(pl.bufs[pl.node_buf[0]].source_node, 0, "the source's is its upload buffer");
  for (int b = 0; b < pl.n_bufs; b++) cr_assert(!pl.bufs[b].is_output);
  ib_gplan_free(&pl);
  ib_graph_free(g);
  /* Without renditions the same chain is one stage. */
  table_chain(&j, &r);
  g = planned(&j, &pl);
  cr_assert_eq(pl.n_rendition_nodes, 0);
  cr_assert_eq(pl.n_stages, 1);
  cr_assert(pl.bufs[pl.out_buf].is_output);
  ib_gplan_free(&pl);
  ib_graph_free(g);
}

Test(gpu_plan, renditions_plan_apart_and_their_block_charges_only_its_padding) {
  jg_rng r = {6};
  jg_job j;
  table_chain(&j, &r);
  ib_graph *plain = finish(&j);
  table_chain(&j, &r);
  const uint32_t last[] = {5, 5};
  renditions(&j, last, 2);
  ib_graph *rend = finish(&j);
  table_chain(&j, &r);
  const uint32_t mid[] = {2};
  renditions(&j, mid, 1);
  ib_graph *other = finish(&j);
  cr_assert(!ib_cuda_same_nodes(rend, plain), "the memos must not mix them");
  cr_assert(!ib_cuda_same_nodes(rend, other));
  ib_graph like = {0};
  cr_assert(ib_cuda_like_keep(&like, rend));
  cr_assert(ib_cuda_same_nodes(rend, &like));
  cr_assert(!ib_cuda_same_nodes(plain, &like));
  ib_cuda_like_free(&like);
  /* The terminal as rendition (twice): the same plan and the same host
   * charge: its range of the rendition block (downloaded once) is lent to
   * the result as an arena range is, so the working part is the padding
   * of that range, as of the arena's; the core holds the images. */
  uint64_t gpu_p, host_p, gpu_r, host_r;
  ib_error err = {0};
  cr_assert_eq(ib_cuda_charge(plain, NULL, NULL, &gpu_p, &host_p, &err), IB_OK);
  cr_assert_eq(ib_cuda_charge(rend, NULL, NULL, &gpu_r, &host_r, &err), IB_OK);
  cr_assert_eq(gpu_r, gpu_p);
  cr_assert_eq(host_r, host_p);
  ib_graph_free(plain);
  ib_graph_free(rend);
  ib_graph_free(other);
}
