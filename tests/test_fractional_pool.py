"""Fractional max pooling (F.fractional_max_pool2d / 3d) against CPU, with
the same random samples on both sides: windows, values, indices and the
backward, in every float dtype (the window starts are computed in the
input's type, as CPU computes them), plus CPU's errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tpu_testing import assert_grads, assert_same, to_tpu

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def make(shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def samples(n, c, dims, dtype=torch.float32, seed=1):
    return torch.rand((n, c, dims), generator=torch.Generator().manual_seed(seed)).to(dtype)


def pool2d(x, s, k, o):
    return torch.ops.aten.fractional_max_pool2d(x, k, o, s)


def pool3d(x, s, k, o):
    return torch.ops.aten.fractional_max_pool3d(x, k, o, s)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kernel,output", [((2, 2), (5, 6)), ((3, 2), (9, 12)), ((1, 1), (11, 13)),
                                           ((2, 3), (1, 1)), ((2, 2), (10, 12))])
def test_fractional_max_pool2d_matches_cpu(dtype, kernel, output):
    # Exact: the same windows give the same values and indices.
    assert_same(pool2d, make((2, 3, 11, 13), dtype), samples(2, 3, 2, dtype), kernel, output, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_fractional_max_pool2d_large_plane_rounding(dtype):
    # Window starts reach several hundred: 16-bit types round alpha and
    # (i + u) * alpha, which moves windows; CPU's rounding is followed.
    x = make((1, 4, 600, 9), dtype)
    assert_same(pool2d, x, samples(1, 4, 2, dtype, seed=3), (3, 2), (317, 4), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_fractional_max_pool3d_matches_cpu(dtype):
    x = make((2, 3, 7, 8, 9), dtype)
    assert_same(pool3d, x, samples(2, 3, 3, dtype), (2, 2, 2), (4, 5, 6), rtol=0, atol=0)
    assert_same(pool3d, x, samples(2, 3, 3, dtype, seed=4), (3, 1, 2), (2, 8, 3), rtol=0, atol=0)


def test_unbatched_and_extra_samples():
    # A 3-d (4-d for 3-d pooling) input reads the first row of samples;
    # samples may have more rows than the batch.
    assert_same(pool2d, make((3, 11, 13)), samples(1, 3, 2), (2, 2), (5, 6))
    assert_same(pool2d, make((2, 3, 11, 13)), samples(5, 3, 2), (2, 2), (5, 6))
    assert_same(pool3d, make((3, 7, 8, 9)), samples(2, 3, 3), (2, 2, 2), (4, 5, 6))


def test_empty_batch_and_empty_output():
    assert_same(pool2d, make((0, 3, 11, 13)), samples(1, 3, 2), (2, 2), (5, 6))
    assert_same(pool2d, make((2, 3, 11, 13)), samples(2, 3, 2), (2, 2), (0, 6))


def test_ties_nan_and_inf_follow_cpu():
    # Ties keep the first maximum, NaN wins (the last NaN), an all -inf
    # window points at its first element.
    x = torch.zeros(1, 2, 8, 8)
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 2, 3] = float("nan")
    x[0, 1] = float("-inf")
    assert_same(pool2d, x, samples(1, 2, 2), (3, 3), (3, 3), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_backward_through_functional(dtype):
    s2 = samples(2, 3, 2, dtype)
    assert_grads(lambda x, s: F.fractional_max_pool2d(x, 2, output_size=(5, 6), _random_samples=s),
                 make((2, 3, 11, 13), dtype), s2, constant=(1,))
    assert_grads(lambda x, s: F.fractional_max_pool2d(x, (3, 2), output_ratio=(0.5, 0.5), _random_samples=s),
                 make((2, 3, 11, 13), dtype), s2, constant=(1,))
    s3 = samples(2, 3, 3, dtype)
    assert_grads(lambda x, s: F.fractional_max_pool3d(x, 2, output_size=(4, 5, 6), _random_samples=s),
                 make((2, 3, 7, 8, 9), dtype), s3, constant=(1,))


def test_backward_accumulates_overlapping_windows():
    # Kernel 3 over 8 -> 6 outputs: windows overlap and one maximum can be
    # picked by several windows; its gradient is their sum.
    x = make((1, 2, 8, 8))
    x[0, :, 3, 3] = 10.0
    assert_grads(lambda x, s: F.fractional_max_pool2d(x, 3, output_size=6, _random_samples=s),
                 x, samples(1, 2, 2), constant=(1,))


def test_module_draws_samples_on_the_device():
    # Without _random_samples the samples are drawn with torch.rand on the
    # device: only the shape and membership can be compared with CPU.
    x = make((2, 3, 11, 13))
    pool = torch.nn.FractionalMaxPool2d(2, output_size=(5, 6), return_indices=True)
    out, idx = pool(to_tpu(x))
    assert out.shape == (2, 3, 5, 6) and idx.dtype == torch.int64
    flat = x.flatten(2)
    torch.testing.assert_close(out.cpu(), flat.gather(2, idx.cpu().flatten(2)).view_as(out.cpu()))


@pytest.mark.parametrize("case", [
    lambda: pool2d(make((2, 3, 9, 9)), samples(2, 3, 2), (2, 2), (9, 9)),  # pool too large
    lambda: pool3d(make((2, 3, 9, 9, 9)), samples(2, 3, 3), (2, 2, 2), (8, 8, 8)),  # 3-d's stricter bound
    lambda: pool2d(make((2, 3, 0, 9)), samples(2, 3, 2), (2, 2), (1, 1)),  # empty plane
    lambda: pool2d(make((9, 9)), samples(1, 1, 2), (2, 2), (4, 4)),  # 2-d input
    lambda: pool2d(make((2, 3, 9, 9)), samples(2, 3, 3), (2, 2), (4, 4)),  # samples' last dim
    lambda: pool2d(make((2, 3, 9, 9)), samples(1, 3, 2), (2, 2), (4, 4)),  # too few sample rows
    lambda: pool2d(make((2, 3, 9, 9)), samples(2, 4, 2), (2, 2), (4, 4)),  # channels differ
    lambda: pool2d(make((2, 3, 9, 9)), samples(2, 3, 2, torch.float64), (2, 2), (4, 4)),  # dtype differs
    lambda: pool2d(make((2, 3, 9, 9)).long(), samples(2, 3, 2).long(), (2, 2), (4, 4)),  # integer input
])
def test_errors_match_cpu(case):
    with pytest.raises(Exception) as cpu:
        case()
    with pytest.raises(type(cpu.value)) as tpu:
        _on_tpu(case)
    assert str(tpu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


def _on_tpu(case):
    # Runs `case` with make() / samples() producing tpu tensors.
    global make, samples
    cpu_make, cpu_samples = make, samples
    make = lambda *a, **k: to_tpu(cpu_make(*a, **k))  # noqa: E731
    samples = lambda *a, **k: to_tpu(cpu_samples(*a, **k))  # noqa: E731
    try:
        case()
    finally:
        make, samples = cpu_make, cpu_samples


def backward2d(g, x, o, i):
    return torch.ops.aten.fractional_max_pool2d_backward(g, x, [2, 2], o, i)


def backward3d(g, x, o, i):
    return torch.ops.aten.fractional_max_pool3d_backward(g, x, [2, 2, 2], o, i)


def test_backward_errors_match_cpu():
    x, s = make((1, 2, 8, 8)), samples(1, 2, 2)
    out, idx = pool2d(x, s, (2, 2), (4, 4))
    x3, s3 = make((1, 2, 8, 8, 8)), samples(1, 2, 3)
    out3, idx3 = pool3d(x3, s3, (2, 2, 2), (4, 4, 4))
    cases = [
        lambda t: backward2d(t(out[:, :, :3]), t(x), [4, 4], t(idx)),
        lambda t: backward2d(t(out), t(x), [4, 4], t(idx.int())),
        lambda t: backward2d(t(out.double()), t(x), [4, 4], t(idx)),
        lambda t: backward2d(t(out), t(x), [4], t(idx)),
        lambda t: backward3d(t(out3[:, :, :3]), t(x3), [4, 4, 4], t(idx3)),
        lambda t: backward3d(t(out3), t(x3), [4, 4, 4], t(idx3.int())),
        lambda t: backward3d(t(out3.double()), t(x3), [4, 4, 4], t(idx3)),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as cpu:
            case(lambda v: v)
        with pytest.raises(RuntimeError) as tpu:
            case(to_tpu)
        assert str(tpu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


def test_out_dtype_must_match_and_bad_sizes_raise():
    x, s = to_tpu(make((1, 2, 8, 8))), to_tpu(samples(1, 2, 2))
    out = to_tpu(torch.empty(0, dtype=torch.float64))
    idx = to_tpu(torch.empty(0, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float"):
        torch.ops.aten.fractional_max_pool2d.output(x, [2, 2], [4, 4], s, output=out, indices=idx)
    out = to_tpu(torch.empty(0))
    torch.ops.aten.fractional_max_pool2d.output(x, [2, 2], [4, 4], s, output=out, indices=idx)
    torch.testing.assert_close(out.cpu(), pool2d(x.cpu(), s.cpu(), (2, 2), (4, 4))[0])
    for kernel, output in [([0, 2], [2, 2]), ([-1, 2], [2, 2]), ([2, 2], [-1, 2])]:
        with pytest.raises(RuntimeError, match="positive kernel sizes"):
            pool2d(x, s, kernel, output)

