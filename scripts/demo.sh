#!/usr/bin/env bash
# Set up (idempotent), then run the main job: `imgbatch demo` starts the
# embedded broker and a worker (the GPU when one is present, else the CPU
# reference backend, said loudly), publishes the sample jobs written by
# scripts/demo_jobs.py with the Python client, and writes the result images
# to demo-out/ with a table comparing each to Pillow 12.3.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
mkdir -p demo-out
.venv/bin/python scripts/demo_jobs.py --out demo-out
exec build/imgbatch demo --jobs demo-out/jobs.bin --expect demo-out/expected.bin --out demo-out "$@"
