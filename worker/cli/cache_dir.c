/* The kernel module cache directory from the environment (cli.h). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

const char *ib_cli_cache_dir(void) {
  /* Static: the CLI asks once, at start-up, before any thread runs. */
  static char dir[512];
  const char *env = getenv("IB_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n = -1;
  if (env && !*env) return NULL; /* set but empty: no disk cache */
  if (env)
    n = snprintf(dir, sizeof dir, "%s", env);
  else if (xdg && *xdg)
    n = snprintf(dir, sizeof dir, "%s/imgbatch", xdg);
  else if (home && *home)
    n = snprintf(dir, sizeof dir, "%s/.cache/imgbatch", home);
  return n > 0 && n < (int)sizeof dir ? dir : NULL;
}
