"""Complex tensors through the elementwise math ops, pow and vector norms on
tpu against CPU: values (zero, the axes, special values), result dtypes,
in-place and out= forms, CPU's errors for the ops that have no complex
meaning, and gradients through autograd."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
import tempfile

import pytest
import torch

from tpu_testing import assert_grad, assert_same, to_tpu

NAN, INF = float("nan"), float("inf")
COMPLEX = [torch.complex64, torch.complex128]


def make(shape, dtype, seed=0):
    """Random values with zero and points on both axes among them."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=dtype) * 1.5
    flat = x.view(-1)
    flat[0], flat[1], flat[2], flat[3] = 0, complex(2.5, 0), complex(0, -1.5), complex(-3, 0)
    return x


def special(dtype):
    return torch.tensor([complex(NAN, 0), complex(0, NAN), complex(0, INF), complex(INF, 1), complex(-INF, NAN),
                         complex(NAN, -INF), complex(1e30, 1e30), complex(-0.0, -0.0)], dtype=dtype)


# Ops PyTorch defines on complex numbers (holomorphic ones and |z|, arg z).
MATH = ["exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid",
        "reciprocal", "neg", "abs", "sgn", "angle", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
        "exp2", "sinc"]
PREDICATES = ["isnan", "isinf", "isfinite", "logical_not"]


@pytest.mark.parametrize("op", MATH)
@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_complex_math(op, dtype):
    assert_same(getattr(torch, op), make((5, 7), dtype))


@pytest.mark.parametrize("op", ["abs", "sgn", "angle", "log", "neg", "exp", "sqrt"] + PREDICATES)
def test_complex_special_values(op):
    # |z| is infinite when either part is, even with a NaN beside it (C's
    # hypot); a NaN or infinite part makes the number NaN or infinite.
    assert_same(getattr(torch, op), special(torch.complex64))


def same_parts_bitwise_class(got, want):
    """Equal parts, NaN where NaN, and the signs of zeros and infinities."""
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        assert torch.equal(g.isnan(), w.isnan())
        g, w = g[~g.isnan()], w[~w.isnan()]
        torch.testing.assert_close(g, w, rtol=2e-6, atol=0)
        assert torch.equal(g.signbit(), w.signbit())


# Every class of part (signed zeros, finite, huge, infinite, NaN) against
# every other: C99 Annex G's special values, as glibc (CPU's kernels) picks
# them where the standard leaves a sign open: exp(inf + inf i) = inf + NaN i,
# exp(-inf + NaN i) = 0, sqrt(NaN + inf i) = inf + inf i, log(NaN + inf i) =
# inf + NaN i, sin(inf - 0i) = NaN - 0i, tanh(1.5 - 0i) keeps the -0. (XLA's
# own complex lowerings gave NaN + NaN i or dropped the zero's sign.)
ANNEX_G_PARTS = [0.0, -0.0, 1.5, -1.5, 100.0, -100.0, 1e30, -1e30, INF, -INF, NAN]


@pytest.mark.parametrize("op", ["exp", "exp2", "log", "log2", "log10", "sqrt", "sin", "cos", "tan", "sinh", "cosh",
                                "tanh", "sgn"])
@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_complex_annex_g_special_values(op, dtype):
    z = torch.tensor([complex(a, b) for a, b in itertools.product(ANNEX_G_PARTS, ANNEX_G_PARTS)], dtype=dtype)
    f = getattr(torch, op)
    want, got = f(z), f(z.to("tpu")).cpu()
    # XLA's CPU compiler flushes subnormal results to zero (exp(-100 + 1.5i)
    # in complex64 is 3e-45 on CPU); those are compared as zeros.
    tiny = torch.finfo(want.real.dtype).tiny
    want = torch.complex(torch.where(want.real.abs() < tiny, want.real * 0, want.real),
                         torch.where(want.imag.abs() < tiny, want.imag * 0, want.imag))
    same_parts_bitwise_class(got, want)


def test_complex_exp_of_an_overflowing_real_part_with_a_finite_product():
    # e^89 overflows float32, e^89 cos(2.3) and e^89 sin(2.3) do not.
    z = torch.tensor([88.9 + 0.8j, 89.0 - 2.3j, 88.75 + 0.785j], dtype=torch.complex64)
    got = assert_same(torch.exp, z)
    assert got.real.isfinite().all() and got.imag.isfinite().all()


