"""Indexing ops on tpu against CPU: gather / scatter family, index_select,
index_add / index_copy / index_fill, take / put_, advanced indexing and
index_put_, masked_fill / masked_scatter / masked_select, nonzero, unique,
bincount, with their backward; out-of-range indices raise CPU's exception
type at the next sync."""

import pytest
import torch
import torch.nn.functional as F

from tpu_testing import TPU, assert_grad, assert_same, to_tpu


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 3).to(dtype)
    return torch.randint(-9, 10, shape, generator=g).to(dtype)


def idx(values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype)


def raises_like_cpu(fn, *args):
    """fn(*args) raises on CPU; on tpu the same exception type comes at the
    latest when the result is read back."""
    with pytest.raises(Exception) as cpu:
        fn(*args)
    with pytest.raises(type(cpu.value)):
        r = fn(*to_tpu(args))
        (r if isinstance(r, torch.Tensor) else r[0]).cpu()
    torch.tpu.synchronize()  # nothing left pending


# ---- gather / scatter -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.bool])
def test_gather(dtype):
    x = make((4, 5), dtype)
    i = idx([[0, 3, 1, 1], [2, 0, 0, 3], [3, 3, 3, 3]])
    assert_same(lambda x, i: x.gather(1, i), x, i)
    assert_same(lambda x, i: torch.gather(x, 0, i[:, :3]), x, i)
    # non-contiguous self and index, int32 index, negative dim
    assert_same(lambda x, i: x.t().gather(-1, i.t()[::2]), x, i.to(torch.int32))


def test_gather_edge_cases():
    x = make((3, 4), torch.float32)
    assert_same(lambda x, i: x.gather(1, i), x, torch.zeros(3, 0, dtype=torch.int64))
    assert_same(lambda x, i: x.gather(0, i), torch.tensor(2.5), torch.tensor(0))
    assert_same(lambda x, i: torch.gather(x, 1, i, out=torch.empty(0, device=x.device)), x, idx([[1], [2], [0]]))
    assert_same(lambda x, i: x.gather(1, i), x, idx([[1]]).to(torch.int16))  # dtype error
    assert_same(lambda x, i: x.gather(1, i), x, idx([[1, 2, 3, 0, 1]] * 4))  # shape error


def test_gather_grad():
    i = idx([[0, 3, 1, 1], [2, 0, 0, 3], [3, 3, 3, 3]])
    assert_grad(lambda x: x.gather(1, i.to(x.device)), make((3, 5), torch.float32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_scatter(dtype):
    x = make((4, 5), dtype, 1)
    src = make((4, 5), dtype, 2)
    i = idx([[0, 3, 1], [2, 4, 0], [1, 1, 2]])  # no duplicate per row
    assert_same(lambda x, i, s: x.scatter(1, i, s), x, i, src)
    assert_same(lambda x, i, s: x.clone().scatter_(1, i, s), x, i, src)
    assert_same(lambda x, i: x.scatter(1, i, 1), x, i)
    assert_same(lambda x, i, s: torch.scatter(x, 1, i, s, out=torch.empty_like(x)), x, i, src)
    if dtype != torch.bool:
        assert_same(lambda x, i, s: x.scatter_add(1, i, s), x, idx([[0, 0, 1], [4, 4, 4], [1, 1, 2]]), src)
        assert_same(lambda x, i, s: x.clone().scatter_add_(0, i, s), x, idx([[0, 0, 1], [3, 3, 3], [0, 1, 2]]), src)


def test_scatter_reduce_legacy():
    x = make((3, 4), torch.float32)
    s = make((3, 4), torch.float32, 3)
    i = idx([[0, 0, 1], [2, 2, 2]])
    assert_same(lambda x, i, s: x.scatter(0, i, s, reduce="add"), x, i, s)
    assert_same(lambda x, i, s: x.scatter(0, i, s, reduce="multiply"), x, i, s)
    assert_same(lambda x, i: x.scatter(0, i, 2.0, reduce="multiply"), x, i)
    assert_same(lambda x, i, s: x.scatter(0, i, s, reduce="max"), x, i, s)  # error like CPU


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin", "max", "min"])  # max / min: aliases
def test_scatter_reduce(reduce):
    i = idx([[0, 0, 1, 3], [2, 2, 2, 0], [4, 1, 4, 1]])
    x = make((5, 4), torch.float32, 4)
    s = make((3, 4), torch.float32, 5)
    for include_self in (True, False):
        assert_same(lambda x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self), x, i, s)
    assert_same(lambda x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=False), x.long(), i, s.long())
    assert_same(lambda x, i, s: x.clone().scatter_reduce_(0, i, s, reduce), x, i, s)
    if reduce in ("sum", "mean", "amax"):
        assert_grad(lambda s: x.to(s.device).scatter_reduce(0, i.to(s.device), s, reduce, include_self=False), s)


