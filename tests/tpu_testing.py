"""The shared helper of the device tests: run a function on CPU and on tpu
with the same inputs (same values, same view geometry) and compare."""

from __future__ import annotations

import torch

TPU = "tpu"


def to_tpu(x, device=TPU):
    """`x` on tpu with the same sizes, strides and storage offset."""
    if isinstance(x, torch.Tensor):
        if x.device.type != "cpu":
            return x
        if x.is_contiguous() and x.storage_offset() == 0:
            return x.to(device)
        # the whole storage as a flat tensor, moved, then viewed the same way
        flat = torch.empty(0, dtype=x.dtype).set_(x.untyped_storage())
        return flat.to(device).as_strided(x.size(), x.stride(), x.storage_offset())
    if isinstance(x, (list, tuple)):
        return type(x)(to_tpu(v, device) for v in x)
    return x


def to_cpu(x):
    if isinstance(x, torch.Tensor):
        return x.cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(to_cpu(v) for v in x)
    return x


def tolerances(dtype):
    if dtype == torch.bfloat16:
        return dict(rtol=1.6e-2, atol=1e-2)
    if dtype == torch.float16:
        return dict(rtol=1e-3, atol=1e-3)
    if dtype in (torch.float32, torch.complex64):
        return dict(rtol=1.3e-6, atol=1e-5)
    if dtype in (torch.float64, torch.complex128):
        # A few ulps: PyTorch's own CPU kernels sum in another order on
        # AVX-512 machines than on AVX2 ones (f32 rounding would be 1e-7).
        return dict(rtol=1e-12, atol=1e-12)
    return dict(rtol=0, atol=0)


def assert_same(fn, *args, check_dtype=True, **tol):
    """fn(*args) on CPU and on tpu give the same result, or raise the same
    kind of exception."""
    try:
        expected = fn(*args)
    except Exception as cpu_error:  # the device must refuse it too
        try:
            fn(*to_tpu(args))
        except type(cpu_error):
            return None
        raise AssertionError(f"CPU raised {cpu_error!r}; tpu did not raise {type(cpu_error).__name__}")
    actual = to_cpu(fn(*to_tpu(args)))
    _compare(actual, expected, check_dtype, tol)
    return actual


def _compare(actual, expected, check_dtype, tol):
    if isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _compare(a, e, check_dtype, tol)
        return
    if not isinstance(expected, torch.Tensor):
        assert actual == expected
        return
    kw = tol or tolerances(expected.dtype)
    torch.testing.assert_close(actual, expected, check_dtype=check_dtype, equal_nan=True, **kw)


def assert_grad(fn, x, seed=5, **tol):
    """d fn(x) / dx on tpu equals CPU's, for the same random upstream gradient."""
    xc = x.detach().clone().requires_grad_()
    yc = fn(xc)
    g = ((torch.rand(yc.shape, generator=torch.Generator().manual_seed(seed)) * 2 - 1) * 3.0).to(yc.dtype)
    yc.backward(g)
    xt = x.detach().to(TPU).requires_grad_()
    yt = fn(xt)
    yt.backward(g.to(TPU))
    kw = tol or (dict(rtol=1.6e-2, atol=1e-2) if x.dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-5))
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, equal_nan=True, **kw)


def leaf(x, device):
    """A detached copy of `x` on `device` that requires grad."""
    x = x.detach() if device == "cpu" else to_tpu(x).detach()
    return x.requires_grad_()


def assert_grads(fn, *inputs, constant=(), grads_equal_nan=False, **tol):
    """fn(*inputs) and the gradients of its floating inputs (through a random
    output gradient; inputs at the `constant` positions take none) agree
    between CPU and tpu."""
    wants = [isinstance(x, torch.Tensor) and x.is_floating_point() and i not in constant for i, x in enumerate(inputs)]
    cpu_in = [leaf(x, "cpu") if w else x for x, w in zip(inputs, wants)]
    tpu_in = [leaf(x, "tpu") if w else to_tpu(x) for x, w in zip(inputs, wants)]
    expected = fn(*cpu_in)
    actual = fn(*tpu_in)
    grad = torch.randn(expected.shape, generator=torch.Generator().manual_seed(99)).to(expected.dtype)
    expected.backward(grad)
    actual.backward(to_tpu(grad))
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **tol)
    for c, t, w in zip(cpu_in, tpu_in, wants):
        if w:
            torch.testing.assert_close(t.grad.cpu(), c.grad, equal_nan=grads_equal_nan, **tol)
