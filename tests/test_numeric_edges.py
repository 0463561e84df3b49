"""Values CPU gets right at the edges, found by hunts over factories, 16-bit
floats and integers: linspace / logspace exactness, 16-bit intermediate
rounding in fused graphs, overflow order in addcmul / addcdiv and Adam,
16-bit accumulation in scatter sums, threshold comparisons, hardswish's
gradient at +-3, mish's gradient, complex pow at zero, alpha checks."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from tpu_testing import TPU, assert_same


def exact(fn, *args):
    expected = fn(*args)
    actual = fn(*[a.to(TPU) if isinstance(a, torch.Tensor) else a for a in args])
    if isinstance(expected, torch.Tensor):
        expected, actual = [expected], [actual]
    for e, a in zip(expected, actual):
        torch.testing.assert_close(a.cpu(), e, rtol=0, atol=0, equal_nan=True)


# ---- linspace / logspace ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.uint8])
def test_integer_linspace_steps_in_double_as_cpu(dtype):
    cases = [(0, 100, 7), (0.5, 10.5, 5), (-7, 7, 5), (3, 3, 4), (9, 2, 6)]
    if dtype in (torch.int64, torch.int32):
        cases += [(100000001, 100000011, 11), (0, 2**31 - 1, 3), (16777217, 16777227, 6)]
    for start, end, steps in cases:
        expected = torch.linspace(start, end, steps, dtype=dtype)
        actual = torch.linspace(start, end, steps, dtype=dtype, device=TPU).cpu()
        assert actual.tolist() == expected.tolist(), (start, end, steps)


def test_linspace_overflowing_the_integer_type_raises_as_on_cpu():
    with pytest.raises(RuntimeError, match="value cannot be converted"):
        torch.linspace(0, 1000, 3, dtype=torch.int8)
    with pytest.raises(RuntimeError, match="value cannot be converted"):
        torch.linspace(0, 1000, 3, dtype=torch.int8, device=TPU)


def test_a_single_step_bool_linspace_or_logspace_is_start_as_on_cpu():
    for start in (0, 3, 0.0):
        for space in (torch.linspace, torch.logspace):
            expected = space(start, 1, 1, dtype=torch.bool)
            assert space(start, 1, 1, dtype=torch.bool, device=TPU).cpu().tolist() == expected.tolist()
    with pytest.raises(NotImplementedError, match="linspace_cpu"):
        torch.linspace(0, 1, 2, dtype=torch.bool, device=TPU)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_float_linspace_within_an_ulp_of_cpu_and_exact_at_whole_numbers(dtype):
    # CPU's vectorized loop rounds by lanes of its vector width: one ulp apart at most.
    eps = torch.finfo(dtype).eps
    for start, end, steps in [(0, 100, 7), (18, 440, 15), (-1.5, 2.25, 101), (1e-3, 7.0, 1000), (5, 5, 1)]:
        expected = torch.linspace(start, end, steps, dtype=dtype)
        actual = torch.linspace(start, end, steps, dtype=dtype, device=TPU).cpu()
        torch.testing.assert_close(actual, expected, rtol=eps, atol=eps * max(abs(start), abs(end)))
    assert torch.linspace(18, 440, 15, device=TPU)[7].item() == 229.0
    # the frame-index pattern: linspace, then truncate
    assert torch.linspace(0, 100, 7, device=TPU).long().tolist() == torch.linspace(0, 100, 7).long().tolist()


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float64])
def test_logspace_computes_in_double_as_cpu(dtype):
    for start, end, steps, base in [(0.5, 2.5, 3, 10.0), (-2, 2, 1001, 10.0), (0, 10, 11, 2.0), (1, 3, 5, 3.0),
                                    (2.5, 5, 1, 10.0)]:  # one step: base ** start, start not truncated
        expected = torch.logspace(start, end, steps, base=base, dtype=dtype)
        actual = torch.logspace(start, end, steps, base=base, dtype=dtype, device=TPU).cpu()
        tol = dict(rtol=0, atol=0) if dtype == torch.int64 else dict(rtol=2e-7, atol=0)
        torch.testing.assert_close(actual, expected, **tol)


# ---- 16-bit floats -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_sixteen_bit_intermediates_round_in_every_mode(mode):
    # XLA would keep bf16 / f16 intermediates in f32 inside one program;
    # PyTorch rounds each op's result, so fused graphs must too.
    gen = torch.Generator().manual_seed(0)
    a, b, c = (torch.randn(4000, generator=gen) for _ in range(3))
    # float16 in fused graphs is the exception on the CPU plugin: LLVM's x86
    # code computes chained f16 operations in f32 (docs/status.md).
    dtypes = (torch.bfloat16, torch.float16) if mode == "strict" else (torch.bfloat16,)
    with torch_tpu.eager_mode(mode):
        for dtype in dtypes:
            x, y, z = a.to(dtype), b.to(dtype), c.to(dtype)
            exact(lambda x, y: (x * y).float(), x, y)
            exact(lambda x, y, z: x * y + z, x, y, z)
            exact(lambda x, y: torch.mul(x, y, out=torch.empty(4000, device=x.device)), x, y)


def test_addcmul_addcdiv_and_adam_multiply_by_value_first():
    # value * t1 first, as CPU: t1 * t2 alone overflows f32 here.
    g = torch.tensor([3e19])
    assert_same(lambda g: torch.zeros(1, device=g.device).addcmul(g, g, value=1e-3), g)
    assert_same(lambda t: torch.zeros(1, device=t.device).addcdiv(t, torch.tensor([0.25], device=t.device),
                                                                value=0.125), torch.tensor([2e38]))
    for options in (dict(foreach=True), dict(fused=True)):
        params = {}
        for device in ("cpu", TPU):
            p = torch.ones(1, device=device, requires_grad=True)
            p.grad = torch.tensor([3e19], device=device)
            torch.optim.AdamW([p], lr=0.1, **options).step()
            params[device] = p.detach().cpu()
        torch.testing.assert_close(params[TPU], params["cpu"])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_scatter_sums_of_sixteen_bit_floats_accumulate_in_f32(dtype):
    gen = torch.Generator().manual_seed(0)
    src = torch.randn(2000, 4, generator=gen)
    index = torch.randint(0, 8, (2000,), generator=gen)
    for fn in (lambda s, i: torch.zeros(8, 4, dtype=dtype, device=s.device).index_add_(0, i, s),
               lambda s, i: torch.zeros(8, 4, dtype=dtype, device=s.device).scatter_add_(
                   0, i.unsqueeze(1).expand(-1, 4), s),
               lambda s, i: torch.zeros(8, 4, dtype=dtype, device=s.device).scatter_reduce_(
                   0, i.unsqueeze(1).expand(-1, 4), s, "sum")):
        actual = fn(src.to(dtype).to(TPU), index.to(TPU)).cpu().double()
        # one rounding of the exact sum of the rounded inputs
        want = torch.zeros(8, 4, dtype=torch.float64).index_add_(0, index, src.to(dtype).double()).to(dtype).double()
        torch.testing.assert_close(actual, want, rtol=0, atol=0)


def test_threshold_and_shrink_compare_as_cpu():
    for dtype in (torch.bfloat16, torch.float16):
        x = torch.tensor([0.330078125, -0.330078125, 0.5, 0.25], dtype=dtype)
        exact(lambda t: F.threshold(t, 0.33, 7.0), x)
        exact(lambda t: F.hardshrink(t, 0.33), x)
        exact(lambda t: F.softshrink(t, 0.33), x)
        for fn in (lambda t: F.threshold(t, 0.33, 7.0), lambda t: F.hardshrink(t, 0.33),
                   lambda t: F.softshrink(t, 0.33)):
            grads = {}
            for device in ("cpu", TPU):
                t = x.detach().to(device).requires_grad_()
                fn(t).sum().backward()
                grads[device] = t.grad.cpu()
            torch.testing.assert_close(grads[TPU], grads["cpu"], rtol=0, atol=0)


def test_hardswish_gradient_at_the_kinks():
    for dtype in (torch.float32, torch.bfloat16):
        grads = {}
        for device in ("cpu", TPU):
            x = torch.tensor([-3.0, 3.0, -2.9, 2.9, -4.0, 4.0], dtype=dtype, device=device, requires_grad=True)
            F.hardswish(x).sum().backward()
            grads[device] = x.grad.cpu()
        torch.testing.assert_close(grads[TPU], grads["cpu"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_mish_gradient_is_one_kernel(dtype):
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(3000, generator=gen) * 4).to(dtype)
    grads = {}
    for device in ("cpu", TPU):
        t = x.detach().to(device).requires_grad_()
        F.mish(t).sum().backward()
        grads[device] = t.grad.cpu().double()
    reference = x.double().requires_grad_()
    F.mish(reference).sum().backward()
    cpu_error = (grads["cpu"] - reference.grad).abs().mean()
    tpu_error = (grads[TPU] - reference.grad).abs().mean()
    assert tpu_error <= 1.5 * cpu_error + 1e-7, (tpu_error, cpu_error)


# ---- complex pow, alpha ----------------------------------------------------------------------------


def test_zero_to_a_complex_power():
    assert_same(lambda t: t ** (1 + 2j), torch.tensor([0.0, 1.0, 2.0]))
    assert_same(lambda t: t ** (1 + 2j), torch.tensor([0, 3], dtype=torch.int8))
    assert_same(lambda t: t ** 0j, torch.tensor([0j, 1 + 1j]))


def test_boolean_alpha_and_bool_floor_division_raise_as_on_cpu():
    assert_same(lambda t: torch.add(t, 1, alpha=True), torch.tensor([1, 2]))
    assert_same(lambda t: torch.add(t, t, alpha=True), torch.tensor([True, False]))
    assert_same(lambda t: torch.div(t, t, rounding_mode="floor"), torch.tensor([True, True]))
    assert_same(lambda t: torch.div(t, t, rounding_mode="trunc"), torch.tensor([True, True]))


def test_linalg_outs_that_cast_as_on_cpu():
    a = torch.tensor([[4.0, 1.0], [1.0, 3.0]])
    for fn in (lambda t, o: torch.cholesky(t, out=o),
               lambda t, o: torch.linalg.lstsq(t, t, out=(o, o.clone(), torch.empty(0, dtype=torch.long,
                                                                                       device=t.device), o.clone()))[0]):
        expected = fn(a, torch.empty(0, dtype=torch.float64))
        actual = fn(a.to(TPU), torch.empty(0, dtype=torch.float64, device=TPU))
        torch.testing.assert_close(actual.cpu(), expected)


def test_svd_of_complex_infinities_gives_nan():
    a = torch.tensor([[complex(float("inf"), -float("inf")), 1j], [0j, 1 + 0j]])
    u = torch.linalg.svdvals(a.to(TPU)).cpu()
    assert torch.isnan(u).all()


def test_casts_of_double_and_wide_integers_to_16_bit_floats_round_through_float():
    # c10 converts through float (two roundings), and so does tpu now; one
    # rounding gave 1 + 2^-10 for 1 + 2^-11 + 2^-30 as a half.
    x = torch.tensor([1 + 2**-11 + 2**-30, 1 + 2**-11, 70000.0, 65519.99, 2**-25], dtype=torch.float64)
    n = torch.tensor([2**24 + 1, 16777217 * 3, 2049 * 1024 + 1, -(2**40) - 12345])
    for t in (x, n, n.int()):
        for dtype in (torch.float16, torch.bfloat16):
            assert torch.equal(t.to("tpu").to(dtype).cpu(), t.to(dtype))


# ---- special functions at the ends of the float range -------------------------------------------


def close(fn, values, dtype=torch.float32, rtol=2e-6):
    x = torch.tensor(values, dtype=dtype)
    torch.testing.assert_close(fn(x.to(TPU)).cpu(), fn(x), rtol=rtol, atol=0, equal_nan=True)


def test_bessel_functions_near_zero_and_at_the_largest_floats():
    big, tiny = torch.finfo(torch.float32).max, torch.finfo(torch.float32).tiny
    special = torch.special
    # J1 is odd: no residue of the quadrature's cos weights at 0 (it was 1.7e-8).
    close(special.bessel_j1, [0.0, 1e-10, 1e-5, 1e-3, -1e-3], rtol=3e-6)
    close(special.bessel_j1, [0.0, 1e-10, 1e-5, 1e-3], torch.float64, rtol=1e-13)
    # 2 pi x and (pi / 2) / x overflowed or were flushed to zero near the largest float.
    close(torch.i0, [6e37, big])
    close(special.i0e, [big, 1e30])
    close(special.i0e, [1.7e308], torch.float64)
    close(special.scaled_modified_bessel_k0, [big, 1e30])
    close(special.scaled_modified_bessel_k1, [big, 1e30])
    # x / 2 of the smallest normal float was flushed to zero inside log(x / 2).
    close(special.bessel_y0, [tiny, 1e-30])
    close(special.bessel_y1, [tiny, 1e-30])
    close(special.modified_bessel_k0, [tiny, 1e-30])
    close(special.bessel_y0, [2.2250738585072014e-308], torch.float64, rtol=1e-13)


def test_float64_lgamma_near_its_zeros():
    close(torch.lgamma, [1 + 1e-10, 2 + 1e-10, 1 - 2**-53, 0.8, 1.2, 1.76, 2.24], torch.float64, rtol=1e-14)


def test_zeta_of_large_s_and_large_q():
    zeta = torch.special.zeta
    cases = [([1e4, 1e7, 3e38], [1.0, 1.0, 1.0]), ([1e4, 1e6], [2.0, 0.5]), ([2.0, 1.5, 10.0], [1e20, 1e30, 1e4])]
    for dtype in (torch.float32, torch.float64):
        for s, q in cases:
            s, q = torch.tensor(s, dtype=dtype), torch.tensor(q, dtype=dtype)
            torch.testing.assert_close(zeta(s.to(TPU), q.to(TPU)).cpu(), zeta(s, q), rtol=1e-5, atol=0)
    s, q = torch.tensor([9e15, 1e300], dtype=torch.float64), torch.ones(2, dtype=torch.float64)
    torch.testing.assert_close(zeta(s.to(TPU), q.to(TPU)).cpu(), zeta(s, q), rtol=0, atol=0)
