"""The C++ tests of hlo/, pjrt/ and cache/: executables that link no PyTorch
library (proving those layers stand alone), built by `bash dev.sh` with
TORCH_TPU_CPP_TESTS=ON into the CMake build directory."""

from __future__ import annotations

import glob
import subprocess
from pathlib import Path

import pytest

from torch_tpu import _plugin

ROOT = Path(__file__).resolve().parents[1]


def find_binary(name: str) -> str:
    hits = sorted(glob.glob(str(ROOT / "build" / "*" / "cpp_tests" / name)))
    if not hits:
        pytest.fail(f"{name} was not built: run `bash dev.sh setup` (it builds the C++ tests)")
    return hits[-1]


def test_native_libraries_do_not_link_torch():
    for name in ("hlo_print_test", "cache_test"):
        libs = subprocess.run(["ldd", find_binary(name)], capture_output=True, text=True).stdout
        # Library names only: a load address can read "...c10..." in hex.
        names = [line.split()[0] for line in libs.splitlines() if line.strip()]
        assert not [n for n in names if n.startswith(("libtorch", "libc10"))], libs


def test_hlo_builder_prints_and_validates():
    result = subprocess.run([find_binary("hlo_print_test")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_compile_cache_and_disk_tier(tmp_path):
    result = subprocess.run([find_binary("cache_test"), _plugin.find_cpu_plugin()],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "ALL OK" in result.stdout