def test_scatter_grad():
    i = idx([[0, 3, 1], [2, 4, 0]])
    src = make((2, 3), torch.float32, 2)
    assert_grad(lambda x: x.scatter(1, i.to(x.device), src.to(x.device)), make((2, 5), torch.float32))
    assert_grad(lambda s: torch.zeros(2, 5, device=s.device).scatter(1, i.to(s.device), s), src)
    assert_grad(lambda s: torch.ones(2, 5, device=s.device).scatter_add(1, i.to(s.device), s), src)


# ---- index_select / index_add / index_copy / index_fill -------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool])
def test_index_select(dtype):
    x = make((4, 3, 2), dtype)
    for itype in (torch.int64, torch.int32):
        i = idx([3, 0, 3, 1], itype)
        assert_same(lambda x, i: x.index_select(0, i), x, i)
        assert_same(lambda x, i: x.index_select(-2, i), x, idx([2, 0], itype))
    assert_same(lambda x, i: x.transpose(0, 2).index_select(2, i[::2]), x, idx([1, 2, 0, 3]))
    assert_same(lambda x, i: x.index_select(1, i), x, torch.tensor(2))
    assert_same(lambda x, i: x.index_select(1, i), x, idx([], torch.int64))


def test_index_select_edge_and_grad():
    assert_same(lambda x, i: x.index_select(0, i), torch.tensor(3.0), idx([0]))
    assert_same(lambda x, i: torch.index_select(x, 0, i, out=torch.empty(0, device=x.device)),
                make((3, 2), torch.float32), idx([2, 2]))
    assert_same(lambda x, i: x.index_select(0, i), make((3, 2), torch.float32), idx([[0]]))  # not a vector
    assert_same(lambda x, i: x.index_select(0, i), make((3, 2), torch.float32), idx([0.5], torch.float32))
    i = idx([2, 0, 2, 2])
    assert_grad(lambda x: x.index_select(0, i.to(x.device)), make((3, 4), torch.float32))
    assert_grad(lambda x: x.index_select(1, i.to(x.device)), make((2, 3), torch.bfloat16))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_index_add(dtype):
    x = make((4, 3), dtype)
    s = make((5, 3), dtype, 1)
    i = idx([1, 3, 1, 0, 1])
    assert_same(lambda x, i, s: x.index_add(0, i, s), x, i, s)
    assert_same(lambda x, i, s: x.index_add(0, i, s, alpha=2), x, i.to(torch.int32), s)
    assert_same(lambda x, i, s: x.clone().index_add_(1, i, s), x.t(), i[:3], s[:3].t().contiguous())
    assert_same(lambda x, i, s: torch.index_add(x, 0, i, s, out=torch.empty_like(x)), x, i, s)
    assert_same(lambda x, i, s: x.index_add(0, i, s), x, i, s[:4])  # count mismatch error


def test_index_add_grad():
    i = idx([1, 3, 1])
    assert_grad(lambda s: torch.ones(4, 2, device=s.device).index_add(0, i.to(s.device), s, alpha=3),
                make((3, 2), torch.float32))
    assert_grad(lambda x: x.index_add(0, i.to(x.device), torch.ones(3, 2, device=x.device)),
                make((4, 2), torch.float32))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.bool])
