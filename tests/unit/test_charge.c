/*
 * The admission charge per backend (docs/credits.md), pinned without a
 * GPU: the CPU charge (credits.c) and the CUDA charge (credits.c plus the
 * backend's own estimate, gpu/charge.c, combined as submit.c does) of every
 * op family on a 4096^2 RGBA image, alone and in two-op chains, against the
 * default caps; the exact bytes of representative graphs against
 * the formulas of docs/credits.md; and the CPU backend admitting and running a
 * 4096^2 Kernel job end to end at the default caps.
 */
#include <criterion/criterion.h>

#include "parse/parse.h"
#include "tools/jobgen.h"
#include "cpu/cpu_backend.h"
#include "exec/backend.h"
#include "exec/credits.h"
#include "gpu/charge.h"
#include "gpu/gplan.h"

/* Defined by worker/gpu (always built; only running it needs a GPU). */
extern const ib_backend ib_backend_cuda;

#define SIDE 4096u
#define IMG ((uint64_t)SIDE * SIDE * 4u) /* one 4096^2 RGBA image: 64 MiB */
#define MIB (1ull << 20)
#define HOST_CAP (256ull * MIB) /* the default caps (docs/credits.md) */
#define GPU_CAP (512ull * MIB)

static jg_arena arena;
static uint8_t *pixels; /* every raw source's bytes (contents do not matter here) */
/* The graph's source mode: RGBA, or RGB for the table ops Pillow's ImageOps
 * refuses RGBA for (invert, solarize, posterize). */
static ib_mode src_mode = IB_MODE_RGBA;

static void setup(void) {
  arena = (jg_arena){malloc(1u << 20), 0, 1u << 20};
  pixels = calloc(IMG, 1);
  cr_assert(arena.p && pixels);
}
static void teardown(void) {
  free(arena.p);
  free(pixels);
}
TestSuite(charge, .init = setup, .fini = teardown);

/* ------------------------------------------------------------ graphs */

static Imgbatch__V1__Source *raw_source(jg_job *j) {
  Imgbatch__V1__Source *s = jg_alloc(j->a, sizeof *s);
  imgbatch__v1__source__init(s);
  Imgbatch__V1__RawImage *raw = jg_alloc(j->a, sizeof *raw);
  imgbatch__v1__raw_image__init(raw);
  raw->mode = (char *)ib_mode_name(src_mode);
  raw->width = raw->height = SIDE;
  raw->data = (ProtobufCBinaryData){(size_t)SIDE * SIDE * ib_mode_bands(src_mode), pixels};
  s->kind_case = IMGBATCH__V1__SOURCE__KIND_RAW;
  s->raw = raw;
  return s;
}

/* A PNG header for 4096x4096 RGBA (admission reads only the header). */
static uint8_t png[64];
static size_t png_len;
static uint32_t crc32_of(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}
static size_t put_chunk(uint8_t *p, const char *type, const uint8_t *data, uint32_t len) {
  p[0] = len >> 24, p[1] = len >> 16, p[2] = len >> 8, p[3] = (uint8_t)len;
  memcpy(p + 4, type, 4);
  if (len) memcpy(p + 8, data, len);
  uint32_t crc = crc32_of(p + 4, 4 + len);
  p[8 + len] = crc >> 24, p[9 + len] = crc >> 16, p[10 + len] = crc >> 8,
        p[11 + len] = (uint8_t)crc;
  return 12 + len;
}
static Imgbatch__V1__Source *png_source(jg_job *j) {
  memcpy(png, "\x89PNG\r\n\x1a\n", 8);
  const uint8_t ihdr[13] = {0, 0, 0x10, 0, 0, 0, 0x10, 0, 8, src_mode == IB_MODE_RGB ? 2 : 6,
                            0, 0, 0};
  png_len = 8 + put_chunk(png + 8, "IHDR", ihdr, 13);
  png_len += put_chunk(png + png_len, "IDAT", NULL, 0);
  png_len += put_chunk(png + png_len, "IEND", NULL, 0);
  Imgbatch__V1__Source *s = jg_alloc(j->a, sizeof *s);
  imgbatch__v1__source__init(s);
  s->kind_case = IMGBATCH__V1__SOURCE__KIND_ENCODED;
  s->encoded = (ProtobufCBinaryData){png_len, png};
  return s;
}

