"""Fixes and additions beyond the first op set, against CPU: i0 and its
gradients on 1-element tensors (XLA's CPU compiler used to turn the series
into NaN there), polygamma at negative arguments, integer div with a
rounding mode by zero, torch.special's erfcx / ndtri / log_ndtr /
spherical_bessel_j0 / modified_bessel_i0 / i1 and the orthogonal
polynomials, and the small ops written over other tpu ops (rsub, aminmax,
count_nonzero, isin, trace, addbmm, renorm, histc, equal, norm,
channel_shuffle, unfold's backward, angle, logspace, max_unpool, im2col)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tpu_testing import TPU, assert_grad, assert_same, to_tpu

TOL = dict(rtol=1e-4, atol=1e-5)


def rand(shape, lo=-1.0, hi=1.0, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


# ---- wrong values fixed ---------------------------------------------------------------


@pytest.mark.parametrize("v", [0.5, 6.0, 8.4784, 10.0, 14.9, 15.0, 30.0, -8.4784])
@pytest.mark.parametrize("fn", [torch.i0, torch.special.i0e, torch.special.i1, torch.special.i1e],
                         ids=lambda f: f.__name__)
def test_bessel_one_element(fn, v):
    assert_same(fn, torch.tensor([v]), **TOL)
    assert_same(fn, torch.tensor(v), **TOL)
    assert_grad(fn, torch.tensor([v]), rtol=1e-4, atol=1e-5)


def test_polygamma_negative_arguments():
    x = torch.tensor([-8.4784, -7.9506, -3.0337, -0.5, -1.5, 2.5, -3.0, -25.3])
    for n in (2, 3, 4):
        assert_same(lambda t: torch.polygamma(n, t), x, rtol=1e-4, atol=1e-4)


def test_polygamma_even_order_near_negative_half_integers():
    # Of even order the two terms of the shift nearest 0 cancel near x = k -
    # 1/2: float32 lost 4 digits there (polygamma(4, -2.49998)); measured
    # against float64, the tpu's is as close as CPU's.
    x = torch.tensor([-2.4999818801879883, -3.5000274181365967, -0.4997749328613281, -8.50001335144043, -0.5,
                      -1e-7, -0.999999, -12.499734878540039])
    for n in (2, 4, 6):
        want = torch.polygamma(n, x.double())
        got = torch.polygamma(n, x.to(TPU)).cpu().double()
        cpu = torch.polygamma(n, x).double()
        err, cpu_err = ((got - want) / want).abs(), ((cpu - want) / want).abs()
        assert (err <= torch.maximum(cpu_err * 4, torch.full_like(err, 2e-6))).all(), (n, err, cpu_err)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_integer_div_rounding_by_zero(mode):
    a, b = torch.tensor([5, -5, 3]), torch.tensor([0, 2, -2])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.div(a.to(TPU), b.to(TPU), rounding_mode=mode).cpu()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a.to(TPU).div_(b.to(TPU), rounding_mode=mode).cpu()
    assert_same(lambda x: torch.div(x, 0, rounding_mode=mode), a)
    assert_same(lambda x, y: torch.div(x, y, rounding_mode=mode), a, b + 10)
    assert_same(lambda x, y: torch.div(x, y, rounding_mode=mode), a.float(), b.float())


# ---- special functions -------------------------------------------------------------------


def test_erfcx_log_ndtr_ndtri():
    x = torch.cat([rand((50,), -10, 30), torch.tensor([0.0, 1.9, 2.0, 2.1, -9.0, 1e4, math.inf, -math.inf, math.nan])])
    assert_same(torch.special.erfcx, x, rtol=2e-5, atol=1e-6)
    assert_same(torch.special.log_ndtr, x, rtol=2e-5, atol=1e-6)
    p = torch.cat([rand((50,), 0, 1), torch.tensor([0.0, 1.0, 1e-7, 1 - 1e-7, 0.5, -0.1, 1.1, math.nan])])
    assert_same(torch.special.ndtri, p, rtol=1e-4, atol=1e-5)
    assert_grad(torch.special.erfcx, rand((6,), -2, 5))
    assert_grad(torch.special.ndtri, rand((6,), 0.05, 0.95), rtol=1e-4, atol=1e-5)
    assert_grad(torch.special.log_ndtr, rand((6,), -5, 5))
    assert_same(torch.special.erfcx, torch.arange(4))  # integers promote
    assert_same(torch.special.ndtri, p.half())  # NotImplementedError on both


def test_ndtri_deep_tails():
    # 2p - 1 rounds to -1 below p ~ 3e-8 in f32 (and 1e-17 in f64): the
    # erfinv start alone gave -inf there.
    for dtype, smallest in ((torch.float32, -37), (torch.float64, -300)):
        p = torch.logspace(smallest, -0.31, 400, dtype=dtype)
        p = torch.cat([p, 1 - p[p > 1e-7]])
        assert_same(torch.special.ndtri, p, rtol=2e-6 if dtype == torch.float32 else 1e-13, atol=1e-6)
    # Near 0.5 the result is near 0: relative accuracy alone.
    p = torch.cat([torch.linspace(0.49, 0.51, 201), torch.tensor([0.5 - 2**-25, 0.5 + 2**-24, 0.4999])])
    for dtype in (torch.float32, torch.float64):
        assert_same(torch.special.ndtri, p.to(dtype), rtol=2e-6 if dtype == torch.float32 else 1e-12, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_erf_reaches_one_and_gelu_vanishes(dtype):
    # XLA's f32 erf levels off at 1 - 3 ulps; 1 + erf(x) then left
    # gelu(-1e6) = -0.09 and ndtr(-1e8) = 9e-8 instead of zeros.
    x = torch.tensor([-1e8 if dtype != torch.float16 else -6e4, -1e6 if dtype != torch.float16 else -1e4, -1e3, -10.0, -4.0, -3.84, -3.83, 3.83, 3.84, 4.0, 10.0, 1e6, math.inf, -math.inf])
    x = torch.cat([x, torch.linspace(-6, 6, 241)]).to(dtype)
    assert_same(torch.erf, x, rtol=0, atol=2.5e-7 if dtype == torch.float32 else 1e-3)
    erf_tpu = torch.erf(x.to(TPU)).cpu()
    assert torch.equal(erf_tpu[x.abs() >= 3.84].abs(), torch.ones_like(x[x.abs() >= 3.84]))
    # CPU's vectorized gelu gives NaN at +inf (and so at f16's overflowed
    # -1e8); the device gives inf, as the formula does.
    x = x[x.isfinite()]
    gelu_tpu = F.gelu(x.to(TPU)).cpu()
    assert torch.equal(gelu_tpu[:4], F.gelu(x[:4]))  # exact zeros, as CPU
    assert_same(F.gelu, x, **(TOL if dtype == torch.float32 else {}))
    assert_grad(F.gelu, x.float(), rtol=1e-4, atol=1e-6)
    assert_same(torch.special.ndtr, x.float(), rtol=1e-5, atol=1e-7)


def test_sign_of_negative_zero_and_nan_is_positive_zero():
    x = torch.tensor([-0.0, 0.0, math.nan, -math.nan, 2.5, -3.0, math.inf, -math.inf])
    for fn in (torch.sign, torch.sgn):
        got = fn(x.to(TPU)).cpu()
        assert torch.equal(got, fn(x)) and not torch.signbit(got[:4]).any()


def test_spherical_j0_and_modified_bessel():
    x = torch.cat([rand((40,), -20, 20), torch.tensor([0.0, 0.3, -0.49, math.inf, math.nan])])
    assert_same(torch.special.spherical_bessel_j0, x, **TOL)
    assert_same(torch.special.modified_bessel_i0, rand((20,), -20, 20), **TOL)
    assert_same(torch.special.modified_bessel_i1, rand((20,), -20, 20), **TOL)
    assert_same(lambda t: torch.special.modified_bessel_i0(t, out=torch.empty(0, device=t.device)), rand((4,)), **TOL)


POLYNOMIALS = [
    torch.special.chebyshev_polynomial_t, torch.special.chebyshev_polynomial_u,
    torch.special.chebyshev_polynomial_v, torch.special.chebyshev_polynomial_w,
    torch.special.shifted_chebyshev_polynomial_t, torch.special.shifted_chebyshev_polynomial_u,
    torch.special.shifted_chebyshev_polynomial_v, torch.special.shifted_chebyshev_polynomial_w,
    torch.special.hermite_polynomial_h, torch.special.hermite_polynomial_he,
    torch.special.laguerre_polynomial_l, torch.special.legendre_polynomial_p,
]


@pytest.mark.parametrize("fn", POLYNOMIALS, ids=lambda f: f.__name__)
def test_orthogonal_polynomials(fn):
    x = torch.cat([rand((30,), -1.5, 1.5), torch.tensor([1.0, -1.0, 0.0, 0.5, 0.25])])
    n = torch.tensor([0.0, 1.0, 2.0, 3.0, 5.0, 7.0, 9.0, 12.0, -1.0, 4.7])
    xx, nn = x[:, None], n[None, :]
    assert_same(fn, xx, nn, rtol=1e-4, atol=1e-4)
    assert_same(lambda t: fn(t, 3), x, rtol=1e-4, atol=1e-4)  # scalar degree
    assert_same(lambda t: fn(0.3, t), n, rtol=1e-4, atol=1e-4)  # scalar x
    assert_same(fn, torch.tensor([0.5, 2.0]), torch.tensor([3, 4]), rtol=1e-4, atol=1e-4)  # int degree
    assert_same(fn, torch.empty(0), torch.empty(0))
    assert_same(fn, x.to(torch.bfloat16), n.to(torch.bfloat16)[:1])  # NotImplementedError on both


@pytest.mark.parametrize("fn", [torch.special.chebyshev_polynomial_t, torch.special.chebyshev_polynomial_w,
                                torch.special.shifted_chebyshev_polynomial_u], ids=lambda f: f.__name__)
def test_orthogonal_polynomials_of_huge_degrees_end(fn):
    # Beyond 2^24 a float32 degree counter stopped growing and the loop never
    # ended; outside [-1, 1] the values overflow to NaN within a few hundred
    # steps, where the loop now stops (as CPU's does); NaN, infinite and
    # degrees from 2^63 up are 0, as CPU's int64 conversion makes them.
    x = torch.tensor([3.6, -3.6, 1.5, 1.0000001, 1.0, -1.0, 0.5, 0.0])
    for degree in (3e7, 2.0 ** 40, 1e20, float("inf"), float("nan")):
        assert_same(fn, x, torch.full_like(x, degree), rtol=1e-4, atol=1e-4)


# ---- small ops over other tpu ops -----------------------------------------------------


def test_rsub_trace_addbmm_count_nonzero():
    a, b = rand((3, 4)), rand((3, 4), seed=1)
    assert_same(lambda x, y: torch.rsub(x, y, alpha=2), a, b, **TOL)
    assert_same(lambda x: 1 - x, a, **TOL)
    assert_same(lambda x, y: torch.rsub(x, y), torch.arange(3), torch.arange(3) * 2)
    assert_same(torch.trace, a, **TOL)
    assert_same(torch.trace, torch.arange(12).reshape(3, 4))
    assert_same(torch.trace, rand((3,)))  # error on both
    assert_same(lambda s, x, y: torch.addbmm(s, x, y, beta=0.5, alpha=2), rand((2, 5)), rand((3, 2, 4)),
                rand((3, 4, 5), seed=2), **TOL)
    assert_same(torch.count_nonzero, torch.tensor([[0, 1, 2], [0, 0, 3]]))
    assert_same(lambda x: torch.count_nonzero(x, dim=(0,)), torch.tensor([[0.0, 1, 2], [0, 0, 3]]))
    assert_grad(torch.trace, rand((4, 4)))


def test_aminmax_isin_equal():
    x = rand((3, 5))
    assert_same(torch.aminmax, x)
    assert_same(lambda t: torch.aminmax(t, dim=1, keepdim=True), x)
    assert_same(torch.aminmax, torch.empty(0))  # error on both
    e, t = torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([2, 6, 9])
    assert_same(torch.isin, e, t)
    # Many test values: looked up in sorted order (NaN never matches, -0.0 matches 0.0).
    many = torch.cat([torch.tensor([float("nan"), -0.0]), torch.arange(200.0) * 0.5 + 5])
    elements = torch.cat([torch.tensor([float("nan"), 0.0, 5.0, 5.25, 104.5, 105.0, -3.0]), rand((40,)) * 50])
    assert_same(torch.isin, elements, many)
    assert_same(lambda a, b: torch.isin(a, b, invert=True), elements.long(), many)
    assert_same(lambda a, b: torch.isin(a, b, invert=True), e, t)
    assert_same(lambda a: torch.isin(a, 3), e)
    assert_same(lambda b: torch.isin(3, b), t)
    assert torch.equal(x.to(TPU), x.to(TPU)) and not torch.equal(x.to(TPU), (x + 1).to(TPU))
    assert not torch.equal(x.to(TPU), x[:2].to(TPU))
    assert_same(torch.cov, rand((3, 6)), **TOL)
    assert_same(torch.corrcoef, rand((3, 6)), **TOL)


def test_norm_renorm_histc():
    x = rand((3, 4, 5))
    assert_same(lambda t: torch.norm(t, p=3, dim=1), x, **TOL)
    assert_same(lambda t: torch.norm(t), x, **TOL)
    assert_same(lambda a, b: torch.dist(a, b, p=1.5), x, rand((4, 5), seed=1), **TOL)
    assert_same(lambda a, b: F.pairwise_distance(a, b), rand((3, 4)), rand((3, 4), seed=1), **TOL)
    assert_same(lambda t: torch.renorm(t, 2, 1, 0.5), x, **TOL)
    assert_same(lambda t: torch.renorm(t, 2, 1, -1.0), x)  # error on both
    assert_grad(lambda t: torch.norm(t, dim=1), x)
    assert_same(lambda t: torch.histc(t, bins=7, min=-0.5, max=0.5), x)
    assert_same(lambda t: torch.histc(t, bins=4), x)
    assert_same(lambda t: torch.histc(t, bins=3), torch.ones(5))  # min == max: widened by 1
    # Values just below max whose bin rounds up to `bins` count in the last one.
    assert_same(lambda t: torch.histc(t, bins=3, min=-1, max=1), torch.tensor([0.99999994, 1.0, 1.5, -1.0]))
    below = torch.nextafter(torch.full((4,), 0.3), torch.tensor(0.0)) - torch.arange(4) * 3e-8
    assert_same(lambda t: torch.histc(t, bins=3, min=-1, max=0.3), below)
    assert_same(lambda t: torch.histc(t, bins=7, min=-1, max=0.3), rand((2000,), seed=4) * 3 - 1.5)


def test_histc_of_integers_bins_as_cuda():
    # CPU refuses integer input; CUDA bins it in integer arithmetic, (x -
    # min) * bins / (max - min), with counts of the input's dtype (Hugging
    # Face's mixture-of-experts routing counts tokens per expert so).
    experts = torch.tensor([0, 3, 1, 1, 2, 3, 3, 0, 5, -1], dtype=torch.int32)
    got = torch.histc(to_tpu(experts), bins=4, min=0, max=3).cpu()
    assert got.dtype == torch.int32 and got.tolist() == [2, 2, 1, 3]
    values = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=torch.int64)
    # Integer division: 3 bins over [0, 9] split at 3 * x / 9 = 1 and 2, i.e. x = 3 and 6.
    assert torch.histc(to_tpu(values), bins=3, min=0, max=9).cpu().tolist() == [3, 3, 4]
    # min == max: the data's range; bins of x * 4 // 9.
    assert torch.histc(to_tpu(values), bins=4).cpu().tolist() == [3, 2, 2, 3]
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        torch.histc(to_tpu(torch.tensor([True, False])), bins=2)
    # Bounds beyond 2^53 that are equal as doubles are still a range.
    big = 2**60
    assert torch.histc(to_tpu(torch.tensor([big + 1, big + 3])), bins=4, min=big, max=big + 4).cpu().tolist() == [
        0, 1, 0, 1]
    # A range whose (x - min) * bins overflows int64 is binned (CUDA's result
    # is undefined there; this once read as an out-of-range internal index).
    extremes = torch.tensor([2**63 - 1, 3, 2**63 - 1, -2**63, 0, -5])
    assert torch.histc(to_tpu(extremes), bins=4).cpu().tolist() == [1, 0, 3, 2]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_histc_of_16_bit_floats_bins_as_cpu(dtype):
    # Bounds and positions in the 16-bit type, rounded after each
    # operation, as CPU and CUDA compute them (float16 0.1 is 0.09998, in
    # range of min=0.1; 0.1 * 10 rounds to bin 1).
    cases = [(torch.tensor([0.1, 0.3, 0.7]), dict(bins=7, min=0.1, max=0.7)),
             (torch.arange(11) / 10, dict(bins=10, min=0, max=1)),
             (torch.tensor([0.0079345703125, 100.0]), dict(bins=257)),
             (torch.tensor([0.5, 0.99]), dict(bins=257, min=0, max=1)),
             (torch.randn(2000), dict(bins=37, min=-2, max=2)),
             (torch.randn(2000), dict(bins=1000, min=-2, max=2))]
    for x, kwargs in cases:
        x = x.to(dtype)
        got = torch.histc(to_tpu(x), **kwargs).cpu()
        assert got.dtype == dtype
        torch.testing.assert_close(got, torch.histc(x, **kwargs), atol=0, rtol=0)
    # Where (x - min) * bins overflows float16, CPU's position is undefined
    # (an infinite float cast to an integer); the float32 one stands.
    x = torch.tensor([0.0, 700.0, 1000.0], dtype=dtype)
    got = torch.histc(to_tpu(x), bins=100, min=0, max=1000).cpu()
    torch.testing.assert_close(got, torch.histc(x.float(), bins=100, min=0, max=1000).to(dtype))


def test_channel_shuffle_unfold_angle_logspace():
    assert_same(lambda t: F.channel_shuffle(t, 2), rand((2, 6, 3, 3)))
    assert_same(lambda t: F.channel_shuffle(t, 4), rand((2, 6, 3, 3)))  # error on both
    assert_grad(lambda t: t.unfold(1, 3, 2), rand((2, 7)))
    assert_grad(lambda t: t.unfold(0, 2, 3), rand((9,)))
    # Overlapping windows along a middle dimension, a window over the
    # whole dimension, bf16 (one index_add of every window element).
    assert_grad(lambda t: t.unfold(1, 3, 1), rand((4, 9, 5)))
    assert_grad(lambda t: t.unfold(0, 5, 7), rand((20, 3)))
    assert_grad(lambda t: t.unfold(0, 7, 1), rand((7,)))
    assert_grad(lambda t: t.unfold(1, 4, 2), rand((3, 10)).bfloat16(), rtol=2e-2, atol=2e-2)
    assert_same(torch.angle, torch.tensor([-1.0, 0.0, 2.0, math.nan, -math.inf]))
    assert_same(torch.angle, torch.tensor([-2, 0, 3]))
    out = torch.logspace(-1, 2, 9, base=2.0, device=TPU)
    torch.testing.assert_close(out.cpu(), torch.logspace(-1, 2, 9, base=2.0), **TOL)
    out = torch.logspace(0, 3, 4, dtype=torch.int64, device=TPU)
    assert out.cpu().tolist() == torch.logspace(0, 3, 4, dtype=torch.int64).tolist()


def test_max_unpool_and_im2col():
    x = rand((2, 3, 6, 6))
    pooled, idx = F.max_pool2d(x, 2, return_indices=True)
    assert_same(lambda p, i: F.max_unpool2d(p, i, 2), pooled, idx)
    assert_same(lambda p, i: F.max_unpool2d(p[0], i[0], 2), pooled, idx)
    x3 = rand((1, 2, 4, 4, 4))
    p3, i3 = F.max_pool3d(x3, 2, return_indices=True)
    assert_same(lambda p, i: F.max_unpool3d(p, i, 2), p3, i3)
    p1, i1 = F.max_pool1d(rand((2, 3, 8)), 2, return_indices=True)
    assert_same(lambda p, i: F.max_unpool1d(p, i, 2), p1, i1)
    assert_grad(lambda p: F.max_unpool2d(p, to_tpu(idx) if p.device.type == TPU else idx, 2), pooled)
    assert_same(lambda t: F.unfold(t, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), rand((2, 3, 7, 8)))
    assert_same(lambda t: F.unfold(t, 3), rand((3, 5, 5)))
    assert_same(lambda t: F.unfold(t, 9), rand((1, 3, 5, 5)))  # error on both
    assert_grad(lambda t: F.unfold(t, 2, stride=2), rand((1, 2, 4, 4)))
    # fold (col2im): overlapping taps, dilation, padding, unbatched, grads
    assert_grad(lambda t: F.unfold(t, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), rand((2, 3, 7, 8)))
    assert_grad(lambda t: F.fold(t, (7, 8), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), rand((2, 18, 24)))
    assert_same(lambda t: F.fold(t, (5, 5), 3), rand((12, 9)))
    assert_same(lambda t: F.fold(t, (6, 5), (3, 2), stride=(3, 1)), rand((1, 6, 8)).bfloat16())


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    x, src = rand((5, 3)), rand((4, 3), seed=1)
    index = torch.tensor([0, 4, 2, 0])
    fn = lambda s, i, v: s.index_reduce(0, i, v, reduce, include_self=include_self)
    assert_same(fn, x, index, src, **TOL)
    assert_same(lambda s, i, v: s.index_reduce(1, i, v, reduce, include_self=include_self), x.t(), index, src.t(),
                **TOL)
    assert_same(lambda s, i, v: s.clone().index_reduce_(0, i, v, reduce), torch.arange(10).reshape(5, 2),
                index, torch.arange(8).reshape(4, 2))
    assert_same(lambda s, i, v: s.index_reduce(0, i, v, "sum"), x, index, src)  # error on both


def test_complex_and_polar():
    a, b = rand((3, 4)), rand((4,), seed=1)
    assert_same(torch.complex, a, b, **TOL)
    assert_same(torch.polar, a.abs(), b, **TOL)
    assert_same(torch.complex, a, b.double())  # error on both
    ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
    at_, bt = to_tpu(a).requires_grad_(), to_tpu(b).requires_grad_()
    (torch.view_as_real(torch.complex(ac, bc)) ** 2 * torch.tensor([1.0, 3.0])).sum().backward()
    (torch.view_as_real(torch.complex(at_, bt)) ** 2 * to_tpu(torch.tensor([1.0, 3.0]))).sum().backward()
    torch.testing.assert_close(at_.grad.cpu(), ac.grad, **TOL)
    torch.testing.assert_close(bt.grad.cpu(), bc.grad, **TOL)


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf])
def test_cdist_pdist(p):
    x1, x2 = rand((2, 4, 3)), rand((5, 3), seed=1)
    x1[0, 1] = x2[2]  # a zero distance
    assert_same(lambda a, b: torch.cdist(a, b, p=p), x1, x2, **TOL)
    assert_same(lambda a: F.pdist(a, p=p), x2, **TOL)
    if p != 0:
        ac, bc = x1.clone().requires_grad_(), x2.clone().requires_grad_()
        at_, bt = to_tpu(x1).requires_grad_(), to_tpu(x2).requires_grad_()
        g = rand((2, 4, 5), seed=3)
        torch.cdist(ac, bc, p=p).backward(g)
        torch.cdist(at_, bt, p=p).backward(to_tpu(g))
        torch.testing.assert_close(at_.grad.cpu(), ac.grad, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(bt.grad.cpu(), bc.grad, rtol=1e-4, atol=1e-4)
        assert_grad(lambda a: F.pdist(a, p=p), rand((5, 3), seed=4), rtol=1e-4, atol=1e-4)
    assert_same(lambda a, b: torch.cdist(a, b), rand((2, 3)), rand((2, 4)))  # error on both


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str)
def test_frexp(dtype):
    x = torch.tensor([0.0, -0.0, 1.0, -3.5, 0.75, 1e-3, 1e30, 1e-40, -1e-42, math.inf, -math.inf, math.nan, 6.0])
    assert_same(torch.frexp, x.to(dtype))
    assert_same(torch.frexp, torch.arange(3))  # error on both


@pytest.mark.parametrize("fn", [torch.special.modified_bessel_k0, torch.special.modified_bessel_k1,
                                torch.special.scaled_modified_bessel_k0, torch.special.scaled_modified_bessel_k1],
                         ids=lambda f: f.__name__)
def test_modified_bessel_k(fn):
    # the integral (below 10), the asymptotic series (above) and the small-x terms
    x = torch.cat([torch.tensor([0.0, 1e-8, 1e-6, 1e-3, 0.1, 0.5, 1, 2, 5, 9.99, 10, 20, 50, 100, 500, -1.0,
                                 math.inf, math.nan]), rand((60,), 0, 30)])
    assert_same(fn, x, **TOL)
    assert_same(fn, torch.arange(1, 4))  # integers promote
    assert_same(fn, rand((3, 4), 0.1, 5).to(torch.bfloat16))  # NotImplementedError on both


@pytest.mark.parametrize("fn", [torch.special.bessel_j0, torch.special.bessel_j1], ids=lambda f: f.__name__)
def test_bessel_j(fn):
    # Bessel's integral up to 25, Hankel's expansion above
    x = torch.cat([torch.tensor([0.0, 1e-8, 1e-3, 0.5, 2, 9.99, 24.9, 25, 25.1, 50, 500, 1e4, -1.0, -30.0,
                                 math.inf, -math.inf, math.nan]), rand((100,), -60, 60)])
    assert_same(fn, x, **TOL)
    assert_same(fn, torch.arange(-3, 4))  # integers promote
    assert_same(fn, x.half())  # NotImplementedError on both


@pytest.mark.parametrize("n", [0, 1])
def test_bessel_y(n):
    # Neumann's series over quadrature J_m up to 25, Hankel's expansion
    # above: float64 within 1e-12 of 30-digit values, where CPU's float64
    # kernel is about 5e-8 off (so CPU is compared at its own accuracy).
    import mpmath

    fn = torch.special.bessel_y0 if n == 0 else torch.special.bessel_y1
    points = [1e-30, 1e-8, 0.1, 0.9, 1.0, 2.4048, 3.0, 5.0, 8.0, 12.5, 17.3, 24.9, 25.0, 25.1, 40.0, 1e3, 1e6]
    mpmath.mp.dps = 30
    want = torch.tensor([float(mpmath.bessely(n, mpmath.mpf(p))) for p in points], dtype=torch.float64)
    for dtype, rtol in ((torch.float64, 1e-12), (torch.float32, 2e-5)):
        got = fn(to_tpu(torch.tensor(points, dtype=dtype))).cpu().double()
        # Relative to the value, or to 1e-3 near the zeros.
        assert ((got - want).abs() <= rtol * want.abs().clamp(min=1e-3)).all(), (dtype, got, want)
    x = torch.cat([torch.tensor([0.0, -1.0, math.inf, -math.inf, math.nan]), rand((100,), 0, 60)]).double()
    assert_same(fn, x, rtol=1e-6, atol=1e-7)
    assert_same(fn, torch.arange(0, 4))  # integers promote
    assert_same(fn, x.half())  # NotImplementedError on both


def test_airy_ai():
    # Four ranges (the oscillating expansion below -9.5, Taylor series about
    # 0, -1, ..., -9, the K_1/3 integral on [1, 9.5), the decaying
    # expansion above): float64 within 1e-13 of 30-digit values, where
    # CPU's float64 kernel is 3e-6 off on [-2.9, -2.1] (so CPU is compared
    # at its own accuracy).
    import mpmath

    points = [-40.0, -20.0, -9.6, -9.5, -9.4, -7.3, -2.5, -2.3381, -1.0, -0.5, -0.49, 0.0, 1e-8, 0.7, 0.999,
              1.0, 1.01, 3.0, 6.5, 9.49, 9.5, 9.6, 20.0, 60.0]
    mpmath.mp.dps = 30
    want = torch.tensor([float(mpmath.airyai(mpmath.mpf(p))) for p in points], dtype=torch.float64)
    got = torch.special.airy_ai(to_tpu(torch.tensor(points, dtype=torch.float64))).cpu()
    # Relative to the value, or absolute near the zeros.
    assert ((got - want).abs() <= 1e-13 * want.abs().clamp(min=1e-2)).all(), (got, want)
    # float32: against values at the rounded inputs; below -10, zeta's
    # rounding alone moves the phase by up to 1e-5 (as in CPU's kernel).
    x32 = torch.tensor(points)
    want32 = torch.tensor([float(mpmath.airyai(mpmath.mpf(float(p)))) for p in x32], dtype=torch.float64)
    got32 = torch.special.airy_ai(to_tpu(x32)).cpu().double()
    bound = 3e-6 * want32.abs().clamp(min=1e-2) + 3e-6 * (x32 < -10)
    assert ((got32 - want32).abs() <= bound).all(), (got32, want32)
    x = torch.cat([torch.tensor([math.inf, -math.inf, math.nan, -0.0]), rand((200,), -30, 30)])
    assert_same(torch.special.airy_ai, x.double(), rtol=1e-6, atol=1e-5)
    assert_same(torch.special.airy_ai, x, rtol=1e-5, atol=1e-5)
    assert_same(torch.special.airy_ai, torch.arange(-3, 4))  # integers promote
    assert_same(torch.special.airy_ai, x.half())  # NotImplementedError on both


# ---- regularized incomplete gamma ------------------------------------------------------


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac, torch.special.gammainc, torch.special.gammaincc])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_incomplete_gamma(fn, dtype):
    # Both branches (series below x = a + 1, continued fraction above) and
    # large shapes, where the prefactor needs Stirling's series; CPU's own
    # float64 values near x = a in [20, 200] are only 1e-9 accurate.
    g = torch.Generator().manual_seed(0)
    for scale in (0.1, 1.0, 10.0, 100.0, 1e4):
        a = torch.rand(500, generator=g, dtype=dtype) * scale + 1e-3
        x = torch.rand(500, generator=g, dtype=dtype) * 2 * scale
        tol = dict(rtol=0, atol=1e-5) if dtype == torch.float32 else dict(rtol=0, atol=1e-8)
        torch.testing.assert_close(fn(a.to("tpu"), x.to("tpu")).cpu(), fn(a, x), **tol)


def test_incomplete_gamma_special_values_and_gradient():
    nan, inf = float("nan"), float("inf")
    a = torch.tensor([0.0, 0, 1, -1, inf, inf, 2, 2, nan, 1, 3])
    x = torch.tensor([0.0, 1, 0, 1, 1, inf, inf, -1, 1, nan, 1e30])
    for fn in (torch.igamma, torch.igammac):
        torch.testing.assert_close(fn(a.to("tpu"), x.to("tpu")).cpu(), fn(a, x), equal_nan=True)
    a = torch.tensor([0.5, 2.0, 7.0], dtype=torch.float64)
    x = torch.tensor([0.3, 2.5, 4.0], dtype=torch.float64, requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    torch.igamma(a, x).sum().backward()
    torch.igamma(a.to("tpu"), xt).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), x.grad)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch.igamma(torch.ones(2, dtype=torch.long, device="tpu"), torch.ones(2, dtype=torch.long, device="tpu"))


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, math.inf])
def test_cdist_without_features_is_zero(p):
    assert_same(lambda a, b: torch.cdist(a, b, p=p), torch.zeros(3, 0), torch.zeros(2, 0))
