"""_standard_gamma_grad, the reparameterization gradient of Gamma samples
(Gamma.rsample's backward): against high-precision references (mpmath),
against CPU over a grid of shapes and samples, CPU's special cases and
errors, and through autograd of torch._standard_gamma / Gamma.rsample."""

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
