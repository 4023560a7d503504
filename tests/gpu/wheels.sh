#!/usr/bin/env bash
# tests/gpu/wheels.sh - fills .whl/ with what the GPU machine's Python (3.12,
# no network there) needs for the worker, parity_live and renditions_live
# cases and the bench drivers: the client's wheel, and the pins of
# client/requirements.txt that the machine lacks as wheels it can install
# without building - protobuf (pure Python), pytest with its dependencies at
# the .venv's versions, and confluent-kafka's manylinux wheel for CPython
# 3.12 (the worker suite's producer and consumer; without it that case
# fails at import). Pillow and numpy are the machine's own. Run from the
# repository root after scripts/setup.sh; carry .whl beside .devpack.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
py=.venv/bin/python
[ -x "$py" ] || { echo "wheels.sh: no .venv (run scripts/setup.sh)" >&2; exit 1; }
pin() { sed -n "s/^$1==\([^ ]*\).*/\1/p" client/requirements.txt; }
installed() { "$py" -c "import importlib.metadata as m; print(m.version('$1'))"; }
rm -rf .whl
mkdir -p .whl
"$py" -m pip wheel -q --no-deps -w .whl ./client
rm -rf client/build client/*.egg-info
"$py" -m pip download -q --no-deps --only-binary=:all: -d .whl --python-version 3.12 \
  --implementation py --platform any "protobuf==$(pin protobuf)" "pytest==$(pin pytest)" "iniconfig==$(installed iniconfig)" \
  "pluggy==$(installed pluggy)" "packaging==$(installed packaging)"
"$py" -m pip download -q --no-deps --only-binary=:all: -d .whl --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
  "confluent-kafka==$(pin confluent-kafka)"
ls .whl
