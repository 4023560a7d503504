#!/usr/bin/env bash
# The C, header and CUDA sources are formatted by .clang-format: lists every
# file clang-format would change and fails if any.
set -euo pipefail
cd "$(dirname "$0")/.."
cf=$(command -v clang-format || command -v clang-format-14 || true)
[ -n "$cf" ] || { echo "check_format: clang-format not installed (scripts/setup.sh installs it)" >&2; exit 1; }
bad=0
while IFS= read -r f; do
  if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "check_format: $f is not formatted (run: $cf -i $f)" >&2
    bad=$((bad + 1))
  fi
done < <(git ls-files '*.c' '*.h' '*.cuh')
[ "$bad" -eq 0 ] || { echo "check_format: $bad file(s) not formatted" >&2; exit 1; }
echo "check_format: every .c/.h/.cuh file is formatted"
