"""Sparse COO tensors on tpu, against the same on CPU: making and moving
them, their arithmetic and matrix products, the sparse gradients of
nn.Embedding(sparse=True) and nn.EmbeddingBag(sparse=True), and the
optimizers that take sparse gradients; in strict and fused eager mode.
The compressed layouts are refused by name (tests/test_input_errors.py)."""
from __future__ import annotations

import importlib
import pathlib
import sys

import pytest
import torch
from torch import nn

import torch_tpu

TPU = "tpu"


@pytest.fixture(params=["strict", "fused"])
def mode(request):
    with torch_tpu.eager_mode(request.param):
        yield request.param


def matrix(seed=0, shape=(5, 7), nnz=9, dense=(), duplicates=True):
    """An uncoalesced COO tensor: random indices (some repeated) and values."""
    g = torch.Generator().manual_seed(seed)
    indices = torch.stack([torch.randint(0, n, (nnz,), generator=g) for n in shape])
    if duplicates:
        indices[:, -1] = indices[:, 0]
    values = torch.randn((nnz, *dense), generator=g)
    return torch.sparse_coo_tensor(indices, values, (*shape, *dense))


def assert_sparse_equal(got, want, **tol):
    assert got.is_sparse and got.device.type == TPU, (got.layout, got.device)
    assert want.is_sparse
    assert got.sparse_dim() == want.sparse_dim() and got.dense_dim() == want.dense_dim()
    torch.testing.assert_close(got.cpu().to_dense(), want.to_dense(), **tol)


def assert_dense_equal(got, want, **tol):
    assert not got.is_sparse and got.device.type == TPU
    torch.testing.assert_close(got.cpu(), want, **tol)


@pytest.mark.parametrize("dense", [(), (3,)], ids=["plain", "hybrid"])
def test_made_moved_coalesced_and_back(mode, dense):
    s = matrix(dense=dense)
    moved = s.to(TPU)
    assert_sparse_equal(moved, s)
    assert not moved.is_coalesced()
    made = torch.sparse_coo_tensor(s._indices().to(TPU), s._values().to(TPU), s.shape)
    assert_sparse_equal(made, s)
    coalesced, want = moved.coalesce(), s.coalesce()
    assert coalesced.is_coalesced() and coalesced._nnz() == want._nnz()
    torch.testing.assert_close(coalesced._indices().cpu(), want._indices())
    torch.testing.assert_close(coalesced._values().cpu(), want._values())
    back = moved.cpu()
    assert back.is_sparse and back.device.type == "cpu"
    torch.testing.assert_close(back.to_dense(), s.to_dense())
    assert_dense_equal(moved.to_dense(), s.to_dense())
    assert "tpu" in repr(moved)


def test_dense_to_sparse_and_empty(mode):
    d = matrix().to_dense()
    assert_sparse_equal(d.to(TPU).to_sparse(), d.to_sparse())
    assert d.to(TPU).to_sparse().is_coalesced()
    assert_sparse_equal(d.to(TPU).to_sparse(1), d.to_sparse(1))
    zeros = torch.zeros(3, 4, layout=torch.sparse_coo, device=TPU)
    assert zeros._nnz() == 0
    assert_dense_equal(zeros.to_dense(), torch.zeros(3, 4))
    empty = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (3, 4))
    assert_sparse_equal(empty.to(TPU).coalesce(), empty.coalesce())
    assert_dense_equal(torch.ones(3, 4, device=TPU) + empty.to(TPU), torch.ones(3, 4))


