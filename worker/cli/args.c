/* Argument forms, number parsing and the --help test shared by the subcommands. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

bool ib_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return true;
  return false;
}

bool ib_cli_parse_u64(const char *v, bool sized, uint64_t *out) {
  char *end;
  errno = 0;
  if (!v || !v[0] || v[0] == '-') return false;
  unsigned long long n = strtoull(v, &end, 10);
  if (errno || end == v) return false;
  unsigned shift = 0;
  if (sized && *end) {
    shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 64;
    if (shift == 64 || end[1]) return false;
    if (n > (UINT64_MAX >> shift)) return false;
  } else if (*end) {
    return false;
  }
  *out = (uint64_t)n << shift;
  return true;
}

bool ib_cli_parse_u32(const char *v, uint32_t *out) {
  uint64_t n;
  if (!ib_cli_parse_u64(v, false, &n) || n > UINT32_MAX) return false;
  *out = (uint32_t)n;
  return true;
}

bool ib_cli_parse_max_side(const char *cmd, const char *v, uint32_t *out) {
  uint64_t n;
  if (ib_cli_parse_u64(v, false, &n) && n >= 1 && n <= IB_MAX_SIDE_LIMIT) {
    *out = (uint32_t)n;
    return true;
  }
  fprintf(stderr, "imgbatch %s: --max-side '%s': expected a side in pixels in 1..%u (default %u)\n",
          cmd, v, IB_MAX_SIDE_LIMIT, IB_DEFAULT_MAX_SIDE);
  return false;
}

char **ib_cli_split_equals(int argc, char **argv, int *out_argc) {
  char **out = calloc(2 * (size_t)argc + 1, sizeof *out);
  if (!out) return NULL;
  int n = 0;
  for (int i = 0; i < argc; i++) {
    out[n++] = argv[i];
    char *eq = i > 0 && strncmp(argv[i], "--", 2) == 0 ? strchr(argv[i], '=') : NULL;
    if (eq && eq > argv[i] + 2) {
      *eq = '\0';
      out[n++] = eq + 1;
    }
  }
  *out_argc = n;
  return out;
}
