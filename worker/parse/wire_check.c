/* The wire walk of wire_check.h. Depth is counted in messages below the top
 * one; the walk itself recurses at most IB_WIRE_MAX_DEPTH levels. */
#include "parse/wire_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"

static int varint_long(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (int s = 0; s < 64 && *p < end; s += 7) {
    uint8_t b = *(*p)++;
    r |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) {
      *v = r;
      return 1;
    }
  }
  return 0;
}

/* Keys and most lengths are one byte: the walks of a parse (hollowing,
 * this check, the node bytes) read a few dozen per Job. */
static inline int varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  if (*p < end && !(**p & 0x80)) {
    *v = *(*p)++;
    return 1;
  }
  return varint_long(p, end, v);
}

int ib_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) { return varint(p, end, v); }

int ib_wire_next(const uint8_t **p, const uint8_t *end, ib_wire_field *f) {
  if (*p == end) return 0;
  f->start = *p;
  f->vlen = 0;
  uint64_t key, n;
  if (!varint(p, end, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX) return -1;
  f->fn = (uint32_t)(key >> 3);
  f->wt = (int)(key & 7);
  f->val = *p;
  switch (f->wt) {
    case IB_WT_VARINT:
      if (!varint(p, end, &n)) return -1;
      break;
    case IB_WT_I64:
    case IB_WT_I32: {
      size_t w = f->wt == IB_WT_I64 ? 8 : 4;
      if ((size_t)(end - *p) < w) return -1;
      *p += w;
      break;
    }
    case IB_WT_LEN:
      if (!varint(p, end, &n) || n > (uint64_t)(end - *p)) return -1;
      f->val = *p;
      f->vlen = (size_t)n;
      *p += n;
      break;
    default: return -1; /* groups (3, 4) and 6, 7 */
  }
  f->end = *p;
  return 1;
}

/* One field on the way down: its name and, for a counted repeated field,
 * its index (-1: none). The path string is only built when a note or an
 * error names it, not for every field walked (a Job's walk was a third of
 * its parse time with a printf per field). */
typedef struct frame {
  const char *name;
  int64_t idx;
} frame;

typedef struct walk {
  const ProtobufCMessageDescriptor *top;
  size_t top_len;
  ib_wire_notes *notes;
  ib_error *err;
  frame stack[IB_WIRE_MAX_DEPTH + 1];
  int depth;
} walk;

typedef struct path_buf {
  char s[96];
  size_t len;
} path_buf;

/* Appends to the path; a path too long for the buffer ends in "...". */
static void path_add(path_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void path_add(path_buf *b, const char *fmt, ...) {
  size_t room = sizeof b->s - b->len;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->s + b->len, room, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= room) {
    memcpy(b->s + sizeof b->s - 4, "...", 4);
    b->len = sizeof b->s - 1;
  } else {
    b->len += (size_t)n;
  }
}

/* "nodes[1].convert.mode": the fields walked down to here; the top
 * message's name when there are none. */
static const char *path_or_top(const walk *w, path_buf *b) {
  b->s[0] = 0;
  b->len = 0;
  for (int i = 0; i < w->depth; i++) {
    path_add(b, "%s%s", i ? "." : "", w->stack[i].name);
    if (w->stack[i].idx >= 0) path_add(b, "[%u]", (unsigned)w->stack[i].idx);
  }
  return b->len ? b->s : w->top->short_name;
}

static void note_unknown(walk *w, const char *what, uint64_t v) {
  if (w->notes->unknown) return;
  w->notes->unknown = true;
  path_buf b;
  snprintf(w->notes->unknown_text, sizeof w->notes->unknown_text,
           "%s: %s %llu is newer than this worker's contract (version %u): upgrade the worker",
           path_or_top(w, &b), what, (unsigned long long)v, IB_CONTRACT_VERSION);
}

static void check_string(walk *w, const uint8_t *s, size_t n) {
  if (w->notes->bad_string) return;
  size_t bad = ib_utf8_first_bad(s, n, true);
  if (bad == n) return;
  ib_wire_notes *no = w->notes;
  no->bad_string = true;
  path_buf b;
  snprintf(no->string_path, sizeof no->string_path, "%s", path_or_top(w, &b));
  /* The string is shown from a little before the fault, escaped. */
  size_t from = bad > 24 ? bad - 24 : 0;
  while (from > 0 && from < bad && (s[from] & 0xc0) == 0x80) from--;
  char shown[64];
  ib_utf8_escape(shown, sizeof shown, s + from, n - from);
  snprintf(no->string_text, sizeof no->string_text, "%s: '%s%s' %s (byte %zu of %zu)",
           no->string_path, from ? "..." : "", shown,
           s[bad] == 0 ? "holds a NUL byte" : "is not valid UTF-8", bad, n);
}

static void check_enum(walk *w, const ProtobufCFieldDescriptor *fd, const ib_wire_field *f) {
  const uint8_t *p = f->val, *end = f->wt == IB_WT_LEN ? f->val + f->vlen : f->end;
  uint64_t v;
  /* One varint, or a packed run of them. */
  while (p < end && ib_wire_varint(&p, end, &v))
    if (!protobuf_c_enum_descriptor_get_value(fd->descriptor, (int)(int32_t)v))
      note_unknown(w, "value", (uint64_t)(int64_t)(int32_t)v);
}

static ib_status walk_message(walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *p,
                              const uint8_t *end, int depth);

static ib_status walk_field(walk *w, const ProtobufCFieldDescriptor *fd, const ib_wire_field *f,
                            int depth) {
  /* A wire type that does not fit the field is left to protobuf-c, which
   * refuses it. */
  switch (fd->type) {
    case PROTOBUF_C_TYPE_MESSAGE:
      if (f->wt != IB_WT_LEN) return IB_OK;
      if (depth + 1 > IB_WIRE_MAX_DEPTH)
        return ib_error_set(w->err, IB_LIMIT, IB_STAGE_PARSE,
                            "parse: %s nests messages deeper than %d levels", w->stack[0].name,
                            IB_WIRE_MAX_DEPTH);
      return walk_message(w, fd->descriptor, f->val, f->val + f->vlen, depth + 1);
    case PROTOBUF_C_TYPE_STRING:
      if (f->wt == IB_WT_LEN) check_string(w, f->val, f->vlen);
      return IB_OK;
    case PROTOBUF_C_TYPE_ENUM:
      if (f->wt == IB_WT_VARINT || f->wt == IB_WT_LEN) check_enum(w, fd, f);
      return IB_OK;
    default: return IB_OK;
  }
}

#define MAX_COUNTED_FIELDS 64

static ib_status walk_message(walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *p,
                              const uint8_t *end, int depth) {
  /* Occurrences of each repeated field; only this message's fields are
   * cleared (a Job's walk enters ~10 messages of a few fields each). */
  uint32_t seen[MAX_COUNTED_FIELDS];
  memset(seen, 0,
         (d->n_fields < MAX_COUNTED_FIELDS ? d->n_fields : MAX_COUNTED_FIELDS) * sizeof seen[0]);
  ib_wire_field f;
  int r;
  while ((r = ib_wire_next(&p, end, &f)) == 1) {
    const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(d, f.fn);
    if (!fd) {
      note_unknown(w, "field", f.fn);
      continue;
    }
    size_t idx = (size_t)(fd - d->fields);
    w->stack[depth] = (frame){fd->name, -1};
    if (fd->label == PROTOBUF_C_LABEL_REPEATED && idx < MAX_COUNTED_FIELDS)
      w->stack[depth].idx = seen[idx]++;
    w->depth = depth + 1;
    ib_status st = walk_field(w, fd, &f, depth);
    w->depth = depth;
    if (st != IB_OK) return st;
  }
  if (r < 0)
    return ib_error_set(w->err, IB_INVALID, IB_STAGE_PARSE,
                        "parse: %zu bytes are not a valid %s message", w->top_len, w->top->name);
  return IB_OK;
}

ib_status ib_wire_check(const ProtobufCMessageDescriptor *desc, const uint8_t *msg, size_t len,
                        ib_wire_notes *notes, ib_error *err) {
  memset(notes, 0, sizeof *notes);
  walk w = {.top = desc, .top_len = len, .notes = notes, .err = err};
  return walk_message(&w, desc, msg, msg + len, 0);
}
