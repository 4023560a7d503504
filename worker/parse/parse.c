/*
 * parse.c - serialized Job -> ib_graph: unpack, key, metadata bounds,
 * sources (headers only, never a decode), then validation of the nodes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec/codec.h"
#include "codec/metadata.h"
#include "codec/output_spec.h"
#include "core/error.h"
#include "model/graph.h"
#include "parse/hollow.h"
#include "parse/job_arena.h"
#include "parse/parse.h"
#include "parse/source_path.h"
#include "parse/wire_check.h"
#include "parse/wire_fields.h"

#define DEFAULT_MAX_SOURCE_BYTES (256ull << 20)
#define DEFAULT_MAX_METADATA_BYTES (64ull << 10)
#define MAX_METADATA_DEPTH 8
/* Sources a Job may carry: Job.source plus up to 63 extra_sources (Limit
 * past it). A graph of 256 ops reads at most a few images; the bound keeps
 * the per-source work of parsing (and a producer's mistake) small, and
 * equals IB_HOLLOW_MAX_SPANS, so every raw source can stay in place. */
#define IB_MAX_SOURCES 64
_Static_assert(IB_MAX_SOURCES == IB_HOLLOW_MAX_SPANS && IB_MAX_SOURCES == IB_GRAPH_MAX_BORROWED,
               "every raw source of a Job can be read in place");

static int value_depth(const Imgbatch__V1__Value *v) {
  int deepest = 0;
  if (v->kind_case == IMGBATCH__V1__VALUE__KIND_LIST_VALUE && v->list_value) {
    for (size_t i = 0; i < v->list_value->n_items; i++) {
      int d = value_depth(v->list_value->items[i]);
      if (d > deepest) deepest = d;
    }
  } else if (v->kind_case == IMGBATCH__V1__VALUE__KIND_MAP_VALUE && v->map_value) {
    for (size_t i = 0; i < v->map_value->n_entries; i++) {
      const Imgbatch__V1__Value *e = v->map_value->entries[i]->value;
      int d = e ? value_depth(e) : 0;
      if (d > deepest) deepest = d;
    }
  } else {
    return 1;
  }
  return deepest + 1;
}

static ib_status check_metadata(const Imgbatch__V1__Job *job, uint64_t cap, ib_error *err) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < job->n_metadata; i++) {
    const Imgbatch__V1__Job__MetadataEntry *e = job->metadata[i];
    bytes += protobuf_c_message_get_packed_size(&e->base);
    /* The map itself is level 1; a scalar value adds one. */
    if (e->value && value_depth(e->value) + 1 > MAX_METADATA_DEPTH)
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                          "metadata: key '%s' nests deeper than %d levels", e->key ? e->key : "",
                          MAX_METADATA_DEPTH);
  }
  if (bytes > cap)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE,
                        "metadata: %llu bytes exceed the %llu byte limit",
                        (unsigned long long)bytes, (unsigned long long)cap);
  return IB_OK;
}

static ib_status check_side(uint32_t w, uint32_t h, uint32_t max_side, const char *what, size_t idx,
                            ib_error *err) {
  if (w == 0 || h == 0)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE, "source %zu: %s size %ux%u is empty",
                        idx, what, w, h);
  if (w > max_side || h > max_side)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE,
                        "source %zu: %s size %ux%u exceeds the maximum side %u (max_side; "
                        "imgbatch --max-side)",
                        idx, what, w, h, max_side);
  return IB_OK;
}

static ib_status mode_of(const char *name, size_t idx, ib_mode *m, ib_error *err) {
  *m = ib_mode_parse(name);
  if (*m == IB_MODE_NONE)
    return ib_error_set(
        err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
        "source %zu: mode '%s' not supported (admitted: L, LA, RGB, RGBA, CMYK, RGBX)", idx,
        name ? name : "");
  return IB_OK;
}

/* Pillow's draft() picks 1/1, 1/2, 1/4 or 1/8 (JpegImageFile.draft). */
static ib_status check_draft(const Imgbatch__V1__Source *pb, size_t idx, ib_error *err) {
  uint32_t s = pb ? pb->draft_scale : 0;
  if (s <= 2 || s == 4 || s == 8) return IB_OK;
  return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "source %zu: draft_scale %u is not 1, 2, 4 or 8 (Pillow's draft scales)", idx,
                      s);
}

/* The metadata walk is a few jumps over markers or chunks (codec/metadata.h);
 * the orientation is kept because the bytes may not outlive planning (a
 * device download may reuse the Job buffer). */