# Values where XLA's own complex lowerings fell short of CPU: tiny and huge
# imaginary parts (sin(1e-20i), cosh(y) overflowing beside a zero), and
# signed zeros on the branch cuts (sqrt(-4 - 0i) is -2i).
EDGES = [complex(0, 1e-20), complex(0, 1e-3), complex(1, 1e-4), complex(3e-5, 0), complex(0, 100), complex(0, -100),
         complex(1e-8, 1e-8), complex(2, 3), complex(-4, 0), complex(-4, -0.0), complex(2.5, 0), complex(2.5, -0.0),
         complex(-2.5, 0), complex(-2.5, -0.0), complex(0, 2.5), complex(-0.0, 2.5), complex(-0.0, -2.5),
         complex(0.3, -0.7), complex(-0.3, 0.7), complex(1e-5, 1e-5)]


@pytest.mark.parametrize("op", ["sin", "cos", "sinh", "cosh", "sinc", "sqrt", "asin", "acos", "asinh", "acosh",
                                "atan", "atanh"])
@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_complex_functions_at_small_parts_and_branch_cuts(op, dtype):
    x = torch.tensor(EDGES, dtype=dtype)
    torch.testing.assert_close(getattr(torch, op)(to_tpu(x)).cpu(), getattr(torch, op)(x), rtol=2e-6, atol=1e-30,
                               equal_nan=True)


def test_complex_overflow_keeps_a_zero_imaginary_part():
    x = torch.tensor([1000 + 0j, 3 + 4j, -1000 + 0j])
    assert_same(torch.exp2, x)
    assert_same(lambda z: z ** 2.5, torch.tensor([1e20 + 0j, 2 + 0j, -3 + 0j]))


def test_complex_cholesky_reads_the_real_part_of_the_diagonal():
    a = torch.tensor([[4 + 1j, 0j], [0j, 1 + 0j]])
    torch.testing.assert_close(torch.linalg.cholesky(to_tpu(a)).cpu(), torch.linalg.cholesky(a))


@pytest.mark.parametrize("op", ["mm", "addmm", "bmm"])
def test_products_into_a_conjugated_out(op):
    a, b = make((2, 3), torch.complex64, 1), make((3, 2), torch.complex64, 2)
    args = {"mm": (a, b), "addmm": (make((2, 2), torch.complex64, 3), a, b), "bmm": (a[None], b[None])}[op]
    want = torch.zeros(1, 2, 2, dtype=torch.complex64)[0 if op != "bmm" else slice(None)]
    got = to_tpu(want.clone())
    getattr(torch, op)(*args, out=want.conj())
    getattr(torch, op)(*to_tpu(args), out=got.conj())
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("fn, error, message", [
    (lambda z: torch.div(z, 1, rounding_mode="trunc"), NotImplementedError, "div_trunc_cpu"),
    (lambda z: torch.div(z, 1, rounding_mode="floor"), NotImplementedError, "div_floor_cpu"),
    (lambda z: torch.fmax(z, z), RuntimeError, "fmax not implemented for complex tensors"),
    (lambda z: torch.heaviside(z, z), RuntimeError, "heaviside is not yet implemented for complex tensors"),
    (lambda z: torch.histc(z), NotImplementedError, "aminmax_cpu"),
    (lambda z: torch.zeros_like(z).scatter_reduce(0, torch.zeros(4, dtype=torch.long, device=z.device), z, "amax"),
     NotImplementedError, "scatter_gather_tensor_cpu_reduce_amax"),
])
def test_complex_refusals_as_on_cpu(fn, error, message):
    z = make((4,), torch.complex64)
    for x in (z, to_tpu(z)):
        with pytest.raises(error, match=message):
            fn(x)


@pytest.mark.parametrize("op", PREDICATES + ["abs", "angle"])
def test_complex_predicates_and_real_results(op):
    assert_same(getattr(torch, op), make((3, 4), torch.complex64, 1))


