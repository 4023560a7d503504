/* Modes and chunky image buffers. */
#include <stdlib.h>
#include <string.h>

#include "imgbatch.h"

static const struct {
  const char *name;
  unsigned bands;
} modes[IB_MODE_COUNT] = {
    [IB_MODE_NONE] = {"none", 0}, [IB_MODE_L] = {"L", 1},       [IB_MODE_LA] = {"LA", 2},
    [IB_MODE_RGB] = {"RGB", 3},   [IB_MODE_RGBA] = {"RGBA", 4}, [IB_MODE_CMYK] = {"CMYK", 4},
    [IB_MODE_RGBX] = {"RGBX", 4},
};

unsigned ib_mode_bands(ib_mode m) { return (unsigned)m < IB_MODE_COUNT ? modes[m].bands : 0; }

const char *ib_mode_name(ib_mode m) { return (unsigned)m < IB_MODE_COUNT ? modes[m].name : "none"; }

ib_mode ib_mode_parse(const char *name) {
  if (!name) return IB_MODE_NONE;
  for (int m = IB_MODE_L; m < IB_MODE_COUNT; m++)
    if (strcmp(modes[m].name, name) == 0) return (ib_mode)m;
  return IB_MODE_NONE;
}

size_t ib_image_bytes(const ib_image *im) {
  return (size_t)im->width * im->height * ib_mode_bands(im->mode);
}

ib_status ib_image_alloc(ib_image *im, ib_mode mode, uint32_t width, uint32_t height) {
  im->mode = mode;
  im->width = width;
  im->height = height;
  size_t n = ib_image_bytes(im);
  /* calloc(0) may return NULL; keep a valid pointer for empty images. */
  im->data = calloc(n ? n : 1, 1);
  im->free_fn = NULL;
  im->free_ctx = NULL;
  return im->data ? IB_OK : IB_INTERNAL;
}

void ib_image_release(ib_image *im) {
  if (!im) return;
  if (im->free_fn)
    im->free_fn(im->free_ctx, im->data);
  else
    free(im->data);
  im->data = NULL;
  im->free_fn = NULL;
  im->free_ctx = NULL;
}
