/* Names for statuses and stages, as they appear in messages and on the wire. */
#include "imgbatch.h"

const char *ib_status_name(ib_status s) {
  switch (s) {
    case IB_OK: return "ok";
    case IB_QUEUE_FULL: return "queue_full";
    case IB_LIMIT: return "limit";
    case IB_UNSUPPORTED: return "unsupported";
    case IB_INVALID: return "invalid";
    case IB_DECODE: return "decode";
    case IB_DEVICE: return "device";
    case IB_TIMEOUT: return "timeout";
    case IB_INTERNAL: return "internal";
    case IB_BUSY: return "busy";
    case IB_RESULT_BACKPRESSURE: return "result_backpressure";
    case IB_CLOSED: return "closed";
    case IB_END: return "end";
    case IB_AGAIN: return "again";
  }
  return "unknown";
}

const char *ib_stage_name(ib_stage s) {
  static const char *const names[] = {"none",   "parse",   "validate", "admit",  "decode",
                                      "upload", "execute", "download", "encode", "publish"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}
