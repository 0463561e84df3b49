"""torch.nn.DataParallel over tpu devices, and the torch.nn.parallel.comm
functions it is built on (torch_tpu/_data_parallel.py), against CPU: the
replicas' outputs and gradients, inputs on the host or a device, subsets of
devices and other output devices, training steps, and the comm functions'
results, aliasing and errors."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn as nn
from torch.nn.parallel import comm

DEVICES = torch.tpu.device_count()
pytestmark = pytest.mark.skipif(DEVICES < 2, reason="needs two tpu devices")


def tpu(i: int) -> torch.device:
    return torch.device("tpu", i)


def mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3))


def pair(seed: int = 0):
    cpu = mlp(seed)
    dev = mlp(seed).to("tpu")
    return cpu, dev


@pytest.mark.parametrize("input_on", ["cpu", "tpu"])
def test_forward_and_gradients_match_cpu(input_on):
    cpu, dev = pair()
    dp = nn.DataParallel(dev)
    assert dp.device_ids == list(range(DEVICES)) and dp.output_device == 0
    x = torch.randn(4 * DEVICES + 1, 8)  # uneven chunks
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NCCL or other warnings on the way
        out = dp(x if input_on == "cpu" else x.to("tpu"))
        assert out.device == tpu(0)
        out.square().sum().backward()
    expected = cpu(x)
    expected.square().sum().backward()
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-5)
    for (name, p), q in zip(dev.named_parameters(), cpu.parameters()):
        assert p.grad.device == tpu(0), name
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-5, atol=1e-5, msg=name)


def test_device_subset_output_device_and_keyword_inputs():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(5, 2)

        def forward(self, x, *, scale):
            return self.lin(x) * scale, x.sum(1)

    torch.manual_seed(1)
    cpu = Scaled()
    dev = Scaled().to(tpu(1))
    dev.load_state_dict(cpu.state_dict())
    dp = nn.DataParallel(dev, device_ids=[1, 0], output_device=0)
    x = torch.randn(6, 5)
    out, sums = dp(x.to(tpu(1)), scale=2.0)
    assert out.device == tpu(0) and sums.device == tpu(0)
    torch.testing.assert_close(out.cpu(), cpu(x, scale=2.0)[0])
    torch.testing.assert_close(sums.cpu(), x.sum(1))


def test_training_steps_match_cpu():
    cpu, dev = pair(2)
    dp = nn.DataParallel(dev)
    opt_cpu = torch.optim.SGD(cpu.parameters(), lr=0.1, momentum=0.9)
    opt_dev = torch.optim.SGD(dev.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(3)
    for _ in range(3):
        x, y = torch.randn(8, 8, generator=g), torch.randint(0, 3, (8,), generator=g)
        for model, opt, device in ((cpu, opt_cpu, "cpu"), (dp, opt_dev, "tpu")):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
    for p, q in zip(dev.parameters(), cpu.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-5, atol=1e-5)


def test_replicas_run_under_the_callers_autocast():
    """Autocast is per thread: the replicas' threads take the caller's tpu
    autocast state (PyTorch's parallel_apply carries CUDA's only)."""
    cpu, dev = pair(4)
    dp = nn.DataParallel(dev)
    x = torch.randn(8, 8)
    with torch.autocast("tpu", dtype=torch.bfloat16):
        out = dp(x.to("tpu"))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = cpu(x)
    assert out.dtype == expected.dtype == torch.bfloat16
    torch.testing.assert_close(out.cpu(), expected, rtol=2e-2, atol=2e-2)
    assert dp(x.to("tpu")).dtype == torch.float32  # and not outside it


def test_broadcast_and_broadcast_coalesced():
    t = torch.randn(3, 4, device="tpu")
    copies = comm.broadcast(t, [0, 1])
    assert copies[0] is t and copies[1].device == tpu(1)
    torch.testing.assert_close(copies[1].cpu(), t.cpu())
    out = [torch.empty(3, 4, device=tpu(i)) for i in range(2)]
    assert comm.broadcast(t, out=out)[1] is out[1]
    torch.testing.assert_close(out[1].cpu(), t.cpu())
    with pytest.raises(RuntimeError, match="Exactly one of 'devices' and 'out'"):
        comm.broadcast(t)

    # Mixed dtypes, one tensor larger than the buffer, 0-dim and empty ones.
    tensors = [torch.randn(5, device="tpu"), torch.arange(4, device="tpu"), torch.randn(300, device="tpu"),
               torch.tensor(2.5, device="tpu"), torch.empty(0, 3, device="tpu"), torch.randn(2, 2, device="tpu")]
    result = comm.broadcast_coalesced(tensors, [0, 1], buffer_size=256)
    assert len(result) == 2 and all(a is b for a, b in zip(result[0], tensors))
    for a, b in zip(result[1], tensors):
        assert a.device == tpu(1) and a.dtype == b.dtype and a.shape == b.shape
        torch.testing.assert_close(a.cpu(), b.cpu())
    with pytest.raises(RuntimeError, match=r"must be on devices\[0\]"):
        comm.broadcast_coalesced(tensors, [1, 0])


def test_scatter_and_gather():
    t = torch.arange(30.0).reshape(10, 3).to("tpu")
    chunks = comm.scatter(t, [0, 1])
    assert [c.device for c in chunks] == [tpu(0), tpu(1)]
    assert chunks[0].untyped_storage().data_ptr() == t.untyped_storage().data_ptr()  # a view where it already was
    torch.testing.assert_close(torch.cat([c.cpu() for c in chunks]), t.cpu())
    chunks = comm.scatter(t.cpu(), [1, 0], chunk_sizes=[1, 2], dim=1)
    assert [tuple(c.shape) for c in chunks] == [(10, 1), (10, 2)] and chunks[0].device == tpu(1)
    torch.testing.assert_close(chunks[1].cpu(), t.cpu()[:, 1:])
    out = [torch.empty(4, 3, device=tpu(1)), torch.empty(6, 3, device=tpu(0))]
    comm.scatter(t, out=out)
    torch.testing.assert_close(out[1].cpu(), t.cpu()[4:])
    with pytest.raises(RuntimeError, match="same length"):
        comm.scatter(t, [0, 1], chunk_sizes=[10])
    with pytest.raises(RuntimeError, match="sum to 10"):
        comm.scatter(t, [0, 1], chunk_sizes=[4, 4])

    parts = [torch.randn(2, 3, device=tpu(1)), torch.randn(4, 3, device=tpu(0))]
    expected = torch.cat([p.cpu() for p in parts])
    on_cpu = comm.gather(parts, destination=-1)
    assert on_cpu.device.type == "cpu"
    torch.testing.assert_close(on_cpu, expected)
    with torch.tpu.device(1):
        assert comm.gather(parts).device == tpu(1)  # the current device
    torch.testing.assert_close(comm.gather(parts, destination=0).cpu(), expected)
    wide = comm.gather([torch.ones(2, 1, device=tpu(1)), torch.zeros(2, 2, device=tpu(0))], dim=1, destination=0)
    torch.testing.assert_close(wide.cpu(), torch.tensor([[1.0, 0, 0], [1, 0, 0]]))
    out = torch.empty(6, 3, device=tpu(0))
    assert comm.gather(parts, out=out) is out
    torch.testing.assert_close(out.cpu(), expected)


def test_reduce_add_and_coalesced():
    a = [torch.randn(3, device=tpu(i)) for i in range(2)]
    b = [torch.arange(4, device=tpu(i)) * (i + 1) for i in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        total = comm.reduce_add(a, destination=1)
        assert total.device == tpu(1)
        torch.testing.assert_close(total.cpu(), a[0].cpu() + a[1].cpu())
        sums = comm.reduce_add_coalesced([[a[0], b[0]], [a[1], b[1]]], destination=0)
    torch.testing.assert_close(sums[0].cpu(), a[0].cpu() + a[1].cpu())
    assert sums[1].dtype == torch.int64
    torch.testing.assert_close(sums[1].cpu(), torch.arange(4) * 3)
    with pytest.raises(RuntimeError, match="same GPU with one of the tensors"):
        comm.reduce_add([a[0]], destination=1)
    with pytest.raises(ValueError, match="invalid size"):
        comm.reduce_add([a[0], torch.randn(4, device=tpu(1))], destination=0)


def test_cpu_tensors_stay_with_pytorch():
    """Inputs that are not for the tpu devices are PyTorch's to handle: a
    plain CPU gather (destination -1) of CPU tensors is still refused by
    PyTorch's CUDA binding on a CPU build, not computed here."""
    if hasattr(torch._C, "_gather"):
        pytest.skip("a CUDA build of PyTorch")
    cpu_parts = [torch.ones(2)]
    # All-CPU inputs go to the tpu devices here (the tpu is the accelerator
    # DataParallel picks), as a batch DataParallel scatters does.
    assert comm.scatter(torch.ones(4), [0, 1])[1].device == tpu(1)
    assert comm.gather(cpu_parts, destination=-1).device.type == "cpu"
