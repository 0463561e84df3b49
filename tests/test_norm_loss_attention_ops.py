"""Normalization layers (batch norm with its running statistics, instance,
group and RMS norm), the remaining losses and scaled_dot_product_attention
against CPU, forward and backward."""

from __future__ import annotations

import copy
import functools

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import tpu_testing
from tpu_testing import assert_same, to_tpu

REDUCTIONS = ["none", "mean", "sum"]
BF16 = dict(rtol=2e-2, atol=2e-2)


def make(shape, dtype=torch.float32, seed=0, low=None, high=None):
    g = torch.Generator().manual_seed(seed)
    if not dtype.is_floating_point:
        return torch.randint(-5, 6, shape, generator=g).to(dtype)
    x = torch.randn(shape, generator=g)
    if low is not None:
        x = torch.rand(shape, generator=g) * (high - low) + low
    return x.to(dtype)


# Norm and loss gradients may be NaN on both sides (log of 0, 0 / 0).
assert_grads = functools.partial(tpu_testing.assert_grads, grads_equal_nan=True)


def run_module_steps(module, inputs, train=True, **tol):
    """Runs copies of `module` on CPU and tpu over `inputs` (forward, backward)
    and compares outputs, input and parameter gradients and buffers."""
    cpu = module
    cpu.zero_grad(set_to_none=True)
    dev = copy.deepcopy(module).to("tpu")
    cpu.train(train)
    dev.train(train)
    for x in inputs:
        xc = x.detach().clone().requires_grad_()
        xt = to_tpu(x).detach().requires_grad_()
        yc, yt = cpu(xc), dev(xt)
        g = make(yc.shape, yc.dtype, seed=7)
        yc.backward(g)
        yt.backward(to_tpu(g))
        torch.testing.assert_close(yt.cpu(), yc, **tol)
        torch.testing.assert_close(xt.grad.cpu(), xc.grad, **tol)
    for (name, pc), pt in zip(cpu.named_parameters(), dev.parameters()):
        torch.testing.assert_close(pt.grad.cpu(), pc.grad, **tol, msg=name)
    for (name, bc), bt in zip(cpu.named_buffers(), dev.buffers()):
        torch.testing.assert_close(bt.cpu(), bc, **tol, msg=name)


# ---- batch norm ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls,shape",
    [(nn.BatchNorm1d, (6, 3)), (nn.BatchNorm1d, (4, 3, 5)), (nn.BatchNorm2d, (3, 4, 5, 3)),
     (nn.BatchNorm3d, (2, 3, 2, 3, 4))],
    ids=["1d", "1d-seq", "2d", "3d"],
)
def test_batch_norm_modules_train_then_eval(cls, shape):
    m = cls(shape[1])
    with torch.no_grad():
        m.weight.copy_(make((shape[1],), seed=3))
        m.bias.copy_(make((shape[1],), seed=4))
    inputs = [make(shape, seed=s) * 2 + 1 for s in range(2)]
    run_module_steps(m, inputs, train=True, rtol=1e-4, atol=1e-5)
    run_module_steps(m, inputs[:1], train=False, rtol=1e-4, atol=1e-5)


def test_batch_norm_cumulative_momentum_and_no_affine():
    m = nn.BatchNorm2d(3, momentum=None, affine=False)
    run_module_steps(m, [make((4, 3, 2, 3), seed=s) + s for s in range(3)], rtol=1e-4, atol=1e-5)
    m = nn.BatchNorm1d(4, track_running_stats=False)
    run_module_steps(m, [make((5, 4), seed=1)], rtol=1e-4, atol=1e-5)
    run_module_steps(m, [make((5, 4), seed=2)], train=False, rtol=1e-4, atol=1e-5)


def test_batch_norm_bf16_and_mixed():
    m = nn.BatchNorm2d(3).to(torch.bfloat16)
    run_module_steps(m, [make((4, 3, 3, 3), torch.bfloat16, seed=1)], **BF16)
    # bf16 input, f32 parameters and statistics (CPU allows the mix)
    m = nn.BatchNorm2d(3)
    run_module_steps(m, [make((4, 3, 3, 3), torch.bfloat16, seed=2)], **BF16)
    run_module_steps(m, [make((4, 3, 3, 3), torch.bfloat16, seed=3)], train=False, **BF16)


def test_batch_norm_views_and_running_stat_views():
    x = make((4, 6, 5), seed=1).transpose(1, 2)  # non-contiguous, channels 5
    w, b = make((5,), seed=2), make((5,), seed=3)

    def fn(x, w, b, base_m, base_v):
        # the running statistics are strided views: the update writes through them
        base_m, base_v = base_m.clone(), base_v.clone()
        y = F.batch_norm(x, base_m[::2], base_v[1::2], w, b, training=True, momentum=0.3, eps=1e-3)
        return y, base_m, base_v

    assert_same(fn, x, w, b, torch.zeros(10), torch.ones(10), rtol=1e-5, atol=1e-5)
    assert_grads(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), x, w, b, rtol=1e-4, atol=1e-5)
    rm, rv = make((5,), seed=4), make((5,), seed=5).abs() + 0.5
    assert_grads(lambda x, w, b: F.batch_norm(x, rm.to(x.device), rv.to(x.device), w, b, training=False), x, w, b,
                 rtol=1e-4, atol=1e-5)