ARITHMETIC = {
    "dense_plus_sparse": lambda s, d: d + s,
    "dense_add_alpha": lambda s, d: d.clone().add_(s, alpha=-0.5),
    "sparse_plus_sparse": lambda s, d: s + s * 2,
    "sparse_minus_sparse": lambda s, d: s - s.coalesce(),
    "times_scalar": lambda s, d: s * 3,
    "divided": lambda s, d: s / 4,
    "times_sparse": lambda s, d: s * (s + s).coalesce(),
    "times_dense": lambda s, d: s * d,
    "dense_times": lambda s, d: d * s,
    "unary": lambda s, d: s.neg().abs().sqrt().sin(),
    "pow": lambda s, d: s.pow(2),
    "sum": lambda s, d: torch.sparse.sum(s),
    "sum_dim": lambda s, d: torch.sparse.sum(s, 1),
    "sum_dense_dim": lambda s, d: torch.sparse.sum(s, 0).to_dense(),
    "transpose": lambda s, d: s.t().coalesce(),
    "cat": lambda s, d: torch.cat([s, s * 2], 1),
    "unsqueeze": lambda s, d: s.unsqueeze(1),
    "narrow_copy": lambda s, d: s.narrow_copy(1, 2, 4),
    "norm": lambda s, d: s.coalesce().norm(),
    "sparse_mask": lambda s, d: d.sparse_mask(s.coalesce()),
    "sparse_mask_of_sparse": lambda s, d: (s * 2).sparse_mask(matrix(seed=3).to(s.device).coalesce()),
    "index_select_sparse_dim": lambda s, d: s.index_select(1, torch.tensor([6, 0, 0, 3], device=s.device)),
    "index_select_unmatched": lambda s, d: s.index_select(0, torch.tensor([], dtype=torch.long, device=s.device)),
    "zero_": lambda s, d: s.clone().zero_(),
}


@pytest.mark.parametrize("name", list(ARITHMETIC))
def test_arithmetic(mode, name):
    s, d = matrix(), torch.randn(5, 7)
    want = ARITHMETIC[name](s, d)
    got = ARITHMETIC[name](s.to(TPU), d.to(TPU))
    assert got.is_sparse == want.is_sparse and got.dtype == want.dtype
    if want.is_sparse:
        assert_sparse_equal(got, want)
    else:
        assert_dense_equal(got, want)


def test_hybrid_arithmetic(mode):
    s, d = matrix(dense=(3,)), torch.randn(5, 7, 3)
    assert_dense_equal(d.to(TPU) + s.to(TPU), d + s)
    assert_sparse_equal(s.to(TPU) * d.to(TPU), s * d)
    assert_sparse_equal(s.to(TPU).coalesce() * 2, s.coalesce() * 2)
    dense_dim_pick = torch.tensor([2, 0])
    assert_sparse_equal(s.to(TPU).index_select(2, dense_dim_pick.to(TPU)), s.index_select(2, dense_dim_pick))


def test_matrix_products(mode):
    s, m = matrix(), torch.randn(7, 4)
    assert_dense_equal(torch.sparse.mm(s.to(TPU), m.to(TPU)), torch.sparse.mm(s, m))
    assert_dense_equal(s.to(TPU) @ m.to(TPU), s @ m)
    assert_dense_equal(torch.mv(s.to(TPU), m[:, 0].to(TPU)), torch.mv(s, m[:, 0]))
    left = torch.randn(3, 5)
    assert_dense_equal(left.to(TPU) @ s.to(TPU), left @ s)
    base = torch.randn(5, 4)
    assert_dense_equal(torch.addmm(base.to(TPU), s.to(TPU), m.to(TPU), beta=0.5, alpha=2),
                       torch.addmm(base, s, m, beta=0.5, alpha=2))
    nan_base = torch.full((5, 4), float("nan"))
    assert_dense_equal(torch.addmm(nan_base.to(TPU), s.to(TPU), m.to(TPU), beta=0), torch.addmm(nan_base, s, m, beta=0))
    out = torch.empty(0, device=TPU)
    torch.addmm(base.to(TPU), s.to(TPU), m.to(TPU), out=out)
    assert_dense_equal(out, torch.addmm(base, s, m))