static ib_status read_orientation(ib_source *s, size_t idx, ib_error *err) {
  ib_meta m;
  if (ib_meta_read(s->bytes, s->len, &m) != 0)
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_PARSE, "source %zu: out of memory", idx);
  s->orientation = ib_meta_orientation(&m);
  ib_meta_free(&m);
  return IB_OK;
}

static ib_status load_source(const Imgbatch__V1__Source *pb, const ib_graph_limits *lim,
                             ib_source *s, size_t idx, ib_error *err) {
  s->pb = pb;
  ib_status st = check_draft(pb, idx, err);
  if (st != IB_OK) return st;
  switch (pb ? pb->kind_case : IMGBATCH__V1__SOURCE__KIND__NOT_SET) {
    case IMGBATCH__V1__SOURCE__KIND_RAW: {
      const Imgbatch__V1__RawImage *r = pb->raw;
      if ((st = mode_of(r->mode, idx, &s->shape.mode, err)) != IB_OK) return st;
      if ((st = check_side(r->width, r->height, lim->max_side, "raw", idx, err)) != IB_OK)
        return st;
      s->shape.width = r->width;
      s->shape.height = r->height;
      size_t want = (size_t)r->width * r->height * ib_mode_bands(s->shape.mode);
      if (r->data.len != want)
        return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                            "source %zu: raw %s %ux%u needs %zu bytes, got %zu", idx, r->mode,
                            r->width, r->height, want, r->data.len);
      s->bytes = r->data.data;
      s->len = r->data.len;
      return IB_OK;
    }
    case IMGBATCH__V1__SOURCE__KIND_FILL: {
      const Imgbatch__V1__FillImage *f = pb->fill;
      if ((st = mode_of(f->mode, idx, &s->shape.mode, err)) != IB_OK) return st;
      if ((st = check_side(f->width, f->height, lim->max_side, "fill", idx, err)) != IB_OK)
        return st;
      s->shape.width = f->width;
      s->shape.height = f->height;
      if (f->color.len != ib_mode_bands(s->shape.mode))
        return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                            "source %zu: fill colour for %s needs %u bytes, got %zu", idx, f->mode,
                            ib_mode_bands(s->shape.mode), f->color.len);
      s->bytes = f->color.data;
      s->len = f->color.len;
      return IB_OK;
    }
    case IMGBATCH__V1__SOURCE__KIND_PATH: /* already read by ib_path_sources_read */ break;
    case IMGBATCH__V1__SOURCE__KIND_ENCODED:
      if (pb->encoded.len > lim->max_source_bytes)
        return ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE,
                            "source %zu: %zu encoded bytes exceed the %llu byte source limit", idx,
                            pb->encoded.len, (unsigned long long)lim->max_source_bytes);
      s->bytes = pb->encoded.data;
      s->len = pb->encoded.len;
      break;
    default:
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE, "source %zu: no image given", idx);
  }
  if ((st = ib_codec_header_draft(s->bytes, s->len, pb->draft_scale, &s->shape, err)) != IB_OK) {
    ib_error_prefix(err, "source %zu", idx);
    return st;
  }
  if ((st = read_orientation(s, idx, err)) != IB_OK) return st;
  return check_side(s->shape.width, s->shape.height, lim->max_side, "decoded", idx, err);
}

/* A source no SourceOp reads is not opened, read or probed: its bytes stay
 * where they are (still counted as held), its shape stays empty. */
static void keep_unread(const Imgbatch__V1__Source *pb, ib_source *s) {
  s->pb = pb;
  if (pb && pb->kind_case == IMGBATCH__V1__SOURCE__KIND_ENCODED) {
    s->bytes = pb->encoded.data;
    s->len = pb->encoded.len;
  } else if (pb && pb->kind_case == IMGBATCH__V1__SOURCE__KIND_RAW && pb->raw) {
    s->bytes = pb->raw->data.data;
    s->len = pb->raw->data.len;
  }
}