static void begin(jg_job *j, bool encoded) {
  arena.used = 0;
  memset(j, 0, sizeof *j);
  j->a = &arena;
  imgbatch__v1__job__init(&j->job);
  j->job.input_key_case = IMGBATCH__V1__JOB__INPUT_KEY_KEY_U64;
  j->job.key_u64 = 1;
  j->job.source = encoded ? png_source(j) : raw_source(j);
  j->job.nodes = j->nodes;
  j->job.extra_sources = j->extra;
  Imgbatch__V1__Node *n = jg_alloc(&arena, sizeof *n);
  imgbatch__v1__node__init(n);
  n->op_case = IMGBATCH__V1__NODE__OP_SOURCE;
  n->source = jg_alloc(&arena, sizeof *n->source);
  imgbatch__v1__source_op__init(n->source);
  j->nodes[j->job.n_nodes++] = n;
}

/* A second 4096^2 RGBA raw source as a node. */
static int extra(jg_job *j) {
  j->extra[j->job.n_extra_sources++] = raw_source(j);
  Imgbatch__V1__Node *n = jg_alloc(j->a, sizeof *n);
  imgbatch__v1__node__init(n);
  n->op_case = IMGBATCH__V1__NODE__OP_SOURCE;
  n->source = jg_alloc(j->a, sizeof *n->source);
  imgbatch__v1__source_op__init(n->source);
  n->source->index = (uint32_t)j->job.n_extra_sources;
  j->nodes[j->job.n_nodes] = n;
  return (int)j->job.n_nodes++;
}

/* Every op family, on 4096^2 RGBA in, at its largest output that stays a
 * legal graph (sides <= 4096): crop/expand/resize/transpose keep 4096^2,
 * the two-input ops read a second 4096^2 RGBA source. */
static const int families[] = {JG_COPY,     JG_TRANSPOSE,  JG_CROP,    JG_EXPAND,   JG_RESIZE,
                               JG_PASTE,    JG_GETCHANNEL, JG_CONVERT, JG_POINT,    JG_INVERT,
                               JG_SOLARIZE, JG_POSTERIZE,  JG_RANK,    JG_BOXBLUR,  JG_GAUSS,
                               JG_KERNEL,   JG_CHOPS,      JG_BLEND,   JG_CONSTANT, JG_BRIGHTNESS,
                               JG_COLOR,    JG_CONTRAST,   JG_TONE};
#define N_FAMILIES (sizeof families / sizeof families[0])

/* `second`: the second input of a two-input op (-1: a new 4096^2 source). */
static int add_op(jg_job *j, int fam, int prev, int second) {
  jg_rng r = {(uint64_t)fam * 7919 + 17};
  Imgbatch__V1__Node *n;
  switch (fam) {
    case JG_CROP:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_CROP, prev, -1);
      n->crop = jg_alloc(j->a, sizeof *n->crop);
      imgbatch__v1__crop_op__init(n->crop);
      n->crop->right = n->crop->bottom = SIDE;
      break;
    case JG_EXPAND: /* any border would pass the 4096 side bound */
      n = jg_node(j, IMGBATCH__V1__NODE__OP_EXPAND, prev, -1);
      n->expand = jg_alloc(j->a, sizeof *n->expand);
      imgbatch__v1__expand_op__init(n->expand);
      n->expand->fill = (ProtobufCBinaryData){ib_mode_bands(src_mode), (uint8_t *)"\1\2\3\4"};
      break;
    case JG_RESIZE:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_RESIZE, prev, -1);
      n->resize = jg_alloc(j->a, sizeof *n->resize);
      imgbatch__v1__resize_op__init(n->resize);
      n->resize->width = n->resize->height = SIDE;
      break;
    case JG_PASTE:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_PASTE, prev, second >= 0 ? second : extra(j));
      n->paste = jg_alloc(j->a, sizeof *n->paste);
      imgbatch__v1__paste_op__init(n->paste);
      break;
    case JG_CHOPS:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_CHOPS, prev, second >= 0 ? second : extra(j));
      n->chops = jg_alloc(j->a, sizeof *n->chops);
      imgbatch__v1__chops_op__init(n->chops);
      n->chops->function = IMGBATCH__V1__CHOPS_FUNCTION__DIFFERENCE;
      n->chops->scale = 1;
      break;
    case JG_BLEND:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_BLEND, prev, second >= 0 ? second : extra(j));
      n->blend = jg_alloc(j->a, sizeof *n->blend);
      imgbatch__v1__blend_op__init(n->blend);
      n->blend->alpha = 0.25;
      break;
    case JG_BOXBLUR:
    case JG_GAUSS: /* both radii: the CPU row takes its transpose scratch */
      jg_op(j, &r, fam, prev, src_mode, SIDE, SIDE, -1);
      n = j->nodes[j->job.n_nodes - 1];
      if (fam == JG_BOXBLUR)
        n->box_blur->radius_x = n->box_blur->radius_y = 2;
      else
        n->gaussian_blur->radius_x = n->gaussian_blur->radius_y = 2;
      break;
    case JG_CONVERT: /* -> RGB */ return jg_op(j, &r, fam, prev, src_mode, SIDE, SIDE, 2);
    case JG_TRANSPOSE:
    case JG_RANK:
    case JG_KERNEL: /* flip left-right, 3x3 */
      return jg_op(j, &r, fam, prev, src_mode, SIDE, SIDE, 0);
    default: return jg_op(j, &r, fam, prev, src_mode, SIDE, SIDE, -1);
  }
  return (int)j->job.n_nodes - 1;
}

