/* ib_version: the library's version, from the header it was built with. */
#include "imgbatch.h"

#define IB_STR_(x) #x
#define IB_STR(x) IB_STR_(x)

const char *ib_version(void) {
  return IB_STR(IB_VERSION_MAJOR) "." IB_STR(IB_VERSION_MINOR) "." IB_STR(IB_VERSION_PATCH);
}
