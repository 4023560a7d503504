/*
 * op_point.h - the 256 * bands table of the per-band table ops (point,
 * invert, solarize, posterize), shared by their CPU rows (op_point.c) and
 * the CUDA backend's LUT steps (worker/gpu/codegen.c), so both map through
 * the very same table.
 */
#ifndef IB_OPS_OP_POINT_H
#define IB_OPS_OP_POINT_H

#include <stdint.h>

#include "proto/imgbatch.pb-c.h"

/* Band-major: entry [b * 256 + v]. Image.point clamps the given entries (at
 * most 256 * bands are read); the ImageOps rows build one 256-entry table
 * and, as ImageOps._lut does for RGB, repeat it per band. */
void ib_point_table(const Imgbatch__V1__Node *pb, unsigned bands, uint8_t *table);

#endif
