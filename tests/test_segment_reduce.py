"""torch.segment_reduce and its gradient against CPU: every reduction, with
and without `initial`, segments by lengths and by offsets, several axes,
empty segments, NaN, ties, zeros (prod), half-precision types and bad input."""

from __future__ import annotations

import pytest
import torch

from tpu_testing import TPU, assert_grads, assert_same

REDUCTIONS = ["sum", "mean", "max", "min", "prod"]


def segment(reduce, initial=None, axis=0, by="lengths", unsafe=False):
    def fn(data, bounds):
        return torch.segment_reduce(data, reduce, axis=axis, unsafe=unsafe, initial=initial, **{by: bounds})

    return fn


def offsets_of(lengths):
    return torch.cat([torch.zeros(lengths.shape[:-1] + (1,), dtype=lengths.dtype), lengths.cumsum(-1)], -1)


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("initial", [None, 2.5])
def test_one_dimensional_with_empty_segments_and_nan(reduce, initial):
    data = torch.tensor([1.0, -2.0, 3.0, 4.0, float("nan"), 6.0, 0.5])
    lengths = torch.tensor([2, 0, 3, 1, 1])
    assert_same(segment(reduce, initial), data, lengths)
    assert_same(segment(reduce, initial, by="offsets"), data, offsets_of(lengths))


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_axes_of_a_three_dimensional_tensor(reduce, axis):
    torch.manual_seed(axis)
    data = torch.randn(3, 7, 4)
    sizes = data.shape[axis]
    row = torch.tensor([2, 0, sizes - 2]) if sizes >= 2 else torch.tensor([sizes])
    lengths = row.expand(data.shape[:axis] + (3,)).contiguous()
    assert_same(segment(reduce, axis=axis), data, lengths)
    assert_same(segment(reduce, axis=axis, by="offsets"), data, offsets_of(lengths))
    # a transposed (non-contiguous) input and int32 lengths
    assert_same(segment(reduce, axis=axis), data.transpose(0, 2).contiguous().transpose(0, 2), lengths.int())


def test_lengths_that_differ_per_outer_row():
    data = torch.randn(2, 6, 3)
    lengths = torch.tensor([[1, 5], [4, 2]])
    for reduce in REDUCTIONS:
        assert_same(segment(reduce, initial=1.0, axis=1), data, lengths)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16])
def test_dtypes(dtype):
    data = torch.randn(10).to(dtype)
    lengths = torch.tensor([3, 3, 0, 4])
    for reduce in REDUCTIONS:
        result = assert_same(segment(reduce, initial=0.5), data, lengths)
        assert result.dtype == dtype


def test_offsets_that_skip_positions():
    # positions before the first offset and after the last belong to no segment
    data = torch.arange(8.0)
    offsets = torch.tensor([2, 3, 3, 6])
    for reduce in REDUCTIONS:
        assert_same(segment(reduce), data, offsets)


def test_empty_inputs():
    assert_same(segment("sum"), torch.empty(0), torch.tensor([0, 0]))
    assert_same(segment("mean"), torch.empty(0, 3), torch.tensor([0]))
    assert_same(segment("max", by="offsets"), torch.randn(4), torch.tensor([0]))
    # CPU's check of empty lengths fails in its own min() (unsafe skips it);
    # the device checks them and gives the unchecked result
    expected = segment("max", initial=1.0, axis=1, unsafe=True)(torch.empty(0, 5), torch.empty(0, 2, dtype=torch.long))
    actual = segment("max", initial=1.0, axis=1)(torch.empty(0, 5, device=TPU), torch.empty(0, 2, dtype=torch.long, device=TPU))
    torch.testing.assert_close(actual.cpu(), expected)


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("by", ["lengths", "offsets"])
def test_gradients(reduce, by):
    torch.manual_seed(0)
    data = torch.randn(3, 9, 2, dtype=torch.float64)
    lengths = torch.tensor([[2, 0, 4, 3]] * 3)
    bounds = lengths if by == "lengths" else offsets_of(lengths)
    assert_grads(segment(reduce, axis=1, by=by), data, bounds)
    assert_grads(segment(reduce, initial=0.5, axis=1, by=by), data, bounds)


