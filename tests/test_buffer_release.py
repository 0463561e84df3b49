"""Dropped device buffers are destroyed off the dropping thread
(csrc/runtime/buffer_release.h): the last reference to a value the device
is still computing goes without the host waiting for the device, the plugin
gets the memory back at the next synchronize or empty_cache, and a process
that drops such values as it exits ends cleanly."""

from __future__ import annotations

import gc
import subprocess
import sys
import tempfile
import textwrap

import torch

import torch_tpu
from torch_tpu import _C


def busy_value(a: torch.Tensor) -> torch.Tensor:
    """A result the device is still computing: an in-place update (whose
    program donates its input) queued behind two large matmuls. XLA's CPU
    plugin made the destroy of such a buffer wait for all three programs."""
    x = (a @ a) @ a
    x.add_(1)
    return x


def waiting_after(settle) -> int:
    """Buffers still awaiting release right after `settle()` (synchronize,
    empty_cache), with the garbage collector held off: a collection there
    could drop an earlier test's tensors in between."""
    gc.collect()
    gc.disable()
    try:
        settle()
        return _C.device.buffers_awaiting_release(0)
    finally:
        gc.enable()


def test_dropping_a_value_being_computed_does_not_wait_for_the_device():
    a = torch.randn(2048, 2048, device="tpu")
    expected = ((a.cpu() @ a.cpu()) @ a.cpu() + 1).abs().sum()  # no cancellation
    with torch_tpu.eager_mode("strict"):
        # Compiles the programs first: compiling one after the matmuls were
        # launched could outlast them.
        busy_value(a).abs().sum().cpu()
        torch.tpu.synchronize()
        x = busy_value(a)
        total = x.abs().sum()
        del x
        # The matmuls take 150 ms or more; had the drop waited for them, the
        # device would be idle by now.
        assert not torch.tpu.current_stream().query()
        torch.testing.assert_close(total.cpu(), expected, rtol=1e-4, atol=1e-2)
        assert waiting_after(torch.tpu.synchronize) == 0


def test_empty_cache_hands_dropped_buffers_back():
    a = torch.randn(1024, 1024, device="tpu")
    with torch_tpu.eager_mode("strict"):
        x = busy_value(a)
        del x
        assert waiting_after(torch.tpu.empty_cache) == 0
        assert torch.tpu.memory_allocated() >= 4 << 20  # `a` is still there


def test_training_leaves_nothing_waiting_after_synchronize():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(32, 64, device="tpu")
    for mode in ("strict", "fused"):
        with torch_tpu.eager_mode(mode):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                model(x).square().mean().backward()
                opt.step()
            assert waiting_after(torch.tpu.synchronize) == 0


def test_process_dropping_busy_values_at_exit_ends_cleanly():
    # The last statement drops a value still being computed; a module-level
    # one goes while the interpreter finalizes, after the release thread
    # was stopped (torch_tpu/_exit.py).
    code = textwrap.dedent("""
        import torch
        a = torch.randn(2048, 2048, device="tpu")
        kept = a @ a
        kept.add_(1)
        x = a @ a
        x.add_(1)
        del x
        print("done")
    """)
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], cwd=tempfile.gettempdir(), capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stdout + proc.stderr
