"""Elementwise unary math ops, comparisons, logical / bitwise ops, where,
clamp, pow and nan_to_num on tpu against CPU: dtypes and promotion, special
values, non-contiguous / 0-dim / empty inputs, broadcasting, CPU scalars,
in-place and out= forms, errors, and gradients through autograd."""

from __future__ import annotations


import pytest
import torch

from tpu_testing import assert_grad, assert_same

NAN, INF = float("nan"), float("inf")


def make(shape, dtype, seed=0, low=-3.0, high=3.0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == torch.uint8:
        return torch.randint(0, 20, shape, generator=g).to(dtype)
    if not dtype.is_floating_point:
        return torch.randint(-9, 10, shape, generator=g).to(dtype)
    return (torch.rand(shape, generator=g) * (high - low) + low).to(dtype)


def special(dtype=torch.float32):
    """Special values, in a (2, 5) tensor."""
    return torch.tensor([[NAN, INF, -INF, 0.0, -0.0], [0.5, -0.5, 1.5, -2.5, 1e-3]], dtype=dtype)


# ---- unary ops ---------------------------------------------------------------------

FLOAT_OPS = ["exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan",
             "tanh", "sigmoid", "reciprocal", "erf", "erfinv"]
SAME_OPS = ["neg", "abs", "floor", "ceil", "round", "trunc", "sign", "sgn", "frac"]
ALL_OPS = FLOAT_OPS + SAME_OPS


def domain(op, x):
    """Inputs mostly inside the op's domain (plus a few outside, for NaNs)."""
    if op == "erfinv":
        return x / 3.2
    return x


@pytest.mark.parametrize("op", ALL_OPS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_unary_float(op, dtype):
    fn = getattr(torch, op)
    assert_same(fn, domain(op, make((3, 4), dtype, 1)))
    if dtype == torch.float32:
        assert_same(fn, special(dtype))


@pytest.mark.parametrize("op", ALL_OPS + ["bitwise_not", "logical_not", "isnan", "isinf", "isfinite",
                                          "isposinf", "isneginf", "signbit"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8, torch.bool], ids=str)
def test_unary_integer_and_bool(op, dtype):
    # float ops promote to float32; the rest keep the dtype or raise like CPU
    assert_same(getattr(torch, op), make((5,), dtype, 2))


@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not",
                                "bitwise_not"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_unary_predicates_on_floats(op, dtype):
    # bitwise_not raises NotImplementedError for floats, like CPU
    x = torch.cat([special().flatten(), torch.tensor([-NAN, 3.0])]).to(dtype)
    assert_same(getattr(torch, op), x)


@pytest.mark.parametrize("op", ["exp", "neg", "sign", "floor", "logical_not", "isnan"])
def test_unary_views_zero_dim_empty(op):
    fn = getattr(torch, op)
    base = make((4, 6), torch.float32, 3)
    assert_same(fn, base[:, ::2])          # non-contiguous
    assert_same(fn, base.t())              # transposed
    assert_same(fn, torch.tensor(-1.25))   # 0-dim
    assert_same(fn, torch.empty(0, 3))     # empty


def test_unary_float64_and_half():
    for dtype in [torch.float64, torch.float16]:
        x = make((7,), dtype, 4)
        tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else {}
        for op in ["exp", "tanh", "sqrt", "erf", "floor", "sigmoid"]:
            assert_same(getattr(torch, op), x, **tol)


def test_unary_default_dtype_promotion():
    x = make((4,), torch.int64, 5)
    torch.set_default_dtype(torch.float64)
    try:
        assert_same(torch.sqrt, x, rtol=1e-12, atol=1e-12)
        assert_same(torch.exp, x, rtol=1e-12, atol=1e-12)
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("op", ["exp", "neg", "floor", "sqrt", "bitwise_not", "logical_not", "sign"])
def test_unary_inplace(op):
    for dtype in [torch.float32, torch.int64, torch.bool]:
        x = make((3, 4), dtype, 6)
        assert_same(lambda t: getattr(t.clone(), op + "_")(), x)
        # in-place on a strided view writes through to the base
        assert_same(lambda t: (lambda c: (getattr(c[:, 1::2], op + "_")(), c)[1])(t.clone()), x)


@pytest.mark.parametrize("op,out_dtype", [("exp", torch.float64), ("exp", torch.int64), ("neg", torch.float64),
                                          ("floor", torch.float32), ("abs", torch.int32),
                                          ("logical_not", torch.float32), ("isposinf", torch.float32),
                                          ("signbit", torch.bool), ("sqrt", torch.bfloat16)])
@pytest.mark.parametrize("in_dtype", [torch.float32, torch.int32], ids=str)
def test_unary_out(op, out_dtype, in_dtype):
    x = make((2, 3), in_dtype, 7)

    def fn(t):
        out = torch.empty(0, dtype=out_dtype, device=t.device)  # resized to (2, 3)
        r = getattr(torch, op)(t, out=out)
        assert r is out
        return out

    # float32 results cast to float64 differ from CPU's by float32 rounding
    assert_same(fn, x, **(dict(rtol=1.3e-6, atol=1e-5) if out_dtype == torch.float64 else {}))


def test_log2_log10_exact_powers():
    x = torch.tensor([1.0, 2.0, 4.0, 8.0, 1024.0, 2.0**-20, 0.5])
    assert_same(torch.log2, x, rtol=0, atol=0)
    assert_same(torch.log10, torch.tensor([1.0, 10.0, 100.0, 1e-3]))


def test_round_decimals():
    x = torch.tensor([1.2345, -2.5, 2.5, 1234.5678, -0.049, NAN, INF])
    for d in [0, 1, 2, -1, -2]:
        assert_same(lambda t: torch.round(t, decimals=d), x)
        assert_same(lambda t: torch.round(t.bfloat16(), decimals=d), x)
    assert_same(lambda t: t.clone().round_(decimals=1), x)
    assert_same(lambda t: torch.round(t, decimals=1), make((3,), torch.int64))  # NotImplementedError


def test_nan_to_num():
    x = special()
    assert_same(torch.nan_to_num, x)
    assert_same(torch.nan_to_num, x.bfloat16())
    assert_same(torch.nan_to_num, x.half())
    assert_same(lambda t: torch.nan_to_num(t, nan=1.5, posinf=100.0, neginf=-7.0), x)
    assert_same(lambda t: torch.nan_to_num(t, nan=1e40), x)  # out of float range: inf, like CPU
    assert_same(lambda t: t.clone().nan_to_num_(2.0), x)
    assert_same(torch.nan_to_num, make((4,), torch.int32))
    assert_same(lambda t: t.clone().nan_to_num_(), make((4,), torch.int64))
    assert_same(lambda t: torch.nan_to_num(t, out=torch.empty(0, device=t.device)), x)
    assert_same(lambda t: torch.nan_to_num(t, out=torch.empty(0, dtype=torch.float64, device=t.device)), x)


def test_complex_without_meaning_is_refused_clearly():
    # (The complex ops themselves: tests/test_complex_ops.py.)
    z = torch.ones(2, dtype=torch.complex64).to("tpu")
    with pytest.raises(NotImplementedError, match="torch.sgn"):
        torch.sign(z)


UNARY_GRAD = ["neg", "abs", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan",
              "tanh", "sigmoid", "reciprocal", "erf", "erfinv", "floor", "round", "sign", "frac"]


@pytest.mark.parametrize("op", UNARY_GRAD)
def test_unary_backward(op):
    x = make((3, 4), torch.float32, 8, 0.1, 0.9)  # inside every op's domain
    assert_grad(getattr(torch, op), x, rtol=1e-4, atol=1e-5)


# ---- comparisons ----------------------------------------------------------------

CMP = ["eq", "ne", "lt", "le", "gt", "ge"]


@pytest.mark.parametrize("op", CMP)
def test_compare(op):
    fn = getattr(torch, op)
    a = special()
    b = torch.tensor([[NAN, INF, 1.0, -0.0, 0.0], [0.5, 0.5, -1.5, -2.5, 1.0]])
    assert_same(fn, a, b)                                          # NaN, inf, signed zero
    assert_same(fn, make((2, 1, 3), torch.float32, 1), make((4, 1), torch.float32, 2))  # broadcasting
    assert_same(fn, make((6,), torch.int32, 1), make((6,), torch.float32, 2))          # promotion
    assert_same(fn, make((6,), torch.uint8, 1), make((6,), torch.int8, 2))             # -> int16
    assert_same(fn, make((6,), torch.bool, 1), make((6,), torch.bool, 2))
    assert_same(fn, make((6,), torch.bfloat16, 1), make((6,), torch.float32, 2))
    assert_same(fn, make((4, 6), torch.int64, 1)[:, ::3], make((2,), torch.int64, 2))  # non-contiguous
    assert_same(fn, torch.tensor(1.5), make((3,), torch.float32))                     # 0-dim
    assert_same(fn, torch.empty(0, 2), torch.empty(2))                               # empty
    assert_same(fn, make((3,), torch.float32), make((4,), torch.float32))            # shape error


@pytest.mark.parametrize("op", CMP)
def test_compare_scalars(op):
    fn = getattr(torch, op)
    i = make((6,), torch.int32, 3)
    f = make((6,), torch.float32, 4)
    u = torch.tensor([0, 1, 200, 255], dtype=torch.uint8)
    assert_same(lambda t: fn(t, 2), i)
    assert_same(lambda t: fn(t, 0.5), i)          # int tensor vs float scalar compares in float
    assert_same(lambda t: fn(t, NAN), f)
    assert_same(lambda t: fn(t, -1), u)           # -1 wraps to 255 like CPU
    assert_same(lambda t: fn(t, 256), u)          # 256 wraps to 0
    assert_same(lambda t: fn(t, True), make((6,), torch.bool))
    assert_same(lambda t: fn(t, torch.tensor(0.25)), f)   # CPU 0-dim tensor
    assert_same(lambda t: fn(torch.tensor(1), t), i)      # CPU 0-dim tensor first


@pytest.mark.parametrize("op", ["eq", "lt", "ge"])
def test_compare_inplace_and_out(op):
    a, b = make((3, 4), torch.float32, 1), make((4,), torch.float32, 2)
    assert_same(lambda x, y: getattr(x.clone(), op + "_")(y), a, b)
    assert_same(lambda x: getattr(x.clone(), op + "_")(0.5), a)
    assert_same(lambda x, y: getattr(x.clone().long(), op + "_")(y), a, b)  # writes 0 / 1 as int64
    assert_same(lambda x, y: getattr(x[:1].clone(), op + "_")(y), a, b)      # shape error
    for dtype in [torch.bool, torch.float64, torch.int32]:
        assert_same(lambda x, y: getattr(torch, op)(x, y, out=torch.empty(0, dtype=dtype, device=x.device)), a, b)
        assert_same(lambda x: getattr(torch, op)(x, 0.0, out=torch.empty(0, dtype=dtype, device=x.device)), a)


def test_compare_complex_equality():
    z = torch.tensor([1 + 1j, 2 - 1j, NAN + 0j])
    w = torch.tensor([1 + 1j, 2 + 1j, NAN + 0j])
    assert_same(torch.eq, z, w)
    assert_same(torch.ne, z, w)


def test_mixed_devices_raise():
    a = make((3,), torch.float32).to("tpu")
    with pytest.raises(RuntimeError, match="same device"):
        torch.eq(a, torch.ones(3))


# ---- logical and bitwise ops ------------------------------------------------------

@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical(op):
    fn = getattr(torch, op)
    assert_same(fn, make((2, 3), torch.bool, 1), make((3,), torch.bool, 2))
    assert_same(fn, make((5,), torch.int32, 1), torch.tensor([0.5, NAN, 0.0, -0.0, 2.0]))
    assert_same(fn, make((4, 4), torch.uint8, 1).t(), make((4,), torch.bfloat16, 2))
    assert_same(fn, make((3,), torch.float32, 1), torch.tensor(0.0))   # CPU 0-dim
    assert_same(fn, torch.empty(0), torch.empty(0, dtype=torch.bool))
    assert_same(lambda x, y: getattr(x.clone(), op + "_")(y), make((3,), torch.float32), make((3,), torch.bool))
    assert_same(lambda x, y: fn(x, y, out=torch.empty(0, dtype=torch.int64, device=x.device)),
                make((3,), torch.float32), make((3,), torch.int32))
    # The truth of each operand after the cast to the common dtype: a 0-dim
    # int16 256 meets uint8 as 0.
    assert_same(lambda x, y: fn(x.to(y.device), y), torch.tensor(256, dtype=torch.int16),
                torch.tensor([1, 0], dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not supported"):
        fn(torch.ones(2, dtype=torch.uint16, device="tpu"), torch.ones(2, dtype=torch.int32, device="tpu"))


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise(op):
    fn = getattr(torch, op)
    assert_same(fn, make((2, 3), torch.int32, 1), make((3,), torch.int32, 2))
    assert_same(fn, make((4,), torch.uint8, 1), make((4,), torch.int8, 2))    # -> int16
    assert_same(fn, make((4,), torch.bool, 1), make((4,), torch.bool, 2))
    assert_same(fn, make((4,), torch.int64, 1), torch.tensor([3, -1, 0, 7]))
    assert_same(lambda x: fn(x, 5), make((4,), torch.int64, 1))               # Scalar overload
    assert_same(lambda x: fn(x, True), make((4,), torch.bool, 1))
    assert_same(lambda x: fn(x, 1.5), make((4,), torch.int64, 1))            # float: NotImplementedError
    assert_same(fn, make((4,), torch.float32, 1), make((4,), torch.float32, 2))
    assert_same(lambda x, y: getattr(x.clone(), op + "_")(y), make((4,), torch.int32, 1), make((4,), torch.int32, 2))
    assert_same(lambda x, y: fn(x, y, out=torch.empty(0, dtype=torch.int64, device=x.device)),
                make((4,), torch.int32, 1), make((4,), torch.int32, 2))
    b = make((4,), torch.bool, 3)
    assert_same(lambda x, y: {"bitwise_and": x & y, "bitwise_or": x | y, "bitwise_xor": x ^ y}[op], b, ~b)


# ---- where -------------------------------------------------------------------------------

def test_where():
    c = make((2, 3), torch.bool, 1)
    a, b = make((2, 3), torch.float32, 2), make((3,), torch.float32, 3)
    assert_same(torch.where, c, a, b)
    assert_same(torch.where, c, make((2, 3), torch.int32, 2), b)                 # promotion
    assert_same(torch.where, c, make((2, 3), torch.bfloat16, 2), b.double())
    assert_same(torch.where, c[:, ::2], a[:, ::2], a[:, 1::2])                 # non-contiguous
    assert_same(torch.where, make((2, 1), torch.bool, 4), make((1, 3), torch.int64, 1), make((1,), torch.int64, 2))
    assert_same(lambda x, y: torch.where(x, y, 2.5), c, a)                      # Python scalars
    assert_same(lambda x: torch.where(x, 1, 0), c)
    assert_same(lambda x, y: torch.where(x, y, 2.0), c, make((2, 3), torch.int32))  # -> float32
    assert_same(lambda x, y: torch.where(x, y, torch.tensor(2.0, dtype=torch.float64)), c, a)
    assert_same(lambda x: torch.where(torch.tensor(True), x, 0.0), a)          # CPU 0-dim condition
    assert_same(torch.where, c.to(torch.uint8), a, b)
    assert_same(torch.where, c.int(), a, b)                                   # condition dtype error
    assert_same(torch.where, torch.empty(0, dtype=torch.bool), torch.empty(0), torch.empty(0))
    assert_same(torch.where, torch.tensor(False), torch.tensor(1.0), torch.tensor(2.0))
    assert_same(torch.where, make((2, 3), torch.bool), a, make((4,), torch.float32))  # shape error
    assert_same(lambda x, y, z: torch.where(x, y, z, out=torch.empty(0, device=y.device)), c, a, b)
    assert_same(lambda x, y, z: torch.where(x, y, z, out=torch.empty(0, dtype=torch.float64, device=y.device)),
                c, a, b)


def test_where_backward():
    c = make((3, 4), torch.bool, 1)
    assert_grad(lambda x: torch.where(c.to(x.device), x, 0.0), make((3, 4), torch.float32, 2))
    assert_grad(lambda x: torch.where(c.to(x.device), x * 2, -x), make((3, 4), torch.float32, 2))


# ---- clamp -------------------------------------------------------------------------------

def test_clamp_scalar():
    x = special()
    for lo, hi in [(-1.0, 1.0), (0.0, None), (None, 0.25), (1.0, -1.0), (NAN, None), (None, NAN)]:
        assert_same(lambda t: torch.clamp(t, lo, hi), x)
    assert_same(lambda t: torch.clamp(t, -2, 4), make((3, 4), torch.int32))
    assert_same(lambda t: torch.clamp(t, 0.5), make((3, 4), torch.int32))    # promotes to float
    assert_same(lambda t: torch.clamp(t, 3, 10), make((6,), torch.uint8))
    assert_same(lambda t: torch.clamp(t, -1), make((6,), torch.uint8))         # -1 converts to 255
    assert_same(lambda t: torch.clamp(t, 256), make((6,), torch.uint8))        # overflow error like CPU
    assert_same(lambda t: torch.clamp(t, 1e40), x)                             # overflow error like CPU
    assert_same(lambda t: torch.clamp(t, -0.5, 0.5), make((3, 4), torch.bfloat16))
    assert_same(lambda t: torch.clamp(t, 0), make((3,), torch.bool))            # int64 result
    assert_same(lambda t: torch.clamp(t, True), make((3,), torch.bool))         # NotImplementedError
    assert_same(lambda t: torch.clamp(t), x)                                   # both None
    assert_same(lambda t: torch.clamp(t[:, ::2], -1, 1), x)
    assert_same(lambda t: torch.clamp(t, -1, 1), torch.tensor(3.0))
    assert_same(lambda t: torch.clamp(t, -1, 1), torch.empty(0, 2))
    assert_same(lambda t: torch.clamp_min(t, 0.1), x)
    assert_same(lambda t: torch.clamp_max(t, 0.1), x)
    assert_same(lambda t: torch.clip(t, -0.5, 0.5), x)


def test_clamp_tensor():
    x = make((3, 4), torch.float32, 1)
    lo = make((4,), torch.float32, 2) - 1
    hi = make((3, 1), torch.float32, 3) + 1
    assert_same(torch.clamp, x, lo, hi)
    assert_same(lambda t, l: torch.clamp(t, min=l), x, lo)
    assert_same(lambda t, h: torch.clamp(t, max=h), x, hi)
    assert_same(lambda t, l: torch.clamp(t, l, torch.tensor(0.5)), x, lo)     # CPU 0-dim bound
    assert_same(torch.clamp, x, torch.tensor([0.0, NAN, 0.0, 0.0]), torch.tensor([1.0, 1.0, NAN, 1.0]))
    assert_same(torch.clamp, make((3, 4), torch.int32), lo, hi)                 # promotes to float
    assert_same(torch.clamp, make((3, 4), torch.bfloat16), lo, hi)
    assert_same(torch.clamp_min, x, lo)
    assert_same(torch.clamp_max, x, hi)
    assert_same(lambda t: torch.clamp(t, None, None), x)
    b, c = make((2, 3), torch.bool, 1), make((3,), torch.bool, 2)
    assert_same(torch.clamp_min, b, c)      # one bool bound: maximum
    assert_same(torch.clamp_max, b, c)
    assert_same(torch.clamp, b, c, c)       # two bool bounds: NotImplementedError


def test_clamp_inplace_and_out():
    x = make((3, 4), torch.float32, 1)
    lo = make((4,), torch.float32, 2)
    assert_same(lambda t: t.clone().clamp_(-0.5, 0.5), x)
    assert_same(lambda t: t.clone().clamp_min_(0.0), x)
    assert_same(lambda t: t.clone().clamp_max_(0.0), x)
    assert_same(lambda t, l: t.clone().clamp_(min=l), x, lo)
    assert_same(lambda t, l: t.clone().clamp_min_(l), x, lo)
    assert_same(lambda t, l: t.clone().bfloat16().clamp_(min=l), x, lo)       # f32 bound into bf16
    assert_same(lambda t: t.clone().int().clamp_(0.5), x)                      # float result into int: error
    assert_same(lambda t: (lambda c: (c[:, 1::2].clamp_(-0.1, 0.1), c)[1])(t.clone()), x)
    for dtype in [torch.float32, torch.float64]:
        assert_same(lambda t: torch.clamp(t, 0, 1, out=torch.empty(0, dtype=dtype, device=t.device)), x)
        assert_same(lambda t, l: torch.clamp(t, l, out=torch.empty(0, dtype=dtype, device=t.device)), x, lo)
        assert_same(lambda t: torch.clamp_min(t, 0, out=torch.empty(0, dtype=dtype, device=t.device)), x)


def test_clamp_backward():
    x = make((3, 4), torch.float32, 4)
    assert_grad(lambda t: torch.clamp(t, -0.5, 0.5), x)
    assert_grad(lambda t: torch.clamp_min(t, 0.0), x)
    lo, hi = make((3, 4), torch.float32, 5) - 1, make((3, 4), torch.float32, 6) + 1
    assert_grad(lambda t: torch.clamp(t, lo.to(t.device), hi.to(t.device)), x)


# ---- pow ---------------------------------------------------------------------------------

@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 0.5, -0.5, -1, -2, 2.7, -1.3, 7])
def test_pow_tensor_scalar(exponent):
    x = make((3, 4), torch.float32, 1, 0.1, 3.0)
    assert_same(lambda t: torch.pow(t, exponent), x)
    assert_same(lambda t: t ** exponent, make((3, 4), torch.bfloat16, 2, 0.1, 3.0))
    assert_same(lambda t: torch.pow(t, exponent), make((5,), torch.int32, 3))  # negative ints raise like CPU


def test_pow_special_cases():
    x = special()
    for e in [0, 0.5, 2, -1, 2.5, NAN, INF]:
        assert_same(lambda t: torch.pow(t, e), x)
    assert_same(lambda t: torch.pow(t, 2), make((4,), torch.bool))     # int64 result
    assert_same(lambda t: torch.pow(t, True), make((4,), torch.bool))  # bool result (exponent 1)
    assert_same(lambda t: torch.pow(t, 3), torch.empty(0, 3))
    assert_same(lambda t: torch.pow(t, 2.5), torch.tensor(4.0))
    assert_same(lambda t: torch.pow(t, 2), torch.tensor([200, 17], dtype=torch.uint8))  # wraps
    assert_same(lambda t: torch.pow(t, 256), torch.tensor([2, 1], dtype=torch.uint8))   # overflow error
    assert_same(lambda t: torch.pow(t, 1e40), x)                                        # inf exponent
    for dtype in (torch.float16, torch.bfloat16):  # beyond the 16-bit range: CPU's overflow error
        assert_same(lambda t: torch.pow(t, 1e39), make((4,), dtype))
        assert_same(lambda t: torch.pow(t, INF), make((4,), dtype))
    assert_same(lambda t: torch.pow(t, 70000), make((4,), torch.float16))


def test_pow_tensor_tensor():
    assert_same(torch.pow, make((3, 4), torch.float32, 1, 0.1, 2.0), make((4,), torch.float32, 2))
    assert_same(torch.pow, special(), special().flip(1))
    assert_same(torch.pow, torch.tensor([-1, 1, 2, -2, 0, 3, -3]), torch.tensor([-1, -2, -3, -1, -1, 3, 3]))
    assert_same(torch.pow, make((4,), torch.int32, 1), make((4,), torch.float32, 2))
    assert_same(torch.pow, make((4,), torch.bfloat16, 1, 0.1, 2.0), make((4,), torch.float32, 2))
    assert_same(torch.pow, make((4, 4), torch.float32, 1, 0.1, 2.0).t(), torch.tensor(2.0))  # CPU 0-dim exponent
    assert_same(torch.pow, make((4,), torch.bool, 1), make((4,), torch.bool, 2))              # NotImplementedError
    assert_same(lambda t, e: torch.pow(t, e, out=torch.empty(0, dtype=torch.float64, device=t.device)),
                make((4,), torch.float32, 1, 0.1, 2.0), make((4,), torch.float32, 2))
    assert_same(lambda t, e: t.clone().pow_(e), make((4,), torch.float32, 1, 0.1, 2.0), make((4,), torch.float32, 2))
    assert_same(lambda t: t.clone().pow_(2), make((4,), torch.int64))
    assert_same(lambda t: t.clone().pow_(0.5), make((4,), torch.int64))   # float result into int: error
    assert_same(lambda t: torch.pow(t, 2, out=torch.empty(0, device=t.device)), make((4,), torch.int64))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8], ids=str)
