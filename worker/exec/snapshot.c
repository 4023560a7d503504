/*
 * snapshot.c - what a result echoes of its job (metadata, output spec,
 * correlation id), copied at admission so nothing the caller does later can
 * change or grow it. Metadata values are scalars, bytes, lists and maps
 * only (a value with no kind - e.g. a field this build does not know - is
 * Invalid), nest at most 8 levels (the map itself is level 1) and pack to
 * at most 64 KiB (Limit).
 */
#include <stdlib.h>
#include <string.h>

#include "codec/metadata.h"
#include "core/error.h"
#include "exec/exec_internal.h"
#include "ops/op.h"

#define MAX_DEPTH 8
#define MAX_METADATA_BYTES (64u << 10)

static ib_status check_value(const Imgbatch__V1__Value *v, const char *key, int depth,
                             ib_error *err) {
  if (depth > MAX_DEPTH)
    return ib_error_set(err, IB_INVALID, IB_STAGE_ADMIT,
                        "metadata: key '%s' nests deeper than %d levels", key, MAX_DEPTH);
  if (!v || v->kind_case == IMGBATCH__V1__VALUE__KIND__NOT_SET)
    return ib_error_set(err, IB_INVALID, IB_STAGE_ADMIT,
                        "metadata: key '%s' holds a value that is not a scalar, bytes, list or map",
                        key);
  ib_status st = IB_OK;
  if (v->kind_case == IMGBATCH__V1__VALUE__KIND_LIST_VALUE) {
    for (size_t i = 0; st == IB_OK && v->list_value && i < v->list_value->n_items; i++)
      st = check_value(v->list_value->items[i], key, depth + 1, err);
  } else if (v->kind_case == IMGBATCH__V1__VALUE__KIND_MAP_VALUE) {
    for (size_t i = 0; st == IB_OK && v->map_value && i < v->map_value->n_entries; i++)
      st = check_value(v->map_value->entries[i]->value, key, depth + 1, err);
  }
  return st;
}

static ib_status take_metadata(const Imgbatch__V1__Job *job, ib_snapshot *s, ib_error *err) {
  if (job->n_metadata == 0) return IB_OK; /* packs to nothing: no Job to size */
  for (size_t i = 0; i < job->n_metadata; i++) {
    const Imgbatch__V1__Job__MetadataEntry *e = job->metadata[i];
    ib_status st = check_value(e->value, e->key ? e->key : "", 2, err);
    if (st != IB_OK) return st;
  }
  /* A Job holding only field 7 packs to exactly the metadata entries. */
  Imgbatch__V1__Job echo;
  imgbatch__v1__job__init(&echo);
  echo.n_metadata = job->n_metadata;
  echo.metadata = job->metadata;
  size_t len = imgbatch__v1__job__get_packed_size(&echo);
  if (len > MAX_METADATA_BYTES)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_ADMIT,
                        "metadata: %zu bytes exceed the %u byte limit", len, MAX_METADATA_BYTES);
  if (!len) return IB_OK;
  s->metadata = malloc(len);
  if (!s->metadata) return ib_error_set(err, IB_INTERNAL, IB_STAGE_ADMIT, "out of memory");
  s->metadata_len = imgbatch__v1__job__pack(&echo, s->metadata);
  return IB_OK;
}

/* Whether node `out` of g or one of the nodes it reads drops the source's
 * orientation (the op row's drops_orientation: an exif_transpose that
 * transposed). Inputs precede their node (parse/validate.c), so one sweep
 * down from `out` finds them. */
static bool orientation_dropped(const ib_graph *g, size_t out, bool *reach) {
  memset(reach, 0, (out + 1) * sizeof *reach);
  reach[out] = true;
  for (size_t i = out + 1; i-- > 0;) {
    if (!reach[i]) continue;
    const ib_node *n = &g->nodes[i];
    if (n->op->drops_orientation && n->op->drops_orientation(n)) return true;
    for (unsigned k = 0; k < n->n_inputs; k++) reach[n->inputs[k]] = true;
  }
  return false;
}

/* Whether an output with this CpuOutput keeps any of its source's
 * metadata (a policy other than STRIP, in an encoded format). */
static bool keeps_meta(const Imgbatch__V1__CpuOutput *cpu) {
  return cpu && cpu->metadata != IMGBATCH__V1__METADATA_POLICY__METADATA_STRIP &&
         cpu->format != IMGBATCH__V1__FORMAT__RAW;
}

/* The output metadata policy's blocks, read from source 0 now, while its
 * bytes are intact (a device download may reuse the Job buffer later):
 * for the Job's one output (its last node) an ib_meta_pack blob, for its
 * renditions an ib_meta_pack_renditions blob (each rendition its own
 * policy). Nothing is read or allocated for a Job that keeps nothing. */
