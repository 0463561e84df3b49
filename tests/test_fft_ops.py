"""FFTs (_fft_r2c, _fft_c2r, _fft_c2c and the torch.fft functions composite
over them) against CPU: 1-d to 4-d transforms over any dims, n= padding and
cropping, the three norm modes, complex and real inputs, non-contiguous
inputs, empty batches, out=, errors, and gradients."""

from __future__ import annotations

import pytest
import torch

from tpu_testing import assert_same, to_tpu

TOL = dict(rtol=1e-4, atol=1e-4)


def real(shape, seed=0, dtype=torch.float32):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def cplx(shape, seed=0, dtype=torch.complex64):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("norm", [None, "ortho", "forward", "backward"])
@pytest.mark.parametrize("fn", [torch.fft.fft, torch.fft.ifft, torch.fft.rfft, torch.fft.ihfft],
                         ids=lambda f: f.__name__)
def test_real_input_1d(fn, norm):
    assert_same(lambda x: fn(x, norm=norm), real((3, 8)), **TOL)
    assert_same(lambda x: fn(x, n=5, dim=0, norm=norm), real((3, 8)), **TOL)  # padded
    assert_same(lambda x: fn(x, n=6, norm=norm), real((3, 9)), **TOL)  # cropped


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("fn", [torch.fft.fft, torch.fft.ifft, torch.fft.irfft, torch.fft.hfft],
                         ids=lambda f: f.__name__)
def test_complex_input_1d(fn, norm):
    assert_same(lambda x: fn(x, norm=norm), cplx((4, 6)), **TOL)
    assert_same(lambda x: fn(x, n=7, norm=norm), cplx((4, 6)), **TOL)
    assert_same(lambda x: fn(x, dim=0, norm=norm), cplx((5, 3)), **TOL)


@pytest.mark.parametrize("fn", [torch.fft.fft2, torch.fft.ifft2, torch.fft.rfft2, torch.fft.irfft2, torch.fft.hfft2,
                                torch.fft.ihfft2], ids=lambda f: f.__name__)
def test_2d(fn):
    complex_input = fn in (torch.fft.irfft2, torch.fft.hfft2, torch.fft.fft2, torch.fft.ifft2)
    x = cplx((2, 5, 6)) if complex_input else real((2, 5, 6))
    assert_same(fn, x, **TOL)
    assert_same(lambda t: fn(t, dim=(0, 2), norm="ortho"), x, **TOL)
    assert_same(lambda t: fn(t, s=(4, 4)), x, **TOL)


@pytest.mark.parametrize("fn", [torch.fft.fftn, torch.fft.ifftn, torch.fft.rfftn, torch.fft.irfftn, torch.fft.hfftn,
                                torch.fft.ihfftn], ids=lambda f: f.__name__)
def test_nd_more_than_three_dims(fn):
    x = cplx((2, 3, 4, 3, 4)) if fn in (torch.fft.irfftn, torch.fft.hfftn, torch.fft.fftn, torch.fft.ifftn) else real(
        (2, 3, 4, 3, 4))
    assert_same(fn, x, **TOL)  # five transformed dims: two stablehlo.fft calls
    assert_same(lambda t: fn(t, dim=(3, 0, 2, 1)), x, **TOL)


def test_double_and_non_contiguous():
    assert_same(torch.fft.rfft, real((4, 10), dtype=torch.float64), rtol=1e-10, atol=1e-10)
    assert_same(torch.fft.fft, real((6, 8)).t(), **TOL)
    assert_same(torch.fft.ifft, cplx((6, 8))[:, ::2], **TOL)


def test_integer_input_promotes():
    assert_same(torch.fft.fft, torch.arange(8), **TOL)


def test_empty_batch():
    # (CPU's MKL refuses an empty batch; the result is simply empty)
    assert torch.fft.rfft(torch.zeros(0, 8, device="tpu")).shape == (0, 5)
    assert torch.fft.fft(torch.zeros(0, 4, dtype=torch.complex64, device="tpu")).cpu().shape == (0, 4)


def test_out_and_fftshift_helpers():
    x = real((3, 8))
    out = torch.empty(0, dtype=torch.complex64, device="tpu")
    torch.fft.fft(to_tpu(x), out=out)
    torch.testing.assert_close(out.cpu(), torch.fft.fft(x), **TOL)
    assert_same(lambda t: torch.fft.fftshift(torch.fft.fft2(t)), real((4, 6)), **TOL)


def test_errors_match_cpu():
    assert_same(lambda t: torch.fft.fft(t, n=0), real((3, 4)))
    assert_same(lambda t: torch.fft.fft(t, dim=3), real((3, 4)))
    assert_same(torch.fft.rfft, cplx((3, 4)))


@pytest.mark.parametrize("fn", [torch.fft.fft, torch.fft.rfft, torch.fft.ihfft, torch.fft.rfft2, torch.fft.fftn],
                         ids=lambda f: f.__name__)
def test_backward_real_input(fn):
    x = real((3, 6))
    xc = x.clone().requires_grad_()
    xt = to_tpu(x).requires_grad_()
    yc, yt = fn(xc), fn(xt)
    g = cplx(yc.shape, seed=7)
    yc.backward(g)
    yt.backward(to_tpu(g))
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL)


@pytest.mark.parametrize("fn", [torch.fft.fft, torch.fft.ifft, torch.fft.irfft, torch.fft.hfft, torch.fft.irfft2],
                         ids=lambda f: f.__name__)
def test_backward_complex_input(fn):
    x = cplx((4, 5))
    xc = x.clone().requires_grad_()
    xt = to_tpu(x).requires_grad_()
    yc, yt = fn(xc), fn(xt)
    g = (cplx(yc.shape, seed=3) if yc.is_complex() else real(yc.shape, seed=3))
    yc.backward(g)
    yt.backward(to_tpu(g))
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL)


def test_stft_istft():
    x = real((2, 64))
    w = torch.hann_window(16)
    assert_same(lambda t, win: torch.stft(t, 16, window=win, return_complex=True), x, w, **TOL)
    spec = torch.stft(x, 16, window=w, return_complex=True)
    assert_same(lambda s, win: torch.istft(s, 16, window=win), spec, w, **TOL)
