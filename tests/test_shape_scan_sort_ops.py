"""Shape-reordering, padding, scan and sort ops on tpu against CPU: triu /
tril, flip, roll, repeat / tile / repeat_interleave, constant / reflect /
replicate / circular padding, cumsum / cumprod / cummax / cummin /
logcumsumexp, sort / argsort / topk / kthvalue / median, cross; dtypes,
dims, 0-dim, empty and non-contiguous inputs, errors, out= / in-place forms
and gradients."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tpu_testing import TPU, assert_grad, assert_same

DTYPES = [torch.float32, torch.bfloat16, torch.int64, torch.bool]


def make(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        return torch.randint(-9, 10, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)


def distinct(shape, dtype=torch.float32, seed=0):
    """Values without ties, so that index results are unique."""
    n = 1
    for s in shape:
        n *= s
    g = torch.Generator().manual_seed(seed)
    return (torch.randperm(n, generator=g).reshape(shape) - n // 2).to(dtype)


def noncontig(shape, dtype=torch.float32, seed=0):
    """A transposed view with the given shape."""
    return make(tuple(reversed(shape)), dtype, seed).permute(*reversed(range(len(shape))))


# ---- triu / tril --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("fn", ["triu", "tril"])
def test_triangular(fn, dtype):
    op = getattr(torch, fn)
    cases = [((3, 4), 0), ((2, 4, 3), -1), ((0, 3), 2)]
    if dtype == torch.float32:
        cases += [((3, 4), -5), ((3, 4), 2), ((4, 3), 9)]
    for shape, k in cases:
        assert_same(lambda x: op(x, k), make(shape, dtype))
    assert_same(lambda x: op(x, 1), noncontig((4, 3), dtype))


@pytest.mark.parametrize("fn", ["triu", "tril"])
def test_triangular_inplace_out_errors_grad(fn):
    x = make((3, 4))
    assert_same(lambda t: getattr(t.clone(), fn + "_")(1), x)
    assert_same(lambda t: getattr(torch, fn)(t, -1, out=torch.empty(0, device=t.device)), x)
    # out= demands the exact dtype
    assert_same(lambda t: getattr(torch, fn)(t, out=torch.empty(3, 4, dtype=torch.float64, device=t.device)), x)
    assert_same(lambda t: getattr(torch, fn)(t), make((3,)))
    # in-place through a view writes the base
    assert_same(lambda t: (lambda b: (getattr(b[:, 1:], fn + "_")(), b)[1])(t.clone()), make((3, 5)))
    assert_grad(lambda t: getattr(torch, fn)(t, 1), make((4, 3)))


# ---- flip / roll / repeat ------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_flip(dtype):
    x = make((2, 3, 4), dtype)
    for dims in [(0,), (-1,), (0, 2), (0, 1, 2), ()] if dtype == torch.float32 else [(-1,), (0, 2)]:
        assert_same(lambda t: torch.flip(t, dims), x)
    assert_same(lambda t: torch.flip(t, (0,)), make((), dtype))
    assert_same(lambda t: torch.flip(t, (1,)), make((0, 3), dtype))
    assert_same(lambda t: torch.flip(t, (0, 1)), noncontig((3, 5), dtype))
    if dtype == torch.float32:
        assert_same(torch.fliplr, x)
        assert_same(torch.flipud, x)


def test_flip_errors_grad():
    assert_same(lambda t: torch.flip(t, (0, -2)), make((2, 2)))
    assert_same(lambda t: torch.flip(t, (2,)), make((2, 2)))
    assert_grad(lambda t: torch.flip(t, (0, 1)), make((3, 4)))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_roll(dtype):
    x = make((3, 4), dtype)
    cases = [(1, 0), (-1, 1), (5, None), (-7, None), ((1, 2), (0, 1)), ((4, -9), (1, 0)), (0, 0)]
    for shifts, dims in cases if dtype == torch.float32 else cases[3:5]:
        assert_same(lambda t: torch.roll(t, shifts, dims), x)
    assert_same(lambda t: torch.roll(t, 2, 1), noncontig((3, 5), dtype))
    assert_same(lambda t: torch.roll(t, 1), make((), dtype))
    assert_same(lambda t: torch.roll(t, 1, 0), make((0, 2), dtype))


def test_roll_errors_grad():
    x = make((2, 3))
    assert_same(lambda t: torch.roll(t, (1, 2), (0,)), x)
    assert_same(lambda t: torch.roll(t, ()), x)
    assert_same(lambda t: torch.roll(t, 1, 3), x)
    assert_grad(lambda t: torch.roll(t, (1, -2), (0, 1)), make((3, 4)))
    assert_grad(lambda t: torch.roll(t, 5), make((3, 4)))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_repeat_tile(dtype):
    x = make((2, 3), dtype)
    for reps in [(1, 1), (2, 3), (2, 1, 2), (0, 2)] if dtype == torch.float32 else [(2, 1, 2)]:
        assert_same(lambda t: t.repeat(*reps), x)
    assert_same(lambda t: t.repeat(3), make((), dtype))
    assert_same(lambda t: t.repeat(2, 2), make((0, 2), dtype))
    assert_same(lambda t: t.repeat(2, 1), noncontig((2, 3), dtype))
    if dtype == torch.float32:
        assert_same(lambda t: torch.tile(t, (2,)), x)
        assert_same(lambda t: torch.tile(t, (2, 1, 3)), x)


def test_repeat_errors_grad():
    assert_same(lambda t: t.repeat(2), make((2, 2)))
    assert_same(lambda t: t.repeat(-1), make((2,)))
    assert_grad(lambda t: t.repeat(2, 1, 3), make((2, 3)))
    assert_grad(lambda t: torch.tile(t, (3,)), make((4,)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=str)
def test_repeat_interleave_int(dtype):
    x = make((2, 3), dtype)
    assert_same(lambda t: torch.repeat_interleave(t, 2), x)
    assert_same(lambda t: torch.repeat_interleave(t, 3, dim=1), x)
    assert_same(lambda t: torch.repeat_interleave(t, 2, dim=-2), x)
    assert_same(lambda t: torch.repeat_interleave(t, 0, dim=0), x)


def test_repeat_interleave_tensor():
    for reps in [[1, 0, 3], [2, 2], [0, 0], [0, 3, 0, 1, 0]]:
        r = torch.tensor(reps)
        assert_same(torch.repeat_interleave, r)
        assert_same(lambda rr: torch.repeat_interleave(rr.to(torch.int32)), r)
    x = make((3, 2))
    r = torch.tensor([2, 0, 1])
    assert_same(lambda t, rr: torch.repeat_interleave(t, rr, dim=0), x, r)
    assert_same(lambda t, rr: torch.repeat_interleave(t, rr, dim=0, output_size=3), x, r)
    assert_same(torch.repeat_interleave, torch.tensor([], dtype=torch.int64))
    assert_same(torch.repeat_interleave, torch.tensor([1, -1]))
    assert_same(torch.repeat_interleave, torch.tensor([[1]]))
    assert_same(torch.repeat_interleave, torch.tensor([1.0]))
    # a wrong output_size or a negative count is reported at the next sync
    with pytest.raises(RuntimeError):
        torch.repeat_interleave(torch.tensor([1, 2], device=TPU), output_size=4).cpu()
    with pytest.raises(RuntimeError):
        torch.repeat_interleave(torch.tensor([2, -1], device=TPU), output_size=1).cpu()
    assert_same(lambda rr: torch.repeat_interleave(rr, output_size=5), torch.tensor([2, 0, 3]))


# ---- padding -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_constant_pad(dtype):
    x = make((2, 3, 4), dtype)
    pads = [(1, 2), (0, 1, 2, 0), (1, 1, 1, 1, 1, 1), (-1, 2), (-2, -1, 1, 0), (0, 0)]
    for pad in pads if dtype == torch.float32 else pads[2:4]:
        assert_same(lambda t: F.pad(t, pad, value=1), x)
    assert_same(lambda t: F.pad(t, (2, 1)), noncontig((3, 4), dtype))
    assert_same(lambda t: F.pad(t, (1, 1)), make((0, 2), dtype))
    assert_same(lambda t: F.pad(t, (1, 1, 2, 0)), make((0, 2), dtype))
    assert_same(lambda t: F.pad(t, (-2, -2)), make((2, 4), dtype))


def test_constant_pad_values_errors_grad():
    x = make((2, 3))
    for v in [0.5, -3.0, float("inf")]:
        assert_same(lambda t: F.pad(t, (1, 1), value=v), x)
    assert_same(lambda t: F.pad(t, (1, 1), value=2.7), make((2, 3), torch.int64))
    # A fill value the dtype cannot hold raises, as CPU's fill_ does.
    for dtype, v in [(torch.uint8, 300), (torch.uint8, -1), (torch.int8, float("nan")), (torch.float16, 1e6)]:
        assert_same(lambda t: F.pad(t, (1, 1), value=v), make((2, 3)).to(dtype))
    assert_same(lambda t: torch.constant_pad_nd(t, (1,)), x)
    assert_same(lambda t: torch.constant_pad_nd(t, (1,) * 6), x)
    assert_same(lambda t: torch.constant_pad_nd(t, (-2, -2)), x)
    assert_grad(lambda t: F.pad(t, (1, 2, -1, 1), value=3.0), make((3, 4)))


PAD_CASES = [
    ((2, 5), (2, 1)),
    ((2, 3, 5), (-1, 2)),
    ((2, 1, 4, 5), (3, 1, 2, 2)),
    ((1, 3, 4, 5), (1, 1, 2, 0, 1, 2)),
    ((2, 1, 2, 3, 4), (1, 2, 1, 1, 1, 0)),
]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("case", PAD_CASES, ids=str)
def test_index_pad(mode, case):
    shape, pad = case
    if mode == "circular" and len(pad) != 4:
        pytest.skip("circular is composite (slices and cat): one case is enough")
    x = make(shape)
    assert_same(lambda t: F.pad(t, pad, mode=mode), x)
    assert_grad(lambda t: F.pad(t, pad, mode=mode), x)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_index_pad_dtypes_and_views(mode):
    assert_same(lambda t: F.pad(t, (2, 1), mode=mode), make((2, 3, 4), torch.bfloat16))
    assert_same(lambda t: F.pad(t, (1, 2, 2, 1), mode=mode), noncontig((2, 4, 3)))
    assert_same(lambda t: F.pad(t, (1, 1), mode=mode), make((0, 2, 3)))
    # tpu sums the gradient in f32 and rounds once; CPU rounds every addition
    assert_grad(lambda t: F.pad(t, (2, 1, 1, 1), mode=mode), make((1, 3, 4), torch.bfloat16), rtol=0.1, atol=0.05)


def test_index_pad_errors():
    x = make((1, 2, 3))
    assert_same(lambda t: F.pad(t, (3, 1), mode="reflect"), x)
    assert_same(lambda t: torch.ops.aten.reflection_pad1d(t, (1, 1, 1, 1)), x)
    assert_same(lambda t: torch.ops.aten.reflection_pad1d(t, (1, 1)), make((1, 1, 1, 3)))
    assert_same(lambda t: torch.ops.aten.reflection_pad1d(t, (1, 1)), make((1, 0, 3)))
    assert_same(lambda t: torch.ops.aten.replication_pad1d(t, (-2, -1)), make((1, 3)))
    assert_same(lambda t: torch.ops.aten.replication_pad2d(t, (1, 1)), make((1, 3, 3)))
    # Negative padding may empty some padded dimensions (not all of them)
    for mode in ("reflect", "replicate"):
        for shape, pad in [((1, 1, 3, 3), (0, 0, -3, 0)), ((1, 3, 3), (-3, 0, 0, 0)), ((1, 1, 2, 3, 3), (0, 0, -3, 0, 1, 0)),
                           ((1, 1, 3, 3), (-3, 0, -3, 0)), ((1, 1, 3, 3), (0, 0, -4, 0))]:
            assert_same(lambda t: F.pad(t, pad, mode=mode), make(shape))
        assert_grad(lambda t: F.pad(t, (0, 0, -3, 0), mode=mode), make((1, 2, 3, 3)))
    # out= forms
    assert_same(lambda t: torch.ops.aten.reflection_pad2d.out(t, (1, 1, 1, 1), out=torch.empty(0, device=t.device)),
                make((1, 3, 3)))


# ---- scans ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.int32, torch.bool], ids=str)
@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_cumsum_cumprod(fn, dtype):
    op = getattr(torch, fn)
    x = make((3, 7), dtype) if fn == "cumsum" or dtype.is_floating_point else make((3, 7), dtype).clamp(-2, 2)
    assert_same(lambda t: op(t, -1), x)
    assert_same(lambda t: op(t, 0), noncontig((5, 3), dtype))
    if dtype in (torch.float32, torch.int64):
        assert_same(lambda t: op(t, 0), x)
        assert_same(lambda t: op(t, 0), make((), dtype))
        assert_same(lambda t: op(t, 1), make((2, 0), dtype))
    assert_same(lambda t: op(t, 0, dtype=torch.float32), make((33,), dtype))


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_cum_forms_errors(fn):
    op = getattr(torch, fn)
    x = make((4, 3)) * 0.5 + 1
    assert_same(lambda t: getattr(t.clone(), fn + "_")(1), x)
    assert_same(lambda t: getattr(t.clone(), fn + "_")(0), make((5,), torch.int32))
    # CPU has no bool result kernel: in place on bool, or dtype / out= bool.
    for call in (lambda t: getattr(t.clone(), fn + "_")(0), lambda t: op(t, 0, dtype=torch.bool),
                 lambda t: op(t, 0, out=torch.empty(4, dtype=torch.bool, device=t.device))):
        with pytest.raises(NotImplementedError, match=f"{fn}_out.* not implemented for 'Bool'"):
            call(make((4,), torch.bool).to("tpu"))
    assert_same(lambda t: op(t, 0, out=torch.empty(0, device=t.device)), make((4,), torch.int64))
    assert_same(lambda t: op(t, 0, dtype=torch.float32, out=torch.empty(0, dtype=torch.float64, device=t.device)),
                make((4,)))
    assert_same(lambda t: op(t, 2), x)
    assert_same(lambda t: op(t, 1), make(()))
    long = make((1000,)) * 0.01 + (0 if fn == "cumsum" else 1)
    assert_same(lambda t: op(t, 0), long, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.int64, torch.bool], ids=str)
def test_cumsum_long(dtype):
    # Past 1024 values sums of floats and counts of booleans go by blocks of
    # 32 matrix products; integers and shorter sums by a doubling scan.
    x = make((2, 1100, 3), dtype) if dtype != torch.int64 else make((2, 1100, 3), dtype) * 1000
    for dim in range(3):
        assert_same(lambda t: torch.cumsum(t, dim), x, rtol=1e-4, atol=1e-3)
    assert_same(lambda t: torch.cumsum(t, 0), make((1025,), dtype), rtol=1e-4, atol=1e-3)
    assert_same(lambda t: torch.cumsum(t, 0), make((32 * 32 * 32 + 5,), dtype), rtol=1e-4, atol=3e-3)
    if dtype == torch.bool:
        assert_same(lambda t: t.nonzero(), x)
    if dtype == torch.float32:
        # Non-negative values give a non-decreasing sum, across blocks too.
        sums = torch.rand(4, 5000).to(TPU).cumsum(1).cpu()
        assert (sums[:, 1:] >= sums[:, :-1]).all()


def test_cumsum_non_finite():
    # A prefix holding +inf is +inf, -inf is -inf, both or a NaN is NaN: at
    # and around the block edges (32, 64) and in the blocks' totals.
    inf, nan = float("inf"), float("nan")
    for n in (1025, 1088, 3000):
        for marks in ([(31, inf)], [(32, -inf)], [(0, inf), (n - 1, -inf)], [(n // 2, nan)],
                      [(33, inf), (63, inf)], [(5, inf), (n - 2, nan)], [(n - 1, inf)], [(1024, -inf)]):
            x = make((n,)) * 0.01
            for i, v in marks:
                x[i] = v
            assert_same(lambda t: torch.cumsum(t, 0), x, rtol=1e-4, atol=1e-4)
    rows = make((4, 1100))
    rows[1, 700] = inf
    rows[2, 3] = -inf
    rows[3, 1099] = nan
    assert_same(lambda t: torch.cumsum(t, 1), rows, rtol=1e-5, atol=1e-3)
    assert_same(lambda t: torch.cumsum(t, 0), rows.t().contiguous(), rtol=1e-5, atol=1e-3)


def test_cum_grad():
    assert_grad(lambda t: torch.cumsum(t, 1), make((3, 5)))
    assert_grad(lambda t: torch.cumsum(t, 0, dtype=torch.float32), make((6,), torch.bfloat16))
    assert_grad(lambda t: torch.cumprod(t, 1), make((3, 5)))
    with_zero = make((2, 6))
    with_zero[0, 2] = 0
    with_zero[1, 1] = 0
    with_zero[1, 4] = 0
    assert_grad(lambda t: torch.cumprod(t, 1), with_zero)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool], ids=str)
@pytest.mark.parametrize("fn", ["cummax", "cummin"])
def test_cummax_cummin(fn, dtype):
    op = getattr(torch, fn)
    x = make((4, 9), dtype)
    assert_same(lambda t: tuple(op(t, -1)), x)
    assert_same(lambda t: tuple(op(t, 1)), noncontig((3, 5), dtype))
    if dtype == torch.float32:
        assert_same(lambda t: tuple(op(t, 0)), x)
        assert_same(lambda t: tuple(op(t, 0)), make((), dtype))
        assert_same(lambda t: tuple(op(t, 0)), make((0, 3), dtype))


@pytest.mark.parametrize("fn", ["cummax", "cummin"])
def test_cummax_cummin_nan_ties_out(fn):
    op = getattr(torch, fn)
    nan = float("nan")
    assert_same(lambda t: tuple(op(t, 0)), torch.tensor([1.0, nan, 3.0, nan, 5.0]))
    assert_same(lambda t: tuple(op(t, 0)), torch.tensor([1.0, 1.0, 0.0, 1.0, 2.0, 2.0, -1.0]))
    assert_same(lambda t: tuple(op(t, 0)), torch.tensor([2, 2, 1, 3, 3]))
    assert_same(lambda t: tuple(op(t, 0, out=(torch.empty(0, device=t.device),
                                             torch.empty(0, dtype=torch.long, device=t.device)))), make((5,)))


@pytest.mark.parametrize("fn", ["cummax", "cummin"])
def test_cummax_cummin_grad(fn):
    assert_grad(lambda t: getattr(torch, fn)(t, 1).values, distinct((3, 6)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_logcumsumexp(dtype):
    x = make((3, 8), dtype) * 3
    for dim in [0, 1, -1]:
        assert_same(lambda t: torch.logcumsumexp(t, dim), x)
    inf, nan = float("inf"), float("nan")
    special = torch.tensor([-inf, -inf, 0.0, inf, 1.0, -inf, nan, 2.0]).to(dtype)
    assert_same(lambda t: torch.logcumsumexp(t, 0), special)
    assert_same(lambda t: torch.logcumsumexp(t, 0), make((), dtype))
    assert_same(lambda t: torch.logcumsumexp(t, 1), make((2, 0), dtype))
    assert_same(lambda t: torch.logcumsumexp(t, 0), noncontig((4, 3), dtype))
    assert_same(lambda t: torch.logcumsumexp(t, 0), make((3,), torch.int64))
    assert_same(lambda t: torch.logcumsumexp(t, 0, out=torch.empty(0, dtype=t.dtype, device=t.device)), x)
    assert_grad(lambda t: torch.logcumsumexp(t, 1), make((3, 5)))


# ---- sorting and selection ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.int32, torch.bool], ids=str)
def test_sort(dtype):
    x = make((4, 6), dtype)  # with ties: the stable sort keeps their order
    for dim, desc in [(0, False), (-1, True)]:
        assert_same(lambda t: tuple(torch.sort(t, dim=dim, descending=desc, stable=True)), x)
    assert_same(lambda t: tuple(torch.sort(t)), make((), dtype))
    assert_same(lambda t: tuple(torch.sort(t, 0)), make((0, 3), dtype))
    assert_same(lambda t: tuple(torch.sort(t, 1, descending=True)), noncontig((3, 5), dtype))
    assert_same(lambda t: torch.argsort(t, dim=0, stable=True), x)
    assert_same(torch.msort, x)


def test_sort_nan_and_special_values():
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([1.0, nan, -inf, 1.0, inf, -0.0, 0.0, nan, -2.0])
    for desc in [False, True]:
        assert_same(lambda t: tuple(torch.sort(t, descending=desc, stable=True)), x)
        assert_same(lambda t: torch.argsort(t, descending=desc, stable=True), x)
    assert_same(lambda t: tuple(torch.sort(t, 0, out=(torch.empty(0, device=t.device),
                                                      torch.empty(0, dtype=torch.long, device=t.device)))), x)
    assert_same(lambda t: torch.sort(t), make((3,), torch.complex64))
    assert_same(lambda t: torch.sort(t, 2), make((3, 3)))
    assert_grad(lambda t: torch.sort(t, 1, descending=True).values, distinct((3, 5)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int16,
                                   torch.int8, torch.uint8, torch.uint32, torch.bool, torch.float64, torch.int64,
                                   torch.uint64], ids=str)
def test_sort_of_keys_packed_with_positions(dtype):
    # Keys are sorted packed with their positions into one int64 (64-bit
    # keys in two passes, low half first): equal keys (both zeros, every
    # NaN) keep their order, NaN sorts as the greatest, and the values come
    # back bit for bit.
    inf, nan = float("inf"), float("nan")
    if dtype.is_floating_point:
        x = torch.tensor([1.0, nan, -inf, 1.0, inf, -0.0, 0.0, -nan, -2.0, 0.0, -0.0, 3.5, -1e-3, 65504.0, nan])
        x = torch.cat([x, make((2000,)) * 100]).to(dtype)
        if dtype == torch.float64:  # values apart in the low half of their bits only
            x[-4:] = torch.tensor([1.0, 1.0 + 2**-52, 1.0 - 2**-53, -(1.0 + 2**-52)], dtype=dtype)
    elif dtype == torch.uint64:
        x = torch.randint(-(2**63), 2**63 - 1, (2000,)).view(torch.uint64)
        x = torch.cat([x, torch.tensor([0, 2**63, 2**63 - 1, 1, 2**32, 2**32 - 1], dtype=torch.uint64)])
    elif dtype == torch.bool:
        x = make((2001,)) > 0
    else:
        info = torch.iinfo(dtype)
        x = torch.randint(info.min, info.max, (2000,), dtype=torch.int64)
        x = torch.cat([x, torch.tensor([info.min, info.max, 0, info.max, info.min])]).to(dtype)
    cpu_x = x if dtype != torch.uint32 else x.to(torch.int64)  # CPU sorts no uint32
    bits = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16,
            torch.float64: torch.int64}.get(dtype, dtype)
    for desc in (False, True):
        want_values, want_indices = torch.sort(cpu_x, descending=desc, stable=True)
        values, indices = torch.sort(x.to(TPU), descending=desc)
        assert torch.equal(indices.cpu(), want_indices)
        got = values.cpu()
        assert torch.equal(got.view(bits) if dtype != torch.uint32 else got.to(torch.int64),
                           want_values.view(bits) if dtype != torch.uint32 else want_values)
    rows = x[:2000].reshape(40, 50)
    assert torch.equal(torch.argsort(rows.to(TPU), dim=0, stable=True).cpu(),
                       torch.argsort(rows if dtype != torch.uint32 else rows.to(torch.int64), dim=0, stable=True))


@pytest.mark.parametrize("span", [0, 5, 2**32 - 1, 2**32, 2**40, 2**64 - 1])
def test_sort_of_int64_keys_near_and_far_apart(span):
    # int64 keys within 2**32 of the smallest one sort in one pass of their
    # distances from it, others in two: both give CPU's stable order.
    low = -(2**63) if span == 2**64 - 1 else -(2**31) - 7
    g = torch.Generator().manual_seed(span % 1000)
    offsets = torch.randint(0, min(span, 2**62) + 1, (3, 700), generator=g)
    x = low + offsets * (span // max(min(span, 2**62), 1))
    x[0, :4] = torch.tensor([low, low + span, low, low + span])  # the whole span, ties included
    x[1, 5:9] = x[1, 0]
    for dim in (0, 1):
        for desc in (False, True):
            want = torch.sort(x, dim=dim, descending=desc, stable=True)
            got = torch.sort(x.to(TPU), dim, descending=desc)
            assert torch.equal(got.indices.cpu(), want.indices) and torch.equal(got.values.cpu(), want.values)
    assert torch.equal(torch.unique(x.to(TPU), return_counts=True)[1].cpu(), torch.unique(x, return_counts=True)[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_topk(dtype):
    x = distinct((4, 7), dtype) if dtype != torch.bfloat16 else distinct((4, 7)).to(dtype)
    for k, dim, largest in [(3, 1, True), (2, 0, False), (7, -1, True), (0, 1, True), (1, 0, False)]:
        assert_same(lambda t: tuple(torch.topk(t, k, dim, largest=largest)), x)
    assert_same(lambda t: tuple(torch.topk(t, 1)), make((), dtype))
    assert_same(lambda t: tuple(torch.topk(t, 0)), make((3, 0), dtype))
    assert_same(lambda t: tuple(torch.topk(t, 2, 0)), noncontig((5, 3), dtype) if dtype != torch.bfloat16
                else distinct((3, 5)).to(dtype).t())


def test_topk_nan_errors_grad():
    nan = float("nan")
    x = torch.tensor([1.0, nan, 3.0, 2.0, -1.0])
    assert_same(lambda t: tuple(torch.topk(t, 2)), x)
    assert_same(lambda t: tuple(torch.topk(t, 2, largest=False)), x)
    assert_same(lambda t: torch.topk(t, 6), x)
    assert_same(lambda t: torch.topk(t, 1), make((3,), torch.bool))
    assert_same(lambda t: tuple(torch.topk(t, 2, out=(torch.empty(0, device=t.device),
                                                      torch.empty(0, dtype=torch.long, device=t.device)))), x)
    assert_grad(lambda t: torch.topk(t, 3, dim=1).values, distinct((3, 6)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_kthvalue(dtype):
    x = distinct((4, 7), dtype)
    for k, dim, keepdim in [(1, 1, False), (3, 0, True), (7, -1, False), (4, 0, False)]:
        assert_same(lambda t: tuple(torch.kthvalue(t, k, dim, keepdim)), x)
    assert_same(lambda t: tuple(torch.kthvalue(t, 1)), make((), dtype))
    assert_same(lambda t: torch.kthvalue(t, 8), x)
    assert_same(lambda t: torch.kthvalue(t, 0), x)
    assert_same(lambda t: torch.kthvalue(t, 1), make((3,), torch.bool))
    assert_same(lambda t: tuple(torch.kthvalue(t, 2, 0)), torch.tensor([1.0, float("nan"), -1.0]))


def bit_pattern(t):
    """t's elements as integers of their width (compares NaN payloads and
    the sign of zero; CPU's own gather of bfloat16 changes NaN bits)."""
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.contiguous().reshape(-1).view(width)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64,
                                   torch.int32, torch.int16, torch.int8, torch.uint8], ids=str)
