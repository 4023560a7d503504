/* A CUDA submission's plan and layout passes (cuda_internal.h): each job's
 * device plan, then where every buffer, parameter block and descriptor lies
 * in the submission's device block, its pinned staging and its download
 * arena; and the questions admission asks the same way (sources uploaded
 * in place, outputs downloaded into their own Job buffer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_internal.h"

/* A raw source whose bytes lie in this backend's pinned memory (the Job was
 * unpacked by ib_executor_parse): uploaded from there, no staging copy.
 * Admission (be_job_bytes) asks the same question, so the charge knows. */
bool ib_cuda_source_region(ib_cuda *c, const ib_graph *g, size_t index, uint64_t *region) {
  const ib_source *src = &g->sources[index];
  size_t bytes = (size_t)src->shape.width * src->shape.height * ib_mode_bands(src->shape.mode);
  if (src->pb->kind_case != IMGBATCH__V1__SOURCE__KIND_RAW || src->len < bytes || !bytes)
    return false;
  /* Unpacked by ib_executor_parse: the pixels are an allocation of their
   * own; parsed in place: they lie in the graph's Job buffer. */
  const uint8_t *buf = g->buffer;
  const uint8_t *base =
      buf && src->bytes >= buf && src->bytes < buf + g->buffer_len ? buf : src->bytes;
  return ib_pinned_region(c->pin, base, src->bytes, bytes, region);
}

bool ib_cuda_source_pinned(void *state, const ib_graph *g, size_t index) {
  uint64_t region;
  return ib_cuda_source_region(state, g, index, &region);
}

/* A terminal image of 1 MiB or more goes back into its own Job buffer
 * (ib_executor_parse_buffer) when that buffer is pinned and large enough:
 * its source pixels are dead once uploaded, and the job then holds one
 * host copy, not two (at the default caps, two 4096^2 RGBA jobs in flight
 * instead of one). Smaller outputs share the submission's arena: one
 * download copy for all of them. Decided on the graph alone, so that the
 * charge (be_out_in_buffer) and the submission agree. */
#define OWN_DOWNLOAD_MIN ((uint64_t)1 << 20)
bool ib_cuda_own_download(ib_cuda *c, const ib_graph *g) {
  /* Renditions come down into the submission's rendition block instead. */
  if (!g->buffer || !g->n_nodes || (g->job && g->job->n_renditions)) return false;
  const ib_shape *sh = &g->nodes[g->n_nodes - 1].shape;
  const uint64_t out = (uint64_t)sh->width * sh->height * ib_mode_bands(sh->mode);
  return out >= OWN_DOWNLOAD_MIN && out <= g->buffer_len &&
         ib_pinned_holds(c->pin, g->buffer, g->buffer, g->buffer_len);
}

/* One job's device plan and offset tables. A failure is the job's own. */
static void plan_job(ib_backend_job *j, ib_jstate *js) {
  j->status = IB_OK;
  memset(&j->err, 0, sizeof j->err);
  memset(&j->out, 0, sizeof j->out);
  ib_error e = {0};
  if (ib_gplan_build(j->graph, &js->plan, &e) != IB_OK) {
    ib_cuda_job_fail(j, &e, IB_STAGE_ADMIT);
    return;
  }
  js->planned = 1;
  /* The four tables in one allocation (buf_off owns it): one calloc and
   * one free per job instead of four each. */
  const size_t nb = (size_t)js->plan.n_bufs, np = (size_t)js->plan.n_stages + 1;
  const size_t nr = j->graph->job ? j->graph->job->n_renditions : 0;
  js->buf_off = calloc(1, (nb + np + nr) * sizeof *js->buf_off + nb);
  if (js->buf_off) {
    js->par_off = js->buf_off + nb;
    js->rend_off = js->par_off + np;
    js->n_rend = nr;
    js->direct = (uint8_t *)(js->rend_off + nr);
  }
  if (!js->buf_off) {
    e = (ib_error){.status = IB_INTERNAL};
    snprintf(e.message, sizeof e.message, "backend cuda: out of memory");
    ib_cuda_job_fail(j, &e, IB_STAGE_ADMIT);
    js->planned = 0;
  }
}

