"""Interpreter exit: the autograd engine's tpu threads free their graph
tasks (and the Python objects those hold) before finalization, and programs
still running are waited for before the C++ teardown (torch_tpu/_exit.py),
so the process ends with its own status instead of aborting or crashing."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import weakref

import torch

import torch_tpu
from torch_tpu import _C


class _Payload:
    pass


class _Boom(Exception):
    pass


def test_release_frees_the_failed_graph_task():
    # The backward raises on the tpu's autograd thread; its graph task keeps
    # the exception (and what it references) until that thread frees it.
    # After the release, nothing holds it.
    refs = []

    class Fail(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            error = _Boom("backward failed")
            error.payload = _Payload()
            refs.append(weakref.ref(error.payload))
            raise error

    x = torch.ones(3, device="tpu", requires_grad=True)
    try:
        Fail.apply(x).sum().backward()
    except _Boom:
        pass
    _C.device.release_autograd_graph_tasks(torch_tpu.tpu.device_count())
    gc.collect()
    assert len(refs) == 1 and refs[0]() is None


SCRIPT = textwrap.dedent("""
    import torch
    c = torch.tensor([2.0, 3.0], device="tpu", requires_grad=True)

    class Fail(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("backward failed")

    try:
        Fail.apply(c).sum().backward()
    except ValueError:
        pass
""")


def test_process_exits_cleanly_after_failed_backward(tmp_path):
    # Without the release about one run in ten aborted (status 134).
    env = dict(os.environ)
    for _ in range(4):
        r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]


LAST_LINE_LAUNCHES = textwrap.dedent("""
    import torch
    a = torch.randn(4096, 4096, device="tpu")
    b = a @ a
""")


def test_process_exits_cleanly_while_a_program_runs(tmp_path):
    # The script ends while its matrix product still runs on the plugin's
    # threads; the exit hook waits for it. Without the wait two runs in three
    # crashed in the C++ static destructors (status 139).
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", LAST_LINE_LAUNCHES], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]