/* Packed and parsed in place (ib_graph_parse_buffer), as `imgbatch run`
 * does: raw pixels stay in the Job buffer. */
static ib_graph *finish(jg_job *j) {
  size_t len = 0;
  uint8_t *buf = jg_pack(j, &len);
  cr_assert_not_null(buf);
  ib_graph *g = NULL;
  ib_key key = {0};
  ib_error err = {0};
  ib_status st = ib_graph_parse_buffer(buf, len, NULL, NULL, &g, &key, &err);
  ib_key_clear(&key);
  cr_assert_eq(st, IB_OK, "%s", err.message);
  return g;
}

/* ops[0..n) chained on the source (the last one is the output); a
 * two-input op reads a second 4096^2 source when `second_image`, else the
 * source image again. */
static bool lut_only(int op) { return op == JG_INVERT || op == JG_SOLARIZE || op == JG_POSTERIZE; }

static ib_graph *chain(const int *ops, int n, bool encoded, bool second_image) {
  src_mode = IB_MODE_RGBA;
  for (int k = 0; k < n; k++)
    if (lut_only(ops[k])) src_mode = IB_MODE_RGB;
  jg_job j;
  begin(&j, encoded);
  int p = 0;
  for (int k = 0; k < n; k++) p = add_op(&j, ops[k], p, second_image ? -1 : 0);
  return finish(&j);
}

/* ------------------------------------------------------------ charges */

static ib_charge cpu_charge(const ib_graph *g) {
  ib_charge_rules r = ib_charge_rules_of(&ib_backend_cpu, NULL, NULL, 0, false);
  return ib_charge_for(g, &r);
}

/* What the CUDA backend answers for a Job parsed by ib_executor_parse into
 * its pinned memory: every raw source is uploaded where it lies. */
static bool raw_in_place(void *ctx, const ib_graph *g, size_t index) {
  (void)ctx;
  return g->sources[index].pb->kind_case == IMGBATCH__V1__SOURCE__KIND_RAW;
}

/* submit.c's combination: the core's charge raised to the backend's own. */
static ib_charge cuda_charge(const ib_graph *g, bool pinned) {
  ib_charge_rules r = ib_charge_rules_of(&ib_backend_cuda, NULL, NULL, 0, false);
  ib_charge ch = ib_charge_for(g, &r);
  uint64_t gpu = 0, host = 0;
  ib_error err = {0};
  cr_assert_eq(ib_cuda_charge(g, pinned ? raw_in_place : NULL, NULL, &gpu, &host, &err), IB_OK,
               "%s", err.message);
  ib_charge_raise(&ch, gpu, host);
  return ch;
}

static uint64_t host_of(ib_charge c) { return ib_charge_host_total(&c); }
static uint64_t gpu_of(ib_charge c) { return ib_charge_gpu_total(&c); }

