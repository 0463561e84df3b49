"""Ops without a lowering: NotImplementedError by default, the opt-in CPU
fallback (warning once per op, counted) when enabled."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest
import torch

import torch_tpu


def unsupported(x):
    # An op with no tpu lowering (and not planned: PyTorch has it for CPU only).
    return torch.histogram(x, 3).hist


def test_default_raises_not_implemented_naming_the_op():
    x = torch.eye(3).to("tpu")
    with pytest.raises(NotImplementedError, match=r"aten::histogram.* is not supported on tpu yet"):
        unsupported(x)


def test_opt_in_fallback_runs_on_cpu_and_counts():
    x = torch.eye(3).to("tpu")
    torch_tpu.reset_cpu_fallback_counts()
    with torch_tpu.cpu_fallback():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = unsupported(x)
            second = unsupported(x)
    assert first.device.type == "tpu"
    want = torch.histogram(torch.eye(3), 3).hist
    torch.testing.assert_close(first.cpu(), want)
    torch.testing.assert_close(second.cpu(), want)
    counts = torch_tpu.cpu_fallback_counts()
    assert sum(v for k, v in counts.items() if "histogram" in k) == 2
    assert sum("no tpu lowering" in str(w.message) for w in caught) == 1
    assert not torch_tpu._C.aten.cpu_fallback_enabled()


def test_ops_without_a_cpu_kernel_do_not_offer_the_fallback():
    x = torch.randn(4).to("tpu")  # _fused_dropout exists for CUDA only
    for enabled in (False, True):
        with torch_tpu.cpu_fallback(enabled):
            with pytest.raises(NotImplementedError, match=r"_fused_dropout .*no CPU kernel .*cannot run it either"):
                torch._fused_dropout(x, 0.5)


def test_environment_variable_enables_fallback(tmp_path):
    code = (
        "import torch, torch_tpu\n"
        "x = torch.eye(2).to('tpu')\n"
        "print(torch.histogram(x + 1, 3).hist.cpu().tolist())\n"
    )
    env = dict(os.environ, TORCH_TPU_CPU_FALLBACK="1")
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    want = torch.histogram(torch.eye(2) + 1, 3).hist.tolist()
    assert str(want) in result.stdout