def test_batch_norm_aten_overloads():
    x = make((4, 3, 2), seed=1)
    w, b = make((3,), seed=2), make((3,), seed=3)

    def legit(x, w, b, rm, rv):
        rm, rv = rm.clone(), rv.clone()
        out = torch.ops.aten._native_batch_norm_legit(x, w, b, rm, rv, True, 0.2, 1e-5)
        return (*out, rm, rv)

    assert_same(legit, x, w, b, torch.zeros(3), torch.ones(3), rtol=1e-5, atol=1e-5)
    assert_same(lambda x, w, b: torch.ops.aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5),
                x, w, b, rtol=1e-5, atol=1e-5)
    assert_same(lambda x, rm, rv: torch.ops.aten._native_batch_norm_legit_no_training(x, w.to(x.device), None, rm,
                                                                                      rv, 0.1, 1e-5)[0],
                x, torch.zeros(3) + 0.5, torch.ones(3) * 2, rtol=1e-5, atol=1e-5)

    def with_update(x, rm, rv):
        rm, rv = rm.clone(), rv.clone()
        out, mean, invstd, _ = torch.ops.aten._batch_norm_with_update(x, None, None, rm, rv, 0.1, 1e-5)
        return out, mean, invstd, rm, rv

    assert_same(with_update, x, torch.zeros(3), torch.ones(3), rtol=1e-5, atol=1e-5)
    mean, invstd = x.mean((0, 2)), (x.var((0, 2), unbiased=False) + 1e-5).rsqrt()
    g = make(x.shape, seed=9)
    assert_same(lambda g, x, w, mean, invstd: torch.ops.aten.batch_norm_backward(
        g, x, w, None, None, mean, invstd, True, 1e-5, [True, True, True], torch.empty(0, dtype=torch.uint8,
                                                                                          device=x.device)),
        g, x, w, mean, invstd, rtol=1e-4, atol=1e-5)


def test_batch_norm_errors():
    x = make((4, 3))
    assert_same(lambda x: F.batch_norm(x, None, None, training=True), x.long())
    assert_same(lambda x, w: F.batch_norm(x, None, None, w, training=True), x, make((4,)))
    assert_same(lambda x, rm, rv: F.batch_norm(x, rm, rv, training=False), x, torch.zeros(2), torch.ones(2))


# ---- instance / group / RMS norm ---------------------------------------------------------


