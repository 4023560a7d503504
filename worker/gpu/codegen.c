/* Fused chain codegen (see codegen.h). Every step is an op row's device
 * description (ops/op_dev.h): nothing here names an op. */
#include "gpu/codegen.h"
#include "ops/op.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ib_dev_op ib_gdev_table = {.tag = 'P',
                                 .role = IB_DEV_TABLE,
                                 .header = "chain.cuh",
                                 .fn = "ib_step_table",
                                 .rt = "ib_step_table_rt"};

/* ------------------------------------------------------------ steps from nodes */

static ib_status no_step(const ib_node *node, int mode, const char *why, ib_error *err) {
  err->status = IB_UNSUPPORTED;
  err->stage = IB_STAGE_ADMIT;
  snprintf(err->message, sizeof err->message, "backend cuda: op %s (mode %s) %s",
           node->op ? node->op->name : "?", ib_mode_name((ib_mode)mode), why);
  return IB_UNSUPPORTED;
}

static unsigned bands_of(int mode) { return ib_mode_bands((ib_mode)mode); }

ib_status ib_gstep_for_node(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  memset(s, 0, sizeof *s);
  s->mode_in = in_modes[0];
  s->mode_out = (int)node->shape.mode;
  if (!node->op || !node->op->dev)
    return no_step(node, s->mode_in, "has no device kernel yet", err);
  ib_status st = node->op->dev(node, in_modes, s, err);
  if (st != IB_OK) return st;
  if (s->dev->role == IB_DEV_TABLE) {
    /* Every table runs the one table step; ib_gtable_fold asks the rows. */
    s->dev = &ib_gdev_table;
    s->a = 0;
    s->param_len = 256u * bands_of(s->mode_in);
  }
  return IB_OK;
}

int ib_gstep_fusable(const ib_gstep *s) {
  return (s->dev->role == IB_DEV_PIXEL || s->dev->role == IB_DEV_TABLE) &&
         !(s->dev->flags & IB_DEV_HEAD);
}

int ib_gchain_push(ib_gchain *c, const ib_gstep *s) {
  if (c->n_steps >= IB_CHAIN_MAX_STEPS) return 0;
  uint32_t len = (s->param_len + 15u) & ~15u;
  if (c->param_bytes + len > IB_CHAIN_MAX_PARAMS) return 0;
  ib_gstep *d = &c->steps[c->n_steps++];
  *d = *s;
  d->param_off = c->param_bytes;
  c->param_bytes += len;
  if (c->n_steps == 1) {
    c->n_inputs = (s->dev->flags & IB_DEV_IN1) ? 2 : 1;
    c->reduce_luma = (s->dev->flags & IB_DEV_LUMA) != 0;
  }
  return 1;
}

void ib_gtable_fold(const ib_gstep *s, const ib_node *const *nodes, int n, uint8_t *table) {
  const unsigned bands = bands_of(s->mode_in);
  if (bands > 4) return; /* never (modes have 1-4 bands); lets -O3 bound the loops */
  for (unsigned b = 0; b < bands; b++)
    for (unsigned v = 0; v < 256; v++) table[b * 256u + v] = (uint8_t)v;
  uint8_t t[256 * 4];
  for (int f = 0; f < n; f++) {
    const int in_modes[2] = {s->mode_in, 0};
    ib_gstep own;
    ib_error err = {0};
    /* The node was admitted as a table step of this mode: its row gives
     * the same step again, now with its own table function. */
    memset(&own, 0, sizeof own);
    own.mode_in = own.mode_out = s->mode_in;
    if (nodes[f]->op->dev(nodes[f], in_modes, &own, &err) != IB_OK || !own.dev->table) continue;
    own.dev->table(&own, nodes[f], t);
    for (unsigned b = 0; b < bands; b++)
      for (unsigned v = 0; v < 256; v++) table[b * 256u + v] = t[b * 256u + table[b * 256u + v]];
  }
}

void ib_gstep_fill(const ib_gstep *s, const ib_node *node, uint8_t *block) {
  if (s->dev->fill) s->dev->fill(s, node, block + s->param_off);
}

size_t ib_gstep_extra_bytes(const ib_gstep *s, const ib_node *node) {
  return s->dev->extra_bytes ? s->dev->extra_bytes(node) : 0;
}

size_t ib_gstep_scratch_bytes(const ib_gstep *s, const ib_node *node, const ib_shape *in) {
  const ib_dev_passes *ps = s->dev->passes;
  return ps && ps->scratch_bytes ? ps->scratch_bytes(node, in) : 0;
}

void ib_gstep_fill_extra(const ib_gstep *s, const ib_node *node, const ib_shape *in,
                         uint8_t *extra) {
  if (s->dev->fill_extra) s->dev->fill_extra(node, in, extra);
}

/* ------------------------------------------------------------ signature + source */