def test_index_copy_and_fill(dtype):
    x = make((4, 3), dtype)
    s = make((2, 3), dtype, 1)
    i = idx([3, 1])
    assert_same(lambda x, i, s: x.index_copy(0, i, s), x, i, s)
    assert_same(lambda x, i, s: x.clone().index_copy_(1, i, s), x, idx([2, 0]), make((2, 4), dtype, 3).t())
    assert_same(lambda x, i: x.index_copy(0, i, x[:2]), x, i.to(torch.int32))  # needs long
    assert_same(lambda x, i: x.index_fill(1, i, 1), x, idx([0, -1]))
    assert_same(lambda x, i: x.clone().index_fill_(0, i, True), x, idx([2]))
    assert_same(lambda x, i, v: x.index_fill(0, i, v), x, idx([0, 0, 3]), make((), dtype, 2))
    assert_same(lambda x, i: x.index_fill(0, i, 1), x, idx([0], torch.int32))  # needs long


def test_index_copy_fill_grad():
    i = idx([2, 0])
    assert_grad(lambda x: x.index_fill(0, i.to(x.device), 0.5), make((3, 2), torch.float32))
    assert_grad(lambda s: torch.zeros(3, 2, device=s.device).index_copy(0, i.to(s.device), s),
                make((2, 2), torch.float32))


def test_take_put():
    for dtype in (torch.float32, torch.bool):
        x = make((3, 4), dtype)
        assert_same(lambda x, i: x.take(i), x, idx([[0, 11], [-1, 5]]))
        assert_same(lambda x, i: x.t().take(i), x, idx([0, 11, -12, 5]))
        s = make((3,), dtype, 1)
        assert_same(lambda x, i, s: x.clone().put_(i, s), x, idx([1, -2, 7]), s)
        assert_same(lambda x, i, s: x.put(i, s), x, idx([1, -2, 7]), s)
    x = make((3, 4), torch.float32)
    assert_same(lambda x, i, s: x.put(i, s, accumulate=True), x, idx([1, 1, 1, 0]), make((4,), torch.float32, 2))
    assert_same(lambda x, i: x.take(i), x, idx([1], torch.int32))
    assert_same(lambda x, i: torch.take(x, i, out=torch.empty(0, device=x.device)), x, idx([3, 2]))
    assert_grad(lambda x: x.take(idx([1, 1, -1]).to(x.device)), x)


# ---- advanced indexing --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool])
def test_index_tensor(dtype):
    x = make((4, 5, 6), dtype)
    a = idx([0, 3, -1, 2])
    b = idx([[4], [0], [-5]])
    assert_same(lambda x, a: x[a], x, a)
    assert_same(lambda x, a: x[:, a], x, a)  # adjacent: result dims stay in place
    assert_same(lambda x, a: x[:, :, a.to(torch.int32)], x, a)
    assert_same(lambda x, a, b: x[a, :, b], x, a, b)  # non-adjacent: broadcast dims first
    assert_same(lambda x, a, b: x[:, b, a], x, a, b)  # adjacent pair, broadcast [3, 4]
    assert_same(lambda x, a, b: x[a, b, 1], x, a, b)
    assert_same(lambda x, a: x.transpose(0, 2)[a[::2]], x, a)  # non-contiguous self and index
    assert_same(lambda x, a: x[a[:0]], x, a)
    assert_same(lambda x, a: x[a, None, 1:3], x, a)
    assert_same(lambda x: x[torch.tensor(2, device=x.device)], x)