@pytest.mark.parametrize("affine,track", [(False, False), (True, True)])
def test_instance_norm(affine, track):
    m = nn.InstanceNorm2d(3, affine=affine, track_running_stats=track)
    if affine:
        with torch.no_grad():
            m.weight.copy_(make((3,), seed=3))
            m.bias.copy_(make((3,), seed=4))
    run_module_steps(m, [make((2, 3, 4, 5), seed=s) for s in range(2)], rtol=1e-4, atol=1e-5)
    if track:
        run_module_steps(m, [make((2, 3, 4, 5), seed=5)], train=False, rtol=1e-4, atol=1e-5)
    assert_grads(lambda x: F.instance_norm(x), make((2, 4, 7), seed=1), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("groups,shape", [(1, (2, 6, 4)), (3, (3, 6, 2, 3)), (6, (2, 6)), (2, (1, 4, 3, 2, 2))])
def test_group_norm(groups, shape):
    x = make(shape, seed=1) * 3 + 1
    w, b = make((shape[1],), seed=2), make((shape[1],), seed=3)
    assert_grads(lambda x, w, b: F.group_norm(x, groups, w, b, eps=1e-4), x, w, b, rtol=1e-4, atol=1e-4)
    assert_grads(lambda x: F.group_norm(x, groups), x, rtol=1e-4, atol=1e-4)


def test_group_norm_dtypes_views_and_errors():
    x = make((2, 4, 3, 3), torch.bfloat16, seed=1)
    w, b = make((4,), torch.bfloat16, seed=2), make((4,), torch.bfloat16, seed=3)
    assert_grads(lambda x, w, b: F.group_norm(x, 2, w, b), x, w, b, **BF16)
    # bf16 input with f32 parameters
    assert_grads(lambda x, w, b: F.group_norm(x, 2, w, b), x, w.float(), b.float(), **BF16)
    xt = make((3, 2, 4, 4), seed=4).transpose(0, 1)  # non-contiguous [2, 3, 4, 4]
    assert_grads(lambda x: F.group_norm(x, 3), xt, rtol=1e-4, atol=1e-4)
    run_module_steps(nn.GroupNorm(2, 4), [make((3, 4, 5), seed=6)], rtol=1e-4, atol=1e-4)
    assert_same(lambda x: F.group_norm(x, 2), make((0, 4, 3)))
    assert_same(lambda x: F.group_norm(x, 3), make((2, 4, 3)))  # 4 channels in 3 groups
    assert_same(lambda x, w: F.group_norm(x, 2, w), make((2, 4, 3)), make((3,)))
    assert_same(lambda x: F.group_norm(x, 2), make((2, 4, 3), torch.int64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("normalized", [(8,), (3, 8)])
def test_rms_norm(dtype, normalized):
    x = make((2, 3, 8), dtype, seed=1)
    w = make(normalized, dtype, seed=2)
    tol = BF16 if dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-5)
    assert_grads(lambda x, w: F.rms_norm(x, normalized, w), x, w, **tol)
    assert_grads(lambda x: F.rms_norm(x, normalized, eps=1e-3), x, **tol)
    # the composite path: a weight of another dtype
    other = torch.float32 if dtype == torch.bfloat16 else torch.float64
    assert_grads(lambda x, w: F.rms_norm(x, normalized, w), x, w.to(other), **tol)


def test_rms_norm_module_views_and_errors():
    run_module_steps(nn.RMSNorm(6), [make((4, 6), seed=s) for s in range(2)], rtol=1e-4, atol=1e-5)
    xt = make((6, 4), seed=3).t()  # non-contiguous [4, 6]
    assert_grads(lambda x: F.rms_norm(x, (6,)), xt, rtol=1e-4, atol=1e-5)
    assert_same(lambda x: F.rms_norm(x, (6,)), make((0, 6)))
    assert_same(lambda x: F.rms_norm(x, (5,)), make((4, 6)))
    assert_same(lambda x, w: F.rms_norm(x, (6,), w), make((4, 6)), make((5,)))
    assert_same(lambda x: torch.ops.aten._fused_rms_norm(x, [6], None, None)[0], make((3, 6)))


# ---- losses --------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(reduction, weighted):
    x = make((4, 5), seed=1, low=0.02, high=0.98)
    t = make((4, 5), seed=2, low=0.0, high=1.0)
    w = make((5,), seed=3).abs() if weighted else None
    assert_grads(lambda x: F.binary_cross_entropy(x, t.to(x.device), w if w is None else w.to(x.device),
                                                  reduction=reduction), x, rtol=1e-4, atol=1e-5)


def test_binary_cross_entropy_edges_and_errors():
    # log(0) is clamped to -100
    x = torch.tensor([0.0, 1.0, 0.5, 1.0])
    t = torch.tensor([0.0, 1.0, 1.0, 0.0])
    assert_same(lambda x, t: F.binary_cross_entropy(x, t, reduction="none"), x, t)
    xb = make((3, 4), torch.bfloat16, seed=1, low=0.1, high=0.9)
    assert_grads(lambda x: F.binary_cross_entropy(x, torch.full_like(x, 0.3)), xb, **BF16)
    assert_same(lambda x, t: F.binary_cross_entropy(x, t), make((2,)).long(), make((2,)).long())
    # input outside [0, 1] is reported at the next sync, as CPU raises
    bad = to_tpu(torch.tensor([0.5, 1.5]))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(bad, torch.zeros(2, device="tpu")).cpu()
    with pytest.raises(ValueError):
        F.binary_cross_entropy(to_tpu(x), torch.zeros(3, device="tpu"))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    x = make((4, 3), seed=1) * 3
    t = make((4, 3), seed=2, low=0.0, high=1.0)
    w = make((3,), seed=3).abs()
    pw = make((3,), seed=4).abs() + 0.5
    assert_grads(lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction), x, t,
                 rtol=1e-4, atol=1e-5)
    assert_grads(lambda x, w, pw: F.binary_cross_entropy_with_logits(x, t.to(x.device), w, reduction=reduction,
                                                                     pos_weight=pw), x, w, pw, constant=(1, 2),
                 rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mixed_dtype_losses_have_cpus_result_dtype(reduction):
    # CPU's bce_with_logits works in place on (1 - target): the target's
    # dtype (float32 for bfloat16 logits); huber_loss writes into
    # empty_like(input); integer and float64 weights apply in place.
    x = make((4, 3), seed=1) * 3
    t = make((4, 3), seed=2, low=0.0, high=1.0)
    p = make((4, 3), seed=3, low=0.05, high=0.95)
    for a, b in [(x.bfloat16(), t), (x, t.double()), (x.double(), t), (x, t.bfloat16())]:
        assert_same(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction), a, b, **BF16)
        assert_same(lambda a, b: F.huber_loss(a, b, reduction=reduction), a, b, **BF16)
    for w in [torch.tensor([1, 2, 3]), torch.tensor([0.5, 2.0, 1.0], dtype=torch.float64)]:
        assert_grads(lambda x, w: F.binary_cross_entropy_with_logits(x, t.to(x.device), w, reduction=reduction,
                                                                     pos_weight=w), x, w, constant=(1,),
                     rtol=1e-4, atol=1e-5)
        assert_grads(lambda p, w: F.binary_cross_entropy(p, t.to(p.device), w, reduction=reduction), p, w,
                     constant=(1,), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [0.0, 0.5, 2.0])
def test_smooth_l1_and_huber(reduction, beta):
    x = make((3, 5), seed=1) * 2
    t = make((3, 5), seed=2)
    assert_grads(lambda x, t: F.smooth_l1_loss(x, t, reduction=reduction, beta=beta), x, t, rtol=1e-4, atol=1e-5)
    delta = beta or 1.0
    assert_grads(lambda x, t: F.huber_loss(x, t, reduction=reduction, delta=delta), x, t, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_reduced_loss_double_backward(reduction):
    # The double backward of a scaled reduced loss passes a gradient of the
    # input's shape to the loss's backward; CPU broadcasts it.
    losses = (lambda x, t: F.smooth_l1_loss(x, t, reduction=reduction),
              lambda x, t: F.huber_loss(x, t, reduction=reduction, delta=0.5),
              lambda x, t: F.binary_cross_entropy(torch.sigmoid(x), torch.sigmoid(t), reduction=reduction))
    for loss in losses:
        def penalty(x, t, scale):
            (g,) = torch.autograd.grad(scale * loss(x, t), x, create_graph=True)
            return torch.autograd.grad(g.pow(2).sum(), [x, scale])

        def run(device):
            x = make((3, 4), seed=1).to(device).requires_grad_()
            scale = torch.tensor(0.7, device=device, requires_grad=True)
            return [r.cpu() for r in penalty(x, make((3, 4), seed=2).to(device), scale)]

        for got, want in zip(run("tpu"), run("cpu")):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


def test_smooth_l1_huber_l1_dtypes_and_errors():
    x, t = make((4, 3), torch.bfloat16, seed=1), make((4, 3), torch.bfloat16, seed=2)
    for fn in (F.smooth_l1_loss, F.huber_loss, F.l1_loss):
        assert_grads(lambda x, t: fn(x, t), x, t, **BF16)
        assert_grads(lambda x, t: fn(x, t), make((5, 4), seed=3).t(), make((4, 1), seed=4).expand(4, 5),
                     rtol=1e-4, atol=1e-5)
        assert_same(lambda x, t: fn(x, t), make((0, 3)), make((0, 3)))
        assert_same(lambda x, t: fn(x, t, reduction="sum"), make(()), make(()))
    assert_same(lambda x, t: F.smooth_l1_loss(x, t), make((3,), torch.int64), make((3,), torch.int64))
    assert_same(lambda x, t: F.huber_loss(x, t), make((3,), torch.int64), make((3,), torch.int64))
    assert_same(lambda x, t: F.smooth_l1_loss(x, t, beta=-1.0), make((3,)), make((3,)))
    assert_same(lambda x, t: F.huber_loss(x, t, delta=0.0), make((3,)), make((3,)))
    assert_same(lambda x, t: torch.ops.aten.huber_loss(x, t, 1, 1.0), make((3, 1)), make((2,)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_l1_kl_soft_margin_poisson(reduction):
    x, t = make((4, 3), seed=1), make((4, 3), seed=2)
    assert_grads(lambda x, t: F.l1_loss(x, t, reduction=reduction), x, t, rtol=1e-4, atol=1e-5)
    logp = F.log_softmax(make((4, 5), seed=3), -1)
    q = F.softmax(make((4, 5), seed=4), -1)
    assert_grads(lambda a, b: F.kl_div(a, b, reduction=reduction), logp, q, rtol=1e-4, atol=1e-5)
    assert_grads(lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=True), logp, q.log(),
                 rtol=1e-4, atol=1e-5)
    sign = torch.where(make((4, 3), seed=5) > 0, 1.0, -1.0)
    assert_grads(lambda x: F.soft_margin_loss(x, sign.to(x.device), reduction=reduction), x, rtol=1e-4, atol=1e-5)
    counts = make((4, 3), seed=6, low=0.0, high=5.0).floor()
    for log_input, full in [(True, False), (False, True)]:
        inp = x if log_input else x.abs() + 0.1
        assert_grads(lambda x: F.poisson_nll_loss(x, counts.to(x.device), log_input=log_input, full=full,
                                                  reduction=reduction), inp, rtol=1e-4, atol=1e-5)


def test_kl_div_batchmean_and_margin_losses():
    logp = F.log_softmax(make((4, 5), seed=3), -1)
    q = F.softmax(make((4, 5), seed=4), -1)
    assert_grads(lambda a, b: F.kl_div(a, b, reduction="batchmean"), logp, q, rtol=1e-4, atol=1e-5)
    a, b = make((6,), seed=1), make((6,), seed=2)
    y = torch.where(make((6,), seed=3) > 0, 1.0, -1.0)
    for reduction in REDUCTIONS:
        assert_grads(lambda a, b: F.margin_ranking_loss(a, b, y.to(a.device), margin=0.2, reduction=reduction),
                     a, b, rtol=1e-4, atol=1e-5)
        assert_grads(lambda a: F.hinge_embedding_loss(a, y.to(a.device), margin=0.5, reduction=reduction), a,
                     rtol=1e-4, atol=1e-5)
        u, v = make((6, 4), seed=4), make((6, 4), seed=5)
        assert_grads(lambda u, v: F.cosine_embedding_loss(u, v, y.to(u.device), margin=0.1, reduction=reduction),
                     u, v, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_variants(reduction):
    x = make((5, 4), seed=1)
    target = torch.tensor([0, 3, 1, -100, 2])
    w = make((4,), seed=2).abs() + 0.2
    assert_grads(lambda x: F.cross_entropy(x, target.to(x.device), reduction=reduction, label_smoothing=0.1), x,
                 rtol=1e-4, atol=1e-5)
    assert_grads(lambda x, w: F.cross_entropy(x, target.to(x.device), w, reduction=reduction, label_smoothing=0.2),
                 x, w, constant=(1,), rtol=1e-4, atol=1e-5)
    assert_grads(lambda x: F.cross_entropy(x, torch.tensor([1, 1, 0, 2, 1], device=x.device), ignore_index=1,
                                           reduction=reduction), x, rtol=1e-4, atol=1e-5)
    probs = F.softmax(make((5, 4), seed=3), -1)
    assert_grads(lambda x, p: F.cross_entropy(x, p, reduction=reduction), x, probs, rtol=1e-4, atol=1e-5)
    assert_grads(lambda x, p: F.cross_entropy(x, p, w.to(x.device), reduction=reduction, label_smoothing=0.1), x,
                 probs, rtol=1e-4, atol=1e-5)
    x4 = make((2, 3, 2, 2), seed=4)
    t4 = torch.tensor([[[0, 1], [2, 1]], [[1, 1], [0, 2]]])
    assert_grads(lambda x: F.cross_entropy(x, t4.to(x.device), reduction=reduction, label_smoothing=0.3), x4,
                 rtol=1e-4, atol=1e-5)


# ---- scaled dot product attention -------------------------------------------------------------


def qkv(b, hq, hkv, l, s, e, dtype=torch.float32, ev=None, seed=0):
    return (make((b, hq, l, e), dtype, seed=seed), make((b, hkv, s, e), dtype, seed=seed + 1),
            make((b, hkv, s, ev or e), dtype, seed=seed + 2))


def test_sdpa_picks_the_fused_kernel():
    q, k, v = (to_tpu(t) for t in qkv(1, 2, 2, 3, 5, 4))
    assert torch._fused_sdp_choice(q, k, v) == SDPBackend.OVERRIDEABLE.value
    assert torch._fused_sdp_choice(q, k, v, dropout_p=0.1) == SDPBackend.MATH.value
    with sdpa_kernel(SDPBackend.MATH):
        assert torch._fused_sdp_choice(q, k, v) == SDPBackend.MATH.value
    # A request for CUDA's (and CPU's) fused kernels takes tpu's.
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        with sdpa_kernel(backend):
            assert torch._fused_sdp_choice(q, k, v) == SDPBackend.OVERRIDEABLE.value
            assert torch._fused_sdp_choice(q, k, v, dropout_p=0.1) == SDPBackend.MATH.value
            out = F.scaled_dot_product_attention(q, k, v)
        torch.testing.assert_close(out.cpu(), F.scaled_dot_product_attention(q.cpu(), k.cpu(), v.cpu()))


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (3, 5, 4)], ids=["4d", "3d"])
def test_fused_attention_outputs_are_those_of_its_shape_function(shape):
    # DTensor's sharding rules and torch.compile's fake tensors both go by
    # PyTorch's shape function: no cumulative sequence lengths or debug mask
    # (None), a 0-dim seed and offset, a [B, H, L] logsumexp.
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    q = make(shape, torch.float32)
    got = op(to_tpu(q), to_tpu(q), to_tpu(q))
    with torch._subclasses.FakeTensorMode():
        fake = op(*(torch.empty(shape, device="tpu") for _ in range(3)))
    assert len(got) == len(fake)
    for i, (g, f) in enumerate(zip(got, fake)):
        if isinstance(f, torch.Tensor):
            assert (g.shape, g.dtype) == (f.shape, f.dtype), i
        else:
            assert g == f, i


@pytest.mark.parametrize(
    "dtype,causal,backend",
    [(torch.float32, False, SDPBackend.OVERRIDEABLE), (torch.float32, True, SDPBackend.OVERRIDEABLE),
     (torch.bfloat16, False, SDPBackend.OVERRIDEABLE), (torch.bfloat16, True, SDPBackend.OVERRIDEABLE),
     (torch.float64, True, SDPBackend.OVERRIDEABLE),
     (torch.float32, False, SDPBackend.MATH), (torch.float32, True, SDPBackend.MATH)],
    ids=["fused-f32", "fused-f32-causal", "fused-bf16", "fused-bf16-causal", "fused-f64-causal", "math-f32",
         "math-f32-causal"],
)
def test_sdpa(dtype, causal, backend):
    q, k, v = qkv(2, 3, 3, 5, 7 if not causal else 5, 8, dtype, ev=6)
    # f64: the backward recomputes the weights from a logsumexp kept in f64.
    tol = {torch.bfloat16: BF16, torch.float64: dict(rtol=1e-12, atol=1e-12)}.get(dtype, dict(rtol=1e-4, atol=1e-5))

    def fn(q, k, v):
        if q.device.type == "cpu":
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    assert_grads(fn, q, k, v, **tol)


def test_sdpa_backward_stays_accurate_when_the_softmax_saturates():
    # Scores in the thousands: logsumexp's rounding leaves the recomputed
    # weights off by 1e-3, which the backward must not turn into the
    # gradient's own size (it uses the forward's output, as CPU's kernel).
    gen = torch.Generator().manual_seed(0)
    q0, k0 = torch.randn(1, 2, 5, 16, generator=gen) * 30, torch.randn(1, 2, 6, 16, generator=gen) * 30
    v0, g = torch.randn(1, 2, 6, 16, generator=gen), torch.randn(1, 2, 5, 16, generator=gen)

    def grads(device, dtype):
        q, k, v = (t.to(device, dtype).requires_grad_() for t in (q0, k0, v0))
        F.scaled_dot_product_attention(q, k, v).backward(g.to(device, dtype))
        return [t.grad.cpu().double() for t in (q, k, v)]

    for got, exact in zip(grads("tpu", torch.float32), grads("cpu", torch.float64)):
        torch.testing.assert_close(got, exact, rtol=0, atol=1e-4)


def test_sdpa_causal_rectangular_scale_and_3d():
    tol = dict(rtol=1e-4, atol=1e-5)
    for l, s in [(7, 3), (3, 7)]:
        q, k, v = qkv(1, 2, 2, l, s, 4, seed=l)
        assert_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3), q, k, v,
                     **tol)
    q, k, v = (t[0] for t in qkv(1, 2, 2, 5, 3, 4, seed=3))  # [H, L, E]
    assert_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v, **tol)
    q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in qkv(2, 2, 2, 5, 5, 4, seed=8))
    assert_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v, **tol)


