"""Activations (relu, threshold, gelu, silu, leaky_relu, hardtanh, softplus)
and the backward ops autograd uses for them and for sigmoid / tanh, on tpu
against CPU: dtypes, special values, views, in-place and out= forms,
runtime scalars, errors and gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from torch_tpu import runtime
from tpu_testing import assert_same, assert_grad

NAN, INF = float("nan"), float("inf")
aten = torch.ops.aten


def make(shape, dtype=torch.float32, seed=0, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        low = 0 if dtype == torch.uint8 else -9
        return torch.randint(low, 10, shape, generator=g).to(dtype)
    return ((torch.rand(shape, generator=g) * 2 - 1) * scale).to(dtype)


SPECIAL = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1e-3, -1e-3, 25.0, -25.0, 0.5])


ACTIVATIONS = {
    "relu": F.relu,
    "threshold": lambda x: F.threshold(x, 0.25, -2.0),
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "leaky_relu": F.leaky_relu,
    "leaky_relu_02": lambda x: F.leaky_relu(x, 0.2),
    "hardtanh": F.hardtanh,
    "hardtanh_bounds": lambda x: F.hardtanh(x, -0.5, 2.0),
    "relu6": F.relu6,
    "softplus": F.softplus,
    "softplus_beta": lambda x: F.softplus(x, beta=2.0, threshold=3.0),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
}


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_forward(name, dtype):
    fn = ACTIVATIONS[name]
    assert_same(fn, make((4, 5), dtype, 1))
    if dtype == torch.float32:
        # gelu(+-inf) is NaN, or +-inf and 0, depending on which CPU code
        # path (AVX2, AVX-512) runs
        assert_same(fn, SPECIAL[SPECIAL.abs() != INF] if name.startswith("gelu") else SPECIAL)


@pytest.mark.parametrize("name", ["relu", "gelu", "silu", "leaky_relu", "hardtanh", "softplus"])
def test_forward_views_zero_dim_empty_other_floats(name):
    fn = ACTIVATIONS[name]
    base = make((6, 4), torch.float32, 2)
    assert_same(fn, base.t())
    assert_same(fn, base[::2, 1:])
    assert_same(fn, torch.tensor(-0.75))
    assert_same(fn, torch.empty(0, 4))
    assert_same(fn, make((5,), torch.float16, 3))
    assert_same(fn, make((5,), torch.float64, 3), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["relu", "threshold", "gelu", "silu", "leaky_relu", "hardtanh", "softplus"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8, torch.bool], ids=str)
def test_integer_and_bool_inputs(name, dtype):
    # relu / threshold / hardtanh work on integers; the rest raise like CPU
    assert_same(ACTIVATIONS[name], make((6,), dtype, 4))


def test_errors():
    x = make((3,))
    assert_same(lambda t: F.gelu(t, approximate="sigmoid"), x)
    assert_same(lambda t: F.hardtanh(t, -1, 1), make((3,), torch.uint8))      # negative limit, unsigned
    assert_same(lambda t: F.hardtanh(t, 0, 3), make((3,), torch.uint8))
    assert_same(lambda t: F.threshold(t, 0.5, 7), make((4,), torch.int64))   # scalars cast to int
    # scalars out of the dtype's range raise like CPU (an overflow check)
    assert_same(lambda t: F.threshold(t, 1, 300), make((4,), torch.uint8))
    assert_same(lambda t: F.leaky_relu(t, 1e40), x)
    assert_same(lambda t: F.hardtanh(t, -1e40, 1e40), x)
    assert_same(lambda t: F.softplus(t, 1e40), x)


def test_inplace_forms():
    x = make((4, 6), torch.float32, 5)
    assert_same(lambda t: F.relu(t.clone(), inplace=True), x)
    assert_same(lambda t: F.threshold(t.clone(), 0.1, 20.0, inplace=True), x)
    assert_same(lambda t: F.silu(t.clone(), inplace=True), x)
    assert_same(lambda t: F.leaky_relu(t.clone(), 0.3, inplace=True), x)
    assert_same(lambda t: F.hardtanh(t.clone(), -0.2, 0.2, inplace=True), x)
    assert_same(lambda t: aten.gelu_(t.clone(), approximate="tanh"), x)
    assert_same(lambda t: F.relu(t.clone().long(), inplace=True), x)
    # through a strided view of a larger tensor
    assert_same(lambda t: (lambda c: (F.relu_(c[:, ::3]), c)[1])(t.clone()), x)
    assert_same(lambda t: (lambda c: (F.leaky_relu_(c[1:, 1::2], 0.5), c)[1])(t.clone()), x)


@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float64, torch.int64], ids=str)
def test_out_forms(out_dtype):
    x = make((2, 3), torch.float32, 6)

    def out():
        return torch.empty(0, dtype=out_dtype, device="tpu")

    def with_out(f):
        return lambda t: f(t, out().to(t.device))

    # threshold casts into out=; the others need the input's dtype exactly
    assert_same(with_out(lambda t, o: aten.threshold.out(t, 0.0, 1.0, out=o)), x)
    assert_same(with_out(lambda t, o: aten.gelu.out(t, out=o)), x)
    assert_same(with_out(lambda t, o: aten.silu.out(t, out=o)), x)
    assert_same(with_out(lambda t, o: aten.leaky_relu.out(t, 0.1, out=o)), x)
    assert_same(with_out(lambda t, o: aten.hardtanh.out(t, -1.0, 1.0, out=o)), x)
    assert_same(with_out(lambda t, o: aten.softplus.out(t, 1.0, 20.0, out=o)), x)


BACKWARD = ["relu", "threshold", "gelu", "gelu_tanh", "silu", "leaky_relu", "leaky_relu_02", "hardtanh",
            "hardtanh_bounds", "relu6", "softplus", "softplus_beta", "sigmoid", "tanh"]


@pytest.mark.parametrize("name", BACKWARD)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_backward(name, dtype):
    assert_grad(ACTIVATIONS[name], make((4, 5), dtype, 7))


def test_backward_at_special_points():
    # exactly at the kinks: relu(0), threshold, hardtanh bounds, softplus threshold
    x = torch.tensor([0.0, -0.0, 0.25, -1.0, 1.0, -0.5, 2.0, 10.0, 1.5, NAN])
    for name in ["relu", "threshold", "hardtanh", "hardtanh_bounds", "leaky_relu", "softplus", "softplus_beta"]:
        assert_grad(ACTIVATIONS[name], x)


def test_backward_ops_directly():
    g, x = make((3, 4), torch.float32, 1), make((3, 4), torch.float32, 2)
    y = torch.sigmoid(x)
    assert_same(aten.sigmoid_backward, g, y)
    assert_same(aten.tanh_backward, g, torch.tanh(x))
    assert_same(aten.sigmoid_backward, g.bfloat16(), y)           # mixed dtypes promote
    assert_same(aten.tanh_backward, g[:, :1], torch.tanh(x))       # broadcasting
    assert_same(lambda a, b: aten.threshold_backward(a, b, 0.5), g, x)
    assert_same(lambda a, b: aten.gelu_backward(a, b, approximate="tanh"), g, x)
    assert_same(lambda a, b: aten.silu_backward(a, b), g, x)
    assert_same(lambda a, b: aten.leaky_relu_backward(a, b, 0.1, False), g, x)
    assert_same(lambda a, b: aten.hardtanh_backward(a, b, -0.5, 0.5), g, x)
    assert_same(lambda a, b: aten.softplus_backward(a, b, 1.0, 20.0), g, x)
    assert_same(lambda a, b: aten.leaky_relu_backward(a, b, -0.1, True), g, x)  # negative slope in-place: error

    def grad_input(op, *args, dtype=torch.float32, **kw):
        return lambda a, b: op(a, b, *args, grad_input=torch.empty(0, dtype=dtype, device=a.device), **kw)

    assert_same(grad_input(aten.threshold_backward.grad_input, 0.0), g, x)
    assert_same(grad_input(aten.sigmoid_backward.grad_input, dtype=torch.float64), g, y,
                rtol=1.3e-6, atol=1e-5)
    assert_same(grad_input(aten.tanh_backward.grad_input), g, y)
    assert_same(grad_input(aten.gelu_backward.grad_input), g, x)
    assert_same(grad_input(aten.silu_backward.grad_input), g, x)
    assert_same(grad_input(aten.leaky_relu_backward.grad_input, 0.2, False), g, x)
    assert_same(grad_input(aten.hardtanh_backward.grad_input, -1.0, 1.0), g, x)
    assert_same(grad_input(aten.softplus_backward.grad_input, 2.0, 5.0), g, x)


def test_inplace_leaky_relu_negative_slope_backward_raises():
    x = make((4,)).to("tpu").requires_grad_()
    y = F.leaky_relu(x * 1.0, -0.2, inplace=True)
    with pytest.raises(RuntimeError, match="negative slope"):
        y.backward(torch.ones(4, device="tpu"))


def test_inplace_activation_backward():
    # relu_ / silu_ after a non-leaf op: autograd uses the saved result
    def fn(t):
        return F.relu(t * 2.0, inplace=True) + F.leaky_relu(t * 1.0, 0.1, inplace=True)

    assert_grad(fn, make((3, 4), torch.float32, 9))


def test_scalars_do_not_recompile():
    x = make((5, 3), torch.float32, 3).to("tpu")
    F.leaky_relu(x, 0.05).cpu()
    F.hardtanh(x, -0.1, 0.1).cpu()
    F.softplus(x, beta=1.5, threshold=10.0).cpu()
    F.threshold(x, 0.1, 1.0).cpu()
    before = runtime.cache_stats()["compiles"]
    for v in [0.2, 0.3, 0.4]:
        F.leaky_relu(x, v).cpu()
        F.hardtanh(x, -v, v).cpu()
        F.softplus(x, beta=1 + v, threshold=10 * v).cpu()
        F.threshold(x, v, -v).cpu()
    assert runtime.cache_stats()["compiles"] == before


def test_small_mlp_training_step_matches_cpu():
    torch.manual_seed(0)
    w1 = torch.randn(6, 8) * 0.3
    w2 = torch.randn(8, 3) * 0.3
    x = torch.randn(4, 6)

    def grads(device):
        a = w1.to(device).requires_grad_()
        b = w2.to(device).requires_grad_()
        h = F.gelu(x.to(device) @ a)
        h = F.silu(h) * torch.sigmoid(h) + F.leaky_relu(h, 0.1)
        out = torch.tanh(h @ b)
        out.backward(torch.ones_like(out))
        return a.grad.cpu(), b.grad.cpu()

    for got, expected in zip(grads("tpu"), grads("cpu")):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
