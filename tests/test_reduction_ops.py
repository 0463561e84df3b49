"""Reductions and softmax on tpu against CPU: sum / nansum / prod / mean,
amax / amin, max / min (full and along a dim, with indices), argmax / argmin,
all / any, var / std (and var_mean / std_mean), logsumexp, softmax and
log_softmax with their backward ops; dtypes, dims / keepdim, non-contiguous,
0-dim and empty inputs, NaN, out= forms, errors and autograd."""

from __future__ import annotations

import pytest
import torch

from tpu_testing import assert_same, to_cpu, to_tpu, tolerances

FLOATS = [torch.float32, torch.bfloat16]
NAN = float("nan")
INF = float("inf")


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == torch.uint8:
        return torch.randint(0, 4, shape, generator=g).to(dtype)
    if not dtype.is_floating_point and not dtype.is_complex:
        return torch.randint(-4, 5, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g, dtype=torch.float32).to(dtype)


def tol_for(dtype):
    """tpu_testing compares f64 exactly; reductions sum in another order."""
    return dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else {}


def assert_grads_same(fn, *inputs, seed=7, **tol):
    """fn's output and the gradients of its inputs agree on CPU and tpu for
    the same random output gradient."""
    cpu = [x.detach().clone().requires_grad_() for x in inputs]
    out = fn(*cpu)
    grad = make(out.shape, out.dtype, seed)
    out.backward(grad)
    tpu = [to_tpu(x.detach()).requires_grad_() for x in inputs]
    out_t = fn(*tpu)
    out_t.backward(to_tpu(grad))
    kw = tol or tolerances(out.dtype)
    torch.testing.assert_close(to_cpu(out_t.detach()), out.detach(), equal_nan=True, **kw)
    for c, t in zip(cpu, tpu):
        assert t.grad is not None and t.grad.device.type == "tpu"
        torch.testing.assert_close(to_cpu(t.grad), c.grad, equal_nan=True, **kw)


# ---- sum, nansum, prod, mean ---------------------------------------------------

# (dim, keepdim) cases; None: the full reduction
CASES = [(None, False), (1, False), ((0, 2), True), (-1, True), ((), False)]


def reduce_cases(op, x, **tol):
    for dim, keepdim in CASES:
        if dim is None:
            assert_same(op, x, **tol)
        else:
            assert_same(lambda t: op(t, dim, keepdim=keepdim), x, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.uint8,
                                   torch.bool], ids=str)
def test_sum(dtype):
    reduce_cases(torch.sum, make((3, 4, 5), dtype))


@pytest.mark.parametrize("dtype", FLOATS + [torch.float64], ids=str)
def test_mean(dtype):
    reduce_cases(torch.mean, make((3, 4, 5), dtype, 1), **tol_for(dtype))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int16, torch.bool], ids=str)
def test_prod(dtype):
    x = make((3, 4), dtype, 2)
    assert_same(torch.prod, x)
    assert_same(lambda t: torch.prod(t, 1), x)
    assert_same(lambda t: torch.prod(t, 0, keepdim=True), x)
    assert_same(lambda t: torch.prod(t, -1, dtype=torch.float32), x)


def test_sum_dtype_argument():
    x = make((4, 6), torch.int32, 3)
    assert_same(lambda t: torch.sum(t, 1, dtype=torch.float32), x)
    assert_same(lambda t: torch.sum(t, dtype=torch.int32), x)
    assert_same(lambda t: torch.sum(t, 0, dtype=torch.bool), x)
    f = make((4, 6), torch.float32, 3)
    assert_same(lambda t: torch.sum(t, 1, dtype=torch.float64), f, **tol_for(torch.float64))
    assert_same(lambda t: torch.sum(t, 1, dtype=torch.bfloat16), f)
    assert_same(lambda t: torch.mean(t, 1, dtype=torch.float64), f, **tol_for(torch.float64))
    assert_same(lambda t: torch.mean(t, dtype=torch.float32), x)
    # The input is cast to dtype before it is summed, as PyTorch documents.
    for values, dtype in (([2049.0, 1.0], torch.float16), ([257.0, 1.0], torch.bfloat16),
                          ([70000.0, -10000.0], torch.float16), ([1.5, 2.7], torch.int64)):
        for op in (torch.sum, torch.nansum, torch.prod):
            assert_same(lambda t: op(t, dtype=dtype), torch.tensor(values), atol=0, rtol=0)
    big = torch.tensor([2**31 - 1, 2**31 - 1, -2**31, 7], dtype=torch.int32)
    assert_same(lambda t: torch.sum(t, dtype=torch.float16), big)  # inf + -inf: NaN


