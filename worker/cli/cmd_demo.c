/* imgbatch demo: broker + worker + sample jobs. Needs the Kafka worker;
 * until it lands, scripts/demo.sh runs the sample jobs through `imgbatch run`. */
#include <stdio.h>

#include "cli/cli.h"

int ib_cmd_demo(int argc, char **argv) {
  if (ib_wants_help(argc, argv)) {
    printf("usage: imgbatch demo\n\nNot implemented yet: scripts/demo.sh runs the sample jobs\n"
           "through 'imgbatch run' instead.\nexit codes: 1 (not implemented)\n");
    return IB_EXIT_OK;
  }
  fprintf(stderr, "imgbatch demo: not implemented yet (needs the Kafka worker); "
                  "scripts/demo.sh runs the samples through 'imgbatch run'\n");
  return IB_EXIT_FAILURE;
}
