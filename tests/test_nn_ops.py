"""Embedding, layer norm and the losses (nll_loss, nll_loss2d, mse_loss,
and the composite cross_entropy on top of nll_loss) against CPU, forward
and backward, and small models trained one step on CPU and on tpu."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from tpu_testing import assert_grads, assert_same, to_tpu

REDUCTIONS = ["none", "mean", "sum"]


def make(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if not dtype.is_floating_point:
        return torch.randint(-5, 6, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)


def labels(shape, classes, seed=0, dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, classes, shape, generator=g).to(dtype)


# ---- embedding ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32], ids=str)
def test_embedding(dtype, index_dtype):
    weight = make((10, 4), dtype)
    for shape in [(), (5,), (2, 3), (0,)]:
        assert_same(F.embedding, labels(shape, 10, dtype=index_dtype), weight)


def test_embedding_views_padding_and_errors():
    base = make((6, 10))
    idx = torch.tensor([[0, 3], [5, 3]])
    assert_same(F.embedding, idx, base.t())  # a transposed table
    assert_same(F.embedding, torch.tensor([4, 0, 2, 0])[::2], base[:, 1::3])
    assert_same(lambda i, w: F.embedding(i, w, padding_idx=3), idx, base)  # forward ignores padding_idx
    assert_same(F.embedding, torch.tensor([1.0]), base)
    assert_same(F.embedding, torch.tensor([1]), make((4,)))
    assert_same(torch.ops.aten.embedding, make((4, 2, 2)), torch.tensor([1]))
    assert_same(F.embedding, torch.empty(0, dtype=torch.int64), make((0, 3)))


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("scale", [False, True])
def test_embedding_backward(padding_idx, scale):
    idx = torch.tensor([[0, 2, 2], [5, 2, 1]])  # repeats accumulate
    assert_grads(lambda w: F.embedding(idx.to(w.device), w, padding_idx=padding_idx, scale_grad_by_freq=scale),
                 make((6, 3)))


def test_embedding_dense_backward_direct():
    grad = make((2, 3, 4), seed=1)
    for idx_dtype in [torch.int64, torch.int32]:
        idx = labels((2, 3), 5, dtype=idx_dtype)
        assert_same(lambda g, i: torch.ops.aten.embedding_dense_backward(g, i, 5, 1, False), grad, idx)
    assert_same(lambda g, i: torch.ops.aten.embedding_dense_backward(g, i, 7, -1, True), grad.bfloat16(),
                labels((2, 3), 7))
    assert_same(lambda g, i: torch.ops.aten.embedding_dense_backward(g, i, 4, -1, False), make((0, 4)),
                torch.empty(0, dtype=torch.int64))
    assert_same(lambda g, i: torch.ops.aten.embedding_dense_backward(g, i, 3, -1, False), make((1, 4)),
                torch.tensor([1.0]))


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, float("inf"), 0.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_embedding_max_norm_renormalizes_rows_in_place(norm_type, dtype):
    # F.embedding(max_norm=...) rescales the looked-up rows of the weight in
    # place (embedding_renorm_); repeated indices rescale a row once.
    weight = (make((10, 6), seed=3) * 2).to(dtype)
    idx = torch.tensor([[1, 2, 2], [9, 0, 1]])
    cpu_weight, tpu_weight = weight.clone(), to_tpu(weight)
    want = F.embedding(idx, cpu_weight, max_norm=1.5, norm_type=norm_type)
    got = F.embedding(to_tpu(idx), tpu_weight, max_norm=1.5, norm_type=norm_type)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == torch.bfloat16 else {}
    torch.testing.assert_close(got.cpu(), want, **tol)
    torch.testing.assert_close(tpu_weight.cpu(), cpu_weight, **tol)


def test_embedding_renorm_errors():
    weight = to_tpu(make((5, 3)))
    with pytest.raises(IndexError, match="embedding_renorm_"):
        torch.embedding_renorm_(weight, to_tpu(torch.tensor([7])), 1.0, 2.0)
        weight.cpu()
    with pytest.raises(RuntimeError, match="indices"):
        torch.embedding_renorm_(to_tpu(make((5, 3))), to_tpu(torch.tensor([1.0])), 1.0, 2.0)


@pytest.mark.parametrize("shape,dim", [((6, 4, 3), 0), ((6, 4, 3), 2), ((5,), 0), ((7, 3), 1)])
def test_weight_norm(shape, dim):
    # torch._weight_norm reaches _weight_norm_interface for the first or last dim.
    v = make(shape, seed=1)
    g_shape = [1] * len(shape)
    g_shape[dim] = shape[dim]
    g = make(tuple(g_shape), seed=2)
    assert_grads(lambda v, g: torch._weight_norm(v, g, dim), v, g)


def test_weight_norm_modules_and_bfloat16():
    conv = torch.nn.Conv1d(3, 5, 3)
    torch.nn.utils.parametrizations.weight_norm(conv)
    x = make((2, 3, 8))
    tpu_conv = copy.deepcopy(conv).to("tpu")
    out_cpu, out_tpu = conv(x), tpu_conv(to_tpu(x))
    torch.testing.assert_close(out_tpu.cpu(), out_cpu, rtol=1e-5, atol=1e-5)
    out_cpu.sum().backward()
    out_tpu.sum().backward()
    for pc, pt in zip(conv.parameters(), tpu_conv.parameters()):
        torch.testing.assert_close(pt.grad.cpu(), pc.grad, rtol=1e-5, atol=1e-5)
    v, g = make((6, 4), seed=3).bfloat16(), make((6, 1), seed=4).bfloat16()
    w, norms = torch._weight_norm_interface(to_tpu(v), to_tpu(g), 0)
    want_w, want_norms = torch._weight_norm_interface(v, g, 0)
    assert norms.dtype == want_norms.dtype == torch.float32
    torch.testing.assert_close(w.cpu(), want_w, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(norms.cpu(), want_norms, rtol=1e-3, atol=1e-3)
    with pytest.raises(RuntimeError, match="first or the last dim"):
        torch._weight_norm_interface(to_tpu(make((4, 3, 2))), to_tpu(make((1, 3, 1))), 1)


# ---- layer norm --------------------------------------------------------------------

LN_CASES = [((3, 4), (4,)), ((2, 3, 4), (3, 4)), ((2, 3, 4), (4,)), ((5,), (5,)), ((0, 4), (4,))]
LN_PARAMS = [(c, a) for c in LN_CASES for a in ("none", "both")] + [(LN_CASES[1], "weight")]


@pytest.mark.parametrize("shapes,affine", LN_PARAMS, ids=str)
def test_layer_norm(shapes, affine):
    shape, normalized = shapes
    args = [make(shape, seed=1)]
    if affine != "none":
        args.append(make(normalized, seed=2))
    if affine == "both":
        args.append(make(normalized, seed=3))

    def fn(x, w=None, b=None):
        return F.layer_norm(x, normalized, w, b, eps=1e-5)

    assert_same(lambda *a: torch.native_layer_norm(a[0], list(normalized), *(list(a[1:]) + [None] * (3 - len(a))),
                                                   1e-5), *args)
    assert_grads(fn, *args, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64], ids=str)
def test_layer_norm_dtypes(dtype):
    x, w, b = make((3, 8), dtype, 1), make((8,), dtype, 2), make((8,), dtype, 3)
    assert_same(lambda x, w, b: torch.native_layer_norm(x, [8], w, b, 1e-5)[0], x, w, b)
    # The statistics are in the accumulation type, as PyTorch's shape function
    # gives an accelerator's (and CUDA's kernel): compared with CPU's in it.
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    _, mean, rstd = torch.native_layer_norm(to_tpu(x), [8], to_tpu(w), to_tpu(b), 1e-5)
    _, cpu_mean, cpu_rstd = torch.native_layer_norm(x.to(acc), [8], None, None, 1e-5)
    assert mean.dtype == rstd.dtype == acc
    torch.testing.assert_close(mean.cpu(), cpu_mean)
    torch.testing.assert_close(rstd.cpu(), cpu_rstd)
    assert_grads(lambda x, w, b: F.layer_norm(x, (8,), w, b), x, w, b,
                 **({} if dtype == torch.float64 else dict(rtol=2e-2, atol=2e-2)))


def test_layer_norm_mixed_dtype_eps_and_views():
    x, w, b = make((3, 8), torch.bfloat16, 1), make((8,), seed=2), make((8,), seed=3)
    assert_same(lambda x, w, b: torch.native_layer_norm(x, [8], w, b, 1e-5), x, w, b)  # f32 mean / rstd
    assert_grads(lambda x, w, b: F.layer_norm(x, (8,), w, b), x, w, b, rtol=2e-2, atol=2e-2)
    assert_same(lambda x, w: torch.native_layer_norm(x, [8], w, None, 1e-5), make((3, 8)), w.bfloat16())
    assert_same(lambda x: F.layer_norm(x, (4,), eps=0.5), make((3, 4)))
    base = make((8, 6))
    assert_same(lambda x: F.layer_norm(x, (4,)), base.t()[:, ::2])
    assert_same(lambda x: torch.native_layer_norm(x, [0], None, None, 1e-5), make((3, 0)))


def test_layer_norm_errors():
    x = make((3, 4))
    assert_same(lambda x: F.layer_norm(x, (5,)), x)
    assert_same(lambda x, w: F.layer_norm(x, (4,), w), x, make((3,)))
    assert_same(lambda x: F.layer_norm(x, (4,)), x.long())
    assert_same(lambda x: torch.native_layer_norm(x, [], None, None, 1e-5), x)


def test_layer_norm_backward_output_mask():
    x, w, b = make((3, 4), seed=1), make((4,), seed=2), make((4,), seed=3)
    g = make((3, 4), seed=4)

    def fn(g, x, w, b, mask):
        _, mean, rstd = torch.native_layer_norm(x, [4], w, b, 1e-5)
        return torch.ops.aten.native_layer_norm_backward(g, x, [4], mean, rstd, w, b, mask)

    for mask in ([True, False, False], [False, True, True], [True, True, False]):
        expected = fn(g, x, w, b, mask)
        actual = fn(*to_tpu((g, x, w, b)), mask)
        for e, a in zip(expected, actual):
            assert (e is None) == (a is None)
            if e is not None:
                torch.testing.assert_close(a.cpu(), e, rtol=1e-5, atol=1e-5)


# ---- nll_loss / cross_entropy --------------------------------------------------------


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_nll_loss(reduction, weighted, ignore_index):
    x = F.log_softmax(make((6, 5), seed=1), 1)
    t = torch.tensor([0, 1, 4, 1, 3, 2])
    w = make((5,), seed=2).abs() if weighted else None

    def fn(x, w=None):
        return F.nll_loss(x, t.to(x.device), weight=w, reduction=reduction, ignore_index=ignore_index)

    args = (x, w) if weighted else (x,)
    assert_same(fn, *args)
    assert_grads(fn, *args, constant=(1,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_1d_input_and_total_weight(reduction):
    x, w = make((5,), seed=1), make((5,), seed=2).abs()
    red = {"none": 0, "mean": 1, "sum": 2}[reduction]
    assert_same(lambda x, w: torch.ops.aten.nll_loss_forward(x, torch.tensor(3, device=x.device), w, red, -100), x, w)
    assert_same(lambda x: torch.ops.aten.nll_loss_forward(x, torch.tensor([1, 3, 0], device=x.device), None,
                                                          red, -100), make((3, 5)))
    assert_grads(lambda x: F.nll_loss(x, torch.tensor(3, device=x.device), reduction=reduction), x)


def test_nll_loss_dtypes_targets_and_edges():
    x = F.log_softmax(make((4, 3), seed=1), 1)
    t = torch.tensor([2, 0, 1, 1])
    assert_same(F.nll_loss, x.bfloat16(), t)
    assert_same(F.nll_loss, x.half(), t)
    assert_same(F.nll_loss, x.double(), t)
    assert_same(F.nll_loss, x, t.to(torch.uint8))
    assert_same(F.nll_loss, x, torch.full((4,), -100))  # all ignored: NaN mean, as on CPU
    assert_same(lambda x, t: F.nll_loss(x, t, reduction="sum"), x, torch.full((4,), -100))
    assert_same(F.nll_loss, x[:0], t[:0])
    assert_same(lambda x, t: F.nll_loss(x, t, reduction="none"), x[:0], t[:0])
    assert_same(F.nll_loss, make((6, 4))[::2, 1:], t[:3])  # a non-contiguous input
    x_inf = x.clone()
    x_inf[0, 0] = float("-inf")
    assert_same(lambda x, t: F.nll_loss(x, t, reduction="none"), x_inf, t)  # -inf outside the targets


def test_nll_loss_errors():
    x, t = make((3, 5)), torch.tensor([1, 2, 3])
    assert_same(F.nll_loss, x, t.float())
    assert_same(F.nll_loss, x, t.int())
    assert_same(F.nll_loss, x, t[:2])
    assert_same(lambda x, w: F.nll_loss(x, t.to(x.device), weight=w), x, torch.ones(3))
    assert_same(lambda x, w: F.nll_loss(x, t.to(x.device), weight=w), x, torch.ones(5).double())
    assert_same(F.nll_loss, x.long(), t)
    assert_same(torch.ops.aten.nll_loss_forward, make((2, 3, 4)), torch.zeros(2, 4, dtype=torch.long), None, 1, -100)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_spatial(reduction):
    x = F.log_softmax(make((2, 3, 4, 5), seed=1), 1)
    t = labels((2, 4, 5), 3, seed=2)
    t[0, 0, 0] = -100
    w = make((3,), seed=3).abs()
    assert_same(lambda x, w: F.nll_loss(x, t.to(x.device), weight=w, reduction=reduction), x, w)
    assert_grads(lambda x: F.nll_loss(x, t.to(x.device), reduction=reduction), x)
    # a 3-D input goes through nll_loss2d as well
    x3, t3 = F.log_softmax(make((2, 3, 4), seed=4), 1), labels((2, 4), 3, seed=5)
    assert_grads(lambda x: F.nll_loss(x, t3.to(x.device), reduction=reduction), x3)


def test_nll_loss2d_errors():
    assert_same(torch.ops.aten.nll_loss2d_forward, make((2, 3, 4)), torch.zeros(2, 4, dtype=torch.long),
                None, 1, -100)
    assert_same(torch.ops.aten.nll_loss2d_forward, make((2, 3, 4, 5)), torch.zeros(2, 4, 4, dtype=torch.long),
                None, 1, -100)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy(reduction):
    logits, t = make((4, 6), seed=1), torch.tensor([0, 5, 2, 2])
    w = make((6,), seed=2).abs()
    assert_grads(lambda x: F.cross_entropy(x, t.to(x.device), reduction=reduction), logits)
    assert_grads(lambda x, w: F.cross_entropy(x, t.to(x.device), weight=w, ignore_index=2, reduction=reduction),
                 logits, w, constant=(1,))
    assert_grads(lambda x: F.cross_entropy(x, labels((4, 3), 6).to(x.device), reduction=reduction),
                 make((4, 6, 3), seed=3))


def test_cross_entropy_bf16():
    logits, t = make((4, 6), torch.bfloat16, 1), torch.tensor([0, 5, 2, 2])
    assert_same(F.cross_entropy, logits, t)


# ---- mse_loss ----------------------------------------------------------------------


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_mse_loss(reduction, dtype):
    x, y = make((3, 4), dtype, 1), make((3, 4), dtype, 2)
    tol = {} if dtype != torch.bfloat16 else dict(rtol=2e-2, atol=2e-2)
    assert_same(lambda x, y: F.mse_loss(x, y, reduction=reduction), x, y, **tol)
    assert_grads(lambda x, y: F.mse_loss(x, y, reduction=reduction), x, y, **tol)


def test_mse_loss_edges_and_errors():
    red = {"none": 0, "mean": 1, "sum": 2}
    assert_same(F.mse_loss, make((0,)), make((0,)))  # mean of nothing: NaN
    assert_same(F.mse_loss, make(()), make((), seed=1))
    assert_same(lambda x, y: torch.ops.aten.mse_loss(x, y, red["none"]), make((3, 1)), make((3,)))  # broadcasts
    assert_same(lambda x, y: torch.ops.aten.mse_loss(x, y, red["mean"]), make((3,)), make((3,)).double())
    assert_same(lambda x, y: torch.ops.aten.mse_loss(x, y, red["none"]), make((3,)), make((3,), torch.int64))
    assert_same(F.mse_loss, make((8,))[::2], make((4, 2)).t()[1])
    assert_same(F.mse_loss, make((3,), torch.int64), make((3,), torch.int64))
    assert_same(lambda x, y: torch.ops.aten.mse_loss(x, y, 1), make((3,)), make((4,)))
    assert_same(lambda x, y: torch.ops.aten.mse_loss.out(x, y, 2, out=torch.empty(5, device=x.device)),
                make((3,)), make((3,), seed=1))
    g = make(())
    assert_same(lambda g, x, y: torch.ops.aten.mse_loss_backward(g, x, y, 1), g, make((3, 4)), make((3, 4)))


# ---- end to end --------------------------------------------------------------------


def one_step(model, loss_fn, *batch):
    """One forward/backward on CPU and on tpu; returns (cpu, tpu) losses and
    parameter gradients."""
    tpu_model = copy.deepcopy(model).to("tpu")
    results = []
    for m, dev in ((model, "cpu"), (tpu_model, "tpu")):
        m.zero_grad()
        loss = loss_fn(m, *[b.to(dev) for b in batch])
        loss.backward()
        results.append((loss.detach().cpu(), {n: p.grad.cpu() for n, p in m.named_parameters()}))
    return results


def test_linear_mse_backward_matches_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    x, y = make((5, 8), seed=1), make((5, 3), seed=2)
    (cpu_loss, cpu_grads), (tpu_loss, tpu_grads) = one_step(model, lambda m, x, y: F.mse_loss(m(x), y), x, y)
    torch.testing.assert_close(tpu_loss, cpu_loss)
    for name in cpu_grads:
        torch.testing.assert_close(tpu_grads[name], cpu_grads[name], rtol=1e-5, atol=1e-5)


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(11, 8, padding_idx=0)
        self.norm = torch.nn.LayerNorm(8)
        self.proj = torch.nn.Linear(8, 11)

    def forward(self, tokens):
        return self.proj(self.norm(self.embed(tokens)))


def test_embedding_layer_norm_linear_cross_entropy_backward_matches_cpu():
    torch.manual_seed(0)
    tokens = torch.tensor([[1, 4, 0, 7], [3, 3, 10, 0]])
    targets = torch.tensor([[4, 0, 7, 2], [3, 10, 0, 5]])

    def loss_fn(m, tokens, targets):
        logits = m(tokens)
        return F.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1), ignore_index=0)

    (cpu_loss, cpu_grads), (tpu_loss, tpu_grads) = one_step(TinyLM(), loss_fn, tokens, targets)
    torch.testing.assert_close(tpu_loss, cpu_loss)
    for name in cpu_grads:
        torch.testing.assert_close(tpu_grads[name], cpu_grads[name], rtol=1e-5, atol=1e-5)