static void assert_fits(const ib_graph *g, const char *what) {
  ib_charge cpu = cpu_charge(g), cuda = cuda_charge(g, true), staged = cuda_charge(g, false);
  cr_log_info("%-28s cpu host %9.3f gpu %9.3f | cuda host %9.3f (staged %9.3f) gpu %9.3f MiB", what,
              host_of(cpu) / (double)MIB, gpu_of(cpu) / (double)MIB, host_of(cuda) / (double)MIB,
              host_of(staged) / (double)MIB, gpu_of(cuda) / (double)MIB);
  cr_assert_leq(host_of(cpu), HOST_CAP, "%s: cpu host %llu", what,
                (unsigned long long)host_of(cpu));
  cr_assert_leq(gpu_of(cpu), GPU_CAP, "%s: cpu gpu %llu", what, (unsigned long long)gpu_of(cpu));
  cr_assert_leq(host_of(cuda), HOST_CAP, "%s: cuda host %llu", what,
                (unsigned long long)host_of(cuda));
  cr_assert_leq(gpu_of(cuda), GPU_CAP, "%s: cuda gpu %llu", what, (unsigned long long)gpu_of(cuda));
}

Test(charge, every_op_family_alone_fits_the_default_caps_on_both_backends) {
  for (size_t f = 0; f < N_FAMILIES; f++) {
    int op = families[f];
    ib_graph *g = chain(&op, 1, false, true);
    assert_fits(g, jg_names[op]);
    ib_graph_free(g);
  }
}

Test(charge, every_op_family_in_a_two_op_chain_fits_the_default_caps_on_both_backends) {
  for (size_t f = 0; f < N_FAMILIES; f++) {
    int op = families[f];
    char what[64];
    int after[2] = {op, JG_KERNEL}, before[2] = {JG_KERNEL, op};
    ib_graph *g = chain(after, 2, false, false);
    snprintf(what, sizeof what, "%s -> kernel", jg_names[op]);
    assert_fits(g, what);
    ib_graph_free(g);
    g = chain(before, 2, false, false);
    snprintf(what, sizeof what, "kernel -> %s", jg_names[op]);
    assert_fits(g, what);
    ib_graph_free(g);
  }
}

Test(charge, every_op_family_on_an_encoded_png_source_fits_the_default_caps) {
  for (size_t f = 0; f < N_FAMILIES; f++) {
    int op = families[f];
    char what[64];
    ib_graph *g = chain(&op, 1, true, true);
    snprintf(what, sizeof what, "png -> %s", jg_names[op]);
    assert_fits(g, what);
    ib_graph_free(g);
  }
}

/* The documented formula (docs/credits.md), term by term, for a 3x3
 * Kernel and a BoxBlur on a raw 4096^2 RGBA source (S = 64 MiB of source
 * bytes, out = the 64 MiB output, echo = 0: no metadata, no OutputSpec). */
#define KERNEL_PARAMS 40u                     /* op param_bytes: (9 + 1) floats */
#define BLUR_SCRATCH (16u * 4u * SIDE + SIDE) /* CPU column tile + one line */
#define UP(x) (((x) + 255u) / 256u * 256u)
#define CUDA_PAR (UP(48u) + UP(64u)) /* one stage: its parameter block + descriptor */

static void assert_charge(ib_charge c, uint64_t gpu_work, uint64_t gpu_held, uint64_t host_work,
                          uint64_t host_held, const char *what) {
  cr_assert_eq(c.gpu_work, gpu_work, "%s: gpu_work %llu", what, (unsigned long long)c.gpu_work);
  cr_assert_eq(c.gpu_held, gpu_held, "%s: gpu_held %llu", what, (unsigned long long)c.gpu_held);
  cr_assert_eq(c.host_work, host_work, "%s: host_work %llu", what, (unsigned long long)c.host_work);
  cr_assert_eq(c.host_held, host_held, "%s: host_held %llu", what, (unsigned long long)c.host_held);
}