static ib_status load_sources(ib_graph *g, const ib_graph_limits *lim, ib_error *err) {
  const Imgbatch__V1__Job *j = g->job;
  size_t n = (j->source ? 1 : 0) + j->n_extra_sources;
  if (!j->source && j->n_extra_sources)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "source 0: extra sources given without a source");
  if (n > IB_MAX_SOURCES)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE,
                        "sources: %zu exceed the bound of %d (source and extra_sources)", n,
                        IB_MAX_SOURCES);
  /* n_sources only with the array: ib_graph_free walks it. */
  g->sources = ib_job_arena_calloc(g->arena, n ? n : 1, sizeof *g->sources);
  if (!g->sources) return ib_error_set(err, IB_INTERNAL, IB_STAGE_PARSE, "out of memory");
  g->n_sources = n;
  bool read[IB_MAX_SOURCES] = {false};
  for (size_t k = 0; k < j->n_nodes; k++) {
    const Imgbatch__V1__Node *n = j->nodes[k];
    if (n->op_case == IMGBATCH__V1__NODE__OP_SOURCE && n->source && n->source->index < g->n_sources)
      read[n->source->index] = true;
  }
  /* Every path source the graph reads is sized (and the job's total
   * capped) before any byte of one is read. */
  ib_status st = ib_path_sources_read(g, lim, read, err);
  if (st != IB_OK) return st;
  for (size_t i = 0; i < g->n_sources; i++) {
    const Imgbatch__V1__Source *pb = i == 0 ? j->source : j->extra_sources[i - 1];
    if (!read[i]) {
      keep_unread(pb, &g->sources[i]);
      continue;
    }
    if ((st = load_source(pb, lim, &g->sources[i], i, err)) != IB_OK) return st;
  }
  return IB_OK;
}

/* What this worker cannot read is Unsupported, naming what it would need
 * (never Invalid: the job may be valid for a newer worker); then strings. */
static ib_status check_contract(const Imgbatch__V1__Job *j, const ib_wire_notes *notes,
                                ib_error *err) {
  uint32_t v = j->contract_version ? j->contract_version : 1;
  if (v > IB_CONTRACT_VERSION)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "job written for contract version %u; this worker reads up to %u: "
                        "upgrade the worker",
                        v, IB_CONTRACT_VERSION);
  if (notes->unknown)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE, "%s", notes->unknown_text);
  if (notes->bad_string)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE, "%s", notes->string_text);
  return IB_OK;
}

static ib_status set_key(ib_graph *g, ib_error *err) {
  const Imgbatch__V1__Job *j = g->job;
  if (j->input_key_case == IMGBATCH__V1__JOB__INPUT_KEY_KEY_U64) {
    g->key.is_u64 = true;
    g->key.u64 = j->key_u64;
    return IB_OK;
  }
  const char *s = j->input_key_case == IMGBATCH__V1__JOB__INPUT_KEY_KEY_STRING ? j->key_string : "";
  g->key.str = strdup(s);
  return g->key.str ? IB_OK : ib_error_set(err, IB_INTERNAL, IB_STAGE_PARSE, "out of memory");
}

/* exif_transpose's device step depends on its source's orientation, which
 * the node bytes do not show: with such a node, each source's orientation
 * follows them, so that graphs equal on the wire but not in orientation
 * never share a device plan (gpu/cuda_layout.c ib_cuda_same_nodes). */
static ib_status wire_orientations(ib_graph *g, ib_error *err) {
  bool any = false;
  for (size_t k = 0; k < g->job->n_nodes; k++)
    any |= g->job->nodes[k]->op_case == IMGBATCH__V1__NODE__OP_EXIF_TRANSPOSE;
  if (!any || !g->nodes_wire) return IB_OK;
  uint8_t *w = realloc(g->nodes_wire, g->nodes_wire_len + g->n_sources);
  if (!w) return ib_error_set(err, IB_INTERNAL, IB_STAGE_PARSE, "out of memory");
  for (size_t i = 0; i < g->n_sources; i++)
    w[g->nodes_wire_len + i] = (uint8_t)(int8_t)g->sources[i].orientation;
  g->nodes_wire = w;
  g->nodes_wire_len += g->n_sources;
  return IB_OK;
}

ib_status ib_graph_parse(const uint8_t *bytes, size_t len, const ib_graph_limits *limits,
                         ib_graph **out, ib_key *key_on_error, ib_error *err) {
  return ib_graph_parse_in(bytes, len, limits, NULL, out, key_on_error, err);
}

/* Unpacks `bytes` (the hollow message when spans are given), points the
 * hollowed RawImage.data fields back into `buffer`, then parses. The graph
 * takes `buffer` (NULL: none). */
static ib_status parse(const uint8_t *bytes, size_t len, const ib_graph_limits *limits,
                       const ib_graph_memory *mem, const ib_hollow *hollow, uint8_t *buffer,
                       ib_graph **out, ib_key *key_on_error, ib_error *err);

ib_status ib_graph_parse_in(const uint8_t *bytes, size_t len, const ib_graph_limits *limits,
                            const ib_graph_memory *mem, ib_graph **out, ib_key *key_on_error,
                            ib_error *err) {
  return parse(bytes, len, limits, mem, NULL, NULL, out, key_on_error, err);
}

