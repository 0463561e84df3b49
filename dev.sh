#!/usr/bin/env bash
# The README's two commands:
#   bash dev.sh example   install everything, run examples/quickstart.py
#   bash dev.sh test      install everything, run the whole test suite
# Both are idempotent: a second run reinstalls nothing and rebuilds only
# what changed. Extra arguments go to pytest (test) or the example.
set -euo pipefail
cd "$(dirname "$0")"

VENV=${TORCH_TPU_VENV:-.venv}
PY="$VENV/bin/python"
# Pinned: the torch the extension is built against and the CPU PJRT plugin
# (docs/plugins.md says why this one).
TORCH_PIN="torch==2.13.0"
# Libraries the tests exercise: the Hugging Face ones tests/test_huggingface.py
# runs tiny models of, torchao, whose quantization tests/test_torchao.py runs
# on the device, and JAX, whose lowered functions tests/test_kernels.py
# runs as custom kernels (jax 0.10.2 is the newest for Python 3.11).
TEST_PINS=("transformers==5.23.0" "diffusers==0.42.1" "accelerate==1.15.0" "torchao==0.18.0" "jax==0.10.2" "jaxlib==0.10.2")
CPU_PLUGIN_PIN="xla-cpu-pjrt==0.0.1"

log() { printf '[dev.sh] %s\n' "$*" >&2; }

setup_venv() {
  if [ ! -x "$PY" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV"
  fi
  # Build tools come from this venv so the build needs no isolation.
  local need=()
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 "$PY" -I -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null || need+=("$TORCH_PIN")
  "$PY" -I -c "import numpy, pytest, scikit_build_core" 2>/dev/null || need+=(numpy pytest "scikit-build-core>=0.10" cmake ninja)
  # PyTorch's OpInfo database (tests/test_opinfo.py) imports expecttest.
  "$PY" -I -c "import expecttest" 2>/dev/null || need+=("expecttest==0.3.0")
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 "$PY" -I -c "
import importlib.metadata as m, sys
pins = dict(p.split('==') for p in sys.argv[1:])
sys.exit(any(m.version(n) != v for n, v in pins.items()))" "${TEST_PINS[@]}" 2>/dev/null || need+=("${TEST_PINS[@]}")
  [ -f "$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so" ] || need+=("$CPU_PLUGIN_PIN")
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    "$PY" -m pip install -q --disable-pip-version-check "${need[@]}"
  fi
}

source_stamp() {
  # Everything the build compiles: the package and the C++ tests.
  { git ls-files -co --exclude-standard -- csrc cmake torch_tpu tests/cpp CMakeLists.txt pyproject.toml 2>/dev/null \
      || find csrc cmake torch_tpu tests/cpp CMakeLists.txt pyproject.toml -type f; } \
    | LC_ALL=C sort | xargs sha1sum | sha1sum | cut -d' ' -f1
}

build() {
  local stamp_file="$VENV/.torch_tpu_stamp" stamp
  stamp=$(source_stamp)
  if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ] \
      && "$PY" -I -c "import torch_tpu._C" 2>/dev/null; then
    return
  fi
  log "building torch_tpu (incremental; ccache when present)"
  # Paths relative to the checkout in ccache's hashes: another clone of the
  # same sources (CI's) reuses the compiled objects.
  CCACHE_BASEDIR="$PWD" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    "$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
      --config-settings=cmake.define.TORCH_TPU_CPP_TESTS=ON .
  echo "$stamp" > "$stamp_file"
}

cmd=${1:-}
shift || true
case "$cmd" in
  example)
    setup_venv; build
    exec "$PY" examples/quickstart.py "$@" ;;
  test)
    setup_venv; build
    # Plain pytest (not `python -m pytest`) so the installed package, not
    # the source folder, is imported.
    exec "$VENV/bin/pytest" tests "$@" ;;
  setup)
    setup_venv; build ;;
  *)
    echo "usage: bash dev.sh example|test|setup [args...]" >&2; exit 2 ;;
esac
