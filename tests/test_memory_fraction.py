"""torch.tpu.set_per_process_memory_fraction: a cap on the device memory of
this process, checked where memory is taken (a program's results and
scratch buffers, a copy to the device) before anything runs, in every eager
mode and under torch.compile."""

from __future__ import annotations

import gc

import pytest
import torch
import torch_tpu

MIB = 1 << 20


@pytest.fixture(autouse=True)
def uncapped():
    yield
    torch.tpu.set_per_process_memory_fraction(1.0)


def cap_at(extra_bytes: int) -> None:
    """Caps the device at what is allocated now plus `extra_bytes`."""
    gc.collect()
    torch.tpu.synchronize()
    total = torch.tpu.mem_get_info()[1]
    torch.tpu.set_per_process_memory_fraction((torch.tpu.memory_allocated() + extra_bytes) / total)


def test_fraction_is_one_until_set_and_reads_back():
    assert torch.tpu.get_per_process_memory_fraction() == 1.0
    torch.tpu.set_per_process_memory_fraction(0.5, device=0)
    assert torch.tpu.get_per_process_memory_fraction("tpu:0") == 0.5
    assert torch.tpu.get_per_process_memory_fraction() == 0.5


def test_bad_fractions_are_refused_as_cuda_refuses_them():
    with pytest.raises(ValueError, match=r"Invalid fraction value: 1.5. Allowed range: 0~1"):
        torch.tpu.set_per_process_memory_fraction(1.5)
    with pytest.raises(ValueError, match="Invalid fraction value"):
        torch.tpu.set_per_process_memory_fraction(-0.1)
    with pytest.raises(TypeError, match="must be `float`"):
        torch.tpu.set_per_process_memory_fraction(1)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.tpu.set_per_process_memory_fraction(0.5, device=torch.tpu.device_count())
    assert torch.tpu.get_per_process_memory_fraction() == 1.0


def test_an_op_past_the_cap_raises_naming_it_and_changes_nothing():
    x = torch.arange(MIB, dtype=torch.float32, device="tpu")  # 4 MiB
    out = torch.zeros(MIB, device="tpu")
    cap_at(6 * MIB)
    oom_before = torch.tpu.memory_stats()["num_ooms"]
    y = x + 1  # 4 MiB: fits
    with pytest.raises(torch.OutOfMemoryError, match=r"tpu out of memory\. Tried to allocate 4\.00 MiB for the "
                       r"results of aten::mul\. tpu:0 is limited to .* \(set_per_process_memory_fraction\(.*\)\), "
                       r"of which .* is allocated"):
        x * 2
    with pytest.raises(torch.OutOfMemoryError, match="aten::mul"):
        torch.mul(x, 2, out=out)
    assert torch.tpu.memory_stats()["num_ooms"] == oom_before + 2
    del y
    assert torch.equal((x * 2).cpu(), torch.arange(MIB, dtype=torch.float32) * 2)
    torch.tpu.set_per_process_memory_fraction(1.0)
    assert out.count_nonzero().item() == 0  # the out= tensor kept its value


def test_in_place_updates_reuse_their_buffer_under_the_cap():
    x = torch.ones(MIB, device="tpu")
    cap_at(MIB // 2)  # less than one more tensor of x's size
    for _ in range(3):
        x.mul_(2).add_(1)
    assert torch.equal(x.cpu(), torch.full((MIB,), 15.0))


def test_a_copy_to_the_device_past_the_cap_raises():
    cap_at(2 * MIB)
    small = torch.ones(MIB // 4).to("tpu")  # 1 MiB: fits
    with pytest.raises(torch.OutOfMemoryError, match=r"Tried to allocate 4\.00 MiB for a copy from the host"):
        torch.ones(MIB).to("tpu")
    assert small.sum().item() == MIB // 4


def test_a_fused_graph_past_the_cap_stays_pending_and_runs_once_memory_is_freed():
    base = torch.arange(MIB, dtype=torch.float32)
    x = base.to("tpu")
    with torch_tpu.eager_mode("fused"):
        cap_at(6 * MIB)
        x.mul_(3)  # an update the failed run must not lose
        a = x + 1
        b = x + 2
        with pytest.raises(torch.OutOfMemoryError, match="fused graph"):
            torch.tpu.synchronize()
        del b  # the retried graph computes only what is still held
        torch.tpu.synchronize()
        assert torch.equal(x.cpu(), base * 3)
        assert torch.equal(a.cpu(), base * 3 + 1)


def test_a_fused_graph_past_the_cap_runs_when_the_cap_is_raised():
    x = torch.ones(MIB, device="tpu")
    with torch_tpu.eager_mode("fused"):
        cap_at(2 * MIB)
        y = torch.stack([x, x * 2, x * 3])
        with pytest.raises(torch.OutOfMemoryError):
            y.sum().item()
        torch.tpu.set_per_process_memory_fraction(1.0)
        assert y.sum().item() == 6 * MIB


def test_a_compiled_function_past_the_cap_raises_and_runs_once_raised():
    @torch.compile(backend="tpu")
    def f(x):
        return torch.cat([x * 2, x + 1])

    x = torch.ones(MIB, device="tpu")
    expected = f(x).cpu()
    cap_at(4 * MIB)
    with pytest.raises(torch.OutOfMemoryError):
        f(x)
    torch.tpu.set_per_process_memory_fraction(1.0)
    assert torch.equal(f(x).cpu(), expected)


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_a_training_step_runs_under_a_cap_above_its_peak(mode):
    def losses(cap: float | None) -> list[float]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)).to("tpu")
        opt = torch.optim.AdamW(model.parameters())
        data = torch.randn(128, 64).to("tpu")
        seen = []
        with torch_tpu.eager_mode(mode):
            for step in range(4):
                if step == 1 and cap is not None:
                    torch.tpu.set_per_process_memory_fraction(cap)
                opt.zero_grad()
                loss = model(data).square().mean()
                loss.backward()
                opt.step()
                seen.append(loss.item())
        return seen

    gc.collect()
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    reference = losses(None)
    peak = torch.tpu.max_memory_allocated()
    assert losses(1.2 * peak / torch.tpu.mem_get_info()[1]) == reference
