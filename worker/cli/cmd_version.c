/* imgbatch version: the libraries linked and the CUDA device found. */
#include <librdkafka/rdkafka.h>
#include <nvrtc.h>
#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <vips/vips.h>

#include "cli/cli.h"
#include "codec/codec.h"
#include "gpu/cuda_probe.h"

int ib_cmd_version(int argc, char **argv) {
  if (ib_wants_help(argc, argv)) {
    printf(
        "usage: imgbatch version\n\nPrints the versions of imgbatch, librdkafka, libvips,\n"
        "protobuf-c and NVRTC, and the CUDA device found (or 'no CUDA device: <reason>').\n"
        "exit codes: 0 always (a missing GPU is reported, not an error)\n");
    return IB_EXIT_OK;
  }
  (void)argv;
  int major = 0, minor = 0;
  ib_error err = {0};
  printf("imgbatch %s\n", ib_version());
  printf("librdkafka %s\n", rd_kafka_version_str());
  if (ib_codec_init(&err) == IB_OK)
    printf("libvips %s\n", vips_version_string());
  else
    printf("libvips unavailable: %s\n", err.message);
  printf("protobuf-c %s\n", protobuf_c_version());
  if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS)
    printf("nvrtc %d.%d\n", major, minor);
  else
    printf("nvrtc unavailable\n");
  char desc[256];
  if (ib_cuda_probe(0, desc, sizeof desc) == IB_OK)
    printf("cuda device 0: %s\n", desc);
  else
    printf("no CUDA device: %s\n", desc);
  return IB_EXIT_OK;
}
