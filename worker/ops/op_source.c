/* The graph's leaves: Job.source (index 0) and Job.extra_sources[index-1].
 * Raw pixels are copied, Image.new fills are replicated, encoded bytes are
 * decoded straight into the output buffer (codec.h: libpng, libvips, or
 * libjpeg for a drafted JPEG). */
#include <string.h>

#include "codec/codec.h"
#include "ops/op.h"
#include "model/graph.h"

static ib_status source_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                              ib_error *err) {
  (void)in;
  uint32_t idx = node->pb->source->index;
  if (idx >= node->graph->n_sources)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op source: index %u but the job has %zu source(s)", idx,
                        node->graph->n_sources);
  *out = node->graph->sources[idx].shape;
  return IB_OK;
}

static ib_status source_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                            ib_error *err) {
  (void)in;
  const ib_source *s = &node->graph->sources[node->pb->source->index];
  switch (s->pb->kind_case) {
    case IMGBATCH__V1__SOURCE__KIND_RAW:
      memcpy(out->data, s->bytes, ib_image_bytes(out));
      return IB_OK;
    case IMGBATCH__V1__SOURCE__KIND_FILL: {
      size_t bands = s->len, n = (size_t)out->width * out->height;
      for (size_t i = 0; i < n; i++) memcpy(out->data + i * bands, s->bytes, bands);
      return IB_OK;
    }
    default:
      return ib_codec_decode_into_draft(s->bytes, s->len, s->pb->draft_scale, &s->shape, out->data,
                                        err);
  }
}

const ib_op_desc ib_op_source = {
    IB_OP_HEAD(source),
    .infer = source_infer,
    .param_bytes = ib_op_no_params,
    .cpu = source_cpu,
};