static ib_status take_source_meta(const ib_graph *g, ib_snapshot *s, ib_error *err) {
  const Imgbatch__V1__Job *job = g->job;
  const Imgbatch__V1__OutputSpec *o = job->output;
  const size_t n = job->n_renditions ? job->n_renditions : 1;
  if (g->n_sources == 0 || g->n_nodes == 0 || n > IB_MAX_RENDITIONS) return IB_OK;
  const Imgbatch__V1__CpuOutput *cpu[IB_MAX_RENDITIONS];
  size_t node[IB_MAX_RENDITIONS];
  bool wanted = false;
  for (size_t i = 0; i < n; i++) {
    const bool rend = job->n_renditions != 0;
    cpu[i] = rend ? job->renditions[i]->output
             : o && o->target_case == IMGBATCH__V1__OUTPUT_SPEC__TARGET_CPU ? o->cpu
                                                                            : NULL;
    node[i] = rend ? job->renditions[i]->node : g->n_nodes - 1;
    wanted |= keeps_meta(cpu[i]);
  }
  const ib_source *src = &g->sources[0];
  if (!wanted || !src->pb || !src->bytes ||
      (src->pb->kind_case != IMGBATCH__V1__SOURCE__KIND_ENCODED &&
       src->pb->kind_case != IMGBATCH__V1__SOURCE__KIND_PATH))
    return IB_OK;
  bool *reach = malloc(g->n_nodes * sizeof *reach);
  if (!reach) return ib_error_set(err, IB_INTERNAL, IB_STAGE_ADMIT, "out of memory");
  uint8_t sel[IB_MAX_RENDITIONS] = {0};
  for (size_t i = 0; i < n; i++)
    if (keeps_meta(cpu[i]))
      sel[i] = cpu[i]->metadata == IMGBATCH__V1__METADATA_POLICY__METADATA_KEEP_RESET_ORIENTATION ||
                       orientation_dropped(g, node[i], reach)
                   ? IB_META_NO_ORIENTATION
                   : IB_META_AS_READ;
  free(reach);
  ib_meta m;
  if (ib_meta_read(src->bytes, src->len, &m) != 0)
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ADMIT, "out of memory");
  int rc = job->n_renditions
               ? ib_meta_pack_renditions(&m, sel, n, &s->source_meta, &s->source_meta_len)
               : ib_meta_pack(&m, sel[0] == IB_META_NO_ORIENTATION, &s->source_meta,
                              &s->source_meta_len);
  ib_meta_free(&m);
  return rc == 0 ? IB_OK : ib_error_set(err, IB_INTERNAL, IB_STAGE_ADMIT, "out of memory");
}

ib_status ib_snapshot_take(const ib_graph *g, ib_snapshot *s, ib_error *err) {
  *s = (ib_snapshot){0};
  const Imgbatch__V1__Job *job = g->job;
  ib_status st = take_metadata(job, s, err);
  if (st == IB_OK && job->output) {
    size_t len = imgbatch__v1__output_spec__get_packed_size(job->output);
    s->output_spec = malloc(len ? len : 1);
    if (s->output_spec)
      s->output_spec_len = imgbatch__v1__output_spec__pack(job->output, s->output_spec);
    else
      st = ib_error_set(err, IB_INTERNAL, IB_STAGE_ADMIT, "out of memory");
  }
  if (st == IB_OK &&
      job->correlation_present_case == IMGBATCH__V1__JOB__CORRELATION_PRESENT_CORRELATION_ID) {
    s->correlation_id = strdup(job->correlation_id ? job->correlation_id : "");
    if (!s->correlation_id) st = ib_error_set(err, IB_INTERNAL, IB_STAGE_ADMIT, "out of memory");
  }
  if (st == IB_OK) st = take_source_meta(g, s, err);
  if (st == IB_OK && job->n_renditions) {
    /* A Job holding only field 11 packs to exactly the renditions. */
    Imgbatch__V1__Job echo;
    imgbatch__v1__job__init(&echo);
    echo.n_renditions = job->n_renditions;
    echo.renditions = job->renditions;
    size_t len = imgbatch__v1__job__get_packed_size(&echo);
    if ((s->renditions = malloc(len ? len : 1)))
      s->renditions_len = imgbatch__v1__job__pack(&echo, s->renditions);
    else
      st = ib_error_set(err, IB_INTERNAL, IB_STAGE_ADMIT, "out of memory");
  }
  if (st != IB_OK) ib_snapshot_clear(s);
  return st;
}

void ib_snapshot_clear(ib_snapshot *s) {
  free(s->metadata);
  free(s->output_spec);
  free(s->correlation_id);
  free(s->source_meta);
  free(s->renditions);
  *s = (ib_snapshot){0};
}

uint64_t ib_snapshot_bytes(const ib_snapshot *s) {
  return s->metadata_len + s->output_spec_len + s->source_meta_len + s->renditions_len +
         (s->correlation_id ? strlen(s->correlation_id) + 1 : 0);
}