def test_index_tensor_masks_and_errors():
    x = make((4, 5), torch.float32)
    m = make((4, 5), torch.bool, 3)
    assert_same(lambda x, m: x[m], x, m)
    assert_same(lambda x, m: x[m[:, 0]], x, m)
    assert_same(lambda x, m: x[:, m[0]], x, m)
    assert_same(lambda x, m, a: x[m[:, 1], a[:1]], x, m, idx([1]))
    assert_same(lambda x, m: x[m & False], x, m)
    assert_same(lambda x, m: x[m[:3]], x, m)  # mask shape mismatch
    assert_same(lambda x, a, b: x[a, b], x, idx([0, 1]), idx([0, 1, 2]))  # not broadcastable
    assert_same(lambda x, a: x[a, a, a], x, idx([0]))  # too many indices
    assert_same(lambda x, a: x[a], x, idx([0.0], torch.float32))
    assert_same(lambda x, a: torch.ops.aten.index.Tensor_out(x, [None, a], out=torch.empty(0, device=x.device)),
                x, idx([4, 0]))
    assert_same(lambda x: x[torch.zeros(0, 5, dtype=torch.bool, device=x.device)], x)
    assert_same(lambda x: x[:, torch.tensor([1, 2], device=x.device)], torch.zeros(0, 5))


def test_index_grad():
    a = idx([0, 3, 0, 0])
    assert_grad(lambda x: x[a.to(x.device)], make((4, 3), torch.float32))  # duplicates accumulate
    assert_grad(lambda x: x[:, a.to(x.device)[:2], 1:], make((2, 4, 3), torch.float32))
    m = make((4, 3), torch.bool, 7)
    assert_grad(lambda x: x[m.to(x.device)], make((4, 3), torch.float32))
    assert_grad(lambda x: x[a.to(x.device)], make((4, 3), torch.bfloat16))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_index_put(dtype):
    x = make((4, 5), dtype)
    v = make((3,), dtype, 1)

    def put(x, i, v, accumulate=False):
        y = x.clone()
        y.index_put_((i,), v, accumulate=accumulate)
        return y

    assert_same(lambda x, i, v: put(x, i, v.reshape(3, 1)), x, idx([3, 0, -1]), v)
    assert_same(lambda x, i, v: put(x.t(), i, v[:1]), x, idx([4, 0, 2]), v)  # non-contiguous self
    assert_same(lambda x, i, v: x.index_put((i, i), v), x, idx([3, 0, 1]), v)
    if dtype != torch.bool:
        assert_same(lambda x, i, v: put(x, i, v.reshape(3, 1), True), x, idx([1, 1, 1]), v)
        assert_same(lambda x, i, v: x.index_put((i, i), v, accumulate=True), x, idx([1, 1, 2]), v)

    def setitem(x, m, v):
        y = x.clone()
        y[m] = v
        return y

    m = make((4, 5), torch.bool, 2)
    assert_same(lambda x, m, v: setitem(x, m, v[0]), x, m, v)
    assert_same(lambda x, a, v: setitem(x, (slice(None), a), v.reshape(3, 1)[:1]), x, idx([0, 4]), v)
    assert_same(lambda x, a, v: setitem(x, (a, slice(1, 4)), v), x, idx([2, 0]), v)


def test_index_put_errors_and_grad():
    x = make((4, 5), torch.float32)
    assert_same(lambda x, i, v: x.index_put((i,), v), x, idx([1, 2]), make((3,), torch.float32))  # shape
    assert_same(lambda x, i, v: x.index_put((i,), v), x, idx([1, 2]), make((5,), torch.float64))  # dtype
    assert_same(lambda x, i, v: x.index_put((i,), v), x, idx([], torch.int64), make((5,), torch.float32))
    i = idx([1, 1, 3])
    assert_grad(lambda v: torch.zeros(4, 5, device=v.device).index_put((i.to(v.device),), v, accumulate=True),
                make((3, 5), torch.float32))
    assert_grad(lambda x: x.index_put((i.to(x.device),), torch.ones(5, device=x.device)), x)


