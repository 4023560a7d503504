/*
 * lent.c - result images that live in a backend's download arena. A CUDA
 * submission downloads every terminal image into one pinned arena, and
 * every rendition into one rendition block; each result gets its ranges
 * (ib_image.free_fn) instead of copies. One ib_lent per arena counts the
 * ranges still held: the arena stays charged - the held part of every job
 * in it - until the last range is released, then the backend gets the
 * arena back and the credits return. It holds a reference on the
 * executor's ib_devref, so ranges outlive the executor.
 */
#include <stdlib.h>

#include "core/error.h"
#include "exec/exec_internal.h"

typedef struct ib_lent {
  atomic_uint ranges;
  ib_devref *dev;
  void *token;
  uint64_t host_bytes;
} ib_lent;

static void range_free(void *ctx, uint8_t *data) {
  (void)data;
  ib_lent *l = ctx;
  if (atomic_fetch_sub(&l->ranges, 1) != 1) return;
  l->dev->backend->lent_release(l->dev->state, l->token);
  ib_credits_release_lent(&l->dev->credits, l->host_bytes);
  ib_devref_put(l->dev);
  free(l);
}

/* Points job bj's lent images (its output, or its renditions) at l; how
 * many ranges that is. */
static unsigned adopt_images(ib_backend_job *bj, ib_lent *l) {
  unsigned n = 0;
  if (bj->out.data) {
    bj->out.free_fn = range_free;
    bj->out.free_ctx = l;
    n++;
  }
  for (size_t r = 0; r < bj->n_renditions; r++) {
    if (!bj->renditions[r].data) continue;
    bj->renditions[r].free_fn = range_free;
    bj->renditions[r].free_ctx = l;
    n++;
  }
  return n;
}

/* Out of memory: job bj fails and nothing of it points into the arena. */
static void drop_images(ib_backend_job *bj) {
  bj->out = (ib_image){0};
  for (size_t r = 0; r < bj->n_renditions; r++) bj->renditions[r] = (ib_image){0};
  ib_renditions_release(&bj->renditions, &bj->n_renditions); /* the array alone */
  bj->status = IB_INTERNAL;
  ib_error_set(&bj->err, IB_INTERNAL, IB_STAGE_DOWNLOAD,
               "job %llu: out of memory lending its result", (unsigned long long)bj->job_id);
}

/* One token's jobs (bjobs[i].lent == token, from index `first` on). */
static void adopt_arena(ib_executor *ex, ib_sub *s, size_t first) {
  void *token = s->bjobs[first].lent;
  ib_lent *l = calloc(1, sizeof *l);
  unsigned n = 0;
  uint64_t host = 0;
  for (size_t i = first; i < s->n; i++) {
    ib_backend_job *bj = &s->bjobs[i];
    if (bj->lent != token) continue;
    bj->lent = NULL;
    if (!l) {
      drop_images(bj);
      continue;
    }
    n += adopt_images(bj, l);
    host += s->jobs[i]->charge.host_held;
    s->jobs[i]->charge.host_held = 0;
  }
  if (!l) {
    ex->backend->lent_release(ex->backend_state, token);
    return;
  }
  atomic_init(&l->ranges, n + 1); /* and adoption's own, dropped last */
  l->dev = ib_devref_get(ex->dev);
  l->token = token;
  l->host_bytes = host;
  ib_credits_lend(ex->credits, host);
  range_free(l, NULL); /* a token without images goes back now */
}

void ib_exec_adopt_lent(ib_executor *ex, ib_sub *s) {
  for (size_t i = 0; i < s->n; i++)
    if (s->bjobs[i].lent) adopt_arena(ex, s, i);
}
