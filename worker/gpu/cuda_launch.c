/* A CUDA submission's launches (cuda_internal.h): level k = stage k of
 * every job; within a level, one launch per chain signature runs that stage
 * for every job of the signature through a descriptor table (blockIdx.y). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_internal.h"

static int ent_cmp(const void *a, const void *b) {
  const ib_launch_ent *x = a, *y = b;
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  return x->job < y->job ? -1 : x->job > y->job;
}

/* The kernel of the previous job's chain, reused when the next job's chain
 * is equal (no signature text). */
typedef struct last_kernel {
  const ib_gchain *ch;
  ib_kfunc *f;
} last_kernel;

/* The entries of level `lv`: each job's stage lv joins the level's group of
 * its kernel (a new group when the level has none yet). A job whose kernel
 * cannot be had fails alone. */
static void group_level(ib_backend_submission *s, int lv, last_kernel *last) {
  ib_launch_plan *lp = &s->lp;
  const int level_first = lp->n_groups;
  for (size_t i = 0; i < s->n; i++) {
    ib_backend_job *j = &s->jobs[i];
    ib_jstate *js = &s->js[i];
    if (!js->planned || j->status != IB_OK || lv >= js->plan.n_stages) continue;
    ib_kfunc *f = NULL;
    ib_error e = {0};
    const ib_gchain *ch = &js->plan.stages[lv].chain;
    if (last->ch && ib_cuda_chain_eq(ch, last->ch)) {
      f = last->f;
    } else if (ib_cuda_stage_func(s, ch, &f, &e) != IB_OK) { /* pins: one per stage at most */
      ib_cuda_job_fail(j, &e, IB_STAGE_EXECUTE);
      continue;
    } else {
      *last = (last_kernel){ch, f};
    }
    int g = level_first;
    while (g < lp->n_groups && lp->gfunc[g] != f) g++;
    if (g == lp->n_groups) {
      lp->gfunc[g] = f;
      lp->glevel[g] = lv;
      lp->n_groups++;
    }
    lp->ents[lp->n_ent++] = (ib_launch_ent){g, i, lv};
  }
}

/* Entry e's descriptor: where its stage reads and writes in the device
 * block, its parameter block and its shapes. */
static void fill_desc(const ib_backend_submission *s, const ib_launch_ent *en, ib_gdesc *d) {
  const CUdeviceptr dev = ib_sub_dev(s);
  const ib_jstate *js = &s->js[en->job];
  const ib_gstage *st = &js->plan.stages[en->stage];
  const bool two = st->chain.n_inputs == 2;
  d->in0 = dev + js->buf_off[st->in_buf[0]];
  d->in1 = two                    ? dev + js->buf_off[st->in_buf[1]]
           : st->scratch_buf >= 0 ? dev + js->buf_off[st->scratch_buf]
                                  : d->in0;
  d->out = dev + js->buf_off[st->out_buf];
  d->params = dev + js->par_off[en->stage];
  d->width = st->width;
  d->height = st->height;
  d->stride0 = st->in_width[0];
  d->stride1 = two ? st->in_width[1] : st->in_width[0];
  d->contig =
      st->in_width[0] == st->width && (st->chain.n_inputs < 2 || st->in_width[1] == st->width);
  d->job = (uint32_t)en->job;
  d->height0 = st->in_height[0];
  d->height1 = two ? st->in_height[1] : st->in_height[0];
}

/* Groups every job's stages into launches (pinning their modules) and
 * writes the descriptor tables into the pinned staging block, ahead of the
 * upload. A job that failed at a later level may have entries at earlier
 * ones: they still run (harmless, their output is dropped). */