def test_batched_and_sparse_sparse_products(mode):
    s, m = matrix(shape=(3, 4, 5), nnz=12).coalesce(), torch.randn(3, 5, 2)
    cpu_s, cpu_m = s.clone().requires_grad_(), m.clone().requires_grad_()
    tpu_s, tpu_m = s.to(TPU).requires_grad_(), m.to(TPU).requires_grad_()
    want, got = torch.bmm(cpu_s, cpu_m), torch.bmm(tpu_s, tpu_m)
    assert_dense_equal(got, want)
    want.pow(2).sum().backward()
    got.pow(2).sum().backward()
    assert_dense_equal(tpu_s.grad, cpu_s.grad)  # bmm's formula gives a dense gradient, on CPU too
    assert_dense_equal(tpu_m.grad, cpu_m.grad)

    a, b = matrix(shape=(5, 6), seed=1).coalesce(), matrix(shape=(6, 4), seed=2).coalesce()
    cpu_a, cpu_b = a.clone().requires_grad_(), b.clone().requires_grad_()
    tpu_a, tpu_b = a.to(TPU).requires_grad_(), b.to(TPU).requires_grad_()
    want, got = torch.sparse.mm(cpu_a, cpu_b), torch.sparse.mm(tpu_a, tpu_b)
    assert_sparse_equal(got, want)
    assert got.is_coalesced()
    want.to_dense().pow(2).sum().backward()
    got.to_dense().pow(2).sum().backward()
    assert_sparse_equal(tpu_a.grad, cpu_a.grad)
    assert_sparse_equal(tpu_b.grad, cpu_b.grad)
    empty = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (5, 6))
    assert_sparse_equal(torch.sparse.mm(empty.to(TPU), b.to(TPU)), torch.sparse.mm(empty, b))


def test_gradients_through_sparse_products(mode):
    s, m = matrix().coalesce(), torch.randn(7, 4)
    cpu_s, cpu_m = s.clone().requires_grad_(), m.clone().requires_grad_()
    tpu_s, tpu_m = s.to(TPU).requires_grad_(), m.to(TPU).requires_grad_()
    torch.sparse.mm(cpu_s, cpu_m).pow(2).sum().backward()
    torch.sparse.mm(tpu_s, tpu_m).pow(2).sum().backward()
    assert_sparse_equal(tpu_s.grad, cpu_s.grad)
    assert_dense_equal(tpu_m.grad, cpu_m.grad)
    cpu_s, tpu_s = s.clone().requires_grad_(), s.to(TPU).requires_grad_()
    weight = torch.randn(5, 7)
    (cpu_s.to_dense() * weight).sum().backward()
    (tpu_s.to_dense() * weight.to(TPU)).sum().backward()
    assert_sparse_equal(tpu_s.grad, cpu_s.grad)


def pair(make, seed=0):
    torch.manual_seed(seed)
    cpu = make()
    tpu = make().to(TPU)
    tpu.load_state_dict(cpu.state_dict())
    return cpu, tpu


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_sparse_gradient(mode, padding_idx):
    cpu, tpu = pair(lambda: nn.Embedding(10, 3, sparse=True, padding_idx=padding_idx))
    idx = torch.tensor([[1, 2, 1], [4, 9, 1]])
    cpu(idx).pow(2).sum().backward()
    tpu(idx.to(TPU)).pow(2).sum().backward()
    assert_sparse_equal(tpu.weight.grad, cpu.weight.grad)
    # a second backward accumulates into the sparse gradient
    cpu(idx[:, :1]).sum().backward()
    tpu(idx[:, :1].to(TPU)).sum().backward()
    assert_sparse_equal(tpu.weight.grad, cpu.weight.grad)


@pytest.mark.parametrize("bag_mode", ["sum", "mean"])
def test_embedding_bag_sparse_gradient(mode, bag_mode):
    cpu, tpu = pair(lambda: nn.EmbeddingBag(10, 3, mode=bag_mode, sparse=True))
    idx, offsets = torch.tensor([1, 2, 1, 4, 9, 1]), torch.tensor([0, 2, 5])
    cpu(idx, offsets).pow(2).sum().backward()
    tpu(idx.to(TPU), offsets.to(TPU)).pow(2).sum().backward()
    assert_sparse_equal(tpu.weight.grad, cpu.weight.grad)


OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "sparse_adam": lambda p: torch.optim.SparseAdam(p, lr=0.05),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizers_with_sparse_gradients(mode, name):
    # A DLRM-style table: a sparse embedding bag trained for a few steps.
    cpu, tpu = pair(lambda: nn.EmbeddingBag(20, 4, mode="sum", sparse=True))
    cpu_opt, tpu_opt = OPTIMIZERS[name](cpu.parameters()), OPTIMIZERS[name](tpu.parameters())
    g = torch.Generator().manual_seed(1)
    for _ in range(4):
        idx, offsets = torch.randint(0, 20, (12,), generator=g), torch.tensor([0, 3, 7])
        for model, opt, device in ((cpu, cpu_opt, "cpu"), (tpu, tpu_opt, TPU)):
            opt.zero_grad()
            model(idx.to(device), offsets.to(device)).pow(2).sum().backward()
            opt.step()
    torch.testing.assert_close(tpu.weight.detach().cpu(), cpu.weight.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, dense, dim", [
    ((5, 7), (), 1), ((5, 7), (), 0), ((5, 7), (3,), 1), ((4, 5, 6), (), 1), ((5, 7), (3,), 2),
], ids=["last_sparse", "first_sparse", "hybrid_sparse_dim", "3d", "dense_dim"])
def test_softmax(mode, log, shape, dense, dim):
    s = matrix(shape=shape, dense=dense, nnz=14).coalesce()
    fn = torch.sparse.log_softmax if log else torch.sparse.softmax
    weight = torch.randn(s.shape)
    cpu, tpu = s.clone().requires_grad_(), s.to(TPU).requires_grad_()
    want, got = fn(cpu, dim), fn(tpu, dim)
    assert_sparse_equal(got, want)
    (got.to_dense() * weight.to(TPU)).sum().backward()
    if dim < s.sparse_dim():
        (want.to_dense() * weight).sum().backward()
        assert_sparse_equal(tpu.grad, cpu.grad)
    else:
        # Along a dense dim CPU's gradient is not the softmax's (PyTorch 2.13):
        # compare with the dense softmax of the values instead.
        values = s._values().clone().requires_grad_()
        dense_fn = torch.log_softmax if log else torch.softmax
        (dense_fn(values, dim - s.sparse_dim() + 1) * weight[tuple(s._indices())]).sum().backward()
        torch.testing.assert_close(tpu.grad.coalesce()._values().cpu(), values.grad)


def test_save_and_load(tmp_path):
    s = matrix()
    torch.save(s.to(TPU), tmp_path / "s.pt")
    loaded = torch.load(tmp_path / "s.pt")
    assert_sparse_equal(loaded, s)


@pytest.mark.parametrize("call", [
    lambda s: torch.hspmm(s, torch.ones(7, 2, device=s.device)),
    lambda s: torch.sspaddmm(s, s, torch.ones(7, 5, device=s.device).to_sparse()),
], ids=["hspmm", "sspaddmm"])
def test_ops_without_a_sparse_kernel_are_refused_by_name(call):
    with pytest.raises(NotImplementedError, match=r"aten::[\w.]+ is not supported on tpu for sparse COO tensors"):
        call(matrix().to(TPU))


@pytest.mark.parametrize("call, match", [
    (lambda s: s + torch.ones(5, 7, device=TPU), "add\\(sparse, dense\\) is not supported"),
    (lambda s: torch.ones(5, 6, device=TPU) + s, "to have the same size"),
    (lambda s: s * torch.ones(2, 5, 7, device=TPU), "must broadcast to the sparse operand's shape"),
    (lambda s: torch.sparse.mm(s, torch.ones(6, 2, device=TPU)), "shapes cannot be multiplied"),
    (lambda s: s.index_select(0, torch.tensor([5], device=TPU)), "index out of range"),
])
def test_bad_input_is_named(call, match):
    with pytest.raises((RuntimeError, IndexError), match=match):
        call(matrix().to(TPU))


