"""The first tpu ops against CPU: arithmetic with broadcasting, promotion,
scalars, alpha, non-contiguous, 0-dim and empty inputs; in-place and out=."""

from __future__ import annotations

import pytest
import torch

from torch_tpu import runtime
from tpu_testing import assert_same

SHAPES = [((), ()), ((0,), (0,)), ((5,), (5,)), ((2, 3), (2, 3)), ((2, 1), (1, 3)), ((4, 3), (3,)), ((2, 3), ())]
FLOATS = [torch.float32, torch.bfloat16, torch.float16, torch.float64]


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        return torch.randint(-9, 10, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary(op, dtype, shapes):
    a, b = make(shapes[0], dtype, 1), make(shapes[1], dtype, 2)
    if op == "div" and not dtype.is_floating_point:
        b = torch.where(b == 0, torch.ones_like(b), b)
    assert_same(getattr(torch, op), a, b)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_div_rounding(mode, dtype):
    a = torch.tensor([7, -7, 7, -7, 6, 0], dtype=dtype)
    b = torch.tensor([2, 2, -2, -2, 3, 5], dtype=dtype)
    assert_same(lambda x, y: torch.div(x, y, rounding_mode=mode), a, b)


def test_bool_add_mul():
    a, b = make((6,), torch.bool, 1), make((6,), torch.bool, 2)
    assert_same(torch.add, a, b)
    assert_same(torch.mul, a, b)


@pytest.mark.parametrize("mode", ["strict", "fused"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.complex64], ids=str)
def test_false_times_inf_or_nan_is_nan(mode, dtype):
    """A bool promoted to a float is 0.0, and 0.0 * inf is NaN. XLA rewrites
    convert(mask) * y into select(mask, y, 0); the promotion must not give
    it that pattern (masking by multiplication would hide NaN and inf)."""
    import torch_tpu

    mask = torch.tensor([False, True, False, True, False])
    y = torch.tensor([float("inf"), float("nan"), 2.0, -3.0, float("-inf")]).to(dtype)
    with torch_tpu.eager_mode(mode):
        for fn in (torch.mul, lambda m, v: m.to(v.dtype) * v, lambda m, v: v * m,
                   lambda m, v: m / float("nan"), lambda m, v: m / -0.0, lambda m, v: m * float("inf")):
            assert_same(fn, mask, y)


def test_float_to_uint8_wraps_through_int64_like_cpu():
    x = torch.tensor([-1.0, -2.7, -51.0, 0.5, 255.9, 256.0, 300.0, -256.0])
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        assert_same(lambda t: t.to(torch.uint8), x.to(dtype))
    assert_same(lambda t: (t * 255).to(torch.uint8), torch.tensor([-0.5, 0.2, 1.0]))


def test_out_of_range_python_numbers_wrap_or_raise_as_on_cpu():
    """Arithmetic casts a Python number to the tensor's dtype as C does
    (uint8 + 300 adds 44, a float overflows to inf); fill values and index_add's
    alpha are converted with an overflow check and raise."""
    u8 = torch.tensor([1, 2, 200], dtype=torch.uint8)
    where = lambda t: torch.tensor([0], device=t.device)  # noqa: E731
    for fn in (lambda t: t + 300, lambda t: t - 300, lambda t: t * 300, lambda t: 300 - t,
               lambda t: t.clone().add_(300), lambda t: t.div(300, rounding_mode="floor"),
               lambda t: t.div(256, rounding_mode="trunc"),  # 256 wraps to 0: ZeroDivisionError
               lambda t: t.to(torch.int8) * 1000, lambda t: t.int() + 2**40,
               lambda t: t.half() + 1e10, lambda t: t.bfloat16() * 1e40,
               lambda t: t.add(t, alpha=300),
               lambda t: t.masked_fill(t > 1, 300), lambda t: t.masked_fill(t > 1, torch.tensor(300)),
               lambda t: t.half().masked_fill(t > 1, 1e10), lambda t: t.masked_fill(t > 1, 255),
               lambda t: t.index_fill(0, where(t), 300), lambda t: t.index_fill(0, where(t), torch.tensor(300)),
               lambda t: t.scatter(0, where(t), 300), lambda t: t.index_add(0, where(t), t[:1], alpha=300),
               # Python integers from 2^63 on wrap too
               lambda t: t + (2**64 - 1), lambda t: t * (2**63 + 1), lambda t: t == 2**64 - 1,
               lambda t: t & (2**64 - 2), lambda t: t // (2**64 - 1), lambda t: t % (2**64 - 3)):
        assert_same(fn, u8)


@pytest.mark.parametrize("pair", [(torch.int64, torch.float32), (torch.int32, torch.int64),
                                  (torch.bfloat16, torch.float32), (torch.bool, torch.int64),
                                  (torch.float16, torch.bfloat16)], ids=str)
def test_type_promotion(pair):
    a, b = make((3, 2), pair[0], 1), make((3, 2), pair[1], 2)
    assert_same(torch.add, a, b)
    assert_same(torch.mul, a, b)


@pytest.mark.parametrize("scalar", [2, -1.5, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_python_scalars(scalar, dtype):
    a = make((4,), dtype)
    assert_same(lambda x: x + scalar, a)
    assert_same(lambda x: x * scalar, a)
    assert_same(lambda x: scalar - x, a)
    assert_same(lambda x: x / (scalar if scalar else 1), a)


def test_cpu_zero_dim_tensor_operand():
    a = make((3,), torch.float32)
    assert_same(lambda x: x + torch.tensor(2.5), a)
    assert_same(lambda x: x * torch.tensor(3), a)


@pytest.mark.parametrize("alpha", [2, -0.5])
def test_alpha(alpha):
    a, b = make((2, 3), torch.float32, 1), make((2, 3), torch.float32, 2)
    assert_same(lambda x, y: torch.add(x, y, alpha=alpha), a, b)
    assert_same(lambda x, y: torch.sub(x, y, alpha=alpha), a, b)


def test_non_contiguous_inputs():
    base = make((6, 8), torch.float32)
    assert_same(lambda x, y: x + y, base.t(), base[::1, ::1].t())
    assert_same(lambda x, y: x * y, base[::2, 1::3], base[1::2, ::3])
    assert_same(lambda x: x + 1, base[2:5, 3])
    assert_same(lambda x: x + 1, base.expand(2, 6, 8))


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_"])
def test_in_place(op):
    a, b = make((3, 4), torch.float32, 1), make((4,), torch.float32, 2)

    def fn(x, y):
        x = x.clone() if x.device.type == "cpu" else x + 0
        getattr(x, op)(y)
        return x

    assert_same(fn, a, b)


def test_out_variant_resizes():
    a, b = make((2, 3), torch.float32, 1), make((2, 3), torch.float32, 2)

    def fn(x, y):
        out = torch.empty(0, device=x.device)
        torch.add(x, y, out=out)
        return out

    assert_same(fn, a, b)


def test_in_place_broadcast_mismatch_is_an_error():
    x = torch.zeros(3, device="tpu")
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x.add_(torch.zeros(2, 3, device="tpu"))


def test_integer_in_place_with_float_is_an_error():
    x = torch.zeros(3, dtype=torch.int64, device="tpu")
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.add_(torch.ones(3, device="tpu"))


def test_fill_and_factories():
    assert_same(lambda x: x.fill_(3.5), torch.empty(2, 3))
    assert torch.equal(torch.ones(2, 3, device="tpu").cpu(), torch.ones(2, 3))
    assert torch.equal(torch.zeros(4, dtype=torch.int32, device="tpu").cpu(), torch.zeros(4, dtype=torch.int32))
    assert torch.equal(torch.full((2,), 7, device="tpu").cpu(), torch.full((2,), 7))
    x = torch.empty(3, 3, device="tpu")
    x.diagonal().fill_(1)
    assert torch.equal(x.cpu(), torch.eye(3))


def test_changing_scalars_do_not_recompile():
    x = torch.ones(8, device="tpu")
    y = torch.ones(8, device="tpu")
    torch.tpu.synchronize()  # fused eager: x and y are buffers, not results in the graph

    def steps(scale):
        for i in range(5):
            x.add_(y, alpha=scale * (i + 1))
            x.mul_(scale + i)
        x.cpu()

    steps(0.1)  # compiles (one program per op, or one fused graph)
    before = runtime.cache_stats()["compiles"]
    steps(0.3)  # the same calls with other scalars
    assert runtime.cache_stats()["compiles"] == before


def test_mixed_devices_are_an_error():
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(3, device="tpu") + torch.ones(3)


def test_unsupported_op_names_itself():
    x = torch.ones(3, device="tpu")
    with pytest.raises(NotImplementedError, match=r"aten::.* is not supported on tpu yet"):
        torch.histogram(x, 3)


@pytest.mark.parametrize("args", [(0, 1, 5), (-3, 7, 11), (2, 2, 1), (0, 10, 0), (1, -1, 4), (0, 1, 1000)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16], ids=str)
def test_linspace(args, dtype):
    expected = torch.linspace(*args, dtype=dtype)
    actual = torch.linspace(*args, dtype=dtype, device="tpu").cpu()
    # bf16: PyTorch's CPU kernel rounds its step differently (1 ulp)
    tol = dict(rtol=8e-3, atol=8e-3) if dtype == torch.bfloat16 else dict(rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(actual, expected, **tol)


@pytest.mark.parametrize("steps", [0, 1, 4, 7])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_linspace(steps, dtype):
    expected = torch.linspace(1 + 1j, -2 + 3.5j, steps, dtype=dtype)
    torch.testing.assert_close(torch.linspace(1 + 1j, -2 + 3.5j, steps, dtype=dtype, device="tpu").cpu(), expected)


@pytest.mark.parametrize("args", [(0, 3, 0.5), (1, 10, 3), (5, -2, -1.5), (0, 1, 0.1), (2, 2, 1)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.bfloat16], ids=str)
def test_range_includes_its_end_as_on_cpu(args, dtype):
    if not dtype.is_floating_point and any(isinstance(a, float) for a in args):
        pytest.skip("fractional steps of an integer range")
    with pytest.warns(UserWarning, match="deprecated"):
        expected = torch.range(*args, dtype=dtype)
        actual = torch.range(*args, dtype=dtype, device="tpu")
    # Steps in arange's compute type (f32 for f32, as on CUDA; CPU uses
    # double), so floats may differ in the last bit.
    exact = dict(rtol=0, atol=0) if dtype in (torch.float64, torch.int64, torch.int32) else {}
    torch.testing.assert_close(actual.cpu(), expected, **exact)


def test_range_refuses_what_cpu_refuses():
    with pytest.warns(UserWarning):
        with pytest.raises(RuntimeError, match="aten::range: upper bound and lower bound inconsistent"):
            torch.range(0, 3, -1, device="tpu")
        with pytest.raises(RuntimeError, match="aten::range: step must be nonzero"):
            torch.range(0, 3, 0, device="tpu")


@pytest.mark.parametrize("length", [0, 1, 2, 5, 6, 33])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("beta", [0.0, 3.5, 12.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_kaiser_window(length, periodic, beta, dtype):
    expected = torch.kaiser_window(length, periodic, beta, dtype=dtype)
    actual = torch.kaiser_window(length, periodic, beta, dtype=dtype, device="tpu")
    tol = {torch.float32: 2e-6, torch.float64: 1e-14}.get(dtype, 8e-3)
    torch.testing.assert_close(actual.cpu(), expected, rtol=tol, atol=tol)


def test_kaiser_window_short_forms_and_errors():
    torch.testing.assert_close(torch.kaiser_window(7, device="tpu").cpu(), torch.kaiser_window(7))
    torch.testing.assert_close(torch.kaiser_window(7, False, device="tpu").cpu(), torch.kaiser_window(7, False))
    with pytest.raises(RuntimeError, match="kaiser_window requires non-negative window_length"):
        torch.kaiser_window(-1, device="tpu")
    with pytest.raises(RuntimeError, match="kaiser_window expects floating point dtypes"):
        torch.kaiser_window(3, dtype=torch.int32, device="tpu")


def test_an_unsupported_dtype_keeps_its_message_through_python_operators():
    # A TypeError would become NotImplemented in Tensor.__add__ and lose it.
    with pytest.raises(NotImplementedError, match="aten::add: dtype ComplexHalf is not supported on tpu"):
        torch.ones(2, dtype=torch.float16, device="tpu") + 1j
    chalf = torch.ones(4, device="tpu").view(torch.chalf)
    for name, op in (("abs", torch.abs), ("exp", torch.exp), ("sqrt", torch.sqrt), ("sgn", torch.sgn)):
        with pytest.raises(NotImplementedError, match=f"aten::{name}: dtype ComplexHalf is not supported on tpu"):
            op(chalf)


def test_complex_scalars_beyond_complex64_become_infinite_as_on_cpu():
    # CPU casts the scalar to the op's type without an overflow check, as
    # real scalars are cast (1e300 in a float32 op is inf).
    out = torch.ones(2, device="tpu") + complex(1e300, 0)
    assert out.dtype == torch.complex64 and torch.isinf(out.cpu().real).all()
    out = torch.ones(2, dtype=torch.complex64, device="tpu") * 1e300
    assert torch.isinf(out.cpu().real).all()


def test_addcmul_of_bool_tensors_is_refused_as_on_cpu():
    t = torch.tensor([True, True], device="tpu")
    with pytest.raises(NotImplementedError, match="addcmul.* not implemented for 'Bool'"):
        torch.addcmul(torch.tensor([True, False], device="tpu"), t, t)


def test_equal_compares_values_across_dtypes_like_cpu():
    for a, b in ((torch.ones(2, dtype=torch.int64), torch.ones(2)), (torch.tensor([1.5]), torch.tensor([1]))):
        assert torch.equal(a.to("tpu"), b.to("tpu")) == torch.equal(a, b)


@pytest.mark.parametrize("shape", [(3,), (2, 4), (0, 2), (5, 1)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.int32], ids=str)
def test_eye(shape, dtype):
    assert torch.equal(torch.eye(*shape, dtype=dtype, device="tpu").cpu(), torch.eye(*shape, dtype=dtype))


def test_arange_forms():
    for args in [(5,), (1, 7), (0, 1, 0.1), (10, 0, -3), (0, 0)]:
        torch.testing.assert_close(torch.arange(*args, device="tpu").cpu(), torch.arange(*args))
    with pytest.raises(RuntimeError):
        torch.arange(0, 5, 0, device="tpu")


@pytest.mark.parametrize("make", [
    lambda d: torch.empty(3, device=d),
    lambda d: torch.empty(3, dtype=torch.long, device=d),
    lambda d: torch.empty_strided((2, 2), (1, 2), dtype=torch.int8, device=d),
    lambda d: torch.empty(2, dtype=torch.complex64, device=d),
    lambda d: torch.empty(2, dtype=torch.bool, device=d),
    lambda d: torch.ones(2, device=d).resize_(4),
], ids=["float", "long", "strided_int8", "complex", "bool", "resize"])
def test_deterministic_mode_fills_new_memory_as_cpu(make):
    """torch.use_deterministic_algorithms fills uninitialized memory with NaN
    (floats) or the largest value (integers) on CPU and CUDA, so a read of
    memory nobody wrote shows."""
    torch.use_deterministic_algorithms(True)
    try:
        want, got = make("cpu"), make("tpu").cpu()
    finally:
        torch.use_deterministic_algorithms(False)
    torch.testing.assert_close(got, want, equal_nan=True)
