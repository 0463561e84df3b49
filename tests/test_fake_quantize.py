"""Fake quantization (quantization-aware training) against CPU: the
per-tensor and per-channel ops and their masks, the learnable variants'
gradients, the fused moving-average observer, and a torch.ao QAT model."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from tpu_testing import to_tpu

RANGES = [(0, 255), (-128, 127), (0, 15)]


def values(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g) * 3
    flat = x.view(-1)
    # Exact ties of x / scale (scale 0.1 below is not exact: use 0.25),
    # non-finite values and both ends of the range.
    flat[:6] = torch.tensor([0.125, -0.375, float("nan"), float("inf"), -float("inf"), 1e6])
    return x.to(dtype)


def assert_same(got, want, **tol):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            assert_same(g, w, **tol)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("qrange", RANGES)
def test_per_tensor_matches_cpu(qrange, dtype):
    x = values(5, 7, dtype=dtype)
    qmin, qmax = qrange
    zp = (qmin + qmax) // 2
    want = torch.fake_quantize_per_tensor_affine(x, 0.25, zp, qmin, qmax)
    assert_same(torch.fake_quantize_per_tensor_affine(to_tpu(x), 0.25, zp, qmin, qmax), want)
    masks = [torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(t, 0.25, zp, qmin, qmax) for t in (x, to_tpu(x))]
    assert_same(masks[1], masks[0])
    # The tensor-qparams form, with fake quantization on and off.
    for enabled in (1, 0):
        args = (torch.tensor([0.25]), torch.tensor([zp], dtype=torch.int32), torch.tensor([enabled]), qmin, qmax)
        want = torch.ops.aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(x, *args)
        got = torch.ops.aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
            to_tpu(x), *[to_tpu(a) if isinstance(a, torch.Tensor) else a for a in args])
        assert_same(got, want)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("zp_dtype", [torch.int32, torch.float32])
def test_per_channel_matches_cpu(axis, zp_dtype):
    x = values(4, 6, 3)
    x.view(-1)[3] = 7.0  # no +inf: CPU's per-channel cast of it is undefined behaviour of C++
    channels = x.shape[axis]
    scale = torch.tensor([0.25, 0.5, 0.125, 1.0, 0.25, 2.0][:channels])
    zero_point = torch.tensor([0, 3, 10, 128, 255, 7][:channels]).to(zp_dtype)
    want = torch.ops.aten.fake_quantize_per_channel_affine_cachemask(x, scale, zero_point, axis, 0, 255)
    got = torch.ops.aten.fake_quantize_per_channel_affine_cachemask(to_tpu(x), to_tpu(scale), to_tpu(zero_point),
                                                                   axis, 0, 255)
    assert_same(got, want)


def test_gradients_flow_through_the_mask():
    x = values(3, 8)
    x.view(-1)[2:5] = 1.0
    for device in ("cpu", "tpu"):
        t = x.detach().to(device).requires_grad_()
        torch.fake_quantize_per_tensor_affine(t, 0.25, 3, 0, 15).sum().backward()
        if device == "cpu":
            want = t.grad
        else:
            assert_same(t.grad, want)


def test_learnable_per_tensor_and_per_channel_gradients_match_cpu():
    x = values(4, 6)
    x.view(-1)[2:5] = 1.0  # the learnable backward wants no NaN in dY paths
    grads = []
    for device in ("cpu", "tpu"):
        t = x.detach().to(device).requires_grad_()
        scale = torch.tensor([0.3], device=device, requires_grad=True)
        zp = torch.tensor([2.6], device=device, requires_grad=True)
        y = torch._fake_quantize_learnable_per_tensor_affine(t, scale, zp, 0, 15, 0.5)
        cs = torch.tensor([0.3, 0.2, 0.7, 0.05], device=device, requires_grad=True)
        cz = torch.tensor([1.4, 7.5, 0.0, 9.0], device=device, requires_grad=True)
        y2 = torch._fake_quantize_learnable_per_channel_affine(t, cs, cz, 0, -8, 7, 1.0)
        (y * torch.arange(24.0, device=device).view(4, 6)).sum().backward(retain_graph=True)
        (y2 * y2).sum().backward()
        grads.append((y.detach(), y2.detach(), t.grad, scale.grad, zp.grad, cs.grad, cz.grad))
    for got, want in zip(grads[1], grads[0]):
        assert_same(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("symmetric", [False, True])
def test_fused_moving_average_observer_matches_cpu(per_row, symmetric):
    states = {}
    for device in ("cpu", "tpu"):
        qmin, qmax = (-128, 127) if symmetric else (0, 255)
        running_min = torch.tensor([] if per_row else [float("inf")], device=device)
        running_max = torch.tensor([] if per_row else [-float("inf")], device=device)
        scale = torch.tensor([1.0], device=device)
        zero_point = torch.tensor([0], dtype=torch.int32, device=device)
        outs = []
        for step in range(4):
            x = (values(3, 5, seed=step).nan_to_num(0.0, 4.0, -4.0) + step).to(device)
            observe = torch.tensor([0 if step == 2 else 1], device=device)
            quantize = torch.tensor([0 if step == 1 else 1], device=device)  # resized buffers need a first write
            out = torch.fused_moving_avg_obs_fake_quant(x, observe, quantize, running_min, running_max, scale,
                                                        zero_point, 0.01, qmin, qmax, 0, per_row, symmetric)
            outs.append((out, running_min.clone(), running_max.clone(), scale.clone(), zero_point.clone()))
        states[device] = outs
    for got, want in zip(states["tpu"], states["cpu"]):
        assert_same(tuple(got), tuple(want), rtol=1e-6, atol=1e-6)


def test_qparams_of_small_and_one_sided_ranges_match_cpu():
    # Scales below float16's smallest normal are raised to it; ranges that
    # do not hold 0 are widened to hold it.
    def qparams(lo, hi, device):
        x = torch.tensor([lo, hi], device=device)
        buffers = [torch.tensor([float("inf")], device=device), torch.tensor([-float("inf")], device=device),
                   torch.tensor([1.0], device=device), torch.tensor([0], dtype=torch.int32, device=device)]
        on = torch.tensor([1], device=device)
        torch.fused_moving_avg_obs_fake_quant(x, on, on, *buffers, 0.01, 0, 255, 0)
        return buffers[2].cpu(), buffers[3].cpu()

    for lo, hi in [(1e-7, 2e-7), (-3e-6, 0.0), (2.0, 5.0), (-5.0, -1.0), (0.0, 0.0), (-1e-3, 1e-6)]:
        (cpu_scale, cpu_zp), (tpu_scale, tpu_zp) = qparams(lo, hi, "cpu"), qparams(lo, hi, "tpu")
        torch.testing.assert_close(tpu_scale, cpu_scale, rtol=1e-6, atol=0)
        assert torch.equal(tpu_zp, cpu_zp), (lo, hi)


def test_errors_like_cpu():
    x = torch.ones(3, device="tpu")
    with pytest.raises(RuntimeError, match="quant_min` should be less than or equal"):
        torch.fake_quantize_per_tensor_affine(x, 0.1, 0, 10, 5)
    with pytest.raises(RuntimeError, match="zero_point` must be between"):
        torch.fake_quantize_per_tensor_affine(x, 0.1, 300, 0, 255)
    with pytest.raises(RuntimeError, match="Scale must be Float"):
        torch.fake_quantize_per_channel_affine(x.view(3, 1), torch.ones(3, dtype=torch.float64, device="tpu"),
                                               torch.zeros(3, dtype=torch.int32, device="tpu"), 0, 0, 255)
    with pytest.raises(RuntimeError, match="not consistent with input"):
        torch.fake_quantize_per_channel_affine(x.view(3, 1), torch.ones(2, device="tpu"),
                                               torch.zeros(2, dtype=torch.int32, device="tpu"), 0, 0, 255)


def test_dequantize_of_an_ordinary_tensor_is_a_float_cast():
    for dtype in (torch.float32, torch.float16, torch.int32):
        x = torch.arange(4).to(dtype)
        assert_same(to_tpu(x).dequantize(), x.dequantize())


class ConvBnLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(4 * 4 * 4, 5)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        x = self.relu(self.bn(self.conv(self.quant(x))))
        return self.dequant(self.fc(x.flatten(1)))


def test_qat_training_steps_match_cpu():
    torch.manual_seed(0)
    model = ConvBnLinear().train()
    model.qconfig = torch.ao.quantization.get_default_qat_qconfig("fbgemm")
    torch.ao.quantization.fuse_modules_qat(model, [["conv", "bn", "relu"]], inplace=True)
    torch.ao.quantization.prepare_qat(model, inplace=True)
    twin = copy.deepcopy(model).to("tpu")
    batches = [torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    losses = {}
    for name, net in (("cpu", model), ("tpu", twin)):
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        device = next(net.parameters()).device
        losses[name] = []
        for x in batches:
            opt.zero_grad()
            loss = net(x.to(device)).square().mean()
            loss.backward()
            opt.step()
            losses[name].append(loss.item())
    torch.testing.assert_close(losses["tpu"], losses["cpu"], rtol=1e-4, atol=1e-5)
    for (name, got), want in zip(twin.state_dict().items(), model.state_dict().values()):
        if got.is_floating_point():
            torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4, msg=name)
        else:
            assert torch.equal(got.cpu(), want), name


@pytest.mark.parametrize("fallback", [False, True])
def test_quantized_tensors_are_refused_naming_the_dtype(fallback):
    import torch_tpu

    cases = [
        lambda: torch.quantize_per_tensor(torch.randn(3, device="tpu"), 0.1, 0, torch.quint8),
        lambda: torch.empty(3, dtype=torch.qint8, device="tpu"),
        lambda: torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.quint8).to("tpu"),
        lambda: torch.randn(3, device="tpu").to(torch.qint32),
    ]
    with torch_tpu.cpu_fallback(fallback):
        for case in cases:
            with pytest.raises(NotImplementedError, match=r"dtype Q\w+ is not supported on tpu \(quantized"):
                case()