# ---- masked ops --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool])
def test_masked_fill(dtype):
    x = make((3, 4), dtype)
    m = make((3, 4), torch.bool, 1)
    assert_same(lambda x, m: x.masked_fill(m, 1), x, m)
    assert_same(lambda x, m: x.clone().masked_fill_(m[0], 0), x, m)  # broadcast mask
    assert_same(lambda x, m: x.t().masked_fill(m.t(), True), x, m)
    assert_same(lambda x, m, v: x.masked_fill(m, v), x, m, make((), dtype, 2))
    assert_same(lambda x, m: x[0].masked_fill(m, 2), x, m)  # result broadcasts to [3, 4]
    assert_same(lambda x, m: x[0].clone().masked_fill_(m, 2), x, m)  # in-place can't broadcast self
    assert_same(lambda x, m: x.masked_fill(m.int(), 2), x, m)  # not a bool mask
    assert_same(lambda x, m: x.masked_fill(m, torch.ones(2, device=x.device)), x, m)


def test_masked_fill_grad():
    m = make((3, 4), torch.bool, 1)
    assert_grad(lambda x: x.masked_fill(m.to(x.device), 0.0), make((3, 4), torch.float32))
    assert_grad(lambda v: make((3, 4), torch.float32).to(v.device).masked_fill(m.to(v.device), v), torch.tensor(1.5))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int64])
def test_masked_scatter_select(dtype):
    x = make((3, 4), dtype)
    m = make((3, 4), torch.bool, 1)
    s = make((12,), dtype, 2)
    assert_same(lambda x, m, s: x.masked_scatter(m, s), x, m, s)
    assert_same(lambda x, m, s: x.clone().masked_scatter_(m[1], s.reshape(3, 4)), x, m, s)
    assert_same(lambda x, m: x.masked_select(m), x, m)
    assert_same(lambda x, m: x.t().masked_select(m[0]), x.t().contiguous(), m)  # broadcast
    assert_same(lambda x, m: torch.masked_select(x, m, out=torch.empty(0, dtype=x.dtype, device=x.device)), x, m)
    assert_same(lambda x, m: x.masked_select(m), x, torch.zeros(3, 4, dtype=torch.bool))


def test_masked_grad():
    m = make((3, 4), torch.bool, 1)
    assert_grad(lambda x: x.masked_select(m.to(x.device)), make((3, 4), torch.float32))
    assert_grad(lambda s: torch.zeros(3, 4, device=s.device).masked_scatter(m.to(s.device), s),
                make((12,), torch.float32))
    assert_grad(lambda x: x.masked_scatter(m.to(x.device), torch.ones(12, device=x.device)),
                make((3, 4), torch.float32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool])
def test_nonzero(dtype):
    x = make((3, 4, 2), dtype)
    x.view(-1)[::3] = 0
    assert_same(lambda x: x.nonzero(), x)
    assert_same(lambda x: torch.nonzero(x.transpose(0, 2), as_tuple=True), x)
    assert_same(lambda x: torch.argwhere(x), x)
    assert_same(lambda x: torch.where(x), x)
    assert_same(lambda x: torch.nonzero(x, out=torch.empty(0, dtype=torch.int64, device=x.device)), x)
    assert_same(lambda x: x[x != 0] if x.dtype != torch.bool else x[x], x)


def test_nonzero_edge_cases():
    assert_same(lambda x: x.nonzero(), torch.tensor(3.0))
    assert_same(lambda x: x.nonzero(), torch.tensor(0))
    assert_same(lambda x: x.nonzero(), torch.zeros(0, 3))
    assert_same(lambda x: x.nonzero(), torch.zeros(2, 3))
    assert_same(lambda x: torch.where(x), torch.tensor(True))
    x = torch.tensor([0.0, 1.0, 0.0, 2.0, 3.0])
    assert_same(lambda x: torch.nonzero_static(x, size=2), x)
    assert_same(lambda x: torch.nonzero_static(x, size=5, fill_value=-7), x)


