"""StableHLO builder, elementwise families: binary and unary math, CHLO,
compare / select / clamp, conversions, constants and iota. Each program is
built with hlo.Builder, run on the plugin and checked against NumPy (or
torch on CPU where NumPy lacks the op)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hlo_testing import bf16_bits, build, call, from_bf16_bits


def float_inputs(rng, shape, dtype=np.float32, low=-3.0, high=3.0):
    return rng.uniform(low, high, shape).astype(dtype)


# ---- Binary, floating point ---------------------------------------------------

FLOAT_BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "remainder": np.fmod,  # sign of the dividend, like C fmod
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "atan2": np.arctan2,
}


@pytest.mark.parametrize("op", FLOAT_BINARY)
def test_float_binary(run, rng, op):
    pairs = [(float_inputs(rng, shape, dtype), float_inputs(rng, shape, dtype))
             for dtype, shape in [(np.float32, (4, 5)), (np.float32, (0, 3)), (np.float64, ())]]
    if op == "power":  # real results only: positive bases
        pairs = [(np.abs(a) + np.asarray(0.5, a.dtype), b) for a, b in pairs]
    if op in ("divide", "remainder"):  # keep divisors away from zero
        pairs = [(a, np.where(np.abs(b) < 0.25, np.asarray(1.0, b.dtype), b)) for a, b in pairs]
    arrays = [x for pair in pairs for x in pair]

    def program(b, *params):
        return [getattr(b, op)(params[i], params[i + 1]) for i in range(0, len(params), 2)]

    outs = call(run, program, *arrays)
    for (a, b), out in zip(pairs, outs):
        assert out.dtype == a.dtype and out.shape == a.shape
        rtol = 1e-6 if a.dtype == np.float32 else 1e-13
        np.testing.assert_allclose(out, FLOAT_BINARY[op](a, b), rtol=rtol, atol=rtol)


def test_float_maximum_minimum_propagate_nan(run):
    # The XLA CPU compiler's fast min/max drops a nan in the second operand;
    # the runtime compiles with xla_cpu_enable_fast_min_max=false (PyTorch's
    # semantics), and this checks that it does.
    a = np.array([1.0, np.nan, 2.0, -np.inf, np.nan], np.float32)
    b = np.array([np.nan, 1.0, 3.0, 0.0, np.nan], np.float32)
    mx, mn = call(run, lambda B, x, y: [B.maximum(x, y), B.minimum(x, y)], a, b)
    np.testing.assert_array_equal(mx, np.maximum(a, b))
    np.testing.assert_array_equal(mn, np.minimum(a, b))


def test_half_and_bfloat16_binary(run, rng):
    a16, b16 = float_inputs(rng, (3, 4), np.float16), float_inputs(rng, (3, 4), np.float16)
    a, b = float_inputs(rng, (3, 4)), float_inputs(rng, (3, 4))
    abits, bbits = bf16_bits(a), bf16_bits(b)
    add16, mul16, addbf, mulbf = call(
        run, lambda B, x, y, u, v: [B.add(x, y), B.multiply(x, y), B.add(u, v), B.multiply(u, v)],
        a16, b16, abits, bbits, dtypes=[None, None, "bf16", "bf16"])
    np.testing.assert_array_equal(add16, a16 + b16)
    np.testing.assert_array_equal(mul16, a16 * b16)
    ta = torch.from_numpy(abits.view(np.int16)).view(torch.bfloat16)
    tb = torch.from_numpy(bbits.view(np.int16)).view(torch.bfloat16)
    np.testing.assert_array_equal(from_bf16_bits(addbf), (ta + tb).float().numpy())
    np.testing.assert_array_equal(from_bf16_bits(mulbf), (ta * tb).float().numpy())


def test_complex_binary_and_parts(run, rng):
    def c64(shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)

    a, b = c64((2, 3)), c64((2, 3))
    re, im = a.real.copy(), a.imag.copy()
    outs = call(run, lambda B, x, y, r, i: [
        B.add(x, y), B.subtract(x, y), B.multiply(x, y), B.divide(x, y),
        B.complex(r, i), B.real(x), B.imag(x), B.abs(x)], a, b, re, im)
    expected = [a + b, a - b, a * b, a / b, a, a.real, a.imag, np.abs(a)]
    for out, want in zip(outs, expected):
        assert out.dtype == want.dtype and out.shape == want.shape
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


# ---- Binary, integers and booleans -----------------------------------------------

def _int_arrays(rng, dtype, shape, low=None, high=None):
    info = np.iinfo(dtype)
    low = info.min if low is None else low
    high = info.max if high is None else high
    return rng.integers(low, high, shape, dtype=dtype, endpoint=True)


def _shift_reference(op, a, s):
    bits = a.dtype.itemsize * 8
    mask = (1 << bits) - 1
    unsigned = np.issubdtype(a.dtype, np.unsignedinteger)
    out = []
    for x, n in zip(a.ravel().tolist(), s.ravel().tolist()):
        n = n & mask  # the amount reads as unsigned: negative means huge
        if op == "shift_left":
            r = (x << n) & mask if n < bits else 0
        elif op == "shift_right_logical":
            r = (x & mask) >> n if n < bits else 0
        else:  # arithmetic: shifts in copies of the top bit, unsigned types too
            x &= mask
            if x >= 1 << (bits - 1):
                x -= 1 << bits
            r = x >> n if n < bits else (-1 if x < 0 else 0)
            r &= mask
        if not unsigned and r >= 1 << (bits - 1):
            r -= 1 << bits
        out.append(r)
    return np.array(out, dtype=a.dtype).reshape(a.shape)


INT_BINARY = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
              "power", "and_", "or_", "xor", "shift_left", "shift_right_arithmetic",
              "shift_right_logical"]


def _int_reference(op, a, b):
    with np.errstate(over="ignore"):
        if op == "divide":  # truncates toward zero, like C
            q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
            return (np.sign(a.astype(np.int64)) * np.sign(b.astype(np.int64)) * q).astype(a.dtype)
        if op == "remainder":
            return np.fmod(a, b)
        if op.startswith("shift"):
            return _shift_reference(op, a, b)
        fn = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
              "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
              "and_": np.bitwise_and, "or_": np.bitwise_or, "xor": np.bitwise_xor}[op]
        return fn(a, b).astype(a.dtype)


@pytest.mark.parametrize("op", INT_BINARY)
def test_int_binary(run, rng, op):
    pairs = []
    for dtype, shape in [(np.int32, (3, 4)), (np.uint8, (6,)), (np.int64, ()), (np.int64, (0, 2))]:
        a = _int_arrays(rng, dtype, shape)
        if op in ("divide", "remainder"):
            b = _int_arrays(rng, dtype, shape)
            b = np.where(b == 0, np.asarray(3, dtype), b)
            if np.issubdtype(dtype, np.signedinteger):  # INT_MIN / -1 overflows
                a = np.where(a == np.iinfo(dtype).min, np.asarray(7, dtype), a)
        elif op == "power":
            b = _int_arrays(rng, dtype, shape, 0, 9)
        elif op.startswith("shift"):
            bits = np.dtype(dtype).itemsize * 8
            b = _int_arrays(rng, dtype, shape, 0, bits - 1)
        else:
            b = _int_arrays(rng, dtype, shape)
        pairs.append((a, b))
    arrays = [x for pair in pairs for x in pair]

    def program(B, *params):
        return [getattr(B, op)(params[i], params[i + 1]) for i in range(0, len(params), 2)]

    outs = call(run, program, *arrays)
    for (a, b), out in zip(pairs, outs):
        assert out.dtype == a.dtype and out.shape == a.shape
        np.testing.assert_array_equal(out, _int_reference(op, a, b), err_msg=f"{op} {a.dtype}")


def test_shift_by_bit_width_or_more_saturates(run):
    # XLA's documented semantics: shifting by >= the bit width (a negative
    # amount reads as a huge unsigned one) gives 0, or all sign bits for an
    # arithmetic right shift of a negative value.
    a = np.array([1, -8, 5, -1, 7, -7], np.int32)
    s = np.array([31, 32, 40, 33, -1, 3], np.int32)
    au = np.array([1, 0xFFFFFFFF, 5], np.uint32)
    su = np.array([31, 32, 100], np.uint32)
    ops = ["shift_left", "shift_right_arithmetic", "shift_right_logical"]
    outs = call(run, lambda B, x, y, xu, yu: [getattr(B, op)(x, y) for op in ops]
                + [getattr(B, op)(xu, yu) for op in ops], a, s, au, su)
    for op, out in zip(ops, outs[:3]):
        np.testing.assert_array_equal(out, _shift_reference(op, a, s), err_msg=op)
    for op, out in zip(ops, outs[3:]):
        np.testing.assert_array_equal(out, _shift_reference(op, au, su), err_msg=op)


def test_bool_binary(run):
    p = np.array([False, False, True, True])
    q = np.array([False, True, False, True])
    ops = ["and_", "or_", "xor", "add", "multiply", "maximum", "minimum"]
    outs = call(run, lambda B, x, y: [getattr(B, op)(x, y) for op in ops], p, q)
    expected = [p & q, p | q, p ^ q, p | q, p & q, p | q, p & q]
    for op, out, want in zip(ops, outs, expected):
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out, want, err_msg=op)


# ---- Unary, floating point ------------------------------------------------------------

SPECIALS = np.array([0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 1e-30, np.inf, -np.inf, np.nan],
                    np.float32)


def _round_afz(x):
    x = x.astype(np.float64)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5))


FLOAT_UNARY = {
    # name: (reference, domain (low, high), compare exactly)
    "abs": (np.abs, (-3, 3), True),
    "negate": (np.negative, (-3, 3), True),
    "exponential": (np.exp, (-5, 5), False),
    "exponential_minus_one": (np.expm1, (-1, 1), False),
    "log": (np.log, (0.01, 10), False),
    "log_plus_one": (np.log1p, (-0.9, 3), False),
    "sqrt": (np.sqrt, (0, 10), False),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 10), False),
    "cbrt": (np.cbrt, (-10, 10), False),
    "tanh": (np.tanh, (-4, 4), False),
    "logistic": (lambda x: 1 / (1 + np.exp(-x)), (-6, 6), False),
    "sine": (np.sin, (-4, 4), False),
    "cosine": (np.cos, (-4, 4), False),
    "tan": (np.tan, (-1.2, 1.2), False),
    "floor": (np.floor, (-4, 4), True),
    "ceil": (np.ceil, (-4, 4), True),
    "round_nearest_afz": (_round_afz, (-4, 4), True),
    "round_nearest_even": (np.rint, (-4, 4), True),
    "sign": (np.sign, (-3, 3), True),
    "is_finite": (np.isfinite, (-3, 3), True),
}

# Ops whose special values (inf, nan, halves, -0) are checked exactly.
SPECIAL_OK = {"abs", "negate", "floor", "ceil", "round_nearest_afz", "round_nearest_even",
              "sign", "is_finite"}


@pytest.mark.parametrize("op", FLOAT_UNARY)
def test_float_unary(run, rng, op):
    ref, (low, high), exact = FLOAT_UNARY[op]
    inputs = [float_inputs(rng, (4, 5), np.float32, low, high),
              float_inputs(rng, (0, 3), np.float32, low, high),
              float_inputs(rng, (), np.float64, low, high)]
    if op in SPECIAL_OK:
        inputs.append(SPECIALS)
    outs = call(run, lambda B, *xs: [getattr(B, op)(x) for x in xs], *inputs)
    for x, out in zip(inputs, outs):
        want = np.asarray(ref(x))
        want_dtype = np.bool_ if op == "is_finite" else x.dtype
        assert out.dtype == want_dtype and out.shape == x.shape
        if exact:
            np.testing.assert_array_equal(out, want.astype(want_dtype), err_msg=f"{op} {x}")
        else:
            rtol = 2e-6 if x.dtype == np.float32 else 1e-13
            np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol, err_msg=op)


def test_float_unary_half_precision(run, rng):
    x16 = float_inputs(rng, (5,), np.float16, 0.1, 4)
    x = float_inputs(rng, (5,), np.float32, 0.1, 4)
    xbits = bf16_bits(x)
    ops = ["sqrt", "negate", "floor", "exponential"]
    outs = call(run, lambda B, a, b: [getattr(B, op)(a) for op in ops] + [getattr(B, op)(b) for op in ops],
                x16, xbits, dtypes=[None, "bf16"])
    refs = [np.sqrt, np.negative, np.floor, np.exp]
    xb = from_bf16_bits(xbits)
    for op, ref, out in zip(ops, refs, outs[:4]):
        assert out.dtype == np.float16
        np.testing.assert_allclose(out, ref(x16.astype(np.float32)).astype(np.float16), rtol=1e-3,
                                   err_msg=op)
    for op, ref, out in zip(ops, refs, outs[4:]):
        assert out.dtype == np.uint16  # bf16 comes back as bits
        np.testing.assert_allclose(from_bf16_bits(out), ref(xb), rtol=1e-2, err_msg=op)


# ---- Unary, integers and booleans ----------------------------------------------------

def _popcnt(a):
    bits = a.dtype.itemsize * 8
    mask = (1 << bits) - 1
    return np.array([bin(int(v) & mask).count("1") for v in a.ravel()], a.dtype).reshape(a.shape)


def _clz(a):
    bits = a.dtype.itemsize * 8
    mask = (1 << bits) - 1
    return np.array([bits - (int(v) & mask).bit_length() for v in a.ravel()], a.dtype).reshape(a.shape)


INT_UNARY = {
    "abs": (np.abs, True),  # signed only; INT_MIN stays INT_MIN
    "negate": (np.negative, False),
    "sign": (np.sign, True),
    "not_": (np.invert, False),
    "popcnt": (_popcnt, False),
    "count_leading_zeros": (_clz, False),
}


@pytest.mark.parametrize("op", INT_UNARY)
def test_int_unary(run, rng, op):
    ref, signed_only = INT_UNARY[op]
    inputs = [
        np.concatenate([_int_arrays(rng, np.int32, (6,)), np.array([0, -1, 2**31 - 1, -2**31], np.int32)]),
        np.array(-5, np.int64),
        np.zeros((0, 4), np.int8),
    ]
    if not signed_only:
        inputs.append(np.array([0, 1, 2**63, 2**64 - 1, 128, 255], np.uint64))
    outs = call(run, lambda B, *xs: [getattr(B, op)(x) for x in xs], *inputs)
    for x, out in zip(inputs, outs):
        assert out.dtype == x.dtype and out.shape == x.shape
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(out, ref(x), err_msg=f"{op} {x.dtype}")


def test_bool_not(run):
    p = np.array([[True, False], [False, True]])
    (out,) = call(run, lambda B, x: B.not_(x), p)
    np.testing.assert_array_equal(out, ~p)


# ---- CHLO ---------------------------------------------------------------------------------

CHLO = {
    "chlo.erf": (torch.special.erf, np.linspace(-3, 3, 13)),
    "chlo.erf_inv": (torch.special.erfinv, np.linspace(-0.99, 0.99, 13)),
    "chlo.lgamma": (torch.lgamma, np.array([0.1, 0.5, 1, 2, 3.5, 10, 30, -0.5, -1.5, -2.25])),
    "chlo.digamma": (torch.digamma, np.array([0.1, 0.5, 1, 2, 3.5, 10, 30, -0.5, -1.5, -2.25])),
}


@pytest.mark.parametrize("op", CHLO)
def test_chlo_unary(run, op):
    ref, values = CHLO[op]
    x32, x64 = values.astype(np.float32), values.astype(np.float64)
    out32, out64 = call(run, lambda B, a, b: [B.unary(op, a), B.unary(op, b)], x32, x64)
    assert out32.dtype == np.float32 and out64.dtype == np.float64
    np.testing.assert_allclose(out32, ref(torch.from_numpy(x32)).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out64, ref(torch.from_numpy(x64)).numpy(), rtol=1e-10, atol=1e-12)


def test_chlo_inf_predicates(run):
    x = np.array([0.0, np.inf, -np.inf, np.nan, 1e38], np.float32)
    ops = ["chlo.is_inf", "chlo.is_pos_inf", "chlo.is_neg_inf", "stablehlo.is_finite"]
    outs = call(run, lambda B, v: [B.unary(op, v) for op in ops], x)
    expected = [np.isinf(x), np.isposinf(x), np.isneginf(x), np.isfinite(x)]
    for op, out, want in zip(ops, outs, expected):
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out, want, err_msg=op)


# ---- Compare, select, clamp -------------------------------------------------------------

DIRECTIONS = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
              "GT": np.greater, "GE": np.greater_equal}

COMPARE_CASES = {
    # -0 == 0 and every comparison with nan but NE is false (FLOAT compare)
    "f32": (np.array([1.0, -0.0, np.nan, -np.inf, 2.0, np.nan], np.float32),
            np.array([2.0, 0.0, 1.0, -np.inf, 1.0, np.nan], np.float32)),
    "s32": (np.array([-5, 3, 0, -2**31, 7], np.int32), np.array([3, -5, 0, 2**31 - 1, 7], np.int32)),
    # 0xFFFFFFFF > 1 only when compared UNSIGNED
    "u32": (np.array([0xFFFFFFFF, 1, 5, 2**31], np.uint32), np.array([1, 0xFFFFFFFF, 5, 3], np.uint32)),
    "pred": (np.array([False, False, True, True]), np.array([False, True, False, True])),
}


@pytest.mark.parametrize("dtype", COMPARE_CASES)
def test_compare_all_directions(run, dtype):
    a, b = COMPARE_CASES[dtype]
    outs = call(run, lambda B, x, y: [B.compare(x, y, d) for d in DIRECTIONS], a, b)
    for (direction, ref), out in zip(DIRECTIONS.items(), outs):
        assert out.dtype == np.bool_ and out.shape == a.shape
        np.testing.assert_array_equal(out, ref(a, b), err_msg=f"{dtype} {direction}")


def test_compare_zero_dim_and_empty(run):
    outs = call(run, lambda B, a, b, c, d: [B.compare(a, b, "LT"), B.compare(c, d, "EQ")],
                np.float32(1), np.float32(2), np.zeros((0, 3), np.int32), np.zeros((0, 3), np.int32))
    assert outs[0].shape == () and bool(outs[0]) is True
    assert outs[1].shape == (0, 3) and outs[1].dtype == np.bool_


def test_select(run, rng):
    p = rng.integers(0, 2, (3, 4)).astype(np.bool_)
    a, b = float_inputs(rng, (3, 4)), float_inputs(rng, (3, 4))
    ia, ib = np.arange(6, dtype=np.int64), -np.arange(6, dtype=np.int64)
    outs = call(run, lambda B, pred, x, y, s, u, v: [
        B.select(pred, x, y),
        B.select(s, u, v),
        B.select(B.constant(False, "pred"), u, v),
    ], p, a, b, np.bool_(True), ia, ib)
    np.testing.assert_array_equal(outs[0], np.where(p, a, b))
    np.testing.assert_array_equal(outs[1], ia)
    np.testing.assert_array_equal(outs[2], ib)


def test_clamp(run, rng):
    x = float_inputs(rng, (3, 4), low=-5, high=5)
    lo, hi = float_inputs(rng, (3, 4), low=-4, high=-1), float_inputs(rng, (3, 4), low=1, high=4)
    xi = np.arange(-5, 6, dtype=np.int32)
    outs = call(run, lambda B, v, l, h, vi: [
        B.clamp(B.constant(-1.0, "f32"), v, B.constant(2.0, "f32")),
        B.clamp(l, v, h),
        B.clamp(B.constant(-2, "s32"), vi, B.constant(3, "s32")),
    ], x, lo, hi, xi)
    np.testing.assert_array_equal(outs[0], np.clip(x, -1, 2))
    np.testing.assert_array_equal(outs[1], np.minimum(np.maximum(x, lo), hi))
    np.testing.assert_array_equal(outs[2], np.clip(xi, -2, 3))


# ---- Conversions ---------------------------------------------------------------------------

def test_convert_float_int_bool(run):
    f = np.array([-2.7, -0.5, 0.0, 0.5, 1.9, 100.25, -0.0], np.float32)
    i = np.array([-3, 0, 1, 2**24 + 1, -129, 255, 256], np.int32)
    p = np.array([True, False, True])
    outs = call(run, lambda B, x, y, z: [
        B.convert(x, "s32"),   # truncates toward zero
        B.convert(x, "pred"),  # x != 0
        B.convert(x, "f64"),
        B.convert(y, "f32"),   # rounds to nearest even
        B.convert(y, "u8"),    # keeps the low bits
        B.convert(y, "s64"),
        B.convert(y, "pred"),
        B.convert(z, "f32"),
        B.convert(z, "s32"),
        B.convert(z, "u8"),
    ], f, i, p)
    expected = [f.astype(np.int32), f != 0, f.astype(np.float64), i.astype(np.float32),
                i.astype(np.uint8), i.astype(np.int64), i != 0, p.astype(np.float32),
                p.astype(np.int32), p.astype(np.uint8)]
    for k, (out, want) in enumerate(zip(outs, expected)):
        assert out.dtype == want.dtype, k
        np.testing.assert_array_equal(out, want, err_msg=str(k))


def test_convert_to_and_from_bf16_rounds_to_nearest_even(run, rng):
    # Values that sit exactly between two bf16 numbers, and random ones.
    halfway = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 3.0e38, 1e-40], np.float32)
    x = np.concatenate([halfway, float_inputs(rng, (20,), low=-100, high=100)])
    bits, back, from_bits = call(run, lambda B, v, w: [
        B.convert(v, "bf16"), B.convert(B.convert(v, "bf16"), "f32"), B.convert(w, "f32"),
    ], x, bf16_bits(x), dtypes=[None, "bf16"])
    np.testing.assert_array_equal(bits, bf16_bits(x))
    np.testing.assert_array_equal(back, torch.from_numpy(x).bfloat16().float().numpy())
    np.testing.assert_array_equal(from_bits, from_bf16_bits(bf16_bits(x)))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
def test_convert_f16(run, rng):
    x = np.concatenate([np.array([65504, 65520, 1e-7, 2**-24, np.inf, np.nan], np.float32),
                        float_inputs(rng, (10,), low=-1000, high=1000)])
    h, back = call(run, lambda B, v: [B.convert(v, "f16"), B.convert(B.convert(v, "f16"), "f32")], x)
    np.testing.assert_array_equal(h, x.astype(np.float16))
    np.testing.assert_array_equal(back, x.astype(np.float16).astype(np.float32))


def test_convert_zero_dim_and_empty(run):
    a, b = call(run, lambda B, x, y: [B.convert(x, "s8"), B.convert(y, "f64")],
                np.float32(-3.9), np.zeros((2, 0), np.int16))
    assert a.dtype == np.int8 and a.shape == () and int(a) == -3
    assert b.dtype == np.float64 and b.shape == (2, 0)


def test_bitcast_convert(run, rng):
    f = float_inputs(rng, (3, 2))
    d = rng.standard_normal(4)
    u = rng.integers(0, 256, (3, 4), dtype=np.uint8)
    outs = call(run, lambda B, x, y, z: [
        B.bitcast_convert(x, "s32", [3, 2]),
        B.bitcast_convert(x, "u8", [3, 2, 4]),      # narrower: adds a minor dim
        B.bitcast_convert(y, "u64", [4]),
        B.bitcast_convert(y, "f32", [4, 2]),
        B.bitcast_convert(z, "f32", [3]),           # wider: drops it
        B.bitcast_convert(B.convert(x, "f16"), "u16", [3, 2]),
    ], f, d, u)
    np.testing.assert_array_equal(outs[0], f.view(np.int32))
    np.testing.assert_array_equal(outs[1], f.view(np.uint8).reshape(3, 2, 4))
    np.testing.assert_array_equal(outs[2], d.view(np.uint64))
    np.testing.assert_array_equal(outs[3].view(np.uint32), d.view(np.uint32).reshape(4, 2))
    np.testing.assert_array_equal(outs[4].view(np.uint8).reshape(3, 4), u)
    np.testing.assert_array_equal(outs[5], f.astype(np.float16).view(np.uint16))


def test_bitcast_convert_complex(run, rng):
    # StableHLO has no complex bitcast; the builder goes through (real, imag) pairs.
    c = (rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))).astype(np.complex64)
    f = rng.standard_normal((3, 2)).astype(np.float32)
    outs = call(run, lambda B, x, y: [
        B.bitcast_convert(x, "f32", [3, 2, 2]),     # narrower: the pairs
        B.bitcast_convert(x, "u64", [3, 2]),        # same width
        B.bitcast_convert(x, "u8", [3, 2, 8]),
        B.bitcast_convert(y, "c64", [3]),           # wider: pairs joined
        B.bitcast_convert(x, "c128", [3]),
        B.bitcast_convert(B.bitcast_convert(x, "f32", [3, 2, 2]), "c64", [3, 2]),
    ], c, f)
    np.testing.assert_array_equal(outs[0], c.view(np.float32).reshape(3, 2, 2))
    np.testing.assert_array_equal(outs[1], c.view(np.uint64))
    np.testing.assert_array_equal(outs[2], c.view(np.uint8).reshape(3, 2, 8))
    np.testing.assert_array_equal(outs[3], f.view(np.complex64).reshape(3))
    assert outs[4].shape == (3,) and outs[4].dtype == np.complex128
    np.testing.assert_array_equal(outs[4].view(np.uint8).ravel(), c.view(np.uint8).ravel())
    np.testing.assert_array_equal(outs[5], c)


def test_reduce_precision(run):
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, 3.0e38, 1.0, -2.5], np.float32)
    (out,) = call(run, lambda B, v: B.reduce_precision(v, 8, 7), x)  # bf16's format
    np.testing.assert_array_equal(out, from_bf16_bits(bf16_bits(x)))


# ---- Constants and iota --------------------------------------------------------------------

def test_float_splat_constants(run):
    specs = [(1.5, "f32", [2, 3]), (math.inf, "f32", []), (-math.inf, "f64", [2]),
             (math.nan, "f32", [3]), (0.1, "f64", [1]), (0.1, "f32", [2]), (-0.0, "f32", []),
             (1e-45, "f32", [1]), (1.0, "f32", [0, 4])]
    outs = run(build(lambda B: [B.constant(v, d, s) for v, d, s in specs]))
    for (v, d, s), out in zip(specs, outs):
        np_dtype = np.float32 if d == "f32" else np.float64
        assert out.dtype == np_dtype and out.shape == tuple(s)
        want = np.full(s, v, np_dtype)
        np.testing.assert_array_equal(out, want, err_msg=f"{v} {d}")
        assert np.array_equal(np.signbit(out), np.signbit(want))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
def test_half_splat_constants_round_like_numpy_and_torch(run):
    values = [0.1, 1 / 3, 65504, 65519, 65520, 1e6, -1e6, 1e-7, 2**-24, 2**-25 * 1.5, 5e-8,
              math.inf, -0.0, 3.0e38, 1e-40, 1 + 2**-8]
    outs = run(build(lambda B: [B.constant(v, "f16") for v in values]
                     + [B.constant(v, "bf16") for v in values]))
    for v, out in zip(values, outs[:len(values)]):
        assert out.dtype == np.float16
        assert out.view(np.uint16) == np.float16(v).view(np.uint16), v
    for v, out in zip(values, outs[len(values):]):
        assert out.dtype == np.uint16  # bf16 bits
        want = torch.tensor(v, dtype=torch.float64).to(torch.bfloat16).view(torch.int16).item() & 0xFFFF
        assert int(out) == want, v
    (nan16, nanbf) = run(build(lambda B: [B.constant(math.nan, "f16"), B.constant(math.nan, "bf16")]))
    assert np.isnan(nan16) and np.isnan(from_bf16_bits(nanbf))


def test_integer_bool_and_complex_splat_constants(run):
    i64 = np.iinfo(np.int64)
    specs = [(i64.min, "s64", [2]), (i64.max, "s64", []), (2**64 - 1, "u64", [3]),
             (-128, "s8", [2]), (255, "u8", [2, 2]), (-7, "s32", [0]), (2**32 - 1, "u32", []),
             (True, "pred", [2]), (False, "pred", []), (1, "pred", [1]),
             (3, "f32", [2]), (1 + 2j, "c64", [2]), (-0.5 - 4j, "c128", []), (2.5, "c64", [1])]
    outs = run(build(lambda B: [B.constant(v, d, s) for v, d, s in specs]))
    np_types = {"s64": np.int64, "u64": np.uint64, "s8": np.int8, "u8": np.uint8, "s32": np.int32,
                "u32": np.uint32, "pred": np.bool_, "f32": np.float32, "c64": np.complex64,
                "c128": np.complex128}
    for (v, d, s), out in zip(specs, outs):
        want = np.full(s, v, np_types[d])
        assert out.dtype == want.dtype and out.shape == want.shape, (v, d)
        np.testing.assert_array_equal(out, want, err_msg=f"{v} {d}")


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.float16, np.int8, np.int32,
                                      np.int64, np.uint8, np.uint64, np.bool_, np.complex64],
                         ids=lambda t: np.dtype(t).name)
def test_constant_array(run, rng, np_dtype):
    if np_dtype == np.bool_:
        arrays = [rng.integers(0, 2, (3, 4)).astype(np.bool_), np.array(True), np.zeros((0, 2), np.bool_),
                  np.array([[[True], [False]]])]
    else:
        base = rng.standard_normal((3, 4)) * 50
        if np.issubdtype(np_dtype, np.complexfloating):
            base = base + 1j * rng.standard_normal((3, 4))
        arrays = [base.astype(np_dtype), np.asarray(base[0, 0]).astype(np_dtype),
                  np.zeros((0, 2), np_dtype), base.astype(np_dtype)[:, ::2].T]  # non-contiguous
        if np.issubdtype(np_dtype, np.floating):
            arrays.append(np.array([np.nan, np.inf, -np.inf, -0.0], np_dtype))
        if np.issubdtype(np_dtype, np.integer):
            info = np.iinfo(np_dtype)
            arrays.append(np.array([info.min, info.max, 0, 1], np_dtype))
    outs = run(build(lambda B: [B.constant_array(a) for a in arrays]))
    for a, out in zip(arrays, outs):
        assert out.dtype == a.dtype and out.shape == a.shape
        np.testing.assert_array_equal(out, a)


def test_constant_array_bf16_bits(run):
    x = np.array([[1.0, -2.5], [3.0e38, 1e-3]], np.float32)
    bits = bf16_bits(x)
    out_bits, as_f32 = run(build(lambda B: [B.constant_array(bits, "bf16"),
                                           B.convert(B.constant_array(bits, "bf16"), "f32")]))
    np.testing.assert_array_equal(out_bits, bits)
    np.testing.assert_array_equal(as_f32, from_bf16_bits(bits))


def test_iota(run):
    specs = [("s32", [3, 4], 0), ("s32", [3, 4], 1), ("f32", [5], 0), ("u8", [2, 3, 2], 2),
             ("s64", [0, 3], 1), ("bf16", [4], 0)]
    outs = run(build(lambda B: [B.iota(d, s, dim) for d, s, dim in specs]))
    for (d, s, dim), out in zip(specs, outs):
        shape = [1] * len(s)
        shape[dim] = s[dim]
        want = np.broadcast_to(np.arange(s[dim]).reshape(shape), s)
        got = from_bf16_bits(out) if d == "bf16" else out
        assert got.shape == tuple(s)
        np.testing.assert_array_equal(got, want, err_msg=f"{d} {s} {dim}")
