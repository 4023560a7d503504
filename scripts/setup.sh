#!/usr/bin/env bash
# Idempotent set-up on Debian 12 with the CUDA toolkit: apt packages that are
# missing, the pinned Python virtualenv (.venv) with the client package
# installed in it, and the build (build/).
# Environment: IB_BUILD_DIR (default build), IB_CMAKE_ARGS (extra cmake args,
# after the defaults: -DIB_WERROR=ON and the .venv's IB_PYTHON).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

pkgs=(build-essential cmake pkg-config librdkafka-dev libvips-dev protobuf-c-compiler
      libprotobuf-c-dev protobuf-compiler libcriterion-dev kcat libmicrohttpd-dev libdeflate-dev
      libpng-dev libjpeg62-turbo-dev
      prometheus shellcheck
      python3-venv
      clang libclang-rt-14-dev clang-format)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "setup: the CUDA toolkit (NVRTC) is required: install it under /usr/local/cuda" >&2
  exit 1
fi
export PATH=/usr/local/cuda/bin:$PATH

req=client/requirements.txt
stamp=.venv/.requirements-$(sha256sum "$req" | cut -c1-16)
if [ ! -f "$stamp" ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip==24.3.1
  .venv/bin/python -m pip install -q -r "$req"
  touch "$stamp"
fi
# The deploy suite's pins (yamllint, kubernetes-validate), stamped apart.
deploy_req=tests/py/deploy/requirements.txt
deploy_stamp=.venv/.deploy-requirements-$(sha256sum "$deploy_req" | cut -c1-16)
if [ ! -f "$deploy_stamp" ]; then
  .venv/bin/python -m pip install -q -r "$deploy_req"
  rm -f .venv/.deploy-requirements-*
  touch "$deploy_stamp"
fi

# The Python client as an installed package (imgbatch-client, built by pip
# from client/ with its imgbatch_pb2 generated at build time): the pytest
# suites import it from .venv, not from the source tree. Reinstalled whenever
# client/ or the proto changes; its dependencies are the pins above.
client_hash=$(find client/imgbatch client/pyproject.toml client/setup.py client/MANIFEST.in proto \
                -type f -not -name '*.pyc' -not -name 'imgbatch_pb2.py*' -print0 |
              sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
if [ ! -f ".venv/.client-$client_hash" ]; then
  rm -rf client/build client/*.egg-info  # no stale modules from an earlier build tree
  .venv/bin/python -m pip install -q --no-deps --force-reinstall ./client
  rm -rf client/build client/*.egg-info
  rm -f .venv/.client-*
  touch ".venv/.client-$client_hash"
fi

build=${IB_BUILD_DIR:-build}
# A developer's build treats warnings as errors, as CI does (IB_CMAKE_ARGS
# comes after, so -DIB_WERROR=OFF there wins); a plain cmake build does not.
# shellcheck disable=SC2086
cmake -S . -B "$build" -DIB_PYTHON="$root/.venv/bin/python" -DIB_WERROR=ON ${IB_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