/* Inline: a plan is a fraction of a microsecond, while waking the host pool
 * costs several times more per small job. */
void ib_cuda_sub_plan(ib_backend_submission *s) {
  for (size_t i = 0; i < s->n; i++) plan_job(&s->jobs[i], &s->js[i]);
}

/* Room for `more` direct sources; false (the job fails) when out of memory. */
static bool dsrc_room(ib_backend_submission *s, size_t more) {
  if (s->n_dsrc + more <= s->cap_dsrc) return true;
  size_t cap = s->cap_dsrc ? s->cap_dsrc * 2 : s->n + more;
  while (cap < s->n_dsrc + more) cap *= 2;
  ib_direct_src *d = realloc(s->dsrc, cap * sizeof *d);
  if (!d) return false;
  s->dsrc = d;
  s->cap_dsrc = cap;
  return true;
}

/* Sources: staged in the upload region, or, raw ones lying in pinned
 * memory, listed for the direct region (place_direct); parameter blocks
 * after each job's staged sources. */
static void place_sources(ib_backend_submission *s) {
  ib_sub_layout *l = &s->lay;
  for (size_t i = 0; i < s->n; i++) {
    ib_jstate *js = &s->js[i];
    js->up_lo = js->up_hi = l->upload;
    if (!js->planned) continue;
    const ib_graph *g = s->jobs[i].graph;
    if (!dsrc_room(s, (size_t)js->plan.n_bufs)) {
      ib_cuda_job_fail(&s->jobs[i],
                       &(ib_error){.status = IB_INTERNAL, .message = "backend cuda: out of memory"},
                       IB_STAGE_UPLOAD);
      js->planned = 0;
      continue;
    }
    for (int b = 0; b < js->plan.n_bufs; b++) {
      if (js->plan.bufs[b].source_node < 0) continue;
      const ib_node *nd = &g->nodes[js->plan.bufs[b].source_node];
      const size_t idx = nd->pb->source->index;
      uint64_t region = 0;
      if ((js->direct[b] = ib_cuda_source_region(s->c, g, idx, &region))) {
        s->dsrc[s->n_dsrc++] = (ib_direct_src){.src = g->sources[idx].bytes,
                                               .region = region,
                                               .bytes = js->plan.bufs[b].bytes,
                                               .job = i,
                                               .buf = b};
        continue;
      }
      js->buf_off[b] = l->upload;
      l->upload += ib_cuda_up(js->plan.bufs[b].bytes);
    }
    for (int k = 0; k < js->plan.n_stages; k++) {
      js->par_off[k] = l->upload;
      l->upload +=
          ib_cuda_up(js->plan.stages[k].chain.param_bytes + js->plan.stages[k].extra_bytes);
    }
    js->up_hi = l->upload;
    l->total_stages += (size_t)js->plan.n_stages;
    if (js->plan.n_stages > l->max_stages) l->max_stages = js->plan.n_stages;
  }
}

static int dsrc_cmp(const void *a, const void *b) {
  const uint8_t *x = ((const ib_direct_src *)a)->src, *y = ((const ib_direct_src *)b)->src;
  return x < y ? -1 : x > y;
}

/* The host bytes between two sources that a joined span copies along: at
 * most this, and at most 1/16 of the source before (small on PCIe and in
 * device memory beside the charge, which counts each source alone). */
#define DIRECT_GAP_MAX ((size_t)4096)
_Static_assert(IB_PINNED_SLAB_ALIGN % IB_CUDA_ALIGN == 0,
               "slab offsets must keep joined sources at aligned device offsets");

/* `d` may share one upload span with `prev`: the same host allocation, a
 * distance that keeps its device offset aligned and clear of prev's
 * buffer, and a short gap. */
static bool joins(const ib_direct_src *prev, const ib_direct_src *d) {
  if (d->region != prev->region || d->src < prev->src) return false;
  const size_t dist = (size_t)(d->src - prev->src), gap = dist - prev->bytes;
  return dist % IB_CUDA_ALIGN == 0 && dist >= ib_cuda_up(prev->bytes) && gap <= DIRECT_GAP_MAX &&
         gap * 16 <= prev->bytes;
}