def test_integer_pow_reads_every_bit_of_the_exponent(dtype):
    """Squaring over the exponent's bits, products wrapping as in C: XLA's
    own integer power read only the low bits (2 ** (2**32 + 2) gave 4)."""
    base = torch.tensor([0, 1, 2, 3, 5, 7, 100, -1, -2, -3]).to(dtype)
    top = torch.iinfo(dtype).max
    exponents = torch.tensor([0, 1, 2, 7, 63, 64, 65, top, top - 1, 2]).to(dtype)
    assert_same(torch.pow, base, exponents)
    if dtype == torch.int64:
        for e in (2**32 + 2, 2**40, 2**62 + 1, 2**63 - 1):
            assert_same(lambda t: t ** e, base)


def test_pow_scalar_base():
    e = make((3, 4), torch.float32, 1)
    assert_same(lambda t: torch.pow(2, t), e)
    assert_same(lambda t: torch.pow(2.7, t), make((4,), torch.bfloat16))
    assert_same(lambda t: torch.pow(2, t), make((4,), torch.int64, 2).abs())   # int result
    assert_same(lambda t: torch.pow(1, t), torch.tensor([NAN, -INF, 2.0]))
    assert_same(lambda t: 3 ** t, torch.tensor([-1, 0, 2]))
    assert_same(lambda t: torch.pow(2, t, out=torch.empty(0, dtype=torch.float64, device=t.device)), e)


def test_pow_backward():
    x = make((3, 4), torch.float32, 1, 0.5, 2.0)
    for exponent in [2, 3, 0.5, -1.5]:
        assert_grad(lambda t: torch.pow(t, exponent), x, rtol=1e-4, atol=1e-5)
    y = make((3, 4), torch.float32, 2)
    assert_grad(lambda t: torch.pow(t, y.to(t.device)), x, rtol=1e-4, atol=1e-5)
    assert_grad(lambda t: torch.pow(x.to(t.device), t), y, rtol=1e-4, atol=1e-5)
    assert_grad(lambda t: torch.pow(2.0, t), y, rtol=1e-4, atol=1e-5)


def test_scalar_changes_do_not_recompile():
    from torch_tpu import runtime
    x = make((2, 9), torch.float32, 1, 0.5, 2.0).to("tpu")
    torch.clamp(x, -0.1, 0.1).cpu()
    torch.pow(x, 1.7).cpu()
    (x > 0.3).cpu()
    before = runtime.cache_stats()["compiles"]
    for v in [0.2, 0.4, 0.6]:
        torch.clamp(x, -v, v).cpu()
        torch.pow(x, 1 + v).cpu()
        (x > v).cpu()
    assert runtime.cache_stats()["compiles"] == before
