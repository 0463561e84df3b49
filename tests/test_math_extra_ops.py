"""The extra math ops (inverse / hyperbolic trig, exp2, erfc, gamma family,
Bessel, sinc, entr, logit, atan2, hypot, logaddexp, xlogy, copysign,
nextafter, heaviside, fmax / fmin, fmod, remainder, floor_divide, shifts,
gcd / lcm, zeta) and the extra activations (elu / celu / selu, hardswish,
hardsigmoid, mish, logsigmoid, glu, prelu, softshrink, hardshrink, rrelu
eval) against CPU: dtypes, special values, 0-dim / empty / non-contiguous /
broadcast inputs, in-place and out= forms, errors and gradients."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from tpu_testing import TPU, assert_grad, assert_same

INF, NAN = math.inf, math.nan
SPECIAL = [0.0, -0.0, INF, -INF, NAN]


def rand(shape, lo, hi, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def values(lo, hi, extra=(), n=40, dtype=torch.float32, seed=0):
    """Random values in [lo, hi] followed by `extra` and the special values."""
    x = torch.cat([rand((n,), lo, hi, seed=seed).double(), torch.tensor(list(extra) + SPECIAL, dtype=torch.float64)])
    return x.to(dtype)


# ---- unary float ops ----------------------------------------------------------------------

# op -> (fn, domain, extra values, f32 tolerance)
UNARY = {
    "asin": (torch.asin, (-1, 1), (1.0, -1.0, 1.5), {}),
    "acos": (torch.acos, (-1, 1), (1.0, -1.0, 1.5), {}),
    "atan": (torch.atan, (-20, 20), (1e30, -1e30), {}),
    "sinh": (torch.sinh, (-10, 10), (80.0, -80.0, 1e-8), dict(rtol=3e-6, atol=1e-5)),
    "cosh": (torch.cosh, (-10, 10), (80.0, -80.0), dict(rtol=3e-6, atol=1e-5)),
    "asinh": (torch.asinh, (-20, 20), (1e30, -1e30, 1e-8), {}),
    "acosh": (torch.acosh, (1, 20), (1.0, 0.5, 1e30), {}),
    "atanh": (torch.atanh, (-1, 1), (1.0, -1.0, 2.0), {}),
    "exp2": (torch.exp2, (-20, 20), (3.0, 10.0, -4.0, 200.0, -200.0), {}),
    "erfc": (torch.erfc, (-5, 10), (12.0, -12.0), dict(rtol=1e-5, atol=1e-6)),
    "lgamma": (torch.lgamma, (-10, 20), (1.0, 2.0, -1.0, -2.0, 0.5, -0.5, 1e30), dict(rtol=1e-5, atol=2e-5)),
    "digamma": (torch.digamma, (-10, 20), (1.0, -1.0, -3.0, 0.5, -0.5, 1e10), dict(rtol=1e-5, atol=2e-5)),
    "i0": (torch.i0, (-30, 30), (1e-3, 89.0, -95.0, 100.0), dict(rtol=1e-5, atol=1e-6)),
    "i0e": (torch.special.i0e, (-30, 30), (1e-3, 89.0, 1e4), dict(rtol=1e-5, atol=1e-6)),
    "i1": (torch.special.i1, (-30, 30), (1e-3, 89.0, -89.0, 100.0), dict(rtol=1e-5, atol=1e-6)),
    "i1e": (torch.special.i1e, (-30, 30), (1e-3, 89.0, -1e4), dict(rtol=1e-5, atol=1e-6)),
    "sinc": (torch.sinc, (-5, 5), (1.0, 2.0, -3.0, 0.5, 1e-6), dict(rtol=1e-5, atol=2e-6)),
    "entr": (torch.special.entr, (-1, 5), (1.0, 1e-30), {}),
}
SHAPE_CHECKED = {"asin", "lgamma", "i0", "i1e", "polygamma", "sinc", "entr"}
INPLACE = {"asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "erfc", "lgamma",
           "digamma", "i0", "sinc"}


@pytest.mark.parametrize("name", UNARY)
def test_unary_f32_special_values(name):
    fn, (lo, hi), extra, tol = UNARY[name]
    assert_same(fn, values(lo, hi, extra), **tol)


@pytest.mark.parametrize("name", UNARY)
def test_unary_bf16_int_and_shapes(name):
    fn, (lo, hi), extra, tol = UNARY[name]
    # bf16 computes in f32 and rounds once, as CPU does
    assert_same(fn, values(lo, hi, extra, dtype=torch.bfloat16), rtol=1.6e-2, atol=1e-2)
    # integers and bools promote to the default float dtype
    ints = torch.tensor([-3, -1, 0, 1, 2, 5])
    assert_same(fn, ints, **tol)
    # non-contiguous
    x = rand((6, 8), lo, hi).t()
    assert_same(fn, x[::2, 1::3], **tol)
    if name in SHAPE_CHECKED:  # the glue is shared: bool, 0-dim and empty for a few
        assert_same(fn, torch.tensor([True, False]), **tol)
        assert_same(fn, torch.tensor((lo + hi) / 2 + 0.25), **tol)
        assert_same(fn, torch.empty(0, 3), **tol)


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_unary_inplace_and_out(name):
    fn, (lo, hi), _, tol = UNARY[name]
    method = getattr(torch.Tensor, name + "_")
    x = rand((4, 6), lo, hi)
    assert_same(lambda v: method(v.clone()), x, **tol)
    # in-place through a view writes into the base
    assert_same(lambda v: (lambda w: (method(w[:, 1:3]), w)[1])(v.clone()), x, **tol)
    out_fn = getattr(torch, name)
    # a float64 out= holds the f32 result (compared at f32 precision)
    assert_same(lambda v: out_fn(v, out=torch.empty(0, dtype=torch.float64, device=v.device)), x,
                **(tol or dict(rtol=1.3e-6, atol=1e-5)))
    # an integer tensor cannot hold the float result
    assert_same(lambda v: method(v), torch.tensor([1, 2]))
    assert_same(lambda v: out_fn(v, out=torch.empty(2, dtype=torch.int64, device=v.device)), torch.tensor([1.0, 2.0]))


def test_special_out_forms():
    x = rand((5,), -3, 3)
    for fn in (torch.special.i0e, torch.special.i1, torch.special.i1e, torch.special.entr):
        assert_same(lambda v: fn(v, out=torch.empty(5, device=v.device)), x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma(n):
    x = values(0.1, 10, (1.0, 2.5, 30.0)) if n >= 2 else values(-6, 10, (1.0, -1.5, -0.5, 0.25, 100.0))
    assert_same(lambda v: torch.polygamma(n, v), x, rtol=2e-5, atol=2e-5)
    assert_same(lambda v: torch.polygamma(n, v), torch.tensor([1, 2, 3]), rtol=2e-5, atol=2e-5)
    assert_same(lambda v: v.clone().polygamma_(n), rand((3, 4), 0.5, 4), rtol=2e-5, atol=2e-5)
    assert_same(lambda v: torch.polygamma(n, v, out=torch.empty(0, device=v.device)), rand((4,), 0.5, 4), rtol=2e-5, atol=2e-5)


def test_polygamma_errors():
    assert_same(lambda v: torch.polygamma(-1, v), torch.ones(3))


@pytest.mark.parametrize("eps", [None, 1e-6, 0.1, -0.5])
def test_logit(eps):
    x = values(0, 1, (0.0, 1.0, -0.5, 1.5, 0.5))
    assert_same(lambda v: torch.logit(v, eps), x)
    assert_same(lambda v: torch.logit(v, eps), x.to(torch.bfloat16), rtol=1.6e-2, atol=1e-2)
    assert_same(lambda v: v.clone().logit_(eps), rand((3, 4), 0, 1))
    assert_same(lambda v: torch.logit(v, eps, out=torch.empty(0, dtype=torch.float64, device=v.device)), rand((3,), 0, 1))
    assert_grad(lambda v: torch.logit(v, eps), torch.tensor([0.05, 0.2, 0.5, 0.93, 0.0, 1.0, 1.2, -0.1]))


def test_logit_int_promotes():
    assert_same(torch.logit, torch.tensor([0, 1, 2]))


UNARY_GRAD = {
    "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atan": (-5, 5), "sinh": (-3, 3), "cosh": (-3, 3),
    "asinh": (-5, 5), "acosh": (1.1, 5), "atanh": (-0.9, 0.9), "exp2": (-3, 3), "erfc": (-2, 2),
    "lgamma": (0.2, 6), "digamma": (0.2, 6), "i0": (-5, 5), "i0e": (-5, 5), "i1": (-5, 5), "i1e": (-5, 5),
    "sinc": (-3, 3), "entr": (0.1, 3),
}


@pytest.mark.parametrize("name", UNARY_GRAD)
def test_unary_grad(name):
    lo, hi = UNARY_GRAD[name]
    assert_grad(UNARY[name][0], rand((3, 5), lo, hi, seed=3), rtol=2e-5, atol=2e-5)


def test_unary_grad_bf16():
    assert_grad(torch.asin, rand((8,), -0.9, 0.9, dtype=torch.bfloat16))
    assert_grad(torch.lgamma, rand((8,), 0.5, 4, dtype=torch.bfloat16))


# ---- binary ops ------------------------------------------------------------------------------

def pair(lo, hi, n=30, seed=1, extra=()):
    a = torch.cat([rand((n,), lo, hi, seed=seed), torch.tensor([e[0] for e in extra])])
    b = torch.cat([rand((n,), lo, hi, seed=seed + 7), torch.tensor([e[1] for e in extra])])
    return a, b


SPECIAL_PAIRS = [(x, y) for x in SPECIAL + [1.5, -2.0] for y in SPECIAL + [1.5, -2.0]]

# op -> (fn, domain, f32 tolerance, accepts integers)
BINARY = {
    "atan2": (torch.atan2, (-5, 5), {}, True),
    "hypot": (torch.hypot, (-5, 5), {}, False),
    "logaddexp": (torch.logaddexp, (-20, 20), {}, False),
    "logaddexp2": (torch.logaddexp2, (-20, 20), {}, False),
    "xlogy": (torch.xlogy, (-2, 5), {}, True),
    "xlog1py": (torch.special.xlog1py, (-2, 5), {}, True),
    "copysign": (torch.copysign, (-5, 5), {}, True),
    "nextafter": (torch.nextafter, (-5, 5), dict(rtol=0, atol=0), False),
    "fmax": (torch.fmax, (-5, 5), {}, True),
    "fmin": (torch.fmin, (-5, 5), {}, True),
    "fmod": (torch.fmod, (-10, 10), {}, True),
    "remainder": (torch.remainder, (-10, 10), {}, True),
    "floor_divide": (torch.floor_divide, (-10, 10), {}, True),
    "heaviside": (torch.heaviside, (-2, 2), {}, True),
}


@pytest.mark.parametrize("name", BINARY)
def test_binary_f32(name):
    fn, (lo, hi), tol, _ = BINARY[name]
    a, b = pair(lo, hi, extra=SPECIAL_PAIRS)
    assert_same(fn, a, b, **tol)
    # broadcasting, non-contiguous, 0-dim, empty
    x, y = rand((4, 1, 3), lo, hi, seed=2), rand((5, 3), lo, hi, seed=4)
    assert_same(fn, x, y, **tol)
    assert_same(fn, rand((3, 6), lo, hi).t(), rand((6, 3), lo, hi, seed=5)[::1, :], **tol)
    if name in ("atan2", "fmod", "remainder", "nextafter", "fmax"):  # shared glue: a few suffice
        assert_same(fn, rand((), lo, hi), rand((), lo, hi, seed=9), **tol)
        assert_same(fn, torch.empty(0, 2), torch.empty(1, 2), **tol)
        # a CPU scalar operand
        assert_same(lambda v: fn(v, torch.tensor(1.25)), x, **tol)


@pytest.mark.parametrize("name", BINARY)
def test_binary_bf16_and_int(name):
    fn, (lo, hi), _, ints = BINARY[name]
    a, b = pair(lo, hi, extra=SPECIAL_PAIRS)
    tol = dict(rtol=0, atol=0) if name == "nextafter" else dict(rtol=1.6e-2, atol=1e-2)
    assert_same(fn, a.bfloat16(), b.bfloat16(), **tol)
    ia = torch.tensor([7, -7, 7, -7, 0, 5, -3, 12, 1, 9])
    ib = torch.tensor([2, 2, -2, -2, 3, 5, 4, -5, 1, -9])
    # integer operands: a result like CPU's, or CPU's error
    assert_same(fn, ia, ib)
    assert_same(fn, ia.int(), ib.to(torch.int16))
    assert_same(fn, ia > 0, ib > 0)
    if name != "heaviside":  # heaviside wants equal dtypes (checked like CPU)
        assert_same(fn, ia, b[:10])


def test_heaviside_dtype_mismatch():
    assert_same(torch.heaviside, torch.tensor([1.0, 0.0]), torch.tensor([1, 2]))


@pytest.mark.parametrize("name", ["atan2", "hypot", "nextafter", "copysign", "fmod", "remainder", "floor_divide",
                                  "xlogy", "heaviside"])
def test_binary_inplace_and_out(name):
    fn = BINARY[name][0]
    method = getattr(torch.Tensor, name + "_")
    a, b = rand((3, 4), -5, 5, seed=1), rand((4,), -5, 5, seed=2)
    assert_same(lambda x, y: method(x.clone(), y), a, b)
    assert_same(lambda x, y: (lambda w: (method(w[:, ::2], y[:2]), w)[1])(x.clone()), a, b)
    assert_same(lambda x, y: fn(x, y, out=torch.empty(0, device=x.device)), a, b)
    # the in-place result must fit self's shape
    assert_same(lambda x, y: method(y.clone(), x), a, b)


def test_out_forms_without_inplace():
    a, b = rand((3, 4), -5, 5, seed=1), rand((4,), -5, 5, seed=2)
    for fn in (torch.logaddexp, torch.logaddexp2, torch.fmax, torch.fmin, torch.special.xlog1py):
        assert_same(lambda x, y: fn(x, y, out=torch.empty(0, dtype=torch.float64, device=x.device)), a, b,
                    rtol=1.3e-6, atol=1e-5)


def test_python_scalar_forms():
    x = rand((7,), -6, 6, seed=3)
    i = torch.tensor([7, -7, 3, -3, 0, 11])
    assert_same(lambda v: torch.fmod(v, 2.5), x)
    assert_same(lambda v: torch.remainder(v, -2.5), x)
    assert_same(lambda v: torch.remainder(3.5, v), x)
    assert_same(lambda v: v % 3, i)
    assert_same(lambda v: -7 % v.clamp(min=1), i)
    assert_same(lambda v: v // 2, i)
    assert_same(lambda v: v // -2.5, x)
    assert_same(lambda v: torch.copysign(v, -1.0), x)
    assert_same(lambda v: torch.xlogy(2, v.abs()), x)
    assert_same(lambda v: torch.xlogy(v, 3), x)
    assert_same(lambda v: v.clone().fmod_(3), i)
    assert_same(lambda v: v.clone().remainder_(-3), i)
    assert_same(lambda v: v.clone().floor_divide_(3), i)


def test_floor_divide_matches_cpu_rounding():
    # CPU computes from fmod: 1 // 0.1 is 9, not floor(10.0)
    a = torch.tensor([1.0, -1.0, 7.5, -7.5, 0.0, -0.0, 5.0, 1e30, 3.0])
    b = torch.tensor([0.1, 0.1, -2.0, 2.0, -3.0, 3.0, 0.0, 7.0, INF])
    assert_same(torch.floor_divide, a, b)
    assert_same(torch.remainder, a, b)


@pytest.mark.parametrize("name", ["fmod", "remainder", "floor_divide"])
def test_integer_division_by_zero(name):
    fn = BINARY[name][0]
    a, b = torch.tensor([5, -5, 3]), torch.tensor([0, 2, -2])
    # a tensor divisor: raised at the next sync, like CPU's immediate error
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a.to(TPU), b.to(TPU)).cpu()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a.to(TPU), b.to(TPU), out=torch.empty(3, dtype=torch.int64, device=TPU)).cpu()
    # a scalar divisor: at once
    assert_same(lambda v: fn(v, 0), a)
    # no zero: no error, and later ops are unaffected
    assert_same(fn, a, b + 10)
    # floats divide by zero per IEEE
    assert_same(fn, a.float(), b.float())


def test_integer_division_by_zero_on_empty_result():
    fn = torch.remainder
    assert_same(fn, torch.empty(0, 3, dtype=torch.int64), torch.tensor([0, 1, 2]))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.int8], ids=str)
def test_shifts(dtype):
    a = torch.tensor([1, 5, -3, 127, 0, -128, 64, 3]).to(dtype)
    s = torch.tensor([0, 1, 2, 3, 7, 1, 8, 64]).to(dtype)
    assert_same(torch.bitwise_left_shift, a, s)
    assert_same(torch.bitwise_right_shift, a, s)
    assert_same(lambda x, y: x << y, a, s)
    assert_same(lambda x, y: x >> y, a, s)
    assert_same(lambda x: x << 2, a)
    assert_same(lambda x: x >> 1, a)
    assert_same(lambda x, y: x.clone().__ilshift__(y), a, s)
    assert_same(lambda x: x.clone().__irshift__(2), a)
    assert_same(lambda x, y: x.clone().bitwise_left_shift_(y), a, s)
    assert_same(lambda x, y: torch.bitwise_right_shift(x, y, out=torch.empty(0, dtype=dtype, device=x.device)), a, s)


def test_shift_negative_and_float():
    a = torch.tensor([5, -5, 1 << 40])
    assert_same(lambda x, y: x << y, a, torch.tensor([-1, -2, 30]))
    assert_same(lambda x, y: x >> y, a, torch.tensor([-1, 70, 63]))
    assert_same(lambda x: x << 1, torch.tensor([1.0]))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.uint8], ids=str)
def test_gcd_lcm(dtype):
    hi = 200 if dtype == torch.uint8 else 1000
    lo = 0 if dtype == torch.uint8 else -hi
    g = torch.Generator().manual_seed(0)
    a = torch.randint(lo, hi, (40,), generator=g).to(dtype)
    b = torch.randint(lo, hi, (40,), generator=g).to(dtype)
    a[:3] = 0
    b[1:4] = 0
    assert_same(torch.gcd, a, b)
    assert_same(torch.lcm, a[:, None][:6] % 30, b[None, :6] % 30)
    assert_same(lambda x, y: x.clone().gcd_(y), a, b)
    assert_same(torch.gcd, torch.empty(0, dtype=dtype), torch.empty(0, dtype=dtype))
    assert_same(torch.gcd, a.float(), b.float())


def test_lcm_overflow_wraps_as_cpu():
    # CPU's C++ promotes 8- and 16-bit operands to int before taking abs.
    for dtype in (torch.int8, torch.int16, torch.int32, torch.uint8):
        hi = torch.iinfo(dtype).max
        assert_same(torch.lcm, torch.tensor([hi, hi, 100], dtype=dtype), torch.tensor([6, 8, 7], dtype=dtype))
    assert_same(torch.lcm, torch.tensor([127, 127], dtype=torch.int8), torch.tensor([-6, 8], dtype=torch.int8))


def test_zeta():
    x = torch.tensor([2.0, 3.0, 1.5, 4.0, 1.0, 0.5, 10.0])
    q = torch.tensor([1.0, 2.0, 0.5, 3.5, 2.0, 1.0, 1.0])
    assert_same(torch.special.zeta, x, q, rtol=1e-5, atol=1e-6)
    assert_same(torch.special.zeta, torch.tensor([2, 3]), torch.tensor([1, 2]), rtol=1e-5, atol=1e-6)
    assert_same(torch.special.zeta, x.bfloat16(), q.bfloat16())
    # Poles of q and s below 1 (NaN there, even at a pole), bools as CPU
    # promotes them.
    s, p = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.5, 2.0, 2.0, -1.0]), torch.tensor([1.0, 1.0, 0.0, 0.0, 1.0, -1.0, -1.5, -2.0])
    assert_same(torch.special.zeta, s, p, rtol=1e-5, atol=1e-6)
    assert_same(torch.special.zeta, torch.tensor([True, False, True, False]), torch.tensor([True, True, False, False]))


@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp", "logaddexp2", "xlogy", "xlog1py", "copysign",
                                  "fmax", "fmin", "fmod", "remainder"])
def test_binary_grad(name):
    fn = BINARY[name][0]
    a = rand((3, 4), 0.5, 4, seed=11)
    b = rand((4,), 0.5, 3, seed=12)
    assert_grad(lambda x: fn(x, b.to(x.device)), a)
    if name not in ("fmod", "remainder"):
        assert_grad(lambda y: fn(a.to(y.device), y), b)


# ---- composite ops that must run on tpu through the ops above --------------------------------

def test_composites():
    x = rand((3, 4), -3, 3, seed=4)
    assert_same(torch.square, x)
    assert_same(torch.square, torch.tensor([3, -2]))
    assert_same(lambda v: torch.float_power(v, 2), x, check_dtype=True)
    assert_same(torch.isfinite, torch.tensor([1.0, INF, -INF, NAN]))
    assert_same(torch.deg2rad, x)
    assert_same(torch.rad2deg, x)
    assert_same(torch.arctan2, x, x.flip(0))
    assert_same(torch.special.gammaln, x)
    assert_same(torch.special.psi, x)
    assert_same(torch.special.expit, x)
    assert_same(lambda v: torch.mvlgamma(v.abs() + 2, 2), x, rtol=1e-5, atol=1e-5)


# ---- activations ---------------------------------------------------------------------------------

ACT_VALUES = [-6.0, -3.0, -2.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.9, 3.0, 3.5, 10.0, INF, -INF, NAN]

ACTIVATIONS = {
    "elu": lambda x: F.elu(x),
    "elu_alpha": lambda x: F.elu(x, alpha=0.7),
    "celu": lambda x: F.celu(x, alpha=1.3),
    "selu": F.selu,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "mish": F.mish,
    "logsigmoid": F.logsigmoid,
    "softshrink": lambda x: F.softshrink(x, 0.5),
    "hardshrink": lambda x: F.hardshrink(x, 0.5),
    "tanhshrink": F.tanhshrink,
    "softsign": F.softsign,
    "rrelu_eval": lambda x: F.rrelu(x, 0.1, 0.3, training=False),
    "glu": lambda x: F.glu(x, -1),
    "prelu": lambda x: F.prelu(x, torch.tensor([0.25], device=x.device, dtype=x.dtype)),
}


# composed in Python of ops tested elsewhere, or a second setting of one op
COMPOSED = {"elu_alpha", "celu", "tanhshrink", "softsign", "rrelu_eval"}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_values(name):
    fn = ACTIVATIONS[name]
    x = torch.tensor(ACT_VALUES + [1.25, -4.0])  # an even count for glu
    assert_same(fn, x)
    if name not in COMPOSED:
        assert_same(fn, x.bfloat16())
    y = rand((6, 4), -5, 5, seed=6)
    assert_same(fn, y.t())
    if name not in ("glu", "elu_alpha", "tanhshrink", "softsign"):
        assert_same(fn, torch.empty(0, 4))
        assert_same(fn, torch.tensor(-1.5))
        assert_same(fn, torch.tensor([1, 2]))  # integers: CPU's error


def test_elu_takes_its_linear_side_at_zero_as_cpu_does():
    # At x = +-0 CPU returns x * scale, which only shows with an infinite or
    # NaN alpha (alpha * expm1(0) is NaN there).
    x = torch.tensor([-1.0, -0.0, 0.0, 1.0])
    for alpha in (INF, NAN, -2.0):
        assert_same(lambda t: F.elu(t, alpha=alpha), x)
        assert_same(lambda t: F.celu(t, alpha=alpha), x)


@pytest.mark.parametrize("name", [n for n in ACTIVATIONS if n not in ("rrelu_eval",)])
def test_activation_grad(name):
    fn = ACTIVATIONS[name]
    x = torch.tensor([-6.0, -3.5, -2.0, -0.7, -0.2, 0.3, 0.8, 1.7, 2.5, 4.0])
    assert_grad(fn, x)
    if name not in COMPOSED:
        assert_grad(fn, x.bfloat16())


def test_activation_inplace_and_out():
    x = rand((3, 4), -5, 5, seed=7)
    assert_same(lambda v: F.elu(v.clone(), inplace=True), x)
    assert_same(lambda v: F.celu(v.clone(), inplace=True), x)
    assert_same(lambda v: F.selu(v.clone(), inplace=True), x)
    assert_same(lambda v: F.hardswish(v.clone(), inplace=True), x)
    assert_same(lambda v: F.hardsigmoid(v.clone(), inplace=True), x)
    assert_same(lambda v: F.mish(v.clone(), inplace=True), x)
    assert_same(lambda v: F.rrelu(v.clone(), training=False, inplace=True), x)
    assert_same(lambda v: (lambda w: (F.elu_(w[:, 1:3]), w)[1])(v.clone()), x)
    assert_same(lambda v: torch._C._nn.elu(v, out=torch.empty(0, device=v.device)), x)
    assert_same(lambda v: torch._C._nn.hardswish(v, out=torch.empty(0, device=v.device)), x)
    assert_same(lambda v: torch._C._nn.softshrink(v, 0.3, out=torch.empty(0, device=v.device)), x)
    assert_same(lambda v: torch._C._nn.glu(v, 0, out=torch.empty(0, device=v.device)), x[:2])
    assert_same(lambda v: torch._C._nn.elu(v, out=torch.empty(0, dtype=torch.float64, device=v.device)), x)  # exact dtype


def test_elu_inplace_grad():
    # the in-place forward makes autograd differentiate from the result
    def fn(v):
        return F.elu(v * 1.0, alpha=0.5, inplace=True)

    assert_grad(fn, rand((10,), -3, 3, seed=1))
    assert_grad(lambda v: F.selu(v * 1.0, inplace=True), rand((10,), -3, 3, seed=2))


def test_log_sigmoid_forward_buffer():
    x = torch.tensor(ACT_VALUES)
    assert_same(torch.ops.aten.log_sigmoid_forward, x)


def test_glu_dims_and_errors():
    x = rand((4, 6, 2), -3, 3, seed=9)
    for d in (0, 1, 2, -1):
        assert_same(lambda v: F.glu(v, d), x)
        assert_grad(lambda v: F.glu(v, d), x)
    assert_same(lambda v: F.glu(v, 0), rand((3, 2), -1, 1))
    assert_same(lambda v: F.glu(v, 0), torch.tensor(1.0))


def test_glu_forward_mode_derivatives():
    # glu_jvp and glu_backward_jvp: jvp, forward-over-reverse, hessian.
    x, dx = rand((3, 4, 2), -3, 3, seed=11), rand((3, 4, 2), -1, 1, seed=12)
    v = rand((3, 2, 2), -1, 1, seed=13)
    for dim in (1, -2):
        assert_same(lambda a, t: torch.func.jvp(lambda z: F.glu(z, dim), (a,), (t,))[1], x, dx)

        def over_vjp(a, g, t):
            _, pullback = torch.func.vjp(lambda z: F.glu(z, dim), a)
            return torch.func.jvp(pullback, (g,), (t,))[1][0]

        assert_same(over_vjp, x, v, v * 0.5)
        assert_same(lambda a, t: torch.func.jvp(torch.func.grad(lambda z: F.glu(z, dim).pow(2).sum()), (a,), (t,))[1],
                    x, dx)
    assert_same(lambda a: torch.func.hessian(lambda z: F.glu(z).sum())(a), rand((2, 4), -2, 2, seed=14))


def test_prelu_channels_and_grad():
    x = rand((2, 3, 4), -3, 3, seed=10)
    w = torch.tensor([0.1, -0.2, 0.3])
    assert_same(F.prelu, x, w)
    assert_grad(lambda v: F.prelu(v, w.to(v.device)), x)
    # the weight's gradient (summed over the broadcast dims by autograd)
    wc = w.clone().requires_grad_()
    F.prelu(x, wc).sum().backward()
    wt = w.to(TPU).requires_grad_()
    F.prelu(x.to(TPU), wt).sum().backward()
    torch.testing.assert_close(wt.grad.cpu(), wc.grad, rtol=1e-5, atol=1e-5)
    m = torch.nn.PReLU(3)
    assert_same(lambda v: m.to(v.device)(v), x)


def test_shrink_errors():
    assert_same(lambda v: F.softshrink(v, -1.0), torch.ones(3))
    assert_same(lambda v: F.hardshrink(v, 0.0), torch.tensor([0.0, -0.0, 1e-30, NAN]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_rrelu_training_draws_slopes_on_the_device(dtype):
    # Each element at or below zero gets a slope from U(lower, upper), the
    # others pass unchanged; the slopes land in `noise` and scale the
    # gradient; a seeded device generator repeats them.
    lower, upper = 0.1, 0.3
    x = torch.cat([torch.linspace(-4, 4, 20001), torch.tensor([0.0, -0.0])]).to(dtype)
    xt = x.to(TPU).requires_grad_()
    out = F.rrelu(xt, lower, upper, training=True)
    out.backward(torch.ones_like(out))
    got, grad = out.detach().cpu().float(), xt.grad.cpu().float()
    positive = x > 0
    assert torch.equal(got[positive], x[positive].float())
    assert torch.equal(grad[positive], torch.ones(int(positive.sum())))
    slopes = grad[~positive]
    assert slopes.min() >= lower - 1e-3 and slopes.max() <= upper + 1e-3
    assert abs(slopes.mean().item() - (lower + upper) / 2) < 0.005 and slopes.std() > 0.05
    negative = x < 0
    torch.testing.assert_close(got[negative], (x.float() * grad)[negative], rtol=1e-2 if dtype != torch.float32 else 0,
                               atol=0)

    noise = torch.empty(0, device=TPU, dtype=dtype)
    g = torch.Generator(TPU)
    runs = []
    for _ in range(2):
        g.manual_seed(5)
        runs.append(torch.ops.aten.rrelu_with_noise(x.to(TPU), noise, lower, upper, True, g).cpu())
        assert noise.shape == x.shape and torch.equal(noise.cpu()[positive], torch.ones(int(positive.sum()), dtype=dtype))
    assert torch.equal(runs[0], runs[1])

    y = x.to(TPU)
    F.rrelu(y, lower, upper, training=True, inplace=True)
    assert torch.equal(y.cpu()[positive], x[positive]) and (y.cpu()[negative] < 0).all()
    with pytest.raises(RuntimeError, match="rrelu_with_noise"):
        torch.ops.aten.rrelu_with_noise(x.to(TPU), torch.empty(0, device=TPU, dtype=torch.float64), lower, upper, True)


def test_rrelu_training_in_fused_and_compiled_modes():
    x = torch.linspace(-2, 2, 101)
    with torch_tpu.eager_mode("fused"):
        out = F.rrelu(x.to(TPU), training=True).cpu()
    assert torch.equal(out[x > 0], x[x > 0]) and ((out[x < 0] / x[x < 0]) >= 1 / 8 - 1e-6).all()
    compiled = torch.compile(lambda t: F.rrelu(t, training=True), backend="tpu")
    out = compiled(x.to(TPU)).cpu()
    ratio = out[x < 0] / x[x < 0]
    assert torch.equal(out[x > 0], x[x > 0]) and (ratio >= 1 / 8 - 1e-6).all() and (ratio <= 1 / 3 + 1e-6).all()
    assert ratio.std() > 0.01


def test_zeta_at_its_poles_and_at_infinity():
    """CPU's (Cephes') cases: q = 0, -1, ... is a pole for every s >= 1 (and
    NaN s), s = inf leaves q^-s (1 at q = 1, inf below); s < 1 is NaN."""
    nan, inf = float("nan"), float("inf")
    s = torch.tensor([1.0, 1.5, 2.0, 3.0, 0.5, inf, nan], dtype=torch.float64)
    q = torch.tensor([0.0, -0.0, -1.0, -1.5, -2.0, 0.5, 1.0, 2.0, inf, 1e-300], dtype=torch.float64)
    x, y = torch.meshgrid(s, q, indexing="ij")
    for dtype in (torch.float64, torch.float32):
        assert_same(torch.special.zeta, x.to(dtype), y.to(dtype), rtol=1e-5, atol=0)


def test_mvlgamma_in_place_and_out():
    x = torch.full((2,), 3.0)
    assert_same(lambda t: t.clone().mvlgamma_(2), x)
    assert_same(lambda t: torch.special.multigammaln(t, 2, out=torch.empty(2, device=t.device)), x)


def test_float32_lgamma_is_accurate_near_its_zeros():
    # lgamma(1) and lgamma(2) are exactly 0 and a Poisson log-likelihood of
    # zero counts sums lgamma(1): XLA's approximation left 4.8e-7 there.
    x = torch.cat([torch.linspace(1e-3, 3.5, 4001), torch.tensor([1.0, 2.0, 0.999, 1.001, 2.001, 1.4616321])])
    got = torch.lgamma(x.to("tpu")).cpu().double()
    want = torch.lgamma(x.double())
    ulps = (got - want).abs() / (torch.finfo(torch.float32).eps * want.abs().clamp_min(1e-30))
    assert ulps.max() <= 8, (x[ulps.argmax()].item(), ulps.max().item())
    assert torch.lgamma(torch.tensor([1.0, 2.0], device="tpu")).tolist() == [0.0, 0.0]


def test_float32_erfinv_is_accurate_near_plus_minus_one():
    # XLA's approximation was 1.5e-5 off at 0.99983 (torch.nn.init.trunc_normal_
    # draws through erfinv); one Newton step on erfc brings it to a few ulp.
    x = torch.cat([torch.linspace(-1, 1, 200001)[1:-1], torch.tensor([-0.99983, 0.99983, 0.5, -0.5, 1.0, -1.0, 0.0])])
    got = torch.erfinv(x.to("tpu")).cpu().double()
    want = torch.erfinv(x.double())
    finite = want.isfinite() & (want != 0)
    ulps = (got - want).abs()[finite] / (torch.finfo(torch.float32).eps * want.abs()[finite])
    assert ulps.max() <= 8, ulps.max().item()
    assert got[~finite].tolist() == want[~finite].tolist()  # +-inf at +-1, 0 at 0