def test_kthvalue_and_median_select_as_a_stable_sort_would(dtype):
    # kthvalue and median select bit by bit on order keys without sorting;
    # the value and index are those at the rank in a stable ascending sort
    # (NaN last), also among ties (a few distinct values per row) and for
    # both zeros, whose keys are equal.
    g = torch.Generator().manual_seed(3)
    rows = torch.randint(-3, 4, (6, 41), generator=g)
    if dtype.is_floating_point:
        x = rows.to(dtype) * 0.5
        x[0, 7], x[0, 30], x[1, 0], x[2, 40] = float("nan"), float("nan"), float("-inf"), float("inf")
        x[3] = torch.where(x[3] == 0, torch.tensor(-0.0, dtype=dtype), x[3])
        x[4] = torch.nan
    else:
        info = torch.iinfo(dtype)
        x = rows.to(dtype)
        x[0, :3] = torch.tensor([info.min, info.max, info.min], dtype=torch.int64).to(dtype)
    x_bits = bit_pattern(x).reshape(x.shape)
    for dim in (1, 0):
        n = x.shape[dim]
        order = torch.sort(x, dim=dim, stable=True).indices

        def check(got, rank):  # rank: one per row
            want = order.gather(dim, rank.unsqueeze(dim))
            assert torch.equal(got.indices.cpu(), want)
            assert torch.equal(bit_pattern(got.values.cpu()), bit_pattern(x_bits.gather(dim, want)))

        rows_n = x.shape[1 - dim]
        for k in (1, 2, n // 2, n):
            check(torch.kthvalue(x.to(TPU), k, dim, keepdim=True), torch.full((rows_n,), k - 1))
        nans = x.isnan().sum(dim) if dtype.is_floating_point else torch.zeros(rows_n, dtype=torch.long)
        check(torch.median(x.to(TPU), dim, keepdim=True),
              torch.where(nans > 0, n - nans, torch.full_like(nans, (n - 1) // 2)))
        if dtype.is_floating_point:
            m = n - nans
            check(torch.nanmedian(x.to(TPU), dim, keepdim=True),
                  torch.where(m > 0, (m - 1) // 2, torch.full_like(m, (n - 1) // 2)))
    flat = x.flatten()
    nans = int(flat.isnan().sum()) if dtype.is_floating_point else 0
    want = torch.sort(flat, stable=True).indices[flat.numel() - nans if nans else (flat.numel() - 1) // 2]
    assert torch.equal(bit_pattern(torch.median(x.to(TPU)).cpu()), bit_pattern(flat)[want].reshape(1))


def test_kthvalue_grad():
    assert_grad(lambda t: torch.kthvalue(t, 2, 1).values, distinct((3, 5)))


@pytest.mark.parametrize("fn", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_median(fn, dtype):
    op = getattr(torch, fn)
    for shape in [(4, 7), (4, 6)]:
        x = distinct(shape, dtype)
        for dim, keepdim in [(0, False), (-1, True)]:
            assert_same(lambda t: tuple(op(t, dim, keepdim)), x)
        assert_same(op, x)
    assert_same(lambda t: tuple(op(t, 0)), make((), dtype))
    assert_same(op, make((), dtype))
    assert_same(lambda t: tuple(op(t, 1)), make((0, 3), dtype))
    assert_same(lambda t: op(t, 0), make((0, 3), dtype))
    assert_same(lambda t: tuple(op(t, 0)), noncontig((5, 3), dtype) if dtype == torch.float32
                else distinct((3, 5), dtype).t())
    assert_same(lambda t: op(t, 0), make((3,), torch.bool))


@pytest.mark.parametrize("fn", ["median", "nanmedian"])
def test_median_nan_grad(fn):
    op = getattr(torch, fn)
    nan = float("nan")
    x = torch.tensor([[3.0, nan, 1.0, nan, 2.0], [nan, nan, nan, nan, nan], [5.0, 1.0, 4.0, 2.0, 3.0],
                      [1.0, 2.0, nan, 0.0, 7.0]])
    assert_same(lambda t: tuple(op(t, 1)), x)
    assert_same(op, x)
    assert_same(op, x[2])
    assert_same(op, torch.empty(0))
    assert_same(lambda t: tuple(op(t, 1, out=(torch.empty(0, device=t.device),
                                              torch.empty(0, dtype=torch.long, device=t.device)))), x)
    assert_grad(lambda t: op(t, 1).values, distinct((3, 5)))
    assert_grad(lambda t: op(t), distinct((3, 5)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.bfloat16, torch.uint8], ids=str)
def test_mode(dtype):
    # Few distinct values, so every row has ties in count: the smallest of
    # the most frequent values, at the index of its last occurrence.
    x = torch.randint(0, 4, (3, 9, 5), generator=torch.Generator().manual_seed(3)).to(dtype)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            assert_same(lambda t: tuple(torch.mode(t, dim, keepdim)), x)
    assert_same(lambda t: tuple(torch.mode(t)), torch.tensor([3, 1, 3, 2, 1, 5, 1, 3]).to(dtype))
    assert_same(lambda t: tuple(torch.mode(t)), make((), torch.float32))
    assert_same(lambda t: tuple(torch.mode(t, 0)), make((0, 3), torch.float32))
    assert_same(lambda t: tuple(torch.mode(t, 1)), make((0, 3), torch.float32))
    assert_grad(lambda t: torch.mode(t, 1).values, distinct((3, 5)))


# ---- cross --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_cross(dtype):
    a, b = make((4, 3), dtype, 1), make((4, 3), dtype, 2)
    assert_same(torch.linalg.cross, a, b)
    assert_same(lambda x, y: torch.linalg.cross(x, y, dim=0), make((3, 2), dtype, 1), make((3, 2), dtype, 2))
    assert_same(torch.linalg.cross, make((2, 1, 3), dtype, 1), make((1, 5, 3), dtype, 2))
    assert_same(lambda x, y: torch.cross(x, y, dim=1), make((2, 3), dtype, 1), noncontig((2, 3), dtype, 2))
    assert_same(lambda x, y: torch.linalg.cross(x, y, out=torch.empty(0, dtype=dtype, device=x.device)), a, b)


def test_cross_errors_grad():
    a = make((2, 3))
    assert_same(torch.linalg.cross, a, make((2, 3), torch.float64))
    assert_same(torch.linalg.cross, a, make((2, 4)))
    assert_same(torch.linalg.cross, a, make((3,)))
    assert_same(torch.linalg.cross, make((3,), torch.bool), make((3,), torch.bool))
    b = make((2, 3), seed=3)
    assert_grad(lambda t: torch.linalg.cross(t, b.to(t.device)), a)


@pytest.mark.parametrize("fn", [
    lambda d: torch.topk(torch.tensor(3.5, device=d), 0),
    lambda d: torch.topk(torch.tensor(3.5, device=d), 1),
    lambda d: torch.bincount(torch.tensor([], dtype=torch.long, device=d), weights=torch.tensor([], device=d)),
    lambda d: torch.bincount(torch.tensor([], dtype=torch.long, device=d),
                             weights=torch.tensor([], dtype=torch.float64, device=d), minlength=3),
], ids=["topk_0dim_k0", "topk_0dim_k1", "bincount_empty_weights", "bincount_empty_minlength"])
def test_edge_results_as_on_cpu(fn):
    """A 0-dim topk copies its input whatever k is; an empty bincount counts
    in int64 even with weights, as CPU does."""
    want, got = fn("cpu"), fn("tpu")
    for w, g in zip(want if isinstance(want, tuple) else [want], got if isinstance(got, tuple) else [got]):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g.cpu(), w)


def test_searchsorted_of_complex_is_refused_as_on_cpu():
    for d in ("cpu", "tpu"):
        with pytest.raises(NotImplementedError, match="searchsorted_out_cpu.*ComplexFloat"):
            torch.searchsorted(torch.tensor([1 + 1j], device=d), torch.tensor([1 + 1j], device=d))


@pytest.mark.parametrize("n", [65, 100, 1000, 4097])
def test_long_scans_by_blocks_match_cpu(n):
    # Beyond 64 elements a scan goes by blocks of 32 (their totals scanned
    # recursively): every op built on it, along any dimension.
    g = torch.Generator().manual_seed(n)
    x = (torch.randn(3, n, 2, generator=g) * 3).round()
    x[0, n // 2, 0] = float("nan")
    cases = {
        "cumsum": lambda t: t.cumsum(1),
        "cumsum_int": lambda t: t.nan_to_num().long().cumsum(1),
        "cumprod": lambda t: (t.nan_to_num() / 50).exp().cumprod(1),
        "cummax": lambda t: t.cummax(1),
        "cummin": lambda t: t.cummin(1),
        "logcumsumexp": lambda t: t.logcumsumexp(1),
        "nonzero": lambda t: (t.nan_to_num() > 2).nonzero(),
        "masked_select": lambda t: t.masked_select(t.nan_to_num() > 2),
    }
    for name, f in cases.items():
        want, got = f(x), f(x.to("tpu"))
        for w, o in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
            torch.testing.assert_close(o.cpu(), w, rtol=1e-5, atol=1e-4, equal_nan=True, msg=name)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_floats_orders_nan_infinities_and_zeros_as_cpu(largest):
    # Floats take chlo.top_k over an f32 key (no full sort); NaN counts as
    # the largest value, both zeros tie.
    special = torch.tensor([1.0, math.nan, math.inf, -math.inf, 0.0, -0.0, 3.0, math.nan, -2.0])
    for x in (special, special.bfloat16(), torch.randn(4, 9, 6), torch.randn(7, 130).half()):
        for dim in range(x.dim()):
            k = min(5, x.size(dim))
            want = torch.topk(x, k, dim=dim, largest=largest)
            got = torch.topk(x.to("tpu"), k, dim=dim, largest=largest)
            torch.testing.assert_close(got.values.cpu(), want.values, equal_nan=True)
            torch.testing.assert_close(x.gather(dim, got.indices.cpu()), want.values, equal_nan=True)
        flat = x.flatten()
        flat = flat[~flat.isnan()]
        got = torch.kthvalue(flat.to("tpu"), 3)  # which of tied zeros is unspecified, as on CPU
        assert got.values.item() == torch.kthvalue(flat, 3).values.item() == flat[got.indices.item()].item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_topk_and_kthvalue_order_infinities_extremes_and_nan_as_cpu(dtype):
    """+-inf, the largest finite values and NaN (counted largest) keep
    PyTorch's order: a real +inf is above the largest float32, -inf below
    its negative, and NaN first for the largest, last for the smallest."""
    big = torch.finfo(dtype).max
    inf, nan = float("inf"), float("nan")
    special = torch.tensor([big, -big, inf, -inf, nan, 0.0, -0.0, 1.0, -1.0, 3e-5], dtype=dtype)
    g = torch.Generator().manual_seed(0)
    x = special[torch.randint(0, len(special), (200, 9), generator=g)]
    x[:100, :5] = torch.tensor([inf, -inf, big, -big, nan], dtype=dtype)  # each of them, in every row
    x[100:150] = x[100:150].nan_to_num(0.0)  # rows without NaN take the one-selection path
    xt = x.to("tpu")
    for rows in (slice(0, 200), slice(100, 150)):
        for k in (1, 4, 9):
            for largest in (True, False):
                values, indices = torch.topk(xt[rows], k, largest=largest)
                expected = torch.topk(x[rows], k, largest=largest).values
                torch.testing.assert_close(values.cpu(), expected, equal_nan=True, atol=0, rtol=0)
                # Ties may take any of the equal elements (CPU's order among them is unspecified).
                torch.testing.assert_close(x[rows].gather(1, indices.cpu()), expected, equal_nan=True, atol=0, rtol=0)
                assert all(len(set(r)) == k for r in indices.cpu().tolist())
    for k in (1, 5, 9):
        value, index = torch.kthvalue(xt, k)
        torch.testing.assert_close(value.cpu(), torch.kthvalue(x, k).values, equal_nan=True, atol=0, rtol=0)
        torch.testing.assert_close(x.gather(1, index.cpu()[:, None])[:, 0], value.cpu(), equal_nan=True, atol=0, rtol=0)