Test(charge, exact_bytes_of_representative_graphs_follow_the_documented_formula) {
  int k = JG_KERNEL, b = JG_BOXBLUR, kk[2] = {JG_KERNEL, JG_KERNEL};
  ib_gplan p;
  ib_error err = {0};

  ib_graph *g = chain(&k, 1, false, true);
  /* The plan terms the CUDA formula names: one stage, 48-byte block. */
  cr_assert_eq(ib_gplan_build(g, &p, &err), IB_OK, "%s", err.message);
  cr_assert_eq(p.n_stages, 1);
  cr_assert_eq(p.stages[0].chain.param_bytes + p.stages[0].extra_bytes, 48u);
  cr_assert_eq(sizeof(ib_gdesc), 64u);
  ib_gplan_free(&p);
  /* cpu: host = S + peak - out | out + echo, peak = out + params (the raw
   * source is read in place); gpu = peak. */
  assert_charge(cpu_charge(g), IMG + KERNEL_PARAMS, 0, IMG + KERNEL_PARAMS, IMG, "cpu kernel");
  cr_assert_eq(host_of(cpu_charge(g)), 134217768u, "128 MiB + 40: the source once");
  /* cuda, Job in pinned memory: host = S + parameter staging | out (the lent
   * arena range) + echo; gpu = source + output buffers + blocks. */
  assert_charge(cuda_charge(g, true), 2 * IMG + CUDA_PAR, 0, IMG + CUDA_PAR, IMG, "cuda kernel");
  cr_assert_eq(host_of(cuda_charge(g, true)), 134218240u, "128 MiB + 512: the source once");
  /* cuda, Job on the heap: the source is staged in pinned memory first. */
  assert_charge(cuda_charge(g, false), 2 * IMG + CUDA_PAR, 0, 2 * IMG + CUDA_PAR, IMG,
                "cuda kernel staged");
  /* cuda, output gpu: the output buffer and its download workspace stay
   * held; host keeps download staging + one copy. */
  ib_charge_rules rr = ib_charge_rules_of(&ib_backend_cuda, NULL, NULL, 0, true);
  ib_charge res = ib_charge_for(g, &rr);
  uint64_t gpu = 0, host = 0;
  cr_assert_eq(ib_cuda_charge(g, raw_in_place, NULL, &gpu, &host, &err), IB_OK);
  ib_charge_raise(&res, gpu, host);
  assert_charge(res, 2 * IMG + CUDA_PAR, 2 * IMG, IMG + CUDA_PAR, 2 * IMG, "cuda kernel resident");
  ib_graph_free(g);

  g = chain(&b, 1, false, true);
  /* cpu: the blur's scratch is charged only while it runs. */
  assert_charge(cpu_charge(g), IMG + BLUR_SCRATCH, 0, IMG + BLUR_SCRATCH, IMG, "cpu box blur");
  /* cuda: its ping-pong image is a plan buffer (3 images on the device). */
  assert_charge(cuda_charge(g, true), 3 * IMG + CUDA_PAR, 0, IMG + CUDA_PAR, IMG, "cuda box blur");
  ib_graph_free(g);

  g = chain(kk, 2, false, false);
  /* cpu: kernel 1's output is alive while kernel 2 writes: peak = 2 out. */
  assert_charge(cpu_charge(g), 2 * IMG + KERNEL_PARAMS, 0, 2 * IMG + KERNEL_PARAMS, IMG,
                "cpu kernel -> kernel");
  /* cuda: two stages, three buffers on the device. */
  assert_charge(cuda_charge(g, true), 3 * IMG + 2 * UP(48u) + UP(128u), 0,
                IMG + 2 * UP(48u) + UP(128u), IMG, "cuda kernel -> kernel");
  ib_graph_free(g);

  g = chain(&k, 1, true, true);
  /* An encoded source: its bytes, then the decoded image (cpu: a node
   * output; cuda: pinned upload staging). */
  assert_charge(cpu_charge(g), 2 * IMG + KERNEL_PARAMS, 0, png_len + IMG + KERNEL_PARAMS, IMG,
                "cpu png kernel");
  assert_charge(cuda_charge(g, true), 2 * IMG + CUDA_PAR, 0, png_len + IMG + CUDA_PAR, IMG,
                "cuda png kernel");
  ib_graph_free(g);
}

/* Two jobs in flight: each holds its source bytes and its output (the two
 * images nothing can share) plus only its parameters/scratch; nothing is
 * charged twice. The device side fits two of every family on both
 * backends; the host side fits two whenever the output is smaller than the
 * source. Two full-size outputs (2 x (64 + 64) MiB) are the whole 256 MiB
 * cap before their parameters, so the second one waits (QUEUE_FULL) for
 * the first's result - see the worked example in docs/credits.md. */
