#!/usr/bin/env bash
# Runs benchmarks/modes.py on an NVIDIA GPU machine whose python3 has a
# CUDA build of torch (2.11 - 2.14) and jax-cuda13-pjrt: builds torch_tpu
# against that torch into a folder of its own (nothing is installed), and
# the tpu device runs on the CUDA PJRT plugin beside PyTorch's CUDA eager.
#
#   bash benchmarks/gpu.sh [modes.py arguments]
#
# SITE (default /tmp/torch_tpu_site) receives the build; a later run reuses
# it. The torchax rows need torchax importable by python3
# (TORCH_TPU_TORCHAX_PYTHON names another interpreter).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
site=${SITE:-/tmp/torch_tpu_site}
if [ ! -f "$site/torch_tpu/__init__.py" ]; then
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    python3 -m pip install -q --no-build-isolation --no-deps --target "$site" "$repo"
fi
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
export TORCH_TPU_TORCHAX_PYTHON=${TORCH_TPU_TORCHAX_PYTHON:-$(command -v python3)}
# Away from the checkout, whose torch_tpu folder would shadow the build.
cd "$site"
exec python3 "$repo/benchmarks/modes.py" "$@"
