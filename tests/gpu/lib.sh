# shellcheck shell=bash
# tests/gpu/lib.sh - sourced by the GPU scripts (case.sh, run.sh,
# worker_run.sh) from the repository root. The same scripts run in a build
# tree (ctest -L gpu: IB_GPU_PATH names the build's binary folders, IB_PYTHON
# the .venv) and on the GPU machine from a pack (.devpack/ with its env.sh,
# .whl/ with the client's wheels), which has no build tree.

# PATH: the build's binaries, else the pack's.
ib_gpu_tools() {
  if [ -n "${IB_GPU_PATH:-}" ]; then
    export PATH=$IB_GPU_PATH:$PATH
  elif [ -f .devpack/env.sh ]; then
    # shellcheck disable=SC1091
    source .devpack/env.sh
  fi
  export PATH=$PATH:/usr/local/cuda/bin
  command -v imgbatch >/dev/null || {
    echo "gpu: no imgbatch binary (set IB_GPU_PATH or pack .devpack/)" >&2
    return 1
  }
}

# Exit 77 (ctest's SKIP_RETURN_CODE for the gpu label) when there is no
# device, with the reason `imgbatch version` gives: the probe the worker
# itself uses (loads libcuda.so.1, asks for device 0).
ib_gpu_require_device() {
  local probe
  probe=$(imgbatch version 2>&1) || {
    echo "gpu: imgbatch version failed: $probe" >&2
    exit 1
  }
  if grep -q '^no CUDA device' <<<"$probe"; then
    echo "SKIPPED: $(grep -m1 '^no CUDA device' <<<"$probe")"
    exit 77
  fi
}

# PY: a Python that imports the client, Pillow and pytest: $IB_PYTHON (a
# build tree's .venv), else the machine's python3 with .whl/'s pure-Python
# wheels installed into /tmp/ib_site (the GPU machine: no network).
# shellcheck disable=SC2034
ib_gpu_python() {
  if [ -n "${IB_PYTHON:-}" ]; then
    PY=$IB_PYTHON
    return 0
  fi
  if ! ls .whl/imgbatch_client-*.whl >/dev/null 2>&1; then
    echo "gpu: no Python with the client: set IB_PYTHON, or carry .whl/ (tests/gpu/wheels.sh" \
      "fills it: the client's, protobuf's, pytest's and confluent-kafka's wheels)" >&2
    return 1
  fi
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/ib_site .whl/*.whl >&2 || return 1
  # The machine's own site-packages has a newer protobuf's compiled upb
  # module, which the pure-Python 4.21 runtime would try (and crash) to load.
  mkdir -p /tmp/ib_site/google/_upb
  echo 'raise ImportError("pure-Python protobuf 4.21 only")' >/tmp/ib_site/google/_upb/__init__.py
  export PYTHONPATH=/tmp/ib_site${PYTHONPATH:+:$PYTHONPATH} PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python
  export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
  PY=python3 # read by the sourcing script
}
