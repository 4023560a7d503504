/* Minimal driver probe through dlopen: no libcuda link-time dependency. */
#include <dlfcn.h>
#include <stdio.h>

#include "gpu/cuda_probe.h"

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_attr_fn)(int *, int, int);
typedef int (*cu_mem_fn)(size_t *, int);
typedef int (*cu_ver_fn)(int *);

#define CU_ATTR_CC_MAJOR 75
#define CU_ATTR_CC_MINOR 76

ib_status ib_cuda_probe(int ordinal, char *desc, size_t n) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(desc, n, "cannot load libcuda.so.1 (%s)", dlerror());
    return IB_DEVICE;
  }
  cu_init_fn init = (cu_init_fn)dlsym(lib, "cuInit");
  cu_count_fn count = (cu_count_fn)dlsym(lib, "cuDeviceGetCount");
  cu_get_fn get = (cu_get_fn)dlsym(lib, "cuDeviceGet");
  cu_name_fn name = (cu_name_fn)dlsym(lib, "cuDeviceGetName");
  cu_attr_fn attr = (cu_attr_fn)dlsym(lib, "cuDeviceGetAttribute");
  cu_mem_fn mem = (cu_mem_fn)dlsym(lib, "cuDeviceTotalMem_v2");
  cu_ver_fn ver = (cu_ver_fn)dlsym(lib, "cuDriverGetVersion");
  ib_status st = IB_DEVICE;
  int rc, devices = 0, dev = 0, major = 0, minor = 0, drv = 0;
  char dname[128] = "";
  size_t bytes = 0;
  if (!init || !count || !get || !name || !attr || !mem || !ver) {
    snprintf(desc, n, "libcuda.so.1 lacks the driver API entry points");
  } else if ((rc = init(0)) != 0) {
    snprintf(desc, n, "cuInit failed (CUresult %d)", rc);
  } else if ((rc = count(&devices)) != 0 || devices <= ordinal || ordinal < 0) {
    snprintf(desc, n, "device %d not present (%d device(s), CUresult %d)", ordinal, devices, rc);
  } else if ((rc = get(&dev, ordinal)) != 0 || (rc = name(dname, sizeof dname, dev)) != 0 ||
             (rc = attr(&major, CU_ATTR_CC_MAJOR, dev)) != 0 ||
             (rc = attr(&minor, CU_ATTR_CC_MINOR, dev)) != 0 || (rc = mem(&bytes, dev)) != 0 ||
             (rc = ver(&drv)) != 0) {
    snprintf(desc, n, "device %d query failed (CUresult %d)", ordinal, rc);
  } else {
    snprintf(desc, n, "%s, sm_%d%d, %zu MiB, driver API %d.%d", dname, major, minor, bytes >> 20,
             drv / 1000, (drv % 1000) / 10);
    st = IB_OK;
  }
  dlclose(lib);
  return st;
}
