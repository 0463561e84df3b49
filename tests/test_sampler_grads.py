"""The reparameterization gradients of Gamma samples (_standard_gamma_grad,
Gamma.rsample's backward) and of Beta / Dirichlet samples (_dirichlet_grad,
Dirichlet.rsample's and so Beta.rsample's backward): against
high-precision references (mpmath), against CPU over shapes and samples,
CPU's special cases and errors, and through autograd."""

from __future__ import annotations

import mpmath
import pytest
import torch

from tpu_testing import to_tpu


def reference(alpha, x):
    """d x / d alpha at a fixed CDF value, to 40 digits."""
    mpmath.mp.dps = 40
    cdf = lambda a: mpmath.gammainc(a, 0, x, regularized=True)  # noqa: E731
    pdf = mpmath.mpf(x) ** (alpha - 1) * mpmath.exp(-x) / mpmath.gamma(alpha)
    return float(-mpmath.diff(cdf, alpha) / pdf)


# Both tails, the centre, small and large shapes; x far below and above a.
POINTS = [(0.01, 1e-30), (0.5, 0.3), (1.0, 2.0), (3.0, 2.5), (10.0, 12.0), (100.0, 95.0), (1e4, 1.01e4),
          (0.5, 20.0), (2.0, 1e-5), (0.1, 3.0), (50.0, 20.0), (50.0, 90.0), (1e6, 1.001e6), (0.02, 1e-9),
          (5.0, 0.9), (7.9, 8.1), (1e-10, 1e-5), (1e-30, 1e-20)]