@pytest.mark.parametrize("mask_shape", [(5, 7), (2, 1, 5, 7), (1, 3, 1, 7)])
def test_sdpa_masks(mask_shape):
    q, k, v = qkv(2, 3, 3, 5, 7, 4, seed=2)
    tol = dict(rtol=1e-4, atol=1e-5)
    keep = make(mask_shape, seed=9) > -0.5
    assert_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=keep.to(q.device)), q, k, v,
                 **tol)
    additive = make(mask_shape, seed=10)
    assert_grads(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, additive, **tol)


def test_sdpa_fully_masked_rows_and_bf16_mask():
    q, k, v = qkv(1, 2, 2, 3, 5, 4, seed=4)
    keep = torch.ones(3, 5, dtype=torch.bool)
    keep[1] = False
    assert_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=keep.to(q.device)), q, k, v,
                 rtol=1e-4, atol=1e-5)
    qb, kb, vb = (t.bfloat16() for t in (q, k, v))
    assert_same(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), qb, kb, vb,
                make((3, 5), torch.bfloat16, seed=5), **BF16)


def test_sdpa_key_and_value_of_different_lengths_are_refused_by_name():
    q, k, v = (torch.randn(1, 2, n, 4, device="tpu") for n in (3, 5, 6))
    for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
        with sdpa_kernel(backend), pytest.raises(RuntimeError, match=r"scaled_dot_product_attention: key and "
                                                                     r"value must have the same sequence length"):
            F.scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_sdpa_gqa(dtype):
    q, k, v = qkv(2, 6, 2, 5, 4, 8, dtype, seed=6)
    tol = BF16 if dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-5)
    assert_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), q, k, v, **tol)
    assert_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True, is_causal=True), q, k, v,
                 **tol)
    # without enable_gqa the head counts must match, as on CPU
    assert_same(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v)


