"""Long runs of cheap elementwise ops in one fused graph are cut by
barriers (fused_graph.cc, DeferredGraph::limit_chains; docs/eager_modes.md
"Long runs of cheap ops"): XLA would otherwise recompute a run from its
start for every value of it that is kept. A barrier changes no value but
a subnormal's, a signaling NaN's, and the rounding of a multiply-add it
separates."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn

import torch_tpu

STEPS = 100  # x = x * a + b: two cheap ops a step, 200 in a row


@pytest.fixture
def fused():
    with torch_tpu.eager_mode("fused"):
        torch_tpu.reset_fused_stats()
        yield


def kept_recurrence(x, steps=STEPS):
    outs = []
    for _ in range(steps):
        x = x * 1.01 + 0.5
        outs.append(x)
    return outs


def in_subprocess(code: str, cwd, **env) -> str:
    """Runs `code` in a fresh process with extra environment variables;
    returns its stdout."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=600, cwd=cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def assert_cut_and_bitwise_equal_to_strict(run):
    """`run()`, which returns its values' bits, gets barriers in fused mode
    and returns what it returns in strict eager."""
    fused_values = run()
    assert torch_tpu.fused_stats()["chain_barriers"] > 0
    with torch_tpu.eager_mode("strict"):
        strict_values = run()
    assert torch.equal(fused_values, strict_values)


def test_a_kept_recurrence_is_cut_every_32_cheap_ops(fused):
    x = torch.randn(16, 16).to("tpu")
    outs = kept_recurrence(x)
    got = torch.stack([o.cpu() for o in outs])
    # Each step adds 2 to the run; a value 32 long is cut before it is used
    # again: a barrier every 16 steps.
    assert torch_tpu.fused_stats()["chain_barriers"] == (STEPS - 1) // 16
    expected = torch.stack(kept_recurrence(x.cpu()))
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)


def test_barriers_change_no_bit(fused):
    # Adds, negations and reshapes, which XLA does not contract with each
    # other (a multiply and the add after it it may: see the next test), so
    # the fused graph computes each value as strict eager does.
    def run():
        x = torch.randn(16, 16, generator=torch.Generator().manual_seed(0))
        x[0, :3] = torch.tensor([float("inf"), float("-inf"), -0.0])  # (a NaN's sign is XLA's choice)
        y, outs = x.to("tpu"), []
        for _ in range(100):
            y = (-(y + 0.25)).reshape(256).reshape(16, 16)
            outs.append(y)
        return torch.stack([o.cpu() for o in outs]).view(torch.int32)

    assert_cut_and_bitwise_equal_to_strict(run)


def test_a_barrier_between_a_multiply_and_its_add_rounds_the_product(tmp_path):
    # XLA contracts `y * a + b` into one fused multiply-add; a barrier that
    # falls between the two rounds the product first, as a graph's end
    # does: values within 2 ulp of the graph without barriers.
    code = """
        import torch, torch_tpu
        torch_tpu.set_eager_mode("fused")
        x = torch.randn(16, 16, generator=torch.Generator().manual_seed(0))
        y, outs = x.to("tpu"), []
        for _ in range(100):
            y = (y * 1.01 + 0.5).reshape(256).reshape(16, 16)
            outs.append(y)
        bits = torch.stack([o.cpu() for o in outs]).view(torch.int32).flatten().tolist()
        print(torch_tpu.fused_stats()["chain_barriers"])
        print(bits)
    """
    limited = in_subprocess(code, tmp_path).splitlines()
    unlimited = in_subprocess(code, tmp_path, TORCH_TPU_FUSED_MAX_CHAIN="0").splitlines()
    assert int(limited[0]) > 0 and int(unlimited[0]) == 0
    ulps = (torch.tensor(eval(limited[1])) - torch.tensor(eval(unlimited[1]))).abs()
    assert ulps.max() <= 2


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_floating_types_get_barriers_too(fused, dtype):
    x = torch.randn(8, 8, dtype=dtype)
    outs = kept_recurrence(x.to("tpu"), steps=40)
    got = torch.stack([o.cpu() for o in outs])
    # (16-bit arithmetic runs in f32 here: the converts lengthen the run.)
    assert torch_tpu.fused_stats()["chain_barriers"] >= (40 - 1) // 16
    # Compare against the same ops on tpu one program each (CPU rounds
    # 16-bit arithmetic differently from XLA).
    with torch_tpu.eager_mode("strict"):
        strict = torch.stack([o.cpu() for o in kept_recurrence(x.to("tpu"), steps=40)])
    torch.testing.assert_close(got, strict, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.int8])
def test_integer_runs_are_cut_and_stay_exact(fused, dtype):
    # Wrapping around included: a barrier divides by an integer 1.
    x = torch.arange(64).reshape(8, 8).to(dtype)
    x[0, :2] = torch.tensor([torch.iinfo(dtype).min, torch.iinfo(dtype).max], dtype=dtype)
    outs = []
    y = x.to("tpu")
    for _ in range(60):
        y = y * 3 + 1
        outs.append(y)
    got = torch.stack([o.cpu() for o in outs])
    assert torch_tpu.fused_stats()["chain_barriers"] > 0
    expected = []
    for _ in range(60):
        x = x * 3 + 1
        expected.append(x)
    assert torch.equal(got, torch.stack(expected))