Test(charge, two_jobs_in_flight_hold_their_sources_and_outputs_once) {
  for (size_t f = 0; f < N_FAMILIES; f++) {
    int op = families[f];
    ib_graph *g = chain(&op, 1, false, true);
    uint64_t images = 0;
    for (size_t i = 0; i < g->n_sources; i++) images += g->sources[i].len;
    const ib_shape *o = &g->nodes[g->n_nodes - 1].shape;
    uint64_t out = (uint64_t)o->width * o->height * ib_mode_bands(o->mode);
    images += out;
    ib_charge cpu = cpu_charge(g), cuda = cuda_charge(g, true);
    cr_assert_leq(2 * gpu_of(cpu), GPU_CAP, "%s: two on the cpu device", jg_names[op]);
    cr_assert_leq(2 * gpu_of(cuda), GPU_CAP, "%s: two on the cuda device", jg_names[op]);
    /* Host: the images plus at most 300 KiB (blur's column tile, resize's
     * tables, parameter staging). */
    cr_assert_geq(host_of(cpu), images, "%s", jg_names[op]);
    cr_assert_geq(host_of(cuda), images, "%s", jg_names[op]);
    cr_assert_leq(host_of(cpu) - images, 300u << 10, "%s: cpu host %llu", jg_names[op],
                  (unsigned long long)host_of(cpu));
    cr_assert_leq(host_of(cuda) - images, 300u << 10, "%s: cuda host %llu", jg_names[op],
                  (unsigned long long)host_of(cuda));
    if (g->n_sources == 1 && out < g->sources[0].len) { /* getchannel, convert, constant */
      cr_assert_leq(2 * host_of(cpu), HOST_CAP, "%s: two on the cpu host", jg_names[op]);
      cr_assert_leq(2 * host_of(cuda), HOST_CAP, "%s: two on the cuda host", jg_names[op]);
    }
    ib_graph_free(g);
  }
}

/* ------------------------------------------------------------ the charge memo */

/* What admission's tier memo would hand the charge: a plan of the graph,
 * counted. */
typedef struct planned_ctx {
  const ib_graph *g;
  ib_gplan plan;
  int asked;
} planned_ctx;

static const ib_gplan *planned(void *ctx, const ib_graph *g) {
  planned_ctx *p = ctx;
  p->asked++;
  return g == p->g ? &p->plan : NULL;
}

static bool raw_in_place_ctx(void *ctx, const ib_graph *g, size_t index) {
  (void)ctx;
  return raw_in_place(NULL, g, index);
}

/* The CUDA backend's charge memo (be_job_bytes) keeps the last 8 graphs: a
 * stream that interleaves a few graphs (the tier off, so no admission plan
 * to reuse) plans each once, where the one-graph memo planned once per job;
 * the charges equal ib_cuda_charge's; other sources in place are another
 * entry; the least recently used graph makes room; a graph without its
 * wire bytes is never kept; a plan admission made is taken, not rebuilt. */