@pytest.mark.parametrize("consecutive", [False, True])
def test_unique_along_a_dim(consecutive):
    def fn(d):
        if consecutive:
            return lambda t: torch.unique_consecutive(t, dim=d, return_inverse=True, return_counts=True)
        return lambda t: torch.unique(t, dim=d, return_inverse=True, return_counts=True)

    gen = torch.Generator().manual_seed(0)
    cases = [torch.tensor([[1, 2], [1, 2], [0, 5], [1, 2]]), torch.randint(0, 3, (7, 3, 2), generator=gen),
             torch.randint(0, 2, (5, 4), generator=gen).float(), torch.tensor([[1.0, float("nan")]] * 2),
             torch.zeros(0, 3), torch.tensor([3, 1, 3, 3])]
    for x in cases:
        for d in range(x.dim()):
            assert_same(fn(d), x)  # includes CPU's error for zero-size dims not selected
    assert_same(fn(0), torch.tensor(3.0))  # IndexError: no dimensions


def test_unique_bincount():
    x = torch.tensor([[3, 1, 3], [2, 1, 7]])
    for dtype in (torch.int64, torch.bfloat16, torch.bool):
        assert_same(lambda x: torch.unique(x, return_inverse=True, return_counts=True), x.to(dtype))
        assert_same(lambda x: torch.unique(x), x.to(dtype).t())
        assert_same(lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True),
                    x.to(dtype).flatten())
    assert_same(lambda x: torch.unique(x, sorted=False, return_inverse=True), x)
    assert_same(lambda x: torch.unique(x, return_counts=True), torch.zeros(0))
    assert_same(lambda x: torch.unique(x, return_inverse=True), torch.tensor(5))
    assert_same(lambda x: torch.unique_consecutive(x), torch.tensor([1, 1, 2, 2, 1]))
    v = torch.tensor([1, 4, 1, 0, 4, 4])
    assert_same(lambda v: torch.bincount(v), v)
    assert_same(lambda v: torch.bincount(v, minlength=9), v)
    assert_same(lambda v, w: torch.bincount(v, w), v, torch.linspace(0, 1, 6))
    assert_same(lambda v, w: torch.bincount(v, w), v.to(torch.int32), torch.arange(6))
    assert_same(lambda v: torch.bincount(v, minlength=3), v[:0])
    assert_same(lambda v: torch.bincount(v), v - 2)  # negative values
    assert_same(lambda v: torch.bincount(v), v.float())
    # The largest int64 overflows the bin count; 2**62 bins overflow the storage size.
    assert_same(lambda v: torch.bincount(v), torch.tensor([1, 2**63 - 1]))
    assert_same(lambda v: torch.bincount(v, minlength=4), torch.tensor([1, 2**63 - 1]))
    assert_same(lambda v: torch.bincount(v), torch.tensor([2**62]))


def test_searchsorted_bucketize():
    seq = torch.tensor([1.0, 2.0, 2.0, 4.0, 7.0])
    v = torch.tensor([[0.0, 2.0, 3.0], [7.0, 8.0, 4.0]])
    for right in (False, True):
        assert_same(lambda s, v: torch.searchsorted(s, v, right=right), seq, v)
        assert_same(lambda v, s: torch.bucketize(v, s, right=right, out_int32=True), v, seq)
    assert_same(lambda s: torch.searchsorted(s, 2.0, side="right"), seq)
    assert_same(lambda v, s: torch.bucketize(v, s), torch.tensor(3), seq)  # int values, float boundaries
    assert_same(lambda v, s: torch.bucketize(v, s), v.t(), seq.to(torch.int64))
    seq2 = torch.sort(make((2, 3, 6), torch.float32), dim=-1).values
    assert_same(lambda s, v: torch.searchsorted(s, v), seq2, make((2, 3, 4), torch.float32, 1))
    unsorted = make((5,), torch.float32, 2)
    assert_same(lambda s, v, o: torch.searchsorted(s, v, sorter=o), unsorted, v, unsorted.argsort())
    assert_same(lambda s, v: torch.searchsorted(s, v), seq.reshape(1, 5), v)  # shape error
    assert_same(lambda s, v: torch.searchsorted(s, v, out=torch.empty(0, dtype=torch.int64, device=s.device)), seq, v)
    assert_same(lambda s, v: torch.searchsorted(s, v), seq[:0], v)
    raises_like_cpu(lambda s, v, o: torch.searchsorted(s, v, sorter=o), seq, v, idx([0, 1, 2, 3, 5]))


