"""Whole test files rerun in fused eager mode (TORCH_TPU_EAGER_MODE=fused),
in a subprocess: every op, view, in-place write, copy and training loop
they check must give the same results when deferred into graphs."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).parent

FILES = [
    "test_tensor_ops.py",
    "test_views_and_copies.py",
    "test_training.py",
    "test_pointwise_and_optim.py",
    "test_indexing_ops.py",
    "test_random_ops.py",
    "test_float8.py",
    "test_error_inputs.py",
]


@pytest.mark.parametrize("name", FILES)
def test_file_passes_in_fused_mode(name, tmp_path):
    env = dict(os.environ, TORCH_TPU_EAGER_MODE="fused")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", str(HERE / name)],
        env=env, capture_output=True, text=True, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