Test(charge, the_memo_plans_each_of_a_few_interleaved_graphs_once) {
  enum { N = IB_CHARGE_MEMO_GRAPHS + 1 };
  cr_assert_eq(IB_CHARGE_MEMO_GRAPHS, 8);
  static const int ops[N] = {JG_COPY,   JG_TRANSPOSE, JG_CROP, JG_POINT,  JG_RANK,
                             JG_KERNEL, JG_BOXBLUR,   JG_TONE, JG_CONVERT};
  ib_graph *g[N];
  uint64_t want_gpu[N], want_host[N];
  ib_error err = {0};
  for (int i = 0; i < N; i++) {
    g[i] = chain(&ops[i], 1, false, false);
    cr_assert_not_null(g[i]->nodes_wire);
    cr_assert_eq(ib_cuda_charge(g[i], raw_in_place, NULL, &want_gpu[i], &want_host[i], &err), IB_OK,
                 "%s", err.message);
  }
  ib_charge_memo m = {0};
  uint64_t gpu = 0, host = 0;
#define CHARGE(k, fn)                                                                         \
  cr_assert_eq(ib_cuda_charge_memo(&m, g[k], fn, NULL, NULL, &gpu, &host, &err), IB_OK, "%s", \
               err.message)
  /* 4 rounds of 8 interleaved graphs: 8 plans, not 32. */
  for (int round = 0; round < 4; round++)
    for (int i = 0; i < IB_CHARGE_MEMO_GRAPHS; i++) {
      CHARGE(i, raw_in_place_ctx);
      cr_assert_eq(gpu, want_gpu[i], "%s round %d", jg_names[ops[i]], round);
      cr_assert_eq(host, want_host[i], "%s round %d", jg_names[ops[i]], round);
    }
  cr_assert_eq(m.plans, IB_CHARGE_MEMO_GRAPHS, "%llu plans for 32 jobs of 8 graphs",
               (unsigned long long)m.plans);
  /* Graph 0 staged (no source in place): another charge, its own entry,
   * in place of the least recently used (graph 0 in place). */
  uint64_t staged_gpu = 0, staged_host = 0;
  cr_assert_eq(ib_cuda_charge(g[0], NULL, NULL, &staged_gpu, &staged_host, &err), IB_OK);
  cr_assert_gt(staged_host, want_host[0]);
  CHARGE(0, NULL);
  cr_assert_eq(host, staged_host);
  cr_assert_eq(gpu, staged_gpu);
  cr_assert_eq(m.plans, 9);
  /* The ninth graph takes graph 1's place (now the least recently used):
   * graphs 2..7 and staged 0 still hit, graph 1 plans again. */
  CHARGE(8, raw_in_place_ctx);
  cr_assert_eq(gpu, want_gpu[8]);
  cr_assert_eq(m.plans, 10);
  for (int i = 2; i < IB_CHARGE_MEMO_GRAPHS; i++) CHARGE(i, raw_in_place_ctx);
  CHARGE(0, NULL);
  cr_assert_eq(m.plans, 10);
  CHARGE(1, raw_in_place_ctx);
  cr_assert_eq(host, want_host[1]);
  cr_assert_eq(m.plans, 11);
  /* Without its wire bytes a graph equals none: planned every time. */
  uint8_t *wire = g[3]->nodes_wire;
  g[3]->nodes_wire = NULL;
  CHARGE(3, raw_in_place_ctx);
  CHARGE(3, raw_in_place_ctx);
  cr_assert_eq(m.plans, 13);
  g[3]->nodes_wire = wire;
#undef CHARGE
  ib_charge_memo_free(&m);
  cr_assert_eq(m.plans, 0);
  /* A plan admission made is taken (asked once, on the miss only). */
  planned_ctx pc = {.g = g[5]};
  cr_assert_eq(ib_gplan_build(g[5], &pc.plan, &err), IB_OK, "%s", err.message);
  for (int k = 0; k < 3; k++) {
    cr_assert_eq(ib_cuda_charge_memo(&m, g[5], NULL, planned, &pc, &gpu, &host, &err), IB_OK);
    uint64_t sg = 0, sh = 0;
    cr_assert_eq(ib_cuda_charge(g[5], NULL, NULL, &sg, &sh, &err), IB_OK);
    cr_assert_eq(gpu, sg);
    cr_assert_eq(host, sh);
  }
  cr_assert_eq(pc.asked, 1);
  cr_assert_eq(m.plans, 1);
  ib_gplan_free(&pc.plan);
  ib_charge_memo_free(&m);
  for (int i = 0; i < N; i++) ib_graph_free(g[i]);
}

/* ------------------------------------------------------------ end to end */

/* The executor at its defaults (cpu backend) admits a 4096^2 RGBA 3x3
 * Kernel job parsed in place, charges exactly the formula, and its result
 * equals the same kernel run on a 64x64 crop (interior pixels; the kernel
 * copies a 1-pixel border). */
static uint8_t *random_rgba(uint32_t w, uint32_t h, uint64_t seed) {
  uint8_t *p = malloc((size_t)w * h * 4);
  jg_rng r = {seed};
  for (size_t i = 0; i < (size_t)w * h * 4; i += 4) {
    uint32_t v = jg_u32(&r);
    memcpy(p + i, &v, 4);
  }
  return p;
}

static uint8_t *kernel_job(const uint8_t *px, uint32_t w, uint32_t h, size_t *len) {
  jg_job j;
  memset(&j, 0, sizeof j);
  arena.used = 0;
  j.a = &arena;
  imgbatch__v1__job__init(&j.job);
  j.job.input_key_case = IMGBATCH__V1__JOB__INPUT_KEY_KEY_U64;
  j.job.key_u64 = 7;
  Imgbatch__V1__Source *s = jg_alloc(&arena, sizeof *s);
  imgbatch__v1__source__init(s);
  Imgbatch__V1__RawImage *raw = jg_alloc(&arena, sizeof *raw);
  imgbatch__v1__raw_image__init(raw);
  raw->mode = "RGBA";
  raw->width = w;
  raw->height = h;
  raw->data = (ProtobufCBinaryData){(size_t)w * h * 4, (uint8_t *)px};
  s->kind_case = IMGBATCH__V1__SOURCE__KIND_RAW;
  s->raw = raw;
  j.job.source = s;
  j.job.nodes = j.nodes;
  Imgbatch__V1__Node *n = jg_alloc(&arena, sizeof *n);
  imgbatch__v1__node__init(n);
  n->op_case = IMGBATCH__V1__NODE__OP_SOURCE;
  n->source = jg_alloc(&arena, sizeof *n->source);
  imgbatch__v1__source_op__init(n->source);
  j.nodes[j.job.n_nodes++] = n;
  jg_rng r = {3};
  jg_op(&j, &r, JG_KERNEL, 0, IB_MODE_RGBA, w, h, 0);
  return jg_pack(&j, len);
}