def test_sdpa_dropout_statistics():
    # q = k = 0: uniform weights 1/S over S positions; v = 1, so each output
    # is (kept count) / (S (1 - p)), with mean 1.
    s, p = 64, 0.25
    q = torch.zeros(2, 4, 32, 8, device="tpu")
    k = torch.zeros(2, 4, s, 8, device="tpu")
    v = torch.ones(2, 4, s, 8, device="tpu")
    torch.manual_seed(0)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p).cpu()
    assert abs(out.mean().item() - 1.0) < 0.03
    # a row keeps about (1 - p) of its S positions
    expected_std = ((p * (1 - p) * s) ** 0.5) / (s * (1 - p))
    assert 0.5 * expected_std < out[..., 0].std().item() < 1.5 * expected_std
    no_dropout = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0).cpu()
    torch.testing.assert_close(no_dropout, torch.ones_like(no_dropout))


def test_sdpa_under_vmap_jvp_and_per_sample_gradients():
    """The fused kernel has no batching rule or forward derivative: under
    torch.func transforms and forward AD, SDPA takes the math path."""
    from torch.func import functional_call, grad, jvp, vmap

    q = torch.randn(3, 2, 5, 4, generator=torch.Generator().manual_seed(0))
    attend = functools.partial(lambda a: F.scaled_dot_product_attention(a, a, a, is_causal=True))
    torch.testing.assert_close(vmap(attend)(to_tpu(q)).cpu(), vmap(attend)(q), rtol=1e-5, atol=1e-5)
    q3, t3 = q[0], torch.ones_like(q[0])  # 3-D: CPU's choice is its math path too
    torch.testing.assert_close(jvp(attend, (to_tpu(q3),), (to_tpu(t3),))[1].cpu(), jvp(attend, (q3,), (t3,))[1],
                               rtol=1e-5, atol=1e-5)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    on_tpu = copy.deepcopy(layer).to("tpu")
    x = torch.randn(3, 4, 8)

    def per_sample_grads(model, inputs):
        params = {k: v.detach() for k, v in model.named_parameters()}
        loss = lambda p, xi: functional_call(model, p, (xi[None],)).pow(2).mean()
        return vmap(grad(loss), in_dims=(None, 0))(params, inputs)

    want, got = per_sample_grads(layer, x), per_sample_grads(on_tpu, to_tpu(x))
    for name in want:
        torch.testing.assert_close(got[name].cpu(), want[name], rtol=1e-4, atol=1e-5, msg=name)