def _grad(fn, data, bounds, grad, device):
    x = data.to(device).detach().requires_grad_()
    fn(x, bounds.to(device)).backward(grad.to(device))
    return x.grad.cpu()


@pytest.mark.parametrize("reduce", ["max", "min"])
def test_gradient_of_ties_and_nan_follows_cpu(reduce):
    # CPU sends the gradient to every tied element, split evenly only when it
    # is positive, and to NaN elements.
    data = torch.tensor([5.0, 5.0, 5.0, 2.0, float("nan"), 3.0, 0.0, 0.0, 2.0])
    lengths = torch.tensor([3, 3, 3])
    for grad in (torch.tensor([-1.0, 2.0, 3.0]), torch.tensor([1.5, -2.0, -3.0])):
        expected = _grad(segment(reduce), data, lengths, grad, "cpu")
        torch.testing.assert_close(_grad(segment(reduce), data, lengths, grad, TPU), expected, equal_nan=True)


@pytest.mark.parametrize("initial", [None, 2.0, float("inf")])
def test_gradient_of_prod_with_zeros_and_nan(initial):
    data = torch.tensor([2.0, 0.0, 3.0, 1.0, float("nan"), 0.0, 0.0, 0.0, 4.0, 1.5, -2.0])
    lengths = torch.tensor([3, 3, 3, 2])
    grad = torch.tensor([1.0, -1.0, 2.0, 0.5])
    fn = segment("prod", initial=initial)
    expected = _grad(fn, data, lengths, grad, "cpu")
    torch.testing.assert_close(_grad(fn, data, lengths, grad, TPU), expected, equal_nan=True)


def test_unsafe_lengths_skip_the_check():
    data = torch.arange(6.0)
    assert_same(segment("sum", unsafe=True), data, torch.tensor([2, 2]))


@pytest.mark.parametrize(
    "data, kwargs, error, match",
    [
        (torch.arange(6.0), dict(lengths=torch.tensor([2, 2])), RuntimeError, "sum to data.size"),
        (torch.arange(6.0), dict(lengths=torch.tensor([7, -1])), RuntimeError, "negative"),
        (torch.arange(6), dict(lengths=torch.tensor([6])), NotImplementedError, "Long"),
        (torch.arange(6.0), dict(), RuntimeError, "Either lengths or offsets"),
        (torch.arange(6.0), dict(lengths=torch.tensor([6]), indices=torch.tensor([0])), RuntimeError, "indices"),
        (torch.randn(2, 3), dict(lengths=torch.tensor([2]), axis=1), RuntimeError, "last dimension"),
    ],
)
def test_bad_input_raises_as_on_cpu(data, kwargs, error, match):
    with pytest.raises(error, match=match):
        torch.segment_reduce(data, "sum", **kwargs)
    tpu_kwargs = {k: v.to(TPU) for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
    tpu_kwargs.update({k: v for k, v in kwargs.items() if not isinstance(v, torch.Tensor)})
    with pytest.raises(error, match=match):
        torch.segment_reduce(data.to(TPU), "sum", **tpu_kwargs)


def test_unknown_reduction_and_bad_offsets():
    data = torch.arange(6.0, device=TPU)
    with pytest.raises(RuntimeError, match="unsupported reduction"):
        torch.segment_reduce(data, "median", lengths=torch.tensor([6], device=TPU))
    # CPU refuses a negative segment length even with unsafe=True
    with pytest.raises(RuntimeError, match="non-decreasing"):
        torch.segment_reduce(data, "sum", offsets=torch.tensor([3, 1, 5], device=TPU), unsafe=True).cpu()
    with pytest.raises(RuntimeError, match="same device"):
        torch.segment_reduce(data, "sum", lengths=torch.tensor([6]))


def test_compiles_under_torch_compile():
    def fn(x, lengths):
        return torch.segment_reduce(x * 2, "mean", lengths=lengths, initial=1.0).sum()

    data, lengths = torch.randn(12), torch.tensor([5, 0, 7])
    compiled = torch.compile(fn, backend="tpu")
    torch.testing.assert_close(compiled(data.to(TPU), lengths.to(TPU)).cpu(), fn(data, lengths))