# ---- out-of-range indices raise at the next sync ------------------------------------------------


def test_bad_indices_raise_like_cpu():
    x = make((3, 4), torch.float32)
    raises_like_cpu(lambda x, i: x.gather(0, i), x, idx([[3]]))
    raises_like_cpu(lambda x, i: x.gather(1, i), x, idx([[-1]]))
    raises_like_cpu(lambda x, i: x.scatter(0, i, 1.0), x, idx([[5]]))
    raises_like_cpu(lambda x, i: x.scatter_add(0, i, x), x, idx([[-1]]))
    raises_like_cpu(lambda x, i: x.scatter_reduce(0, i, x, "amax"), x, idx([[3]]))
    raises_like_cpu(lambda x, i: x.index_select(0, i), x, idx([3]))
    raises_like_cpu(lambda x, i: x.index_select(0, i), x, idx([-1], torch.int32))
    raises_like_cpu(lambda x, i: x.index_add(0, i, x[:1]), x, idx([3]))
    raises_like_cpu(lambda x, i: x.index_copy(0, i, x[:1]), x, idx([-1]))
    raises_like_cpu(lambda x, i: x.index_fill(1, i, 0), x, idx([4]))
    raises_like_cpu(lambda x, i: x.take(i), x, idx([12]))
    raises_like_cpu(lambda x, i: x.clone().put_(i, x[0, :1]), x, idx([-13]))
    raises_like_cpu(lambda x, i: x[i], x, idx([3]))
    raises_like_cpu(lambda x, i: x[:, i], x, idx([-5]))
    raises_like_cpu(lambda x, i: x.index_put((i,), torch.ones((), device=x.device)), x, idx([4]))
    raises_like_cpu(lambda x, m, s: x.masked_scatter(m, s), x, torch.ones(3, 4, dtype=torch.bool), torch.ones(5))
    raises_like_cpu(lambda w, i: F.embedding(i, w), x, idx([0, 3]))
    raises_like_cpu(lambda w, i: F.embedding(i, w), x, idx([-1]))
    raises_like_cpu(lambda x, t: F.nll_loss(x, t), x, idx([0, 4, 1]))
    raises_like_cpu(lambda x, t: F.cross_entropy(x, t), x, idx([0, -1, 1]))
    raises_like_cpu(lambda x, t: F.nll_loss(x, t), torch.zeros(1, 3, 2, 2), idx([[[0, 3], [0, 0]]]))
    # ignore_index is not a bad target
    assert_same(lambda x, t: F.nll_loss(x, t), x, idx([0, -100, 1]))
    assert_same(lambda x, t: F.nll_loss(x, t, ignore_index=7), x, idx([0, 7, 1]))


def test_an_index_on_another_tpu_device_is_refused_as_cuda_refuses_it():
    x = torch.arange(4.0, device="tpu:0")
    other = torch.tensor([0, 2], device="tpu:1")
    same_device_or_cpu = "indices should be either on cpu or on the same device as the indexed tensor \\(tpu:0\\)"
    for indexing in (lambda: x[other], lambda: x.__setitem__(other, 9.0),
                     lambda: x.index_put_((other,), torch.tensor(7.0, device="tpu:0"), accumulate=True),
                     lambda: x[torch.tensor([True, False, True, False], device="tpu:1")]):
        with pytest.raises(IndexError, match=same_device_or_cpu):
            indexing()
    for name, op in (("index_select", lambda: x.index_select(0, other)), ("take", lambda: x.take(other)),
                     ("index_fill_", lambda: x.index_fill_(0, other, 1.0)),
                     ("index_add_", lambda: x.index_add_(0, other, torch.ones(2, device="tpu:0"))),
                     ("index_copy_", lambda: x.index_copy_(0, other, torch.ones(2, device="tpu:0"))),
                     ("put_", lambda: x.put_(other, torch.ones(2, device="tpu:0")))):
        with pytest.raises(RuntimeError, match=f"tpu:0 and tpu:1! .*method {name}\\)"):
            op()
    assert torch.equal(x.cpu(), torch.arange(4.0))  # nothing was written
    # CPU indices are accepted, as CUDA accepts them for indexing.
    cpu_index = torch.tensor([0, 2])
    assert torch.equal(x[cpu_index].cpu(), torch.tensor([0.0, 2.0]))
    assert torch.equal(x.index_select(0, cpu_index).cpu(), torch.tensor([0.0, 2.0]))