def partial_writes(counter, masks, steps):
    """An integer counter and a boolean mask updated an element at a time,
    as a training loop's bookkeeping is: partial writes chain each update
    onto the last."""
    for i in range(steps):
        counter[i % 5] += i
        masks[3] ^= True
        masks[i % 8] |= i % 3 == 0
    return counter, masks


def test_partial_writes_of_integers_and_booleans_are_cut(fused):
    # Uncut, 100 such steps took minutes to compile (XLA copied each write's
    # run into the next): 13 s for the counter alone, 103 s for the mask.
    counter, masks = torch.zeros(5, dtype=torch.int64), torch.zeros(8, dtype=torch.bool)
    got = partial_writes(counter.to("tpu"), masks.to("tpu"), 100)
    got = [t.cpu() for t in got]
    assert torch_tpu.fused_stats()["chain_barriers"] > 0
    for g, want in zip(got, partial_writes(counter, masks, 100)):
        assert torch.equal(g, want)


def test_complex_runs_are_cut_and_change_no_bit(fused):
    def run():
        x = torch.randn(8, 8, dtype=torch.complex64, generator=torch.Generator().manual_seed(0))
        x[0, :2] = torch.tensor([complex(float("inf"), -0.0), complex(-0.0, float("-inf"))])
        y, outs = x.to("tpu"), []
        for _ in range(60):
            y = -(y + (0.25 - 0.5j))
            outs.append(y)
        return torch.view_as_real(torch.stack([o.cpu() for o in outs])).view(torch.int32)

    assert_cut_and_bitwise_equal_to_strict(run)


def test_float8_runs_are_cut_through_their_bits(fused):
    def run():
        bits = torch.arange(256, dtype=torch.int32).to(torch.uint8)  # every pattern, NaNs too
        y, outs = bits.view(torch.float8_e4m3fn).to("tpu"), []
        for _ in range(40):
            y = -y.reshape(16, 16).reshape(256)
            outs.append(y)
        return torch.stack([o.cpu() for o in outs]).view(torch.uint8)

    assert_cut_and_bitwise_equal_to_strict(run)


def test_an_in_place_recurrence_keeps_its_buffer(fused):
    x = torch.randn(32, 32)
    t = x.to("tpu")
    for _ in range(STEPS):
        t.mul_(1.01).add_(0.5)
    got = t.cpu()
    stats = torch_tpu.fused_stats()
    assert stats["chain_barriers"] > 0
    assert stats["buffers_donated"] >= 1  # the program still updates t in place
    for _ in range(STEPS):
        x.mul_(1.01).add_(0.5)
    torch.testing.assert_close(got, x, rtol=1e-5, atol=1e-4)


def test_short_runs_get_no_barrier_and_no_kernel_cut(fused):
    # A training step of an MLP with layer norm: its runs and its kernels
    # (tests/test_fused_kernels.py) end at dots and reductions long before
    # the limits.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 4)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(3):
        loss = model(torch.randn(8, 16).to("tpu")).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        loss.item()
    stats = torch_tpu.fused_stats()
    assert stats["chain_barriers"] == 0
    assert stats["kernel_cuts"] == 0


def test_lstm_over_a_long_sequence_matches_cpu(fused):
    # The cell state is a run of multiplies and adds through time, kept
    # for backward at every step.
    torch.manual_seed(0)
    cpu = nn.LSTM(8, 16)
    tpu = nn.LSTM(8, 16).to("tpu")
    tpu.load_state_dict(cpu.state_dict())
    x = torch.randn(48, 2, 8)
    out_cpu, _ = cpu(x)
    out_cpu.square().sum().backward()
    out_tpu, _ = tpu(x.to("tpu"))
    out_tpu.square().sum().backward()
    torch.testing.assert_close(out_tpu.cpu(), out_cpu, rtol=1e-4, atol=1e-5)
    for p_tpu, p_cpu in zip(tpu.parameters(), cpu.parameters()):
        torch.testing.assert_close(p_tpu.grad.cpu(), p_cpu.grad, rtol=1e-4, atol=1e-4)
    assert torch_tpu.fused_stats()["chain_barriers"] > 0


def test_compiled_programs_are_cut_the_same_way():
    def recurrence(x):
        return torch.stack(kept_recurrence(x, steps=60))

    compiled = torch.compile(recurrence, backend="tpu")
    x = torch.randn(8, 8)
    torch_tpu.reset_fused_stats()
    for _ in range(3):  # captured, then replayed
        got = compiled(x.to("tpu")).cpu()
        torch.testing.assert_close(got, recurrence(x), rtol=1e-5, atol=1e-4)
    assert torch_tpu.fused_stats()["chain_barriers"] > 0


def test_a_bad_limit_is_named(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", "import torch, torch_tpu; torch_tpu.set_eager_mode('fused');"
         "(torch.ones(2, device='tpu') + 1).cpu()"],
        env={**os.environ, "TORCH_TPU_FUSED_MAX_CHAIN": "-1"}, capture_output=True, text=True, timeout=300,
        cwd=tmp_path)
    assert result.returncode != 0
    assert "TORCH_TPU_FUSED_MAX_CHAIN must be 0 or positive" in result.stderr