static void buffer_free(ProtobufCAllocator *a, uint8_t *buf) {
  if (a)
    a->free(a->allocator_data, buf);
  else
    free(buf);
}

/* The output spec against the graph's output mode, before any work is
 * done: a quality out of range or a mode the format cannot hold (as
 * Pillow's save() refuses it) is answered at validation, not after the
 * pixels are computed. Encoding checks the same again. */
static ib_status check_output(const ib_graph *g, ib_error *err) {
  const Imgbatch__V1__OutputSpec *o = g->job->output;
  if (!o || o->target_case != IMGBATCH__V1__OUTPUT_SPEC__TARGET_CPU) return IB_OK;
  return ib_output_check(o->cpu, g->nodes[g->n_nodes - 1].shape.mode, IB_STAGE_VALIDATE, err);
}
ib_status ib_graph_parse_buffer(uint8_t *buf, size_t len, const ib_graph_limits *limits,
                                const ib_graph_memory *mem, ib_graph **out, ib_key *key_on_error,
                                ib_error *err) {
  /* A buffer written a while ago (a producer reading ahead) is cold: its
   * first line and its trailer (the fields after the pixels, usually the
   * nodes) would each miss cache and TLB when the walk reaches them, one
   * after the other; asked for at once, the misses overlap. */
  __builtin_prefetch(buf);
  for (size_t o = len > 256 ? len - 256 : 0; o < len; o += 64) __builtin_prefetch(buf + o);
  ib_hollow h;
  _Alignas(16) uint8_t scratch[1024];
  /* Only pixel runs worth a DMA of their own stay in place. */
  int r = ib_hollow_job_in(buf, len, 4096, scratch, sizeof scratch, &h);
  if (r < 0) {
    *out = NULL;
    if (key_on_error) *key_on_error = (ib_key){0};
    buffer_free(mem ? mem->alloc : NULL, buf);
    if (mem && mem->unref) mem->unref(mem->owner);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_PARSE, "out of memory");
  }
  if (r == 0) { /* nothing to keep in place: the normal copying unpack */
    /* buf goes back before the owner reference (it may be the last). */
    ib_graph_memory m = mem ? *mem : (ib_graph_memory){0};
    m.unref = NULL;
    ib_status st = parse(buf, len, limits, &m, NULL, NULL, out, key_on_error, err);
    buffer_free(m.alloc, buf);
    if (*out)
      (*out)->unref = mem ? mem->unref : NULL;
    else if (mem && mem->unref)
      mem->unref(mem->owner);
    return st;
  }
  ib_status st = parse(h.msg, h.len, limits, mem, &h, buf, out, key_on_error, err);
  if (*out) (*out)->buffer_len = len;
  if (h.msg != scratch) free(h.msg);
  return st;
}

