"""The kernels XLA fuses a graph's elementwise ops into are kept small
(fused_graph.cc, DeferredGraph::limit_kernels; docs/eager_modes.md "Large
kernels"): a loop whose every step feeds the next through elementwise ops
alone would otherwise become one kernel, which LLVM compiles in time
quadratic in its size. A value the graph cuts there is returned by the
program as well (unless nothing live needs it, or it is returned anyway);
no value changes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn

import torch_tpu


@pytest.fixture
def fused():
    with torch_tpu.eager_mode("fused"):
        torch_tpu.reset_fused_stats()
        yield


def langevin(x, steps):
    """`x = x + noise` with fresh normal noise each step: each step's
    sampling (about 20 elementwise ops) feeds the next step's sum alone."""
    for _ in range(steps):
        x = x + 0.1 * torch.randn(x.shape, device=x.device)
    return x


def run_in_subprocess(code: str, cwd, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=600, cwd=cwd)


def test_a_loop_adding_fresh_noise_is_cut_into_kernels(fused):
    torch.manual_seed(0)
    got = langevin(torch.zeros(256, device="tpu"), 100).cpu()
    cuts = torch_tpu.fused_stats()["kernel_cuts"]
    # About 20 ops a step against 256 a kernel: a cut every dozen steps.
    assert 4 <= cuts <= 12
    with torch_tpu.eager_mode("strict"):
        torch.manual_seed(0)
        expected = langevin(torch.zeros(256, device="tpu"), 100).cpu()
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_cut_values_match_cpu(fused):
    ys = torch.rand(300, 64, 3)
    x = torch.zeros(64, 3)
    got = torch.zeros(64, 3, device="tpu")
    for y, y_tpu in zip(ys, ys.to("tpu")):
        x = x + torch.exp(y * 0.01) * torch.cos(y)
        got = got + torch.exp(y_tpu * 0.01) * torch.cos(y_tpu)
    got = got.cpu()
    assert torch_tpu.fused_stats()["kernel_cuts"] > 0
    torch.testing.assert_close(got, x, rtol=1e-5, atol=1e-4)


def test_gradients_through_cut_values_match_cpu(fused):
    w_cpu = torch.rand(32, requires_grad=True)
    w_tpu = w_cpu.detach().to("tpu").requires_grad_()
    ys = torch.rand(150, 32)
    for w, device in ((w_cpu, "cpu"), (w_tpu, "tpu")):
        x = torch.zeros(32, device=device)
        for y in ys.to(device):
            x = x + torch.sin(w * y) * torch.exp(-y)
        x.square().sum().backward()
    assert torch_tpu.fused_stats()["kernel_cuts"] > 0
    torch.testing.assert_close(w_tpu.grad.cpu(), w_cpu.grad, rtol=1e-4, atol=1e-4)


def test_values_several_kernels_read_are_not_cut(fused):
    # The cell state of an LSTM runs through time, elementwise, but each
    # step's is read by two kernels (the next step's and its own output's;
    # in backward, the gate gradients' and the next cell gradient's), which
    # XLA computes once: the run only adds its cheap ops to each.
    torch.manual_seed(0)
    lstm = nn.LSTM(8, 16).to("tpu")
    out, _ = lstm(torch.randn(48, 2, 8).to("tpu"))
    out.square().sum().backward()
    lstm.weight_hh_l0.grad.cpu()
    assert torch_tpu.fused_stats()["kernel_cuts"] == 0


def test_compiled_programs_are_cut_the_same_way():
    def accumulate(x, ys):
        for y in ys.unbind(0):
            x = x + torch.exp(y * 0.01) * torch.cos(y)
        return x

    compiled = torch.compile(accumulate, backend="tpu")
    x, ys = torch.zeros(8, 8), torch.rand(120, 8, 8)
    torch_tpu.reset_fused_stats()
    for _ in range(3):  # captured, then replayed
        got = compiled(x.to("tpu"), ys.to("tpu")).cpu()
        torch.testing.assert_close(got, accumulate(x, ys), rtol=1e-5, atol=1e-4)
    assert torch_tpu.fused_stats()["kernel_cuts"] > 0


def test_a_limit_of_zero_turns_cuts_off(tmp_path):
    result = run_in_subprocess("""
        import torch, torch_tpu
        torch_tpu.set_eager_mode("fused")
        x = torch.zeros(16, device="tpu")
        for _ in range(30):
            x = x + torch.randn(16, device="tpu")
        x.cpu()
        print(torch_tpu.fused_stats()["kernel_cuts"])
        """, tmp_path, TORCH_TPU_FUSED_MAX_KERNEL="0")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["0"]


def test_a_bad_limit_is_named(tmp_path):
    result = run_in_subprocess("""
        import torch, torch_tpu
        torch_tpu.set_eager_mode("fused")
        (torch.ones(2, device="tpu") + 1).cpu()
        """, tmp_path, TORCH_TPU_FUSED_MAX_KERNEL="-1")
    assert result.returncode != 0
    assert "TORCH_TPU_FUSED_MAX_KERNEL must be 0 or positive" in result.stderr


def test_cuts_nothing_needs_are_not_computed(fused):
    torch.manual_seed(0)
    dropped = langevin(torch.zeros(256, device="tpu"), 60)
    del dropped
    kept = torch.ones(4, device="tpu") * 2  # the graph's only live result
    assert kept.cpu().tolist() == [2.0] * 4
    stats = torch_tpu.fused_stats()
    assert stats["kernel_cuts"] == 0
    assert stats["results_computed"] == 1