/* The direct region: sources by host address (Jobs parsed on several
 * threads are carved from a slab out of submission order); one that joins
 * the previous one lies as far from it on the device as on the host,
 * others start after what is placed (offsets relative until rebased). */
static void place_direct(ib_backend_submission *s) {
  ib_direct_src *d = s->dsrc;
  bool sorted = true;
  for (size_t k = 1; k < s->n_dsrc && sorted; k++) sorted = d[k - 1].src <= d[k].src;
  if (!sorted) qsort(d, s->n_dsrc, sizeof *d, dsrc_cmp);
  size_t prev_off = 0;
  for (size_t k = 0; k < s->n_dsrc; k++) {
    size_t *off = &s->js[d[k].job].buf_off[d[k].buf];
    if (s->pipe) { /* in its job's block, copied alone */
      d[k].joins = false;
      *off = s->js[d[k].job].dev_bytes;
      s->js[d[k].job].dev_bytes += ib_cuda_up(d[k].bytes);
      continue;
    }
    d[k].joins = k > 0 && joins(&d[k - 1], &d[k]);
    *off = d[k].joins ? prev_off + (size_t)(d[k].src - d[k - 1].src) : s->lay.direct;
    s->lay.direct = *off + ib_cuda_up(d[k].bytes);
    prev_off = *off;
  }
}

/* Stage outputs that stay on the device (resident outputs included), in
 * the inter region (relative until rebased). */
static void place_inter(ib_backend_submission *s) {
  for (size_t i = 0; i < s->n; i++) {
    ib_jstate *js = &s->js[i];
    if (!js->planned) continue;
    for (int b = 0; b < js->plan.n_bufs; b++)
      if (js->plan.bufs[b].source_node < 0 &&
          (!js->plan.bufs[b].is_output || s->jobs[i].resident)) {
        size_t *at = s->pipe ? &js->dev_bytes : &s->lay.inter;
        js->buf_off[b] = *at;
        *at += ib_cuda_up(js->plan.bufs[b].bytes);
      }
  }
}

/* Terminal images coming back to the host: arena outputs first (one
 * download copy for all of them), own-buffer ones after. */
static void place_downloads(ib_backend_submission *s) {
  ib_sub_layout *l = &s->lay;
  for (int own = 0; own < 2; own++) {
    for (size_t i = 0; i < s->n; i++) {
      ib_jstate *js = &s->js[i];
      const ib_backend_job *j = &s->jobs[i];
      if (!js->planned || j->resident || js->n_rend) continue;
      const size_t bytes = js->plan.bufs[js->plan.out_buf].bytes;
      js->own = ib_cuda_own_download(s->c, j->graph) && bytes <= j->graph->buffer_len;
      if (js->own != (own == 1)) continue;
      if (s->pipe) { /* in its job's block; dl_off: its place in the arena */
        js->buf_off[js->plan.out_buf] = js->dev_bytes;
        js->dev_bytes += ib_cuda_up(bytes);
        js->dl_off = own ? 0 : l->download;
        if (!own) l->download += ib_cuda_up(bytes);
        continue;
      }
      js->buf_off[js->plan.out_buf] = l->download;
      js->dl_off = l->download;
      l->download += ib_cuda_up(bytes);
    }
    if (!own) l->arena_bytes = l->download;
  }
  if (s->pipe) l->download = 0; /* the arena only: nothing in the submission's block */
}

/* The buffer holding rendition i of job js's graph `g` (gplan.h node_buf). */
int ib_cuda_rend_buf(const ib_jstate *js, const ib_graph *g, size_t i) {
  return js->plan.node_buf[g->job->renditions[i]->node];
}

size_t ib_cuda_rend_first(const ib_graph *g, size_t r) {
  size_t k = 0;
  while (k < r && g->job->renditions[k]->node != g->job->renditions[r]->node) k++;
  return k;
}

/* Renditions coming back to the host: one range of the rendition block per
 * rendition node (a node named twice shares its first entry's range; the
 * wait copies it into each of its images), each downloaded by its own copy
 * from wherever its buffer lies on the device (an upload buffer for a
 * source node, the inter region or the job's block otherwise). */