@pytest.mark.parametrize("dtype,rtol", [(torch.float64, 1e-9), (torch.float32, 2e-5)])
def test_matches_high_precision_reference(dtype, rtol):
    a = torch.tensor([p[0] for p in POINTS], dtype=dtype)
    x = torch.tensor([p[1] for p in POINTS], dtype=dtype)
    got = torch._standard_gamma_grad(to_tpu(a), to_tpu(x)).cpu().double()
    want = torch.tensor([reference(*p) for p in POINTS], dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=rtol, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_large_alpha_and_far_lower_tail(dtype):
    # Large shapes need tens of thousands of series terms (float64) or the
    # Wilson-Hilferty form (float32); x far below alpha must not overflow.
    # References: CPU's float64 values, accurate to 1e-9 here, and mpmath.
    a = torch.tensor([1e7, 1e6, 3e5, 1e7, 2e7], dtype=torch.float64)
    x = torch.tensor([9994000.0, 997000.0, 299500.0, 10003000.0, 20010000.0], dtype=torch.float64)
    got = torch._standard_gamma_grad(to_tpu(a.to(dtype)), to_tpu(x.to(dtype))).cpu().double()
    torch.testing.assert_close(got, torch._standard_gamma_grad(a, x), rtol=1e-8 if dtype == torch.float64 else 1e-6,
                               atol=0)
    far = [(20.0, 1e-7), (10.0, 1e-16), (100.0, 1e-5)]
    a, x = (torch.tensor(column, dtype=dtype) for column in zip(*far))
    got = torch._standard_gamma_grad(to_tpu(a), to_tpu(x)).cpu().double()
    want = torch.tensor([reference(*p) for p in far], dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=1e-9 if dtype == torch.float64 else 1e-5, atol=0)
    big = torch.special.gammainc(to_tpu(torch.tensor([1e7], dtype=torch.float64)),
                                 to_tpu(torch.tensor([9994000.0], dtype=torch.float64)))
    torch.testing.assert_close(big.cpu(), torch.special.gammainc(torch.tensor([1e7], dtype=torch.float64),
                                                                 torch.tensor([9994000.0], dtype=torch.float64)),
                               rtol=1e-9, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_cpu_on_gamma_samples(dtype):
    # CPU's approximations are within about 2e-3 of the true value (its
    # series and fitted forms); the tpu's is closer than that.
    g = torch.Generator().manual_seed(0)
    alpha = torch.exp(torch.empty(400, dtype=dtype).uniform_(-4, 7, generator=g))
    x = torch._standard_gamma(alpha, generator=g)
    x = torch.where(x > 0, x, torch.ones_like(x))  # samples that underflowed to 0 have no slope
    got = torch._standard_gamma_grad(to_tpu(alpha), to_tpu(x)).cpu()
    torch.testing.assert_close(got, torch._standard_gamma_grad(alpha, x), rtol=3e-3, atol=1e-30)


def test_broadcasting_and_empty():
    a = torch.tensor([[0.5], [2.0], [30.0]], dtype=torch.float64)
    x = torch.tensor([0.2, 1.0, 5.0, 40.0], dtype=torch.float64)
    got = torch._standard_gamma_grad(to_tpu(a), to_tpu(x))
    assert got.shape == (3, 4)
    want = torch.tensor([[reference(p, s) for s in x.tolist()] for p in a.flatten().tolist()], dtype=torch.float64)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-9, atol=0)
    assert torch._standard_gamma_grad(to_tpu(torch.ones(0, 3)), to_tpu(torch.ones(0, 3))).shape == (0, 3)


def test_special_cases_follow_cpu():
    # 0 where x <= 0 (whatever alpha); NaN for alpha <= 0 and for infinite
    # or NaN arguments.
    nan, inf = float("nan"), float("inf")
    a = torch.tensor([-1.0, -1.0, 0.0, 0.0, 1e30, nan, inf, 2.0, 1.0, nan, 3.0])
    x = torch.tensor([1.0, 0.0, 0.0, -1.0, 1e30, 0.0, 0.0, inf, nan, 1.0, -2.0])
    got = torch._standard_gamma_grad(to_tpu(a), to_tpu(x)).cpu()
    torch.testing.assert_close(got, torch._standard_gamma_grad(a, x), equal_nan=True)


def test_errors_follow_cpu():
    a, x = torch.ones(3), torch.ones(3)
    with pytest.raises(NotImplementedError, match="_standard_gamma_grad"):
        torch._standard_gamma_grad(to_tpu(a.bfloat16()), to_tpu(x.bfloat16()))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        torch._standard_gamma_grad(to_tpu(a), to_tpu(x.double()))


def test_autograd_of_gamma_samples():
    # The backward of _standard_gamma (and so Gamma.rsample) is
    # grad * _standard_gamma_grad(alpha, sample).
    alpha = torch.tensor([0.3, 1.0, 4.0, 25.0, 400.0], dtype=torch.float64)
    a = to_tpu(alpha).requires_grad_()
    sample = torch._standard_gamma(a)
    sample.backward(to_tpu(torch.full((5,), 2.0, dtype=torch.float64)))
    want = 2.0 * torch.tensor([reference(p, s) for p, s in zip(alpha.tolist(), sample.detach().cpu().tolist())],
                              dtype=torch.float64)
    torch.testing.assert_close(a.grad.cpu(), want, rtol=1e-8, atol=0)

    concentration = to_tpu(torch.tensor([2.0, 5.0])).requires_grad_()
    rate = to_tpu(torch.tensor([1.0, 3.0])).requires_grad_()
    torch.distributions.Gamma(concentration, rate).rsample((64,)).mean().backward()
    assert torch.isfinite(concentration.grad.cpu()).all() and torch.isfinite(rate.grad.cpu()).all()
    # d mean(x) / d concentration ~ 1 / rate for the mean of many samples.
    assert (concentration.grad.cpu() > 0).all() and (rate.grad.cpu() < 0).all()


# ---- _dirichlet_grad -------------------------------------------------------------


def dirichlet_reference(x, alpha, total):
    """PyTorch's _dirichlet_grad: d x / d alpha of x ~ Beta(alpha, total -
    alpha) at fixed beta and CDF, divided by 1 - x; to 30 digits."""
    mpmath.mp.dps = 30
    beta = total - alpha
    cdf = lambda a: mpmath.betainc(a, beta, 0, x, regularized=True)  # noqa: E731
    pdf = mpmath.mpf(x) ** (alpha - 1) * (1 - mpmath.mpf(x)) ** (beta - 1) / mpmath.beta(alpha, beta)
    return float(-mpmath.diff(cdf, alpha) / pdf / (1 - mpmath.mpf(x)))


# Both sides of the mean, tails, small and large concentrations.
BETA_POINTS = [(0.3, 1.0, 2.0), (0.01, 0.5, 3.0), (0.9, 2.0, 2.5), (0.5, 10.0, 20.0), (0.2, 100.0, 500.0),
               (0.999, 5.0, 5.1), (1e-5, 0.1, 1.0), (0.45, 1000.0, 2000.0), (0.6, 0.02, 1.0), (0.001, 3.0, 50.0),
               (0.97, 30.0, 31.0), (0.5, 300.0, 600.0), (0.3, 1.0, 40.0)]


@pytest.mark.parametrize("dtype,rtol", [(torch.float64, 1e-9), (torch.float32, 2e-4)])
def test_dirichlet_grad_matches_high_precision_reference(dtype, rtol):
    x, alpha, total = (torch.tensor(column, dtype=dtype) for column in zip(*BETA_POINTS))
    got = torch._dirichlet_grad(to_tpu(x), to_tpu(alpha), to_tpu(total)).cpu().double()
    want = torch.tensor([dirichlet_reference(*p) for p in BETA_POINTS], dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=rtol, atol=0)


def test_dirichlet_grad_matches_cpu_on_dirichlet_samples():
    # CPU's approximations are within about 1.3e-2 of the true value.
    g = torch.Generator().manual_seed(0)
    concentration = torch.exp(torch.empty(200, 3, dtype=torch.float64).uniform_(-2, 4, generator=g))
    x = torch._sample_dirichlet(concentration, generator=g).clamp(1e-6, 1 - 1e-6)
    total = concentration.sum(-1, keepdim=True).expand_as(concentration)
    got = torch._dirichlet_grad(to_tpu(x), to_tpu(concentration), to_tpu(total)).cpu()
    torch.testing.assert_close(got, torch._dirichlet_grad(x, concentration, total), rtol=2e-2, atol=1e-12)


def test_dirichlet_grad_special_cases():
    # CPU's: 0 where x <= 0 or alpha is not > 0 (NaN alpha too); NaN for a
    # NaN x or an infinite or NaN total; x = 1 is the limit. Where beta <= 0
    # or x > 1 there is no Beta distribution: NaN (CPU's approximations give
    # arbitrary numbers there).
    nan, inf = float("nan"), float("inf")
    cases = [(0.0, 1.0, 2.0), (1.0, 1.0, 2.0), (0.5, 0.0, 1.0), (-0.1, 1.0, 2.0), (0.5, -1.0, 2.0),
             (0.5, inf, inf), (0.5, 1.0, inf), (nan, 1.0, 2.0), (0.5, nan, 2.0), (0.5, 1.0, nan), (0.0, 0.0, 0.0)]
    x, alpha, total = (torch.tensor(column) for column in zip(*cases))
    got = torch._dirichlet_grad(to_tpu(x), to_tpu(alpha), to_tpu(total)).cpu()
    torch.testing.assert_close(got, torch._dirichlet_grad(x, alpha, total), equal_nan=True)
    invalid = torch._dirichlet_grad(to_tpu(torch.tensor([0.5, 1.2])), to_tpu(torch.tensor([1.0, 1.0])),
                                    to_tpu(torch.tensor([1.0, 2.0]))).cpu()
    assert invalid.isnan().all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dirichlet_grad_of_tiny_samples_stays_finite(dtype):
    # Small concentrations draw samples near 0, where (x (a + b) - a) / a
    # rounds to -1: the gradient must still be CPU's, not inf.
    x = torch.tensor([1e-30, 1e-20, 1e-10, 1e-6, 0.3, 0.9], dtype=dtype)
    alpha, total = torch.full((6,), 0.5, dtype=dtype), torch.ones(6, dtype=dtype)
    got = torch._dirichlet_grad(to_tpu(x), to_tpu(alpha), to_tpu(total)).cpu()
    torch.testing.assert_close(got, torch._dirichlet_grad(x, alpha, total), rtol=1e-4, atol=0)
    concentration = to_tpu(torch.full((4000, 2), 0.05, dtype=dtype)).requires_grad_()
    torch.distributions.Dirichlet(concentration).rsample()[:, 0].sum().backward()
    assert concentration.grad.isfinite().all()


def test_dirichlet_samples_stay_below_one_as_on_cpu():
    # CPU clamps to the largest value below 1, so Beta.log_prob stays finite.
    for dtype in (torch.float32, torch.float64):
        s = torch._sample_dirichlet(to_tpu(torch.full((20000, 2), 0.02, dtype=dtype))).cpu()
        below_one = torch.nextafter(torch.tensor(1.0, dtype=dtype), torch.tensor(0.0, dtype=dtype))
        assert s.max() <= below_one and s.min() >= torch.finfo(dtype).tiny
        assert (s == below_one).any()  # such small concentrations reach the clamp


def test_dirichlet_grad_errors_and_broadcasting():
    with pytest.raises(NotImplementedError, match="_dirichlet_grad"):
        ones = to_tpu(torch.ones(2, dtype=torch.bfloat16))
        torch._dirichlet_grad(ones * 0.5, ones, ones * 2)
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        torch._dirichlet_grad(to_tpu(torch.ones(2) * 0.5), to_tpu(torch.ones(2).double()), to_tpu(torch.ones(2)))
    with pytest.raises(RuntimeError, match="must match the size"):
        torch._dirichlet_grad(to_tpu(torch.ones(3) * 0.5), to_tpu(torch.ones(2)), to_tpu(torch.ones(2)))
    x = torch.tensor([[0.2], [0.6]], dtype=torch.float64)
    alpha = torch.tensor([0.5, 2.0, 7.0], dtype=torch.float64)
    got = torch._dirichlet_grad(to_tpu(x), to_tpu(alpha), to_tpu(torch.tensor(10.0, dtype=torch.float64)))
    want = torch.tensor([[dirichlet_reference(xi, a, 10.0) for a in alpha.tolist()] for xi in x.flatten().tolist()],
                        dtype=torch.float64)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-9, atol=0)


