/* The CUDA backend's kernels: a chain signature's module, from the loaded
 * modules (ib_cuda.mods) or the module cache (disk, else NVRTC). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_internal.h"

static const char *const nvrtc_opts[] = {"--fmad=false"};

/* Runs when an unpinned module is evicted (no submission uses it, see
 * ib_cuda.mods) or at close. */
void ib_cuda_unload_module(void *ctx, void *value) {
  ib_cuda *c = ctx;
  ib_kfunc *f = value;
  c->cu->cuCtxSetCurrent(c->ctx);
  c->cu->cuModuleUnload(f->mod);
  free(f);
}

/* 128-bit key of a signature (two FNV-1a style streams). */
void ib_cuda_sig_key(const char *sig, uint64_t key[2]) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (const unsigned char *p = (const unsigned char *)sig; *p; p++) {
    a = (a ^ *p) * 0x100000001b3ull;
    b = (b ^ *p) * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  }
  key[0] = a;
  key[1] = b;
}

void ib_cuda_sigkey(const ib_gchain *ch, ib_sigkey *out) {
  ib_gchain_signature(ch, out->sig, sizeof out->sig);
  ib_cuda_sig_key(out->sig, out->key);
}

static ib_status fail(ib_error *err, const char *what, const char *sig) {
  err->status = IB_INTERNAL;
  snprintf(err->message, sizeof err->message, "backend cuda: %s %.200s", what, sig);
  return IB_INTERNAL;
}

/* A multi-pass head's kernels (ops/op_dev.h ib_dev_passes), and what
 * dynamic shared memory its big_smem ones may take: the device's opt-in
 * limit once each of them accepted it, else the 48 KiB every kernel has;
 * none with pass_global. */
static CUresult get_pass_functions(ib_cuda *c, const ib_dev_passes *ps, ib_kfunc *f) {
  CUresult rc = CUDA_SUCCESS;
  for (int k = 0; k < ps->n_kernels && rc == CUDA_SUCCESS; k++)
    rc = c->cu->cuModuleGetFunction(&f->pass[k], f->mod, ps->kernels[k].name);
  f->smem_max = c->pass_global ? 0 : 48 * 1024;
  if (rc != CUDA_SUCCESS || !f->smem_max || c->smem_optin <= 48 * 1024) return rc;
  const CUfunction_attribute dyn = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
  for (int k = 0; k < ps->n_kernels; k++)
    if (ps->kernels[k].big_smem &&
        c->cu->cuFuncSetAttribute(f->pass[k], dyn, c->smem_optin) != CUDA_SUCCESS)
      return rc;
  f->smem_max = (unsigned)c->smem_optin;
  return rc;
}

/* The functions of a freshly loaded module (f->mod set). */
static CUresult get_functions(ib_cuda *c, const ib_gchain *ch, ib_kfunc *f) {
  if (ib_gchain_passes(ch)) return get_pass_functions(c, ch->steps[0].dev->passes, f);
  CUresult rc = c->cu->cuModuleGetFunction(&f->chain, f->mod, "ib_chain");
  if (rc == CUDA_SUCCESS && ch->reduce_luma)
    rc = c->cu->cuModuleGetFunction(&f->lsum, f->mod, "ib_lsum");
  return rc;
}

ib_status ib_cuda_module_add(ib_cuda *c, const ib_gchain *ch, const char *sig, const void *img,
                             size_t len, ib_kfunc **out, ib_lru_entry **pin, ib_error *err) {
  ib_kfunc *f = calloc(1, sizeof *f);
  if (!f) return fail(err, "out of memory loading", sig);
  snprintf(f->sig, sizeof f->sig, "%s", sig);
  const double t0 = ib_cuda_prof_now(c);
  CUresult rc = c->cu->cuModuleLoadData(&f->mod, img);
  if (rc == CUDA_SUCCESS) rc = get_functions(c, ch, f);
  if (c->prof) {
    const double t = ib_cuda_prof_now(c) - t0;
    c->t_load += t;
    c->n_load++;
    if (t > c->t_load_max) c->t_load_max = t;
  }
  if (rc != CUDA_SUCCESS) {
    if (f->mod) c->cu->cuModuleUnload(f->mod);
    free(f);
    return ib_cu_fail(c->cu, rc, err, IB_STAGE_EXECUTE, "loading kernel %.150s", sig);
  }
  uint64_t key[2];
  ib_cuda_sig_key(sig, key);
  /* Inserted pinned: the bound may evict older unpinned modules, never
   * this. An entry already there is returned instead, and the LRU drops
   * (unloads) f - as it does when f cannot be kept. */
  ib_lru_entry *e = ib_lru_put(&c->mods, key, f, len, pin != NULL);
  if (!e) {
    if (!pin) return IB_OK; /* unpinned and over the bound: not kept */
    return fail(err, "out of memory keeping", sig);
  }
  if (pin) *pin = e;
  if (out) *out = ib_lru_value(e);
  return IB_OK;
}

ib_kfunc *ib_cuda_module_find(ib_cuda *c, const ib_sigkey *sk, ib_lru_entry **pin, ib_error *err) {
  ib_lru_entry *e = ib_lru_get(&c->mods, sk->key, true);
  if (!e) return NULL;
  ib_kfunc *f = ib_lru_value(e);
  if (strcmp(f->sig, sk->sig) != 0) { /* a key collision: never run the other kernel */
    ib_lru_unpin(&c->mods, e);
    fail(err, "module key collision for", sk->sig);
    return NULL;
  }
  *pin = e;
  return f;
}

ib_status ib_cuda_chain_func(ib_cuda *c, const ib_gchain *ch, ib_kfunc **out, ib_lru_entry **pin,
                             ib_error *err) {
  ib_sigkey sk;
  ib_cuda_sigkey(ch, &sk);
  err->status = IB_OK;
  if ((*out = ib_cuda_module_find(c, &sk, pin, err))) return IB_OK;
  if (err->status != IB_OK) return err->status;
  return ib_cuda_chain_compile(c, ch, sk.sig, out, pin, err);
}

ib_status ib_cuda_chain_compile(ib_cuda *c, const ib_gchain *ch, const char *sig, ib_kfunc **out,
                                ib_lru_entry **pin, ib_error *err) {
  char *src = ib_gchain_source(ch);
  if (!src) return fail(err, "out of memory generating", sig);
  void *img;
  size_t len = 0;
  ib_status st =
      ib_kcache_get(c->kc, "chain.cu", src, c->arch, nvrtc_opts, 1, &img, &len, NULL, NULL, err);
  free(src);
  if (st != IB_OK) return st;
  st = ib_cuda_module_add(c, ch, sig, img, len, out, pin, err);
  free(img);
  return st;
}

/* ib_gchain_signature reads only these fields. */
bool ib_cuda_chain_eq(const ib_gchain *a, const ib_gchain *b) {
  if (a->n_inputs != b->n_inputs || a->mode_in1 != b->mode_in1 || a->n_steps != b->n_steps ||
      a->param_bytes != b->param_bytes || a->reduce_luma != b->reduce_luma)
    return false;
  return memcmp(a->steps, b->steps, (size_t)a->n_steps * sizeof a->steps[0]) == 0;
}