def test_complex_views_zero_dim_empty():
    x = make((6, 8), torch.complex64, 2)
    assert_same(torch.exp, x.t()[::2, 1::3])
    assert_same(torch.abs, x[2:, :3].conj())
    assert_same(torch.sgn, torch.tensor(complex(3, -4)))
    assert_same(torch.log, torch.empty(0, 3, dtype=torch.complex64))


def test_complex_inplace_and_out():
    x = make((3, 4), torch.complex64, 3)
    assert_same(lambda t: t.clone().exp_(), x)
    assert_same(lambda t: t.clone().sgn_(), x)
    # abs writes into a real or a complex out=, as on CPU.
    assert_same(lambda t: torch.abs(t, out=torch.empty(0, device=t.device)), x)
    assert_same(lambda t: torch.abs(t, out=torch.empty(0, dtype=torch.complex64, device=t.device)), x)
    assert_same(lambda t: torch.angle(t, out=torch.empty(0, device=t.device)), x)


def test_complex_inplace_abs_and_real_out_are_refused():
    x = to_tpu(make((4,), torch.complex64))
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
        x.abs_()
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.exp(x, out=torch.empty(4, device="tpu"))


@pytest.mark.parametrize("op, error, message", [
    ("sign", NotImplementedError, "Please use torch.sgn instead"),
    ("floor", NotImplementedError, "floor is not supported for complex inputs"),
    ("trunc", NotImplementedError, "trunc is not supported for complex inputs"),
    ("round", NotImplementedError, "not implemented for 'ComplexFloat'"),
    ("erf", NotImplementedError, "not implemented for 'ComplexFloat'"),
    ("signbit", NotImplementedError, "signbit is not implemented for complex tensors"),
    ("isposinf", RuntimeError, "isposinf does not support complex inputs"),
    ("lgamma", NotImplementedError, "lgamma.* not implemented for 'ComplexFloat'"),
])
def test_ops_without_complex_meaning_raise_like_cpu(op, error, message):
    with pytest.raises(error, match=message):
        getattr(torch, op)(make((4,), torch.complex64))  # CPU's own error, for the record
    with pytest.raises(error, match=message):
        getattr(torch, op)(to_tpu(make((4,), torch.complex64)))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_complex_pow(dtype):
    x, y = make((4, 5), dtype, 4), make((4, 5), dtype, 5)
    assert_same(lambda a, b: a ** b, x + 0.5, y)
    for exponent in (0, 1, 2, 3, 0.5, -1, 2.5, -0.75):
        assert_same(lambda a: a ** exponent, x + 0.5)
    assert_same(lambda b: 2.0 ** b, y)
    assert_same(lambda a, b: a.real ** b, x.abs().to(dtype) + 0.5, y)  # real base, complex exponent
    assert_same(lambda a: a.clone().pow_(2.5), x + 0.5)
    # complex Python numbers as exponent or base, of complex, real and integer tensors
    real = x.real.abs() + 0.5
    assert_same(lambda a: a ** (1 + 2j), x + 0.5)
    assert_same(lambda a: a.clone().pow_(2j), x + 0.5)
    assert_same(lambda r: r ** 1j, real)
    assert_same(lambda b: (0.5 - 1j) ** b, y)
    assert_same(lambda r: (1 + 2j) ** r, real)
    assert_same(lambda n: n ** (1 + 2j), torch.arange(1, 6))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_complex_vector_norm(dtype):
    x = make((4, 6), dtype, 6)
    for ord in (2, 1, 3, INF, -INF, 0):
        assert_same(lambda t: torch.linalg.vector_norm(t, ord), x)
    assert_same(lambda t: torch.linalg.vector_norm(t, dim=1, keepdim=True), x)
    assert_same(lambda t: torch.linalg.vector_norm(t, dtype=torch.complex128), x)
    assert_same(lambda t: torch.linalg.vector_norm(t, dim=0, out=torch.empty(0, dtype=x.real.dtype, device=t.device)),
                x)
    # An infinite part beside a NaN one is an infinite magnitude, as abs's.
    for ord in (2, 1, INF):
        assert_same(lambda t: torch.linalg.vector_norm(t, ord), torch.tensor([complex(INF, NAN), 1 + 2j], dtype=dtype))
    with pytest.raises(RuntimeError, match="dtype should be complex for complex inputs"):
        torch.linalg.vector_norm(to_tpu(x), dtype=torch.float64)