ib_status ib_cuda_sub_groups(ib_backend_submission *s, ib_error *err) {
  ib_launch_plan *lp = &s->lp;
  const size_t n = s->lay.total_stages ? s->lay.total_stages : 1;
  lp->ents = calloc(n, sizeof *lp->ents);
  lp->gfunc = calloc(n, sizeof *lp->gfunc);
  lp->glevel = calloc(n, sizeof *lp->glevel);
  s->pins = calloc(n, sizeof *s->pins);
  if (!lp->ents || !lp->gfunc || !lp->glevel || !s->pins) return ib_cuda_oom(err);
  last_kernel last = {0};
  for (int lv = 0; lv < s->lay.max_stages; lv++) group_level(s, lv, &last);
  qsort(lp->ents, lp->n_ent, sizeof *lp->ents, ent_cmp);
  lp->descs = (ib_gdesc *)(ib_sub_host(s) + s->lay.desc_off);
  for (size_t e = 0; e < lp->n_ent; e++) fill_desc(s, &lp->ents[e], &lp->descs[e]);
  return IB_OK;
}

static unsigned clamp_grid(uint64_t blocks, uint64_t cap) {
  return (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

/* What a multi-pass head's plan sees of the group's entries (ops/op_dev.h
 * ib_dev_group): entry e + i's shapes and its staged parameter block. */
typedef struct pass_src {
  const ib_backend_submission *s;
  size_t e;
} pass_src;

static void pass_job(const ib_dev_group *g, size_t i, ib_dev_job *out) {
  const pass_src *src = g->src;
  const ib_backend_submission *s = src->s;
  const ib_launch_ent *en = &s->lp.ents[src->e + i];
  const ib_gdesc *d = &s->lp.descs[src->e + i];
  *out = (ib_dev_job){.width = d->width,
                      .height = d->height,
                      .in_width = d->stride0,
                      .in_height = d->height0,
                      .params = ib_sub_host(s) + s->js[en->job].par_off[en->stage]};
}

static ib_status bad_plan(ib_error *err, const ib_gchain *ch, const char *why) {
  err->status = IB_INTERNAL;
  err->stage = IB_STAGE_EXECUTE;
  snprintf(err->message, sizeof err->message, "backend cuda: head %c (%s) planned %s",
           ch->steps[0].dev->tag, ch->steps[0].dev->header, why);
  return IB_INTERNAL;
}

/* A multi-pass head (ops/op_dev.h IB_DEV_PASSES) over one launch group:
 * the launches its row's plan lists, in order, on the group's descriptor
 * slice; the group is counted once when one of them was a slow fallback. */
static ib_status launch_passes(ib_backend_submission *s, const ib_kfunc *f, const ib_gchain *ch,
                               size_t e, size_t e_end, size_t k0, unsigned gy, CUdeviceptr table,
                               ib_error *err) {
  const ib_dev_passes *ps = ch->steps[0].dev->passes;
  const pass_src src = {s, e};
  const ib_dev_group g = {.head = &ch->steps[0],
                          .n_jobs = e_end - e,
                          .job = pass_job,
                          .src = &src,
                          .threads = IB_CUDA_THREADS,
                          .smem_max = f->smem_max};
  ib_dev_launch l[IB_DEV_MAX_LAUNCHES];
  const int n = ps->plan(&g, l);
  if (n < 0 || n > IB_DEV_MAX_LAUNCHES) return bad_plan(err, ch, "too many launches");
  const uint64_t cap = (uint64_t)s->c->sm_count * 32;
  bool slow = false;
  for (int i = 0; i < n; i++) {
    if (l[i].kernel < 0 || l[i].kernel >= ps->n_kernels || l[i].n_args < 0 ||
        l[i].n_args > IB_DEV_MAX_ARGS)
      return bad_plan(err, ch, "a launch of no kernel of its own");
    const ib_dev_kernel *k = &ps->kernels[l[i].kernel];
    const uint32_t small = f->smem_max < 48u * 1024 ? f->smem_max : 48u * 1024;
    if (l[i].smem > (k->big_smem ? f->smem_max : small))
      return bad_plan(err, ch, "more shared memory than allowed");
    void *args[1 + IB_DEV_MAX_ARGS] = {&table};
    for (int a = 0; a < l[i].n_args; a++) args[1 + a] = &l[i].args[a];
    CUresult rc =
        s->c->cu->cuLaunchKernel(f->pass[l[i].kernel], clamp_grid(l[i].blocks, cap), gy, 1,
                                 IB_CUDA_THREADS, 1, 1, l[i].smem, s->stream, args, NULL);
    if (rc != CUDA_SUCCESS) {
      char what[96];
      snprintf(what, sizeof what, "launch %s", k->name);
      return ib_cuda_device_fail(s, rc, what, k0, err);
    }
    slow |= l[i].slow != 0;
  }
  if (slow) atomic_fetch_add(&s->c->pass_slow, 1);
  return IB_OK;
}

/* One launch group: entries [e, e_end), in slices of 65535 descriptors
 * (gridDim.y). Blocks per image: enough for the largest one, capped so a
 * block loops (grid stride) rather than re-staging its parameters. */
static ib_status launch_group(ib_backend_submission *s, size_t e, size_t e_end, ib_error *err) {
  const ib_cu *cu = s->c->cu;
  const ib_launch_plan *lp = &s->lp;
  const ib_kfunc *f = lp->gfunc[lp->ents[e].group];
  const ib_gchain *ch = &s->js[lp->ents[e].job].plan.stages[lp->ents[e].stage].chain;
  const unsigned T = IB_CUDA_THREADS;
  uint64_t most = 0;
  for (size_t k = e; k < e_end; k++) {
    uint64_t px = (uint64_t)lp->descs[k].width * lp->descs[k].height;
    if (px > most) most = px;
  }
  const uint64_t cap = (uint64_t)s->c->sm_count * 8;
  const unsigned gx = clamp_grid((most / (uint64_t)ib_gchain_ppt(ch) + T - 1) / T, cap);
  ib_status rs = IB_OK;
  for (size_t k = e; k < e_end && rs == IB_OK; k += 65535) {
    unsigned gy = (unsigned)(e_end - k < 65535 ? e_end - k : 65535);
    CUdeviceptr table = ib_sub_dev(s) + s->lay.desc_off + k * sizeof(ib_gdesc);
    if (f->interp) {
      rs = ib_cuda_interp_launch(s, f, table, gy, most, lp->ents[k].job, err);
      continue;
    }
    void *args[] = {&table};
    CUresult rc;
    if (f->lsum) {
      rc = cu->cuLaunchKernel(f->lsum, clamp_grid((most + T - 1) / T, cap), gy, 1, T, 1, 1, 0,
                              s->stream, args, NULL);
      if (rc != CUDA_SUCCESS)
        return ib_cuda_device_fail(s, rc, "launch ib_lsum", lp->ents[k].job, err);
    }
    if (ib_gchain_passes(ch)) {
      rs = launch_passes(s, f, ch, e, e_end, lp->ents[k].job, gy, table, err);
      continue;
    }
    rc = cu->cuLaunchKernel(f->chain, gx, gy, 1, T, 1, 1, 0, s->stream, args, NULL);
    if (rc != CUDA_SUCCESS)
      rs = ib_cuda_device_fail(s, rc, "launch ib_chain", lp->ents[k].job, err);
  }
  return rs;
}

/* Enqueues the launches of jobs [a, b) level by level: a level's groups in
 * group order (a group's entries are sorted by job, so the range is one
 * slice of its descriptors). */
ib_status ib_cuda_sub_launch(ib_backend_submission *s, size_t a, size_t b, ib_error *err) {
  const ib_launch_plan *lp = &s->lp;
  for (int lv = 0; lv < s->lay.max_stages; lv++) {
    size_t e = 0;
    while (e < lp->n_ent) {
      const int g = lp->ents[e].group;
      size_t e_end = e;
      while (e_end < lp->n_ent && lp->ents[e_end].group == g) e_end++;
      if (lp->glevel[g] == lv) {
        size_t e0 = e, e1;
        while (e0 < e_end && lp->ents[e0].job < a) e0++;
        for (e1 = e0; e1 < e_end && lp->ents[e1].job < b;) e1++;
        ib_status rs = e1 > e0 ? launch_group(s, e0, e1, err) : IB_OK;
        if (rs != IB_OK) return rs;
      }
      e = e_end;
    }
  }
  return IB_OK;
}