static void place_renditions(ib_backend_submission *s) {
  for (size_t i = 0; i < s->n; i++) {
    ib_jstate *js = &s->js[i];
    if (!js->planned || !js->n_rend) continue;
    const ib_graph *g = s->jobs[i].graph;
    js->own = false;
    for (size_t r = 0; r < js->n_rend; r++) {
      const size_t k = ib_cuda_rend_first(g, r);
      if (k < r) {
        js->rend_off[r] = js->rend_off[k];
        continue;
      }
      js->rend_off[r] = s->lay.rend_bytes;
      s->lay.rend_bytes += ib_cuda_up(js->plan.bufs[ib_cuda_rend_buf(js, g, r)].bytes);
    }
  }
}

/* Makes the direct, inter and download offsets absolute. */
static void rebase(ib_backend_submission *s) {
  const size_t direct_base = s->lay.upload, inter_base = s->lay.upload + s->lay.direct;
  s->lay.out_base = inter_base + s->lay.inter;
  for (size_t i = 0; i < s->n && !s->pipe; i++) { /* pipe: ib_cuda_sub_blocks */
    ib_jstate *js = &s->js[i];
    if (!js->planned) continue;
    for (int b = 0; b < js->plan.n_bufs; b++) {
      if (js->plan.bufs[b].source_node >= 0) {
        if (js->direct[b]) js->buf_off[b] += direct_base;
        continue;
      }
      js->buf_off[b] +=
          js->plan.bufs[b].is_output && !s->jobs[i].resident ? s->lay.out_base : inter_base;
    }
  }
}

/* Upload (host = device layout, one copy from the pinned staging block):
 * staged sources, parameter blocks, descriptor tables. Direct: raw sources
 * whose bytes already lie in pinned memory (Jobs parsed by ib_executor_parse
 * or in place in an ib_executor_buffer), copied from there, one span per
 * run of sources lying one after the other in a slab (place_direct). Inter: stage outputs that
 * stay on the device. Download: the other terminal images, packed so one
 * copy brings the arena's back into the arena lent to the results. */
void ib_cuda_sub_layout(ib_backend_submission *s) {
  s->lay = (ib_sub_layout){0};
  s->n_dsrc = 0;
  s->pipe = s->c->pipe_bytes && ib_cuda_pipelined(s, s->c->pipe_bytes);
  for (size_t i = 0; i < s->n; i++) s->js[i].dev_bytes = 0;
  place_sources(s);
  place_direct(s);
  s->lay.desc_off = s->lay.upload;
  s->lay.upload += ib_cuda_up(s->lay.total_stages * sizeof(ib_gdesc));
  place_inter(s);
  place_downloads(s);
  place_renditions(s);
  rebase(s);
}

/* The submission's pinned staging, device block and download arena. */
ib_status ib_cuda_sub_blocks(ib_backend_submission *s, ib_error *err) {
  ib_cuda *c = s->c;
  const ib_sub_layout *l = &s->lay;
  bool got = ib_pinned_get(c->pin, l->upload, &s->hblk) &&
             ib_pool_get(&c->dpool, l->out_base + l->download, &s->dblk);
  /* Pipelined: each job's block, its buffers addressed from the
   * submission's block (see ib_jstate.blk). */
  for (size_t i = 0; got && s->pipe && i < s->n; i++) {
    ib_jstate *js = &s->js[i];
    if (!js->planned || !js->dev_bytes) continue;
    if (!(got = ib_pool_get(&c->dpool, js->dev_bytes, &js->blk))) break;
    const size_t shift = (size_t)(js->blk.addr - s->dblk.addr);
    for (int b = 0; b < js->plan.n_bufs; b++)
      if (js->plan.bufs[b].source_node < 0 || js->direct[b]) js->buf_off[b] += shift;
  }
  if (got && l->rend_bytes) got = ib_pinned_get(c->pin, l->rend_bytes, &s->rblk);
  if (got && l->arena_bytes) {
    got = (s->arena = calloc(1, sizeof *s->arena)) != NULL;
    if (got) s->arena->c = c;
    if (got && !ib_pinned_get(c->pin, l->arena_bytes, &s->arena->blk)) {
      free(s->arena);
      s->arena = NULL;
      got = false;
    }
  }
  if (got) return IB_OK;
  err->status = IB_DEVICE;
  err->stage = IB_STAGE_UPLOAD;
  snprintf(err->message, sizeof err->message,
           "backend cuda: cannot get %zu + %zu + %zu pinned / %zu device bytes for a "
           "submission of %zu job(s) (job %llu)",
           l->upload, l->arena_bytes, l->rend_bytes, l->out_base + l->download, s->n,
           s->n ? (unsigned long long)s->jobs[0].job_id : 0ull);
  return IB_DEVICE;
}