def test_bf16_accumulates_in_f32():
    # 4096 ones: bf16 accumulation would stall at 256
    x = torch.ones(4096, dtype=torch.bfloat16)
    assert_same(torch.sum, x, rtol=0, atol=0)
    assert_same(torch.mean, x, rtol=0, atol=0)


def test_nansum():
    x = torch.tensor([[1.0, NAN, 2.0], [NAN, NAN, 3.0]])
    assert_same(torch.nansum, x)
    assert_same(lambda t: torch.nansum(t, 1), x)
    assert_same(lambda t: torch.nansum(t, 0, keepdim=True), x.bfloat16())
    assert_same(torch.nansum, make((3, 2), torch.int32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_non_contiguous(dtype):
    base = make((6, 8), dtype, 4)
    for x in (base.t(), base[::2, 1::3], base.unsqueeze(0).expand(3, 6, 8)):
        assert_same(lambda t: torch.sum(t, 0), x)
        assert_same(lambda t: torch.amax(t, -1), x)
        assert_same(lambda t: torch.max(t, 1), x)
        assert_same(torch.argmin, x)
        assert_same(lambda t: torch.any(t, 1), x)
        if dtype.is_floating_point:
            assert_same(lambda t: torch.mean(t, (0, 1)), x)
            assert_same(lambda t: torch.softmax(t, 0), x)


def test_zero_dim():
    x = torch.tensor(2.5)
    for fn in (torch.sum, torch.mean, torch.prod, torch.amax, torch.max, torch.argmax, torch.all, torch.any,
               lambda t: torch.sum(t, 0), lambda t: torch.sum(t, -1, keepdim=True), lambda t: torch.prod(t, 0),
               lambda t: torch.max(t, 0), lambda t: torch.min(t, -1, keepdim=True),
               lambda t: torch.argmax(t, 0, keepdim=True), lambda t: torch.argmin(t, keepdim=True),
               lambda t: torch.all(t, 0), lambda t: torch.var(t, 0, correction=0), torch.var,
               lambda t: torch.logsumexp(t, 0), lambda t: torch.logsumexp(t, []),
               lambda t: torch.softmax(t, 0), lambda t: torch.log_softmax(t, -1)):
        assert_same(fn, x)
    assert_same(lambda t: torch.sum(t, 1), x)  # IndexError
    assert_same(lambda t: torch.softmax(t, 1), x)  # IndexError


def test_empty():
    e = torch.empty(0, 3)
    assert_same(torch.sum, e)
    assert_same(torch.prod, e)
    assert_same(torch.mean, e)
    assert_same(lambda t: torch.sum(t, 0), e)
    assert_same(lambda t: torch.prod(t, 0), e)
    assert_same(lambda t: torch.sum(t, 1), e)
    assert_same(lambda t: torch.mean(t, 0), e)
    assert_same(lambda t: torch.all(t, 0), e)
    assert_same(lambda t: torch.any(t, 0), e)
    assert_same(torch.all, e)
    assert_same(lambda t: torch.amax(t, 1), e)
    assert_same(lambda t: torch.max(t, 1), e)
    assert_same(lambda t: torch.argmax(t, 1), e)
    assert_same(lambda t: torch.logsumexp(t, 0), e)
    assert_same(lambda t: torch.softmax(t, 0), e)
    assert_same(lambda t: torch.sum(t, 0), torch.empty(0, 3, dtype=torch.int32))
    with pytest.warns(UserWarning):
        assert_same(lambda t: torch.var(t, 0), e)
    # no identity: raise like CPU
    assert_same(lambda t: torch.amax(t, 0), e)
    assert_same(torch.amax, e)
    assert_same(torch.max, e)
    assert_same(lambda t: torch.max(t, 0), e)
    assert_same(lambda t: torch.min(t, 0), e)
    assert_same(torch.argmax, e)
    assert_same(lambda t: torch.argmin(t, 0), e)


# ---- amax, amin, max, min, argmax, argmin ---------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.uint8, torch.bool], ids=str)
def test_extrema(dtype):
    x = make((4, 5, 3), dtype, 5)
    assert_same(torch.amax, x)
    assert_same(lambda t: torch.amin(t, (0, 2)), x)
    assert_same(lambda t: torch.amax(t, -1, keepdim=True), x)
    assert_same(torch.min, x)
    assert_same(lambda t: torch.max(t, 1), x)
    assert_same(lambda t: torch.min(t, 0, keepdim=True), x)
    if dtype != torch.bool:
        assert_same(torch.argmax, x)
        assert_same(lambda t: torch.argmin(t, 2), x)
        assert_same(lambda t: torch.argmax(t, 1, keepdim=True), x)
        assert_same(lambda t: torch.argmin(t, keepdim=True), x)


def test_ties_pick_first_index():
    x = torch.tensor([[1, 3, 3, 0, 3], [2, 2, 2, 2, 2], [0, -1, 0, -1, -1]], dtype=torch.float32)
    for t in (x, x.to(torch.int64), x.bfloat16()):
        assert_same(lambda v: torch.max(v, 1), t)
        assert_same(lambda v: torch.min(v, 1), t)
        assert_same(torch.argmax, t)
    assert_same(lambda v: torch.argmin(v, 1), x)
    # the lowest value of the dtype (the reduction's initial value) still wins its index
    low = torch.tensor([[-INF, -INF, -INF]])
    assert_same(lambda v: torch.max(v, 1), low)
    assert_same(lambda v: torch.min(v, 1), -low)
    m = torch.iinfo(torch.int8)
    assert_same(lambda v: torch.max(v, 1), torch.tensor([[m.min, m.min]], dtype=torch.int8))
    assert_same(lambda v: torch.min(v, 1), torch.tensor([[m.max, m.max]], dtype=torch.int8))


def test_nan_propagation():
    x = torch.tensor([[1.0, NAN, 3.0, NAN], [1.0, 2.0, 5.0, 0.0], [NAN, -INF, INF, 0.0]])
    for t in (x, x.bfloat16()):
        assert_same(torch.amax, t)
        assert_same(lambda v: torch.amin(v, 1), t)
        assert_same(lambda v: torch.max(v, 1), t)
        assert_same(lambda v: torch.min(v, 0), t)
        assert_same(torch.argmax, t)
    assert_same(lambda v: torch.amax(v, 0), x)
    assert_same(torch.min, x)
    assert_same(lambda v: torch.argmin(v, 1), x)
    assert_same(torch.logsumexp, x, 1)
    assert_same(lambda v: torch.any(v, 1), x)


@pytest.mark.parametrize("length", [7, 32, 100, 1000])
def test_nan_and_infinities_in_long_rows_and_columns(length):
    # Long enough for XLA to vectorize the reduction (max / min are written as
    # compare-and-select for that): a NaN anywhere in a row or column, in the
    # vector body or the remainder, must still come out, as must -inf / inf.
    x = make((6, length), torch.float32, length)
    x[0, 0] = NAN
    x[1, length - 1] = NAN
    x[2, length // 2] = NAN
    x[3] = -INF
    x[4, length // 3] = INF
    for t in (x, x.T.contiguous(), x.double(), x.bfloat16()):
        for dim in (0, 1):
            assert_same(lambda v: torch.amax(v, dim), t)
            assert_same(lambda v: torch.amin(v, dim), t)
            assert_same(lambda v: torch.logsumexp(v, dim), t)
            assert_same(lambda v: torch.softmax(v, dim), t)
            assert_same(lambda v: torch.log_softmax(v, dim), t)
    assert_same(torch.amax, x)
    assert_same(torch.amin, x[3:])


def test_large_extrema_dim():
    x = make((3, 3000), torch.float32, 6)
    assert_same(lambda v: torch.max(v, 1), x)
    assert_same(torch.argmin, x)


# Reductions that keep the innermost dimension: on the CPU plugin their
# inputs are merged to one reduced dimension and kept out of the producer's
# fusion (hlo/target_quirks.h). Unit dimensions, several reduced runs,
# variadic reduces (values with indices) and fused producers.
COLUMN_CASES = [((16, 32, 24), (0, 1)), ((40, 24), (0,)), ((6, 9, 8), (1,)), ((4, 1, 8, 1), (0,)),
                ((2, 3, 4, 5), (0, 2)), ((1, 24), (0,)), ((8, 4, 1), (0,)), ((3, 0, 4), (0,)),
                ((5, 1, 1, 6), (0, 1, 2))]


@pytest.mark.parametrize("mode", ["strict", "fused"])
@pytest.mark.parametrize("shape,dims", COLUMN_CASES, ids=str)
def test_reductions_keeping_the_innermost_dim(mode, shape, dims):
    import torch_tpu

    x = make(shape, torch.float32, 3)
    with torch_tpu.eager_mode(mode):
        assert_same(lambda v: v.sum(dims), x)
        assert_same(lambda v: (v * 2 + 1).sum(dims, keepdim=True), x)
        assert_same(lambda v: v.var(dims), x)
        if x.numel() == 0:
            return
        assert_same(lambda v: torch.amax(v.exp(), dims), x)
        if len(dims) == 1:
            assert_same(lambda v: torch.max(v, dims[0]), x)
            assert_same(lambda v: torch.argmin(v * 3, dims[0]), x)
        assert_grads_same(lambda v: torch.nn.functional.gelu(v * 0.5).sum(dims), x)


def test_column_reduction_is_kept_unfused_on_the_cpu_plugin():
    import torch_tpu
    import torch_tpu.diagnostics

    if torch.tpu.platform() != "cpu":
        pytest.skip("a workaround for XLA's CPU compiler only")
    x = to_tpu(make((16, 32, 24), torch.float32, 4))
    with torch_tpu.eager_mode("fused"):
        y = (x * 2).view(512, 24).sum(0)
        torch_tpu.materialize()
    graph = torch_tpu.diagnostics.last_graph()
    assert "stablehlo.optimization_barrier" in graph
    torch.testing.assert_close(to_cpu(y), (to_cpu(x) * 2).view(512, 24).sum(0))


# ---- all, any -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.float32, torch.int64], ids=str)
def test_all_any(dtype):
    x = make((3, 4), dtype, 8)
    x[1] = 1
    x[2] = 0
    for op in (torch.all, torch.any):
        assert_same(op, x)
        assert_same(lambda t: op(t, 1), x)
        assert_same(lambda t: op(t, 0, keepdim=True), x)
        assert_same(lambda t: op(t, ()), x)  # an empty dim list reduces nothing here


# ---- var, std -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + [torch.float64], ids=str)
def test_var_std(dtype):
    x = make((4, 5, 6), dtype, 9) * 3 + 2
    tol = tol_for(dtype)
    assert_same(torch.var, x, **tol)
    assert_same(lambda t: torch.std(t, 1), x, **tol)
    assert_same(lambda t: torch.var(t, (0, 2), keepdim=True), x, **tol)
    assert_same(lambda t: torch.var_mean(t, -1, correction=0), x, **tol)
    assert_same(lambda t: torch.std_mean(t, [0], unbiased=False, keepdim=True), x, **tol)
    assert_same(lambda t: torch.std(t, 2, correction=2.5), x, **tol)


def test_var_edge_cases():
    x = make((3, 1), torch.float32, 10)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert_same(lambda t: torch.var(t, 1), x)  # N - correction = 0: nan
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert_same(lambda t: torch.std(t, 0, correction=5), x)  # divisor clamped to 0: inf
    assert_same(lambda t: torch.var(t, ()), make((3, 4), torch.float32))
    assert_same(torch.var, make((3,), torch.int64))  # RuntimeError
    assert_same(torch.std, make((3,), torch.bool))


# ---- logsumexp ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=str)
def test_logsumexp(dtype):
    x = make((4, 5, 3), dtype, 11)
    assert_same(lambda t: torch.logsumexp(t, 1), x)
    assert_same(lambda t: torch.logsumexp(t, (0, 2), keepdim=True), x)
    assert_same(lambda t: torch.logsumexp(t, -1), x)


def test_logsumexp_special_values():
    x = torch.tensor([[-INF, -INF], [INF, 1.0], [1000.0, 1000.0], [-1000.0, 5.0]])
    assert_same(lambda t: torch.logsumexp(t, 1), x)
    assert_same(lambda t: torch.logsumexp(t, []), x)  # RuntimeError on CPU too
    assert_same(lambda t: torch.logsumexp(t, [], keepdim=True), x)  # every dim, kept


# ---- softmax ------------------------------------------------------------------


def test_softmax_of_empty_integer_tensors_is_empty_as_on_cpu():
    # CPU returns before checking the dtype; a non-empty integer tensor is refused on both.
    for fn in (torch.softmax, torch.log_softmax):
        for dtype in (torch.int64, torch.bool):
            assert_same(lambda t: fn(t, 1), torch.empty(0, 3, dtype=dtype))
            assert_same(lambda t: fn(t, 1), torch.ones(2, 3, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOATS + [torch.float16, torch.float64], ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(dtype, dim):
    x = make((3, 4, 5), dtype, 12) * 4
    assert_same(lambda t: torch.softmax(t, dim), x, **tol_for(dtype))
    assert_same(lambda t: torch.log_softmax(t, dim), x, **tol_for(dtype))


def test_softmax_numerics():
    x = torch.tensor([[1000.0, 1001.0, 999.0], [-INF, 0.0, 1.0], [-INF, -INF, -INF], [INF, 1.0, 2.0]])
    assert_same(lambda t: torch.softmax(t, 1), x)
    assert_same(lambda t: torch.log_softmax(t, 1), x)


def test_softmax_dtype_argument_and_errors():
    x = make((2, 5), torch.bfloat16, 13)
    assert_same(lambda t: torch.softmax(t, 1, dtype=torch.float32), x)
    assert_same(lambda t: torch.log_softmax(t, 0, dtype=torch.float64), x)
    assert_same(lambda t: torch.softmax(t, 1), make((2, 5), torch.int64))  # NotImplementedError
    assert_same(lambda t: torch.softmax(t, 2), x)  # IndexError


def test_softmax_half_to_float():
    # CPU refuses half_to_float; tpu follows CUDA: f16 in, f32 out.
    x = make((3, 7), torch.float16, 14)
    out = torch.ops.aten._softmax(to_tpu(x), 1, True)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.cpu(), torch.softmax(x.float(), 1), rtol=1e-5, atol=1e-6)
    out = torch.ops.aten._log_softmax(to_tpu(x), 0, True)
    torch.testing.assert_close(out.cpu(), torch.log_softmax(x.float(), 0), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="Half"):
        torch.ops.aten._softmax(to_tpu(x.bfloat16()), 1, True)
    g = make((3, 7), torch.float32, 15)
    y = torch.softmax(x.float(), 1)
    grad = torch.ops.aten._softmax_backward_data(to_tpu(g), to_tpu(y), 1, torch.float16)
    assert grad.dtype == torch.float16
    expected = torch.ops.aten._softmax_backward_data(g, y, 1, torch.float32).half()
    torch.testing.assert_close(grad.cpu(), expected, **tolerances(torch.float16))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax_backward_ops(dtype):
    g, x = make((4, 6), dtype, 16), make((4, 6), dtype, 17)
    y = torch.softmax(x, 1)
    ly = torch.log_softmax(x, 0)
    assert_same(lambda a, b: torch.ops.aten._softmax_backward_data(a, b, 1, dtype), g, y)
    assert_same(lambda a, b: torch.ops.aten._log_softmax_backward_data(a, b, 0, dtype), g, ly)
    assert_same(lambda a, b: torch.ops.aten._softmax_backward_data(a, b, -1, dtype), g.t(), y.t())


def test_complex():
    x = make((3, 4), torch.complex64, 25)
    x[0, 0] = 0
    tol = tolerances(torch.float32)
    assert_same(lambda t: torch.sum(t, 1), x, **tol)
    assert_same(torch.mean, x, **tol)
    assert_same(lambda t: torch.prod(t, 0), x, **tol)
    assert_same(lambda t: torch.var_mean(t, 1), x, **tol)
    assert_same(lambda t: torch.any(t, 1), x)
    assert_same(lambda t: torch.logsumexp(t, 0), x.to(torch.complex128), rtol=1e-12, atol=1e-12)
    # refused like CPU
    for fn in (torch.amax, torch.max, torch.argmax, lambda t: torch.min(t, 0), torch.nansum,
               lambda t: torch.softmax(t, 0)):
        assert_same(fn, x)


# ---- out= forms ---------------------------------------------------------------


def test_out_forms():
    x = make((3, 4), torch.float32, 18)
    xi = make((3, 4), torch.int32, 18)

    def out_of(dtype):
        return lambda fn: (lambda t: fn(t, torch.empty(0, dtype=dtype, device=t.device)))

    f32, f64, i64, i32 = out_of(torch.float32), out_of(torch.float64), out_of(torch.int64), out_of(torch.int32)
    boolean, u8 = out_of(torch.bool), out_of(torch.uint8)
    assert_same(f32(lambda t, o: torch.sum(t, 1, out=o)), x)
    assert_same(f32(lambda t, o: torch.sum(t, 1, out=o)), xi)
    assert_same(i64(lambda t, o: torch.sum(t, 1, out=o)), x)
    assert_same(f32(lambda t, o: torch.sum(t, 1, dtype=torch.int64, out=o)), xi)  # dtype mismatch
    assert_same(f64(lambda t, o: torch.mean(t, 0, out=o)), x, **tol_for(torch.float64))
    assert_same(f64(lambda t, o: torch.mean(t, 0, out=o)), xi)  # int input
    assert_same(f32(lambda t, o: torch.prod(t, 1, out=o)), xi)
    assert_same(i64(lambda t, o: torch.nansum(t, 1, out=o)), xi)
    assert_same(f32(lambda t, o: torch.amax(t, 0, out=o)), x)
    assert_same(f64(lambda t, o: torch.amin(t, 0, out=o)), x)  # dtype mismatch
    assert_same(f64(lambda t, o: torch.max(t, out=o)), x)
    assert_same(i64(lambda t, o: torch.argmax(t, 1, out=o)), x)
    assert_same(i32(lambda t, o: torch.argmin(t, 1, out=o)), x)  # must be int64
    assert_same(boolean(lambda t, o: torch.all(t, 1, out=o)), x)
    assert_same(u8(lambda t, o: torch.any(t, out=o)), x)
    assert_same(f32(lambda t, o: torch.all(t, 1, out=o)), x)  # must be bool / uint8
    assert_same(f64(lambda t, o: torch.var(t, 0, out=o)), x, **tolerances(torch.float32))  # computed in f32
    assert_same(f32(lambda t, o: torch.std(t, 1, keepdim=True, out=o)), x)
    assert_same(f64(lambda t, o: torch.logsumexp(t, 0, out=o)), xi, **tolerances(torch.float32))
    assert_same(i64(lambda t, o: torch.logsumexp(t, 0, out=o)), xi)  # must be floating
    assert_same(f32(lambda t, o: torch.ops.aten._softmax.out(t, 1, False, out=o)), x)
    assert_same(f64(lambda t, o: torch.ops.aten._log_softmax.out(t, 1, False, out=o)), x)  # mismatch

    def max_out(t):
        v = torch.empty(0, device=t.device)
        i = torch.empty(0, dtype=torch.int64, device=t.device)
        r = torch.max(t, 1, keepdim=True, out=(v, i))
        assert r[0] is v and r[1] is i
        return v, i

    assert_same(max_out, x)
    assert_same(lambda t: torch.min(t, 0, out=(torch.empty(0, dtype=torch.float64, device=t.device),
                                               torch.empty(0, dtype=torch.int64, device=t.device))), x)


def test_out_into_view():
    x = make((3, 4), torch.float32, 19)

    def into_column(t):
        buf = torch.zeros(4, 3, device=t.device)
        torch.sum(t, 1, out=buf[1:, 0])  # a strided view of the right shape
        return buf

    assert_same(into_column, x)


# ---- errors -------------------------------------------------------------------


def test_errors():
    x = make((2, 3), torch.float32, 20)
    assert_same(lambda t: torch.sum(t, (0, 0)), x)
    assert_same(lambda t: torch.sum(t, 2), x)
    assert_same(lambda t: torch.mean(t, 1), make((2, 3), torch.int64))
    assert_same(lambda t: torch.mean(t, 1, dtype=torch.int32), x)
    assert_same(lambda t: torch.amax(t, (1, -1)), x)
    assert_same(lambda t: torch.max(t, 3), x)
    assert_same(torch.argmax, make((3,), torch.bool))
    assert_same(lambda t: torch.argmin(t, 0), make((3,), torch.bool))
    with pytest.raises(RuntimeError, match="same device"):
        torch.sum(to_tpu(x), 1, out=torch.empty(0))


# ---- autograd -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_sum_mean_backward(dtype):
    x = make((3, 4, 5), dtype, 21)
    assert_grads_same(lambda t: t.sum(), x)
    assert_grads_same(lambda t: t.sum(1), x)
    assert_grads_same(lambda t: t.sum((0, 2), keepdim=True), x)
    assert_grads_same(lambda t: t.mean(), x)
    assert_grads_same(lambda t: t.mean(-1), x)
    assert_grads_same(lambda t: t[:, ::2].mean(1), x)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax_backward(dtype):
    x = make((4, 7), dtype, 22) * 3
    assert_grads_same(lambda t: torch.softmax(t, 1), x)
    assert_grads_same(lambda t: torch.log_softmax(t, 0), x)
    assert_grads_same(lambda t: torch.log_softmax(t.t(), -1), x)


def test_softmax_backward_half_input_float_compute():
    x = make((4, 7), torch.bfloat16, 23)
    assert_grads_same(lambda t: torch.softmax(t, 1, dtype=torch.float32), x)


def test_other_backwards():
    # formulas built from other families' ops (eq, exp, ...) around ours
    x = make((4, 6), torch.float32, 24)
    assert_grads_same(lambda t: torch.var(t, 1), x)
    assert_grads_same(lambda t: torch.amax(t, 0), x)
    assert_grads_same(lambda t: torch.logsumexp(t, 1), x)
    assert_grads_same(lambda t: torch.prod(t, 1), x + 3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int32,
                                   torch.int8, torch.uint8, torch.bool], ids=str)
def test_hash_tensor(dtype):
    # The xor of the elements widened to 64 bits (floats through float64),
    # bit for bit as CPU's, over all dims or some, NaN, -0.0 and infinities
    # included; a non-contiguous view hashes its own elements.
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(6, 9, generator=g) * 100).to(dtype)
    if dtype.is_floating_point:
        x[0, :5] = torch.tensor([float("nan"), -float("nan"), float("inf"), -0.0, 0.0]).to(dtype)
    for dims, keepdim in [((), False), ((1,), False), ((0,), True), ((0, 1), False)]:
        assert_same(lambda t: torch.hash_tensor(t, dims, keepdim=keepdim), x)
    assert_same(lambda t: torch.hash_tensor(t.t()[2:, ::2], 0), x)
    out = torch.empty(0, dtype=torch.uint64, device="tpu")
    torch.hash_tensor(x.to("tpu"), 1, out=out)
    assert torch.equal(out.cpu(), torch.hash_tensor(x, 1))


def test_hash_tensor_errors():
    assert_same(lambda t: torch.hash_tensor(t), torch.ones(0))
    assert_same(lambda t: torch.hash_tensor(t, 0), torch.ones(0, 3))
    assert_same(lambda t: torch.hash_tensor(t, 1), torch.ones(0, 3))
    assert_same(lambda t: torch.hash_tensor(t, mode=1), torch.ones(3))
    assert_same(lambda t: torch.hash_tensor(t), torch.ones(3, dtype=torch.complex64))
