/* Driver table loading: dlopen + dlsym of each versioned symbol, once. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cu.h"

#define IB_STR2(x) #x
#define IB_STR(x) IB_STR2(x)

static ib_cu table;
static const ib_cu *loaded;
static ib_error load_err;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
  load_err = (ib_error){.status = IB_DEVICE, .stage = IB_STAGE_ADMIT};
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(load_err.message, sizeof load_err.message,
             "no CUDA driver: cannot load libcuda.so.1 (%s)", dlerror());
    return;
  }
  table.lib = lib;
  const char *missing = NULL;
#define IB_CU_LOAD(f)                           \
  *(void **)(&table.f) = dlsym(lib, IB_STR(f)); \
  if (!table.f && !missing) missing = IB_STR(f);
  IB_CU_FUNCS(IB_CU_LOAD)
#undef IB_CU_LOAD
#define IB_CU_LOAD_OPTIONAL(f) *(void **)(&table.f) = dlsym(lib, IB_STR(f));
  IB_CU_OPTIONAL(IB_CU_LOAD_OPTIONAL)
#undef IB_CU_LOAD_OPTIONAL
  if (missing) {
    snprintf(load_err.message, sizeof load_err.message,
             "no CUDA driver: libcuda.so.1 lacks %s (driver too old?)", missing);
    dlclose(lib);
    return;
  }
  CUresult rc = table.cuInit(0);
  if (rc != CUDA_SUCCESS) {
    const char *name = NULL;
    table.cuGetErrorName(rc, &name);
    snprintf(load_err.message, sizeof load_err.message, "no CUDA device: cuInit failed (%s)",
             name ? name : "unknown CUresult");
    dlclose(lib);
    return;
  }
  loaded = &table;
}

const ib_cu *ib_cu_get(ib_error *err) {
  pthread_once(&once, load);
  if (!loaded && err) *err = load_err;
  return loaded;
}

ib_status ib_cu_fail(const ib_cu *cu, CUresult rc, ib_error *err, ib_stage stage, const char *fmt,
                     ...) {
  if (!err) return IB_DEVICE;
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const char *name = NULL, *text = NULL;
  if (cu) {
    cu->cuGetErrorName(rc, &name);
    cu->cuGetErrorString(rc, &text);
  }
  err->status = IB_DEVICE;
  err->stage = stage;
  snprintf(err->message, sizeof err->message, "%s: %s (%s)", what, name ? name : "CUresult",
           text ? text : "no description");
  return IB_DEVICE;
}
