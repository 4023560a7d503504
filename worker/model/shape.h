/* shape.h - an image's mode and size, as validation infers it per node. */
#ifndef IB_MODEL_SHAPE_H
#define IB_MODEL_SHAPE_H

#include <stdint.h>

#include "imgbatch.h"

typedef struct ib_shape {
  ib_mode mode;
  uint32_t width, height;
} ib_shape;

#endif