def test_bad_index_raises_at_a_later_sync():
    x = torch.arange(6.0, device=TPU).reshape(2, 3)
    y = x.gather(0, torch.tensor([[2]], device=TPU))
    z = y + 1  # no sync yet
    with pytest.raises(RuntimeError, match="out of bounds"):
        z.cpu()
    assert x.gather(0, torch.tensor([[1]], device=TPU)).item() == 3.0  # later calls are fine
    x[torch.tensor([5], device=TPU)]
    with pytest.raises(IndexError):
        torch.tpu.synchronize()


def test_gather_with_an_empty_index_of_another_rank():
    # CPU checks no shapes for an empty index: the result has its shape.
    assert_same(lambda x, i: torch.gather(x, 0, i), torch.randn(5), torch.zeros(2, 0, dtype=torch.long))


def test_indices_that_select_nothing_are_not_checked_as_on_cpu():
    # CPU checks the indices of the elements it reads or writes; where there
    # are none, an index beyond the dimension is no error.
    empty = torch.zeros(0, 3)
    assert_same(lambda x: x[:, torch.tensor([3], device=x.device)], empty)
    assert_same(lambda x: x[:, torch.tensor([-4], device=x.device)], empty)

    def put(x):
        x[:, torch.tensor([3], device=x.device)] = 1.0
        return x

    assert_same(put, empty)
    assert_same(lambda x: x[torch.tensor([False, False], device=x.device), torch.tensor([5], device=x.device)],
                torch.zeros(2, 3))
    index = lambda x: torch.tensor([3], device=x.device)  # noqa: E731
    assert_same(lambda x: x.index_add(1, index(x), torch.zeros(0, 1, device=x.device)), empty)
    assert_same(lambda x: x.index_copy(1, index(x), torch.zeros(0, 1, device=x.device)), empty)
    assert_same(lambda x: x.index_fill(1, index(x), 1.0), empty)
    with pytest.raises(IndexError):  # elements read: checked
        torch.zeros(2, 3, device=TPU)[:, index(torch.zeros(0, device=TPU))].cpu()


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("bad", [4, -1])
def test_index_reduce_out_of_range_is_an_index_error(bad):
    with pytest.raises(IndexError, match="index out of range in self"):
        torch.zeros(3, device=TPU).index_reduce(0, torch.tensor([bad], device=TPU), torch.ones(1, device=TPU),
                                                "prod").cpu()


def test_mask_assignment_of_a_one_element_cpu_value_of_another_dtype():
    # PyTorch runs it as masked_fill_(mask, value.item()): the value's dtype
    # need not match (index_put_ otherwise demands it).
    def assign(t, value, mask_of=lambda t: t > 0):
        t = t.clone()
        t[mask_of(t)] = value
        return t

    assert_same(lambda t: assign(t, torch.tensor(float("-inf"))), torch.randn(2, 3).bfloat16())
    assert_same(lambda t: assign(t, torch.tensor(1)), torch.randn(5))
    assert_same(lambda t: assign(t, torch.tensor([2.5], dtype=torch.float64), lambda t: t[:, 0] > 0), torch.randn(4, 3))
    assert_same(lambda t: assign(t, torch.tensor(300), lambda t: t == 0), torch.zeros(3, dtype=torch.int8))  # overflow
    assert_same(lambda t: assign(t, torch.tensor(1.0, dtype=torch.float64), lambda t: t[:1, 0] > 0),
                torch.randn(2, 3))  # mask shape error
