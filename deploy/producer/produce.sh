#!/usr/bin/env bash
# The compose file's producer example: writes N sample PNGs with Pillow,
# publishes one Job per file with the client's CLI, waits for the Results
# (duplicates collapsed) and writes the images under /results. Repeats every
# INTERVAL seconds so the dashboard has live jobs (INTERVAL=0: once).
set -euo pipefail
brokers=${BROKERS:-kafka:9092}
n=${N:-32}
graph=${GRAPH:-gaussian_blur(2)|invert}
interval=${INTERVAL:-5}
mkdir -p samples /results
python - "$n" <<'PY'
import sys
from PIL import Image
for i in range(int(sys.argv[1])):
    im = Image.radial_gradient("L").resize((256 + i, 192 + i)).convert("RGB")
    im.save(f"samples/sample-{i:03d}.png")
PY
while :; do
  python -m imgbatch produce samples/*.png --brokers "$brokers" --topic imgbatch.jobs \
      --graph "$graph" --output png --wait 120 --results-topic imgbatch.results --out /results
  [ "$interval" = 0 ] && break
  sleep "$interval"
done
