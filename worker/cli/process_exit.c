/* The end of an imgbatch process (cli.h, ib_cli_exit). */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "gpu/compile_pool.h"

int ib_cli_exit(int rc) {
  const uint64_t left = ib_cpool_orphans();
  if (!left) return rc;
  /* exit() would run the libraries' teardown (NVRTC's static destructors
   * among them) under a thread that is still inside NVRTC: a crash at the
   * end of a clean drain. Everything of ours is closed and published by
   * now; only stdio is left to flush. */
  fprintf(stderr,
          "imgbatch: %" PRIu64
          " kernel compile(s) still inside NVRTC past the compile time bound; "
          "ending without waiting for them\n",
          left);
  fflush(NULL);
  _exit(rc);
}