GRAD = ["abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "reciprocal", "sgn", "angle", "asinh", "atan",
        "log2", "rsqrt"]


@pytest.mark.parametrize("op", GRAD)
def test_complex_backward(op):
    x = make((3, 4), torch.complex128, 7) + complex(0.25, 0.25)  # away from the branch points
    assert_grad(getattr(torch, op), x, rtol=1e-9, atol=1e-9)


def test_complex_backward_pow_and_norm():
    x = make((3, 4), torch.complex128, 8) + complex(0.5, 0.25)
    assert_grad(lambda t: t ** 2.5, x, rtol=1e-9, atol=1e-9)
    assert_grad(lambda t: torch.linalg.vector_norm(t, dim=1), x, rtol=1e-9, atol=1e-9)


def test_spectrogram_magnitude():
    # The common complex workload: |STFT| and its phase (as a unit number:
    # the angle of a value on the negative real axis is +-pi by the sign of
    # a zero imaginary part, which FFTs leave to their summation order).
    signal = torch.randn(2, 400, generator=torch.Generator().manual_seed(9))

    def spectrogram(s):
        spec = torch.stft(s, 64, hop_length=16, window=torch.hann_window(64, device=s.device), return_complex=True)
        return spec.abs().pow(2).log1p(), spec.sgn()

    assert_same(spectrogram, signal, rtol=1e-4, atol=1e-4)


# PyTorch lets lazily conjugated / negated views (x.conj(), x.mH,
# x.conj().imag) through to the matrix products and triangular solves; the
# tpu kernels resolve them rather than read the storage unconjugated.
LAZY_PRODUCTS = {
    "mm": lambda a, b: torch.mm(a, b.conj()),
    "mH": lambda a, b: a.mH @ a,
    "bmm": lambda a, b: torch.bmm(a.conj()[None], b[None]),
    "addmm": lambda a, b: torch.addmm(torch.ones(3, 2, dtype=a.dtype, device=a.device).conj(), a, b.conj(), alpha=2),
    "baddbmm": lambda a, b: torch.baddbmm(torch.ones(1, 3, 2, dtype=a.dtype, device=a.device), a.conj()[None],
                                          b.conj()[None], beta=0.5),
    "dot": lambda a, b: torch.dot(a[0], a[1].conj()),
    "vdot": lambda a, b: torch.vdot(a[0].conj(), a[1]),
    "negative bit": lambda a, b: torch.mm(a.conj().imag, b.real),
    "einsum": lambda a, b: torch.einsum("ij,jk->ik", a, b.conj()),
    "solve_triangular": lambda a, b: torch.linalg.solve_triangular(
        (a[:, :3].triu() + 3 * torch.eye(3, dtype=a.dtype, device=a.device)).conj(), b[:3].conj(), upper=True),
    "cov": lambda a, b: torch.cov(a),
}


@pytest.mark.parametrize("name", LAZY_PRODUCTS)
def test_products_of_lazily_conjugated_views(name):
    a, b = make((3, 4), torch.complex64, 10), make((4, 2), torch.complex64, 11)
    assert_same(LAZY_PRODUCTS[name], a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32,
                                   torch.int64, torch.int8, torch.bool], ids=str)
@pytest.mark.filterwarnings("ignore:Casting complex values to real")  # PyTorch's, once per process
def test_complex_to_real_keeps_the_real_part(dtype):
    # As on CPU: the real part; bool is "nonzero".
    z = torch.tensor([1.75 + 2j, -2.5 - 1j, 0j, 1j, -0.0 + 0j, 3 - 0.5j])
    assert_same(lambda t: t.to(dtype), z)
    assert_same(lambda t: torch.empty(6, dtype=dtype, device=t.device).copy_(t), z)


def test_complex_nan_to_num_replaces_each_part():
    nan, inf = float("nan"), float("inf")
    z = torch.tensor([complex(nan, 1), complex(inf, -inf), 1 + 2j, complex(2, nan)])
    assert_same(torch.nan_to_num, z)
    assert_same(lambda t: torch.nan_to_num(t, 1.0, 2.0, -3.0), z.to(torch.complex128))
    assert_same(lambda t: t.clone().nan_to_num_(), z)
    assert_same(lambda t: torch.nan_to_num(t.conj()), z)
    assert_same(lambda t: torch.nan_to_num(t, out=torch.empty(0, dtype=t.dtype, device=t.device)), z)


