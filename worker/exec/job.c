/* Jobs between admission and delivery, and the hand-over into ib_result. */
#include <stdlib.h>
#include <time.h>

#include "core/error.h"

#include "exec/exec_internal.h"

uint64_t ib_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void ib_job_fifo_push(ib_job_fifo *f, ib_job *j) {
  j->next = NULL;
  if (f->tail)
    f->tail->next = j;
  else
    f->head = j;
  f->tail = j;
  f->n++;
}

ib_job *ib_job_fifo_pop(ib_job_fifo *f) {
  ib_job *j = f->head;
  if (!j) return NULL;
  f->head = j->next;
  if (!f->head) f->tail = NULL;
  f->n--;
  j->next = NULL;
  return j;
}

void ib_job_discard(ib_executor *ex, ib_job *j, ib_count what) {
  ib_exec_release_dev(ex, j);
  ib_credits_return_all(ex->credits, &j->charge, what);
  ib_graph_free(j->graph);
  ib_image_release(&j->out);
  ib_renditions_release(&j->renditions, &j->n_renditions);
  ib_snapshot_clear(&j->snap);
  ib_key_clear(&j->key);
  free(j);
}

void ib_job_deliver(ib_executor *ex, ib_job *j, ib_result *out) {
  *out = (ib_result){
      .job_id = j->id,
      .has_job_id = true,
      .key = j->key,
      .ok = j->status == IB_OK,
      .metadata = j->snap.metadata,
      .metadata_len = j->snap.metadata_len,
      .output_spec = j->snap.output_spec,
      .output_spec_len = j->snap.output_spec_len,
      .correlation_id = j->snap.correlation_id,
      .source_meta = j->snap.source_meta,
      .source_meta_len = j->snap.source_meta_len,
      .renditions_spec = j->snap.renditions,
      .renditions_spec_len = j->snap.renditions_len,
      .tag = j->tag,
      .queue_us = j->queue_us,
      .exec_us = j->exec_us,
  };
  out->kind = out->ok ? IB_RESULT_IMAGE : IB_RESULT_ERROR;
  if (out->ok && j->resident) {
    /* The handle takes the device buffer and the held charge. */
    if ((out->handle = ib_handle_adopt(ex, j))) {
      out->kind = IB_RESULT_RESIDENT;
    } else {
      out->ok = false;
      out->kind = IB_RESULT_ERROR;
      ib_error_set(&out->error, IB_INTERNAL, IB_STAGE_PUBLISH,
                   "job %llu: out of memory for its resident handle", (unsigned long long)j->id);
    }
  } else if (out->ok) {
    out->image = j->out;
    out->renditions = j->renditions;
    out->n_renditions = j->n_renditions;
    j->renditions = NULL;
    j->n_renditions = 0;
  } else {
    out->error = j->err;
    ib_error_ensure_message(&out->error);
  }
  j->key = (ib_key){0};
  j->snap = (ib_snapshot){0};
  j->out = (ib_image){0};
  ib_job_discard(ex, j, IB_COUNT_DELIVERED);
}

void ib_result_free(ib_result *r) {
  if (!r) return;
  ib_key_clear(&r->key);
  ib_image_release(&r->image);
  ib_handle_release(&r->handle);
  free(r->metadata);
  free(r->output_spec);
  free(r->correlation_id);
  free(r->source_meta);
  ib_renditions_release(&r->renditions, &r->n_renditions);
  free(r->renditions_spec);
  *r = (ib_result){0};
}

void ib_renditions_release(ib_image **ims, size_t *n) {
  for (size_t i = 0; *ims && i < *n; i++) ib_image_release(&(*ims)[i]);
  free(*ims);
  *ims = NULL;
  *n = 0;
}