def test_dirichlet_and_beta_rsample_backward():
    concentration = to_tpu(torch.tensor([[0.7, 2.0, 5.0], [3.0, 3.0, 0.4]], dtype=torch.float64)).requires_grad_()
    sample = torch.distributions.Dirichlet(concentration).rsample()
    weights = torch.tensor([[1.0, -2.0, 0.5], [0.3, 0.0, -1.0]], dtype=torch.float64)
    (sample * to_tpu(weights)).sum().backward()
    # torch.distributions' own backward formula on CPU, fed the same samples.
    from torch.distributions.dirichlet import _Dirichlet_backward

    want = _Dirichlet_backward(sample.detach().cpu(), concentration.detach().cpu(), weights)
    torch.testing.assert_close(concentration.grad.cpu(), want, rtol=2e-2, atol=1e-12)

    a = to_tpu(torch.tensor([0.5, 4.0])).requires_grad_()
    b = to_tpu(torch.tensor([2.0, 1.5])).requires_grad_()
    torch.distributions.Beta(a, b).rsample((32,)).mean().backward()
    assert torch.isfinite(a.grad.cpu()).all() and torch.isfinite(b.grad.cpu()).all()
    assert (a.grad.cpu() > 0).all() and (b.grad.cpu() < 0).all()  # the mean a / (a + b) moves so