/* ------------------------------------------------------------ pipeline pieces */

size_t ib_cuda_large_io(size_t piece_bytes) { return piece_bytes / 8; }

/* What a job moves over PCIe: its sources, and its terminal image when it
 * comes back to the host (with renditions: each rendition node's image). From the graph alone, so
 * that admission (no plan yet: ib_cuda_large_job) and the pipeline's pieces (io_bytes) count the
 * same bytes by one formula: the plan gives every node without inputs an
 * upload buffer of its shape, and the terminal image its own
 * (test_gpu_pipe holds the plan to it). */
static uint64_t graph_io(const ib_graph *g, bool resident) {
  uint64_t b = 0;
  const bool rend = g->job && g->job->n_renditions;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ib_shape *sh = &g->nodes[i].shape;
    const bool up = g->nodes[i].op->n_inputs == 0,
               down = rend ? ib_gplan_rendition_node(g, i) : !resident && i + 1 == g->n_nodes;
    b += (uint64_t)(up + down) * sh->width * sh->height * ib_mode_bands(sh->mode);
  }
  return b;
}

/* Job i of a submission; a job whose planning failed moves nothing. */
static size_t io_bytes(const ib_backend_submission *s, size_t i) {
  return s->js[i].planned ? (size_t)graph_io(s->jobs[i].graph, s->jobs[i].resident) : 0;
}

bool ib_cuda_large_job(const ib_cuda *c, const ib_graph *g, bool resident) {
  const size_t piece = c->pipe_bytes ? c->pipe_bytes : IB_DEFAULT_PIPE_BYTES;
  return graph_io(g, resident) >= ib_cuda_large_io(piece);
}

bool ib_cuda_pipelined(const ib_backend_submission *s, size_t piece_bytes) {
  if (!piece_bytes || s->n < 2) return false;
  size_t total = 0;
  for (size_t i = 0; i < s->n; i++) total += io_bytes(s, i);
  return total / s->n >= ib_cuda_large_io(piece_bytes) &&
         ib_cuda_pipe_next(s, 0, piece_bytes) < s->n;
}

size_t ib_cuda_pipe_next(const ib_backend_submission *s, size_t a, size_t piece_bytes) {
  size_t acc = 0;
  while (a < s->n && acc < piece_bytes) acc += io_bytes(s, a++);
  return a;
}

/* Staging blocks up to this size go up whole before the first piece. */
#define PIPE_STAGING_WHOLE ((size_t)1 << 20)

static void stage_range(ib_stage_ranges *r, size_t lo, size_t hi) {
  if (lo >= hi) return;
  if (r->n && r->hi[r->n - 1] == lo) { /* one copy for adjacent parts */
    r->hi[r->n - 1] = hi;
    return;
  }
  r->lo[r->n] = lo;
  r->hi[r->n++] = hi;
}

void ib_cuda_piece_staging(const ib_backend_submission *s, size_t a, size_t b, ib_stage_ranges *r) {
  *r = (ib_stage_ranges){0};
  const size_t all = s->lay.upload;
  if (all <= PIPE_STAGING_WHOLE) {
    if (a == 0) stage_range(r, 0, all);
    return;
  }
  size_t lo = SIZE_MAX, hi = 0;
  for (size_t i = a; i < b; i++) {
    if (!s->js[i].planned) continue;
    if (s->js[i].up_lo < lo) lo = s->js[i].up_lo;
    if (s->js[i].up_hi > hi) hi = s->js[i].up_hi;
  }
  stage_range(r, lo, hi);
  if (a == 0) stage_range(r, s->lay.desc_off, all); /* every piece's descriptors */
}
