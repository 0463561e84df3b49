"""Shared fixtures: every test process runs on the discovered plugin (the
XLA CPU plugin in CI) with a private compile-cache directory."""

from __future__ import annotations

import os
import shutil
import tempfile

# Before torch_tpu is imported: tests never touch the user's real cache. A
# directory made here (a whole run fills it with hundreds of MiB of
# programs) is removed when the run ends.
_OWN_CACHE_DIR = None
if "TORCH_TPU_CACHE_DIR" not in os.environ:
    _OWN_CACHE_DIR = os.environ["TORCH_TPU_CACHE_DIR"] = tempfile.mkdtemp(prefix="torch_tpu_test_cache_")

import numpy as np
import pytest

import torch_tpu
from torch_tpu import runtime


def pytest_unconfigure(config):
    if _OWN_CACHE_DIR is not None:
        shutil.rmtree(_OWN_CACHE_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def client():
    return runtime.client()


@pytest.fixture(scope="session")
def run(client):
    """run(program_text, *numpy_arrays) -> list of numpy outputs."""

    def _run(program: str, *arrays, dtypes=None):
        exe = runtime.compile(program)
        dtypes = dtypes or [None] * len(arrays)
        bufs = [client.to_device(np.asarray(a), dtype=d) for a, d in zip(arrays, dtypes)]
        return [o.to_numpy() for o in exe.execute(bufs, wait=True)]

    return _run


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True)
def no_device_errors_left_pending():
    """A test that provokes several device-side errors (out-of-range indices
    in more than one op) and catches only the first leaves the others
    pending for the next sync, as a program would; they are raised here,
    after the test, so the next test starts clean."""
    yield
    import torch

    if not torch.tpu.is_initialized():
        return
    for _ in range(64):
        try:
            torch.tpu.synchronize()
            return
        except Exception:  # IndexError, ValueError and RuntimeError alike
            continue