def test_dlrm_with_sparse_tables(mode):
    # examples/dlrm.py as the reference DLRM trains it: sparse table gradients, Adagrad.
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
    dlrm = importlib.import_module("dlrm")

    cpu_step, cpu_model = dlrm.make_step("cpu", sparse_tables=True)
    tpu_step, tpu_model = dlrm.make_step(TPU, sparse_tables=True)
    for i in range(3):
        torch.testing.assert_close(tpu_step(i).item(), cpu_step(i).item(), rtol=1e-5, atol=1e-6)
    assert tpu_model.tables[0].weight.grad.is_sparse
    for (name, want), got in zip(cpu_model.state_dict().items(), tpu_model.state_dict().values()):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.parametrize("shape, dense, dims", [
    ((5, 7), (), (1,)), ((5, 7), (), (0, 1)), ((5, 7), (3,), (1,)), ((5, 7), (3,), (2,)), ((5, 7), (3,), (0, 2)),
    ((5, 7), (3,), (0, 1)), ((4, 5, 6), (), (0, 2)), ((4, 5, 6), (2,), (1, 3)),
], ids=["one_sparse", "all_sparse", "hybrid_sparse", "hybrid_dense", "hybrid_both", "hybrid_all_sparse", "3d",
        "3d_hybrid"])
def test_sum_gradient(mode, shape, dense, dims):
    s = matrix(shape=shape, dense=dense).coalesce()

    def weighted_sum(t):
        r = torch.sparse.sum(t, dims)
        r = r.to_dense() if r.is_sparse else r
        return (r * torch.arange(r.numel(), dtype=r.dtype, device=r.device).view(r.shape)).sum()

    cpu, tpu = s.clone().requires_grad_(), s.to(TPU).requires_grad_()
    weighted_sum(cpu).backward()
    weighted_sum(tpu).backward()
    assert_sparse_equal(tpu.grad, cpu.grad)


def test_compiled_model_with_sparse_gradients():
    cpu, tpu = pair(lambda: nn.EmbeddingBag(50, 4, mode="sum", sparse=True))
    compiled = torch.compile(tpu, backend="tpu")
    cpu_opt, tpu_opt = torch.optim.SGD(cpu.parameters(), lr=0.1), torch.optim.SGD(tpu.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        ids, offsets = torch.randint(0, 50, (12,), generator=g), torch.tensor([0, 4, 8])
        cpu(ids, offsets).pow(2).sum().backward()
        compiled(ids.to(TPU), offsets.to(TPU)).pow(2).sum().backward()
        assert tpu.weight.grad.is_sparse
        cpu_opt.step()
        tpu_opt.step()
        cpu_opt.zero_grad()
        tpu_opt.zero_grad()
    torch.testing.assert_close(tpu.weight.detach().cpu(), cpu.weight.detach())


@pytest.mark.skipif(torch.tpu.device_count() < 2, reason="needs two tpu devices")
def test_results_stay_on_the_operands_device():
    # tpu:1 while tpu:0 is current: results are made on their operands' device.
    s = matrix()
    t = s.to("tpu:1")
    for name, fn in {"add": lambda x: x + x, "coalesce": lambda x: x.coalesce(), "mul": lambda x: x * x,
                     "softmax": lambda x: torch.sparse.softmax(x, 1), "to_sparse": lambda x: x.to_dense().to_sparse(),
                     "zeros": lambda x: torch.zeros(5, 7, layout=torch.sparse_coo, device=x.device)}.items():
        got = fn(t)
        assert {got.device, got._indices().device, got._values().device} == {torch.device("tpu:1")}, name
        torch.testing.assert_close(got.cpu().to_dense(), fn(s).to_dense(), msg=name)
    cpu, tpu = pair(lambda: nn.EmbeddingBag(10, 3, sparse=True))
    tpu.to("tpu:1")
    tpu(torch.tensor([1, 2, 3], device="tpu:1"), torch.tensor([0, 1], device="tpu:1")).sum().backward()
    cpu(torch.tensor([1, 2, 3]), torch.tensor([0, 1])).sum().backward()
    assert tpu.weight.grad.device == torch.device("tpu:1")
    torch.testing.assert_close(tpu.weight.grad.cpu().to_dense(), cpu.weight.grad.to_dense())
