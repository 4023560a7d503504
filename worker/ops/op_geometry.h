/* op_geometry.h - helpers shared by the geometric op rows
 * (op_geometry.c, op_resize.c, op_paste.c). */
#ifndef IB_OP_GEOMETRY_H
#define IB_OP_GEOMETRY_H

#include "ops/op.h"
#include "model/graph.h"

/* IB_LIMIT naming op and param when an output side exceeds the graph's max_side. */
ib_status ib_geom_check_side(const ib_node *node, const char *param, int64_t side, ib_error *err);
/* out(x, y) = in(x + dx, y + dy) where that lies inside `in`; other pixels
 * of `out` are left untouched (the caller's fill). A pixel copies the first
 * bands(out) bytes of its source pixel. */
/* Image.transpose(method) of `src` into `out` (already of the transposed
 * size): kernels/geometry.h's index map. */
void ib_geom_transpose(const ib_image *src, ib_image *out, int method);
/* transpose's device step (a gather head, s->a the method). */
extern const ib_dev_op ib_dev_transpose;
void ib_geom_copy_window(const ib_image *in, ib_image *out, int64_t dx, int64_t dy);

#endif