static ib_status parse(const uint8_t *bytes, size_t len, const ib_graph_limits *limits,
                       const ib_graph_memory *mem, const ib_hollow *hollow, uint8_t *buffer,
                       ib_graph **out, ib_key *key_on_error, ib_error *err) {
  *out = NULL;
  if (key_on_error) *key_on_error = (ib_key){0};
  ib_graph_limits lim = limits ? *limits : (ib_graph_limits){0};
  if (!lim.max_source_bytes) lim.max_source_bytes = DEFAULT_MAX_SOURCE_BYTES;
  if (!lim.max_metadata_bytes) lim.max_metadata_bytes = DEFAULT_MAX_METADATA_BYTES;
  if (!lim.max_side) lim.max_side = IB_DEFAULT_MAX_SIDE;
  if (lim.max_side > IB_MAX_SIDE_LIMIT) {
    buffer_free(mem ? mem->alloc : NULL, buffer);
    if (mem && mem->unref) mem->unref(mem->owner);
    return ib_error_set(err, IB_INVALID, IB_STAGE_PARSE, "limits: max_side %u is outside 1..%u",
                        lim.max_side, IB_MAX_SIDE_LIMIT);
  }

  ib_graph *g = calloc(1, sizeof *g);
  if (!g) {
    buffer_free(mem ? mem->alloc : NULL, buffer);
    if (mem && mem->unref) mem->unref(mem->owner);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_PARSE, "out of memory");
  }
  if (mem) {
    g->alloc = mem->alloc;
    g->unref = mem->unref;
    g->owner = mem->owner;
  }
  g->buffer = buffer;
  g->max_side = lim.max_side;
  /* Before protobuf-c, which would recurse without bound (wire_check.h). */
  ib_wire_notes notes;
  ib_status st = ib_wire_check(&imgbatch__v1__job__descriptor, bytes, len, &notes, err);
  if (st != IB_OK) goto out;
  g->job_alloc = g->alloc;
  if (hollow || !g->alloc) {
    if (!(g->arena = ib_job_arena_new(len, &g->arena_alloc))) {
      st = ib_error_set(err, IB_INTERNAL, IB_STAGE_PARSE, "out of memory");
      goto out;
    }
    g->job_alloc = &g->arena_alloc;
  }
  g->job = imgbatch__v1__job__unpack(g->job_alloc, len, bytes);
  if (!g->job) {
    st = ib_error_set(err, IB_INVALID, IB_STAGE_PARSE,
                      "parse: %zu bytes are not a valid imgbatch.v1.Job message", len);
    goto out;
  }
  for (size_t i = 0; hollow && i < hollow->n_spans; i++) {
    const ib_hollow_span *sp = &hollow->spans[i];
    Imgbatch__V1__Source *src = sp->source == 0 ? g->job->source
                                : sp->source <= g->job->n_extra_sources
                                    ? g->job->extra_sources[sp->source - 1]
                                    : NULL;
    if (!src || src->kind_case != IMGBATCH__V1__SOURCE__KIND_RAW || src->raw->data.len) {
      st = ib_error_set(err, IB_INTERNAL, IB_STAGE_PARSE,
                        "parse: source %zu: in-place pixels do not match the unpacked Job",
                        sp->source);
      goto out;
    }
    src->raw->data.data = (uint8_t *)sp->data;
    src->raw->data.len = sp->len;
    g->borrowed[g->n_borrowed++] = src->raw;
  }
  /* One walk when the node fields fit the stack (the usual few hundred
   * bytes), a second one to copy them otherwise. */
  uint8_t nodes_tmp[512];
  size_t nw = ib_wire_collect(bytes, len, IB_FIELD_JOB_NODES, nodes_tmp, sizeof nodes_tmp);
  if (nw != SIZE_MAX && (g->nodes_wire = malloc(nw ? nw : 1))) {
    if (nw <= sizeof nodes_tmp)
      memcpy(g->nodes_wire, nodes_tmp, nw);
    else
      ib_wire_collect(bytes, len, IB_FIELD_JOB_NODES, g->nodes_wire, nw);
    g->nodes_wire_len = nw;
  }
  /* A key that is not UTF-8 cannot be echoed: answered like bytes that are
   * not a Job (strict protobuf runtimes would not have parsed it either). */
  if (notes.bad_string && strcmp(notes.string_path, "key_string") == 0) {
    st = ib_error_set(err, IB_INVALID, IB_STAGE_PARSE, "parse: %s", notes.string_text);
    goto out;
  }
  if ((st = set_key(g, err)) != IB_OK) goto out;
  if ((st = check_contract(g->job, &notes, err)) != IB_OK) goto out;
  if ((st = check_metadata(g->job, lim.max_metadata_bytes, err)) != IB_OK) goto out;
  if ((st = load_sources(g, &lim, err)) != IB_OK) goto out;
  if ((st = wire_orientations(g, err)) != IB_OK) goto out;
  st = ib_graph_validate(g, err);
  if (st == IB_OK) st = check_output(g, err);
  if (st == IB_OK) st = ib_renditions_check(g, err);
out:
  if (st != IB_OK) {
    if (key_on_error && g->job) ib_key_copy(key_on_error, &g->key);
    ib_graph_free(g);
    return st;
  }
  *out = g;
  return IB_OK;
}

void ib_graph_free(ib_graph *g) {
  if (!g) return;
  free(g->nodes_wire);
  for (size_t i = 0; i < g->n_sources; i++) free(g->sources[i].file_bytes);
  if (!g->arena) { /* else they lie in it */
    free(g->sources);
    free(g->nodes);
  }
  free(g->key.str);
  /* Borrowed pixels belong to the buffer, not to the unpacked Job. */
  for (size_t i = 0; i < g->n_borrowed; i++) g->borrowed[i]->data = (ProtobufCBinaryData){0};
  if (g->job && !g->arena) imgbatch__v1__job__free_unpacked(g->job, g->job_alloc);
  ib_job_arena_free(g->arena); /* the whole Job at once */
  if (g->buffer) buffer_free(g->alloc, g->buffer);
  if (g->unref) g->unref(g->owner);
  free(g);
}

ib_status ib_key_copy(ib_key *dst, const ib_key *src) {
  *dst = *src;
  if (src->is_u64) return IB_OK;
  dst->str = strdup(src->str ? src->str : "");
  return dst->str ? IB_OK : IB_INTERNAL;
}

void ib_key_clear(ib_key *k) {
  free(k->str);
  *k = (ib_key){0};
}
