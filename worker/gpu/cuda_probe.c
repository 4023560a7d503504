/* Device probe over the run-time driver table (gpu/cu.h): no libcuda
 * link-time dependency, one place that loads the driver. */
#include "gpu/cuda_probe.h"

#include <stdio.h>
#include <string.h>

#include "gpu/cu.h"

/* The driver table's messages start "no CUDA driver: " or "no CUDA device: ";
 * callers print their own lead-in. */
static const char *reason_of(const char *msg) {
  static const char *const leads[] = {"no CUDA driver: ", "no CUDA device: "};
  for (size_t i = 0; i < sizeof leads / sizeof leads[0]; i++)
    if (strncmp(msg, leads[i], strlen(leads[i])) == 0) return msg + strlen(leads[i]);
  return msg;
}

ib_status ib_cuda_probe(int ordinal, char *desc, size_t n) {
  ib_error err = {0};
  const ib_cu *cu = ib_cu_get(&err);
  if (!cu) {
    snprintf(desc, n, "%s", reason_of(err.message));
    return IB_DEVICE;
  }
  int devices = 0, major = 0, minor = 0, drv = 0;
  CUdevice dev = 0;
  char name[128] = "";
  size_t bytes = 0;
  CUresult rc = cu->cuDeviceGetCount(&devices);
  if (rc != CUDA_SUCCESS || ordinal < 0 || ordinal >= devices) {
    snprintf(desc, n, "device %d not present (%d device(s), CUresult %d)", ordinal, devices,
             (int)rc);
    return IB_DEVICE;
  }
  if ((rc = cu->cuDeviceGet(&dev, ordinal)) != CUDA_SUCCESS ||
      (rc = cu->cuDeviceGetName(name, sizeof name, dev)) != CUDA_SUCCESS ||
      (rc = cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) !=
          CUDA_SUCCESS ||
      (rc = cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) !=
          CUDA_SUCCESS ||
      (rc = cu->cuDeviceTotalMem(&bytes, dev)) != CUDA_SUCCESS ||
      (rc = cu->cuDriverGetVersion(&drv)) != CUDA_SUCCESS) {
    snprintf(desc, n, "device %d query failed (CUresult %d)", ordinal, (int)rc);
    return IB_DEVICE;
  }
  snprintf(desc, n, "%s, sm_%d%d, %zu MiB, driver API %d.%d", name, major, minor, bytes >> 20,
           drv / 1000, (drv % 1000) / 10);
  return IB_OK;
}