def test_complex_to_real_copy_warns_once_as_on_cpu():
    # PyTorch warns once per process, so a fresh one is needed.
    code = """
import warnings, torch, torch_tpu
z = torch.tensor([1 + 2j], device="tpu")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.empty(1, device="tpu").copy_(z)
    torch.empty(1, device="tpu").copy_(z)
print(sum("discards the imaginary part" in str(w.message) for w in caught))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tempfile.gettempdir())
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "1", out.stdout


def test_complex_logaddexp():
    x, y = make((4, 5), torch.complex64, 12), make((4, 5), torch.complex64, 13)
    assert_same(torch.logaddexp, x, y)
    # CPU's special cases: NaN anywhere, equal infinite real parts.
    a = torch.tensor([complex(-INF, 1), complex(INF, 2), complex(1, NAN), complex(-INF, 0), complex(2, 3)])
    b = torch.tensor([complex(-INF, 5), complex(INF, -1), complex(0, 0), complex(1, 1), complex(2, -3)])
    assert_same(torch.logaddexp, a, b)
    assert_grad(lambda t: torch.logaddexp(t, y.to(t.device).to(torch.complex128)), x.to(torch.complex128),
                rtol=1e-9, atol=1e-9)


def test_complex_logcumsumexp():
    x = make((5, 4), torch.complex64, 14)
    x[0, 2], x[2, 1], x[3, 3], x[1, 0] = complex(-INF, 1), complex(-INF, -2), complex(INF, 0.5), complex(NAN, 0)
    for dim in (0, 1):
        assert_same(lambda t: torch.logcumsumexp(t, dim), x)
    assert_grad(lambda t: torch.logcumsumexp(t, 0), make((5, 3), torch.complex128, 15), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
@pytest.mark.parametrize("power", ["rsqrt", 0.5, -0.5, 2, 3, -2, 2 + 0j, 0.5 + 0j, -0.5 + 0j], ids=str)
def test_complex_special_powers_are_exact_as_on_cpu(dtype, power):
    # CPU computes these without pow (sqrt, 1 / sqrt, products), so on the
    # negative real axis they are exact: rsqrt(-1) is -1j, not -4e-8 - 1j
    # (the polar form's), whose negative real part left the principal branch.
    z = torch.tensor([-1 + 0j, -4 + 0j, 2 - 3j, 0.5 + 0.25j, -2 - 0j, 9 + 0j], dtype=dtype)
    op = torch.rsqrt if power == "rsqrt" else (lambda x: x ** power)
    want, got = op(z), op(z.to("tpu")).cpu()
    torch.testing.assert_close(got, want, rtol=2e-7 if dtype == torch.complex64 else 1e-15, atol=0)
    on_axis = z.imag == 0
    assert torch.equal(got[on_axis], want[on_axis])


def test_real_tensor_to_a_complex_power_with_zero_imaginary_part():
    r = torch.tensor([-1.0, -4.0, 2.5])
    for power in (2 + 0j, 0.5 + 0j):
        want, got = r ** power, (r.to("tpu") ** power).cpu()
        assert got.dtype == want.dtype == torch.complex64
        assert torch.equal(got, want)


@pytest.mark.parametrize("name", ["atanh", "atan", "asinh", "asin", "acos", "acosh"])
def test_complex_inverse_functions_keep_nan_parts_as_cpu(name):
    # XLA's atanh made atanh(nan + 0j) nan + 1.5708j; C99 Annex G (CPU)
    # keeps the NaN in both parts except where it names a limit.
    parts = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -2.5, 1e30]
    z = torch.tensor([complex(a, b) for a, b in itertools.product(parts, parts) if math.isnan(a) or math.isnan(b)],
                     dtype=torch.complex64)
    f = getattr(torch, name)
    want, got = f(z), f(z.to("tpu")).cpu()
    for w, g in ((want.real, got.real), (want.imag, got.imag)):
        assert torch.equal(w.isnan(), g.isnan())
        assert torch.equal(w[~w.isnan()], g[~g.isnan()])