Test(charge, cpu_executor_at_the_defaults_runs_a_4096_rgba_kernel_job, .timeout = 120) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.backend = IB_BACKEND_CPU;
  cr_assert_eq(o.host_bytes, HOST_CAP);
  cr_assert_eq(o.gpu_bytes, GPU_CAP);
  ib_executor *ex = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_executor_create(&o, &ex, &err), IB_OK, "%s", err.message);
  uint8_t *px = random_rgba(SIDE, SIDE, 11);
  size_t len = 0;
  uint8_t *job = kernel_job(px, SIDE, SIDE, &len);
  uint8_t *buf = ib_executor_buffer(ex, len);
  memcpy(buf, job, len);
  free(job);
  ib_graph *g = NULL;
  ib_key key = {0};
  cr_assert_eq(ib_executor_parse_buffer(ex, buf, len, NULL, &g, &key, &err), IB_OK, "%s",
               err.message);
  ib_key_clear(&key);
  uint64_t id = 0;
  cr_assert_eq(ib_executor_submit(ex, g, NULL, &id, &err), IB_OK, "%s", err.message);
  ib_executor_counters c;
  ib_executor_counters_get(ex, &c);
  cr_assert_eq(c.host_bytes.in_use, 2 * IMG + KERNEL_PARAMS, "source once + output + params");
  cr_assert_eq(c.gpu_bytes.in_use, IMG + KERNEL_PARAMS);
  ib_results *rs = NULL;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert(r.ok, "%s", r.error.message);
  cr_assert_eq(r.image.mode, IB_MODE_RGBA);
  cr_assert_eq(r.image.width, SIDE);
  cr_assert_eq(r.image.height, SIDE);
  /* The pools: the output image held here is one of the host pool's large
   * blocks (the Job buffer, given back, is kept for reuse beside it). */
  ib_executor_pools pools;
  ib_executor_pools_get(ex, &pools);
  cr_assert_eq(pools.host_cap, HOST_CAP);
  cr_assert(pools.host_bytes >= 2 * IMG && pools.host_bytes <= HOST_CAP, "host pool %llu",
            (unsigned long long)pools.host_bytes);
  cr_assert(pools.device_bytes == 0 && pools.device_cap == 0, "no device on cpu");

  /* The reference: the same kernel on a 64x64 crop at (1000, 2000). */
  enum { CW = 64, CH = 64, X0 = 1000, Y0 = 2000 };
  uint8_t *crop = malloc(CW * CH * 4);
  for (int y = 0; y < CH; y++)
    memcpy(crop + y * CW * 4, px + ((size_t)(Y0 + y) * SIDE + X0) * 4, CW * 4);
  job = kernel_job(crop, CW, CH, &len);
  ib_graph *small = NULL;
  cr_assert_eq(ib_graph_parse(job, len, NULL, &small, NULL, &err), IB_OK, "%s", err.message);
  ib_image want = {0};
  cr_assert_eq(ib_cpu_execute(small, &want, &err), IB_OK, "%s", err.message);
  for (int y = 1; y < CH - 1; y++)
    cr_assert_eq(memcmp(want.data + ((size_t)y * CW + 1) * 4,
                        r.image.data + ((size_t)(Y0 + y) * SIDE + X0 + 1) * 4, (CW - 2) * 4),
                 0, "row %d", y);
  ib_image_release(&want);
  ib_graph_free(small);
  free(job);
  free(crop);
  ib_result_free(&r);
  cr_assert_eq(ib_results_next(rs, &r), IB_END);
  ib_results_close(rs);
  ib_executor_counters_get(ex, &c);
  cr_assert_eq(c.host_bytes.in_use, 0);
  /* Nothing in use; what the pool keeps stays within its cap. */
  ib_executor_pools_get(ex, &pools);
  cr_assert(pools.host_bytes > 0 && pools.host_bytes <= HOST_CAP, "kept %llu",
            (unsigned long long)pools.host_bytes);
  ib_executor_destroy(ex);
  free(px);
}