def test_sdpa_double_backward_on_3d_inputs():
    """3-D inputs take the math path, as on CPU and CUDA, so gradients of
    gradients (gradient penalties, MAML) work through them."""
    q, k, v = (torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(s)) for s in (1, 2, 3))

    def grad_norm(q, k, v):
        q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        (gq,) = torch.autograd.grad(out.pow(2).sum(), q, create_graph=True)
        (ggk,) = torch.autograd.grad(gq.pow(2).sum(), k)
        return ggk

    torch.testing.assert_close(grad_norm(*to_tpu((q, k, v))).cpu(), grad_norm(q, k, v), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_inference_fast_path(norm_first, activation):
    """In eval mode without grad, nn.TransformerEncoder(Layer) runs the fused
    _transformer_encoder_layer_fwd op. CPU packs a padded batch into a
    nested tensor and returns zeros at the padding; tpu tensors cannot be
    nested, so the tpu result matches CPU's everywhere but the padding."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=norm_first, activation=activation)
    nested = nn.TransformerEncoder(layer, 2).eval()  # enable_nested_tensor: CPU packs padded batches
    padded = copy.deepcopy(nested)
    padded.use_nested_tensor = False
    on_tpu = copy.deepcopy(nested).to("tpu")
    x = torch.randn(4, 5, 8)
    padding = torch.zeros(4, 5, dtype=torch.bool)
    padding[1, -2:] = True
    padding[3, -1] = True
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    tol = dict(rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(on_tpu(to_tpu(x)).cpu(), padded(x), **tol)
        torch.testing.assert_close(on_tpu(to_tpu(x), mask=to_tpu(causal)).cpu(), padded(x, mask=causal), **tol)
        got = on_tpu(to_tpu(x), src_key_padding_mask=to_tpu(padding)).cpu()
        torch.testing.assert_close(got, padded(x, src_key_padding_mask=padding), **tol)
        torch.testing.assert_close(got[~padding], nested(x, src_key_padding_mask=padding)[~padding], **tol)
        torch.testing.assert_close(on_tpu.layers[0](to_tpu(x)).cpu(), nested.layers[0](x), **tol)
        transformer = nn.Transformer(8, 2, 1, 1, 16, batch_first=True, norm_first=norm_first).eval()
        torch.testing.assert_close(copy.deepcopy(transformer).to("tpu")(to_tpu(x), to_tpu(x)).cpu(),
                                   transformer(x, x), **tol)


def test_multi_head_attention_inference_fast_path():
    """nn.MultiheadAttention's self-attention in eval mode without grad runs
    _native_multi_head_attention: outputs and (averaged or per-head)
    weights as CPU's fast path gives them, with padding and causal masks."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    on_tpu = copy.deepcopy(mha).to("tpu")
    x = torch.randn(4, 5, 8)
    padding = torch.zeros(4, 5, dtype=torch.bool)
    padding[1, -2:] = True
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    everything = padding.clone()
    everything[2] = True  # a row with no key to attend to: NaN on CPU, in eval and training mode
    cases = [{}, {"need_weights": False}, {"average_attn_weights": False}, {"key_padding_mask": padding},
             {"attn_mask": causal}, {"attn_mask": causal.bool(), "key_padding_mask": padding},
             {"key_padding_mask": everything}, {"key_padding_mask": everything, "need_weights": False}]
    with torch.inference_mode():
        for kw in cases:
            want = mha(x, x, x, **kw)
            xt = to_tpu(x)
            got = on_tpu(xt, xt, xt, **{k: to_tpu(v) if isinstance(v, torch.Tensor) else v for k, v in kw.items()})
            torch.testing.assert_close(got[0].cpu(), want[0], rtol=1e-5, atol=1e-5, equal_nan=True, msg=str(list(kw)))
            assert (got[1] is None) == (want[1] is None), kw
            if want[1] is not None:
                torch.testing.assert_close(got[1].cpu(), want[1], rtol=1e-5, atol=1e-6, equal_nan=True,
                                           msg=str(list(kw)))
        with pytest.raises(RuntimeError, match="mask_type 2 expects a merged mask"):  # as CPU refuses it
            torch._native_multi_head_attention(xt, xt, xt, 8, 2, on_tpu.in_proj_weight, on_tpu.in_proj_bias,
                                               on_tpu.out_proj.weight, on_tpu.out_proj.bias,
                                               to_tpu(causal.bool()), mask_type=2)
        with pytest.raises(RuntimeError, match="_native_multi_head_attention.*divisible"):
            w = on_tpu.in_proj_weight
            torch._native_multi_head_attention(xt, xt, xt, 8, 3, w, on_tpu.in_proj_bias, on_tpu.out_proj.weight,
                                               on_tpu.out_proj.bias)


@pytest.mark.parametrize("mask_type", [0, 1, 2, None])
@pytest.mark.parametrize("dim", [3, 1])
def test_masked_softmax_as_cpu(mask_type, dim):
    """torch._masked_softmax (the Transformer fast paths' softmax): an (L, L)
    attention mask, a (B, L) padding mask or a full mask; a row masked whole
    is NaN on CPU. The backward takes a full mask, as CPU's does."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 4, dtype=torch.float64)
    full = torch.rand(2, 3, 4, 4) > 0.5
    full[0, 0, 0] = True
    mask = {0: full[0, 0], 1: full[:, 0, 0]}.get(mask_type, full)
    want = torch._masked_softmax(x, mask, dim, mask_type)
    got = torch._masked_softmax(to_tpu(x), to_tpu(mask), dim, mask_type)
    torch.testing.assert_close(got.cpu(), want, equal_nan=True)
    if mask_type in (2, None):
        xc, xt = x.clone().requires_grad_(), to_tpu(x).requires_grad_()
        g = torch.randn_like(want)
        torch._masked_softmax(xc, mask, dim, mask_type).backward(g)
        torch._masked_softmax(xt, to_tpu(mask), dim, mask_type).backward(to_tpu(g))
        torch.testing.assert_close(xt.grad.cpu(), xc.grad, equal_nan=True)


def test_masked_softmax_errors():
    x = torch.randn(2, 3, 4, 4, device="tpu")
    with pytest.raises(RuntimeError, match="_masked_softmax: Mask Type should be defined"):
        torch._masked_softmax(x, torch.zeros(2, 4, dtype=torch.bool, device="tpu"))
    with pytest.raises(RuntimeError, match="_masked_softmax: for mask_type == 1 mask shape should be"):
        torch._masked_softmax(x, torch.zeros(3, 4, dtype=torch.bool, device="tpu"), 3, 1)
    with pytest.raises(RuntimeError, match="_masked_softmax: Mask should be a boolean tensor"):
        torch._masked_softmax(x, torch.zeros_like(x))
    with pytest.raises(NotImplementedError, match="masked_softmax.*Long"):
        torch._masked_softmax(x.long(), torch.zeros_like(x, dtype=torch.bool))


# ---- margin losses with their own kernels -----------------------------------------------------


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multi_margin_loss(reduction):
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    target = torch.tensor([1, 0, 5, 3])
    weight = torch.rand(6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    for p in (1, 2):
        tpu_testing.assert_grads(lambda a: F.multi_margin_loss(a, target.to(a.device), p=p, margin=0.7,
                                                               reduction=reduction), x)
        tpu_testing.assert_grads(lambda a, w: F.multi_margin_loss(a, target.to(a.device), p=p, weight=w,
                                                                  reduction=reduction), x, weight, constant=(1,))
    tpu_testing.assert_grads(lambda a: F.multi_margin_loss(a, target[0].to(a.device), reduction=reduction), x[0])
    tpu_testing.assert_grads(lambda a: F.multi_margin_loss(a, target[:1].to(a.device), reduction=reduction), x[0])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss(reduction):
    # Lists end at the first -1; a repeated class counts twice, as on CPU.
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    target = torch.tensor([[3, 0, -1, 1, 2, 4], [1, 2, 3, 4, 0, 5], [-1, 1, 2, 3, 4, 5], [2, 2, -1, 0, 0, 0]])
    tpu_testing.assert_grads(lambda a: F.multilabel_margin_loss(a, target.to(a.device), reduction=reduction), x)
    tpu_testing.assert_grads(lambda a: F.multilabel_margin_loss(a, target[0].to(a.device), reduction=reduction), x[0])
    assert_same(lambda a, t: torch.ops.aten.multilabel_margin_loss_forward(a, t, 0), x, target)


def test_multi_margin_loss_margins_that_differ_in_far_digits():
    # The margin is a constant of the program: nearby margins get their own.
    x, y = torch.zeros(1, 3), torch.tensor([0])
    for margin in (1e-7, 4e-7, 0.3000001, 0.3000004):
        assert_same(lambda a, t: F.multi_margin_loss(a, t, margin=margin), x, y, rtol=1e-6, atol=0)


def test_margin_loss_errors():
    x = torch.randn(3, 5)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(to_tpu(x), torch.tensor([1, 0, 5], device="tpu")).item()
    with pytest.raises(RuntimeError, match="'target' is out of range"):
        F.multilabel_margin_loss(to_tpu(x), torch.tensor([[7, -1, 0, 0, 0]] * 3, device="tpu")).item()
    with pytest.raises(RuntimeError, match="'target' is out of range"):  # checked past the -1 too, as CPU
        F.multilabel_margin_loss(to_tpu(x), torch.tensor([[2, -1, 9, 0, 0]] * 3, device="tpu")).item()
    assert_same(lambda a, t: F.multi_margin_loss(a, t), x, torch.tensor([1, 0]))
    assert_same(lambda a, t, w: F.multi_margin_loss(a, t, weight=w), x, torch.tensor([1, 0, 4]), torch.ones(4))
    assert_same(lambda a, t: F.multilabel_margin_loss(a, t), x, torch.tensor([[1, 0, -1]] * 3))
    assert_same(lambda a, t: F.multi_margin_loss(a, t), torch.randn(2, 3, 4), torch.tensor([1, 0]))


def test_forward_ad_missing_tangents_are_exact_zeros():
    # A missing tangent is a ZeroTensor, as on CPU and CUDA: multiplied by
    # an infinite value it stays 0 (a zero-filled tensor would give NaN).
    from torch.func import jacfwd, jvp

    x = torch.tensor([float("inf"), 1.0, 2.0])
    y = torch.tensor([2.0, 0.0, 3.0])
    got = jvp(lambda a: a * to_tpu(y), (to_tpu(x),), (to_tpu(torch.ones(3)),))[1].cpu()
    assert torch.equal(got, jvp(lambda a: a * y, (x,), (torch.ones(3),))[1])

    mask = torch.ones(3, 3, dtype=torch.bool).triu(1)
    s, scale = torch.randn(3, 3), torch.tensor(0.5)

    def attention(z, m, c):
        return (z.masked_fill(m, float("-inf")) * c).softmax(-1)

    want = jvp(lambda z: attention(z, mask, scale), (s,), (torch.ones(3, 3),))[1]
    got = jvp(lambda z: attention(z, to_tpu(mask), to_tpu(scale)), (to_tpu(s),), (to_tpu(torch.ones(3, 3)),))[1]
    torch.testing.assert_close(got.cpu(), want)

    target = torch.tensor([0.0, 1.0, 1.0])
    logits = torch.tensor([-40.0, 0.0, 40.0])
    want = jacfwd(lambda v: F.binary_cross_entropy(torch.sigmoid(v), target))(logits)
    got = jacfwd(lambda v: F.binary_cross_entropy(torch.sigmoid(v), to_tpu(target)))(to_tpu(logits))
    torch.testing.assert_close(got.cpu(), want)
    assert torch._efficientzerotensor((2,), device="tpu")._is_zerotensor()