int ib_gchain_signature(const ib_gchain *c, char *buf, size_t n) {
  size_t k = 0;
  int w = snprintf(buf, n, "in=%d", ib_gchain_mode_in(c));
  for (int i = 0; w >= 0 && i < c->n_steps; i++) {
    k += (size_t)w;
    const ib_gstep *s = &c->steps[i];
    w = snprintf(k < n ? buf + k : NULL, k < n ? n - k : 0, "|%c%d:%d>%d", s->dev->tag, s->a,
                 s->mode_in, s->mode_out);
  }
  k += (size_t)w;
  w = snprintf(k < n ? buf + k : NULL, k < n ? n - k : 0, "|in1=%d",
               c->n_inputs == 2 ? c->mode_in1 : 0);
  return (int)(k + (size_t)w);
}

int ib_gchain_ppt(const ib_gchain *c) {
  unsigned m = bands_of(ib_gchain_mode_in(c));
  for (int i = 0; i < c->n_steps; i++)
    if (bands_of(c->steps[i].mode_out) > m) m = bands_of(c->steps[i].mode_out);
  if (c->n_inputs == 2 && bands_of(c->mode_in1) > m) m = bands_of(c->mode_in1);
  return m >= 3 ? 4 : m == 2 ? 8 : 16;
}

typedef struct sbuf {
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

__attribute__((format(printf, 2, 3))) static void put(sbuf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->oom = 1;
      return;
    }
    if (b->p && b->len + (size_t)w < b->cap) {
      b->len += (size_t)w;
      return;
    }
    size_t ncap = (b->cap + (size_t)w + 1) * 2;
    char *np = realloc(b->p, ncap);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
}

static char *done(sbuf *b) {
  if (b->oom) {
    free(b->p);
    return NULL;
  }
  return b->p;
}

/* Includes each step's kernels/ file once. */
static void put_headers(sbuf *b, const ib_gchain *c) {
  for (int i = 0; i < c->n_steps; i++) {
    const char *h = c->steps[i].dev->header;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = strcmp(c->steps[j].dev->header, h) == 0;
    if (!seen) put(b, "#include \"%s\"\n", h);
  }
}

/* The source is configuration and template instances only: every line of
 * device code lives in kernels/ (chain.cuh says how steps compose), so an
 * NVRTC error names a kernels/ file and line (cmake/embed.cmake). */
char *ib_gchain_source(const ib_gchain *c) {
  sbuf b = {0};
  char sig[512];
  ib_gchain_signature(c, sig, sizeof sig);
  const ib_gstep *h = &c->steps[0];
  const unsigned b0 = bands_of(ib_gchain_mode_in(c));
  put(&b, "/* generated by worker/gpu/codegen.c: %s */\n", sig);
  if (h->dev->role == IB_DEV_PASSES) {
    put(&b, "#define IB_B0 %u\n#define IB_A %d\n#define IB_PBYTES %u\n#include \"%s\"\n", b0, h->a,
        c->param_bytes, h->dev->header);
    return done(&b);
  }
  const unsigned b1 = c->n_inputs == 2 ? bands_of(c->mode_in1) : 1,
                 bo = bands_of(ib_gchain_mode_out(c));
  const int gather = h->dev->role == IB_DEV_GATHER;
  put(&b, "#define IB_B0 %u\n#define IB_B1 %u\n#define IB_BO %u\n#define IB_PPT %d\n", b0, b1, bo,
      ib_gchain_ppt(c));
  put(&b, "#define IB_NIN %d\n#define IB_PBYTES %u\n#define IB_GATHER %d\n", c->n_inputs,
      c->param_bytes, gather);
  if (c->reduce_luma)
    put(&b, "#define IB_LUMA_OFF %u\n#define IB_MI0 %d\n", h->param_off, h->mode_in);
  put(&b, "#include \"chain.cuh\"\n");
  put_headers(&b, c);
  if (gather)
    put(&b, "#define IB_HEAD %s<%d, %d, %u, %u, %uu, %uu>\n", h->dev->fn, h->a, h->mode_in, b0, b1,
        h->param_off, c->param_bytes);
  else
    put(&b, "#define IB_HEAD ib_head_none\n");
  put(&b, "#define IB_STEPS ib_steps<");
  for (int i = 0; i < c->n_steps; i++) {
    const ib_gstep *s = &c->steps[i];
    /* A gather head's pixel is loaded already: its step is the identity. */
    const char *fn = i == 0 && gather ? "ib_step_copy" : s->dev->fn;
    put(&b, "%s%s<%d, %d, %d, %u, %u, %uu>", i ? ", " : "", fn, s->a, s->mode_in, s->mode_out,
        bands_of(s->mode_in), bands_of(s->mode_out), s->param_off);
  }
  put(&b, " >\n#include \"chain_kernels.cuh\"\n");
  return done(&b);
}
