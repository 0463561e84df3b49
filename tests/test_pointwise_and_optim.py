"""lerp / addcmul / addcdiv / maximum / minimum against CPU, and optimizer
steps (the default foreach path) on tpu parameters matching CPU."""

from __future__ import annotations

import pytest
import torch

from torch_tpu import runtime
from tpu_testing import assert_same


def rand(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("weight", [0.25, 0.75, 1.0])
def test_lerp_scalar(dtype, weight):
    assert_same(lambda a, b: torch.lerp(a, b, weight), rand(3, 4, dtype=dtype), rand(4, dtype=dtype, seed=1))


def test_lerp_tensor_weight_and_in_place():
    a, b, w = rand(2, 3), rand(2, 3, seed=1), torch.rand(2, 3)
    assert_same(torch.lerp, a, b, w)
    assert_same(lambda x, y: x.clone().lerp_(y, 0.3) if x.device.type == "cpu" else (x + 0).lerp_(y, 0.3), a, b)


def test_lerp_dtype_mismatch_is_an_error():
    assert_same(lambda a, b: torch.lerp(a, b, 0.5), rand(3), rand(3, dtype=torch.float64))


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("value", [1, -0.5])
def test_addcmul_addcdiv(op, value):
    s, a, b = rand(2, 3), rand(2, 3, seed=1), rand(3, seed=2).abs() + 0.5
    assert_same(lambda x, y, z: getattr(torch, op)(x, y, z, value=value), s, a, b)
    assert_same(lambda x, y, z: getattr(x * 1, op + "_")(y, z, value=value), s, a, b)


def test_addcdiv_of_integers_is_an_error():
    i = torch.arange(4)
    assert_same(lambda x, y, z: torch.addcdiv(x, y, z), rand(4), i, i + 1)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=str)
def test_maximum_minimum(op, dtype):
    a = (rand(5, 1) * 4).to(dtype)
    b = (rand(5, seed=3) * 4).to(dtype)
    assert_same(getattr(torch, op), a, b)


def test_maximum_propagates_nan():
    a = torch.tensor([1.0, float("nan"), 2.0, float("nan")])
    b = torch.tensor([float("nan"), 1.0, 3.0, float("nan")])
    assert_same(torch.maximum, a, b)
    assert_same(torch.minimum, a, b)


OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum_nesterov_wd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
    "adam_amsgrad": lambda p: torch.optim.Adam(p, lr=0.01, amsgrad=True),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_steps_match_cpu(name):
    params_cpu = [rand(4, 3, seed=1).requires_grad_(), rand(3, seed=2).requires_grad_()]
    params_tpu = [p.detach().to("tpu").requires_grad_() for p in params_cpu]
    opt_cpu, opt_tpu = OPTIMIZERS[name](params_cpu), OPTIMIZERS[name](params_tpu)
    for step in range(4):
        for i, (pc, pt) in enumerate(zip(params_cpu, params_tpu)):
            g = rand(*pc.shape, seed=10 * step + i)
            pc.grad = g.clone()
            pt.grad = g.to("tpu")
        opt_cpu.step()
        opt_tpu.step()
    for pc, pt in zip(params_cpu, params_tpu):
        torch.testing.assert_close(pt.detach().cpu(), pc.detach(), rtol=1e-5, atol=1e-6)


def test_adam_steps_do_not_recompile():
    p = rand(8).to("tpu").requires_grad_()
    opt = torch.optim.Adam([p], lr=0.01)
    for step in range(6):
        p.grad = rand(8, seed=step).to("tpu")
        opt.step()
        p.detach().cpu()  # a read per step: in fused mode each step is one graph
        if step == 2:
            compiles = runtime.cache_stats()["compiles"]
    p.detach().cpu()
    assert runtime.cache_stats()["compiles"] == compiles
