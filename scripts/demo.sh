#!/usr/bin/env bash
# Set up (idempotent), then run the main job: sample jobs built with the
# Python client go through imgbatch (the GPU when one is present, else the
# CPU reference backend, said loudly) and result images land in demo-out/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
mkdir -p demo-out
backend=cpu
if build/imgbatch version | grep -q '^cuda device 0:'; then
  backend=cuda
else
  echo "demo: NO CUDA DEVICE - running on the CPU reference backend ($(build/imgbatch version | grep '^no CUDA device'))" >&2
fi
PYTHONPATH=client .venv/bin/python scripts/demo_jobs.py --bin build/imgbatch --backend "$backend" --out demo-out
