/*
 * handle.c - resident (GPU) outputs: the handles results carry for jobs
 * whose output spec is `gpu`. One ib_resident per kept output, shared by
 * its clones (each clone is its own small ib_handle, so releasing one can
 * null exactly the caller's pointer). The resident holds a reference on the
 * executor's ib_devref (backend state + credits), so it stays usable after
 * the executor is closed or destroyed; the last clone's release frees the
 * device buffer and returns the held credits (device buffer + download
 * workspace, see imgbatch.h "Resident (GPU) outputs").
 */
#include <stdlib.h>

#include "core/error.h"
#include "exec/exec_internal.h"

typedef struct ib_resident {
  atomic_uint clones;
  pthread_mutex_t workspace; /* downloads serialize through the one workspace */
  ib_devref *dev;
  void *buf; /* the backend's kept buffer */
  ib_mode mode;
  uint32_t width, height;
  uint64_t job_id;
  uint64_t gpu_bytes, host_bytes; /* charge returned by the last release */
} ib_resident;

struct ib_handle {
  ib_resident *r;
};

void ib_exec_release_dev(ib_executor *ex, ib_job *j) {
  if (!j->dev) return;
  ex->backend->release(ex->backend_state, j->dev);
  j->dev = NULL;
}

ib_handle *ib_handle_adopt(ib_executor *ex, ib_job *j) {
  ib_handle *h = calloc(1, sizeof *h);
  ib_resident *r = calloc(1, sizeof *r);
  if (!h || !r) {
    free(h);
    free(r);
    return NULL;
  }
  atomic_init(&r->clones, 1);
  pthread_mutex_init(&r->workspace, NULL);
  r->dev = ib_devref_get(ex->dev);
  r->buf = j->dev;
  r->mode = j->out.mode;
  r->width = j->out.width;
  r->height = j->out.height;
  r->job_id = j->id;
  ib_credits_keep_resident(ex->credits, &j->charge, &r->gpu_bytes, &r->host_bytes);
  j->dev = NULL;
  h->r = r;
  return h;
}

ib_mode ib_handle_mode(const ib_handle *h) { return h ? h->r->mode : IB_MODE_NONE; }
uint32_t ib_handle_width(const ib_handle *h) { return h ? h->r->width : 0; }
uint32_t ib_handle_height(const ib_handle *h) { return h ? h->r->height : 0; }
uint64_t ib_handle_job_id(const ib_handle *h) { return h ? h->r->job_id : 0; }

ib_status ib_handle_download(ib_handle *h, ib_image *out, ib_error *err) {
  ib_error scratch;
  if (!err) err = &scratch;
  if (out) *out = (ib_image){0};
  if (!h || !out)
    return ib_error_set(err, IB_INVALID, IB_STAGE_DOWNLOAD,
                        "download: no handle (released) or no output image");
  ib_resident *r = h->r;
  ib_status st = ib_image_alloc(out, r->mode, r->width, r->height);
  if (st != IB_OK)
    return ib_error_set(err, st, IB_STAGE_DOWNLOAD, "download: job %llu: out of host memory",
                        (unsigned long long)r->job_id);
  pthread_mutex_lock(&r->workspace);
  err->message[0] = 0;
  st = r->dev->backend->download(r->dev->state, r->buf, out, err);
  pthread_mutex_unlock(&r->workspace);
  if (st != IB_OK) {
    ib_image_release(out);
    if (!err->message[0])
      ib_error_set(err, st, IB_STAGE_DOWNLOAD, "download: job %llu failed",
                   (unsigned long long)r->job_id);
    err->status = st;
    err->stage = IB_STAGE_DOWNLOAD;
  }
  return st;
}

ib_status ib_handle_clone(ib_handle *h, ib_handle **out) {
  if (!out) return IB_INVALID;
  *out = NULL;
  if (!h) return IB_INVALID;
  ib_handle *c = malloc(sizeof *c);
  if (!c) return IB_INTERNAL;
  atomic_fetch_add(&h->r->clones, 1);
  c->r = h->r;
  *out = c;
  return IB_OK;
}

void ib_handle_release(ib_handle **hp) {
  if (!hp || !*hp) return;
  ib_resident *r = (*hp)->r;
  free(*hp);
  *hp = NULL;
  if (atomic_fetch_sub(&r->clones, 1) != 1) return;
  /* The last clone: no download can be running any more (each one runs
   * through a clone its caller still holds). */
  r->dev->backend->release(r->dev->state, r->buf);
  ib_credits_release_resident(&r->dev->credits, r->gpu_bytes, r->host_bytes);
  pthread_mutex_destroy(&r->workspace);
  ib_devref_put(r->dev);
  free(r);
}
