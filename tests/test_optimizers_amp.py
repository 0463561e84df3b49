"""_foreach_ ops (one program per list), fused optimizers, torch.optim's
foreach / fused steps, clip_grad_norm_, autocast and GradScaler on tpu,
against PyTorch's CPU results."""

from __future__ import annotations

import pytest
import torch

from torch_tpu import runtime
from tpu_testing import assert_same, to_tpu


def rand(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def tensors(dtype=None, seed=0):
    """A list with a matrix, a non-contiguous view, a vector, a 0-dim and an
    empty tensor; f32 and bf16 mixed in one list (one program) unless `dtype`."""
    f32, bf16 = dtype or torch.float32, dtype or torch.bfloat16
    return [
        rand(3, 4, dtype=f32, seed=seed),
        rand(4, 3, dtype=bf16, seed=seed + 1).t(),
        rand(5, dtype=f32, seed=seed + 2),
        rand((), dtype=bf16, seed=seed + 3),
        rand(0, 2, dtype=f32, seed=seed + 4),
    ]


def positive(dtype=None, seed=0):
    return [t.abs() + 0.5 for t in tensors(dtype, seed)]


def requests():
    return runtime.cache_stats()["requests"]


def inplace(op, *rest, **kw):
    """A function applying the in-place foreach op to clones of its first list."""

    def fn(xs, *args):
        xs = [x.clone() for x in xs]
        op(xs, *args, *rest, **kw)
        return xs

    return fn




# ---- binary ops ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_binary_scalar_and_scalarlist(name):
    f = getattr(torch, f"_foreach_{name}")
    f_ = getattr(torch, f"_foreach_{name}_")
    xs = positive()
    assert_same(lambda x: f(x, 0.7), xs)
    assert_same(inplace(f_, -1.25), xs)
    scalars = [0.5, -2.0, 3, 1.5, 0.25]
    assert_same(lambda x: f(x, scalars), xs)
    assert_same(inplace(f_, scalars), xs)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_binary_list(name):
    f = getattr(torch, f"_foreach_{name}")
    f_ = getattr(torch, f"_foreach_{name}_")
    a, b = positive(), positive(seed=10)
    assert_same(f, a, b)
    assert_same(inplace(f_), a, b)
    if name in ("add", "sub"):
        assert_same(lambda x, y: f(x, y, alpha=0.3), a, b)
        assert_same(inplace(f_, alpha=-2), a, b)


@pytest.mark.parametrize("name", ["add", "mul", "div"])
def test_binary_tensor_overload(name):
    f = getattr(torch, f"_foreach_{name}")
    f_ = getattr(torch, f"_foreach_{name}_")
    xs = positive()
    s = torch.tensor(1.75)
    assert_same(f, xs, s)  # a tpu 0-dim tensor
    assert_same(inplace(f_), xs, s)
    assert_same(lambda x: f(x, torch.tensor(0.5)), xs)  # a CPU 0-dim tensor


def test_integer_lists_and_promotion():
    ints = [torch.arange(6).reshape(2, 3), torch.arange(4) - 2]
    assert_same(lambda x: torch._foreach_add(x, 2), ints)
    assert_same(lambda x: torch._foreach_mul(x, 2.5), ints)  # promotes to float
    assert_same(lambda x: torch._foreach_div(x, 2), ints)  # true division
    assert_same(inplace(torch._foreach_add_, 3), ints)
    assert_same(inplace(torch._foreach_div_, 2), ints)  # float into int: error like CPU


def test_mixed_dtypes_in_one_list_are_one_program():
    xs = [rand(3, dtype=torch.float32), rand(2, 2, dtype=torch.bfloat16, seed=1), rand(4, dtype=torch.float16, seed=2)]
    assert_same(lambda x: torch._foreach_mul(x, 3.0), xs)
    ys = [x.clone() for x in xs]
    assert_same(torch._foreach_add, xs, ys)
    xt = to_tpu(xs)
    torch._foreach_mul_(xt, 2.0)  # compile once
    before = requests()
    torch._foreach_mul_(xt, 0.5)
    assert requests() - before == 1


def test_list_errors_like_cpu():
    a, b = positive(), positive(seed=3)
    assert_same(torch._foreach_add, a, b[:2])  # lengths differ
    assert_same(lambda x: torch._foreach_add(x, [1.0, 2.0]), a)  # a scalar list of another length


# ---- pointwise -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addcmul_addcdiv(name):
    f = getattr(torch, f"_foreach_{name}")
    f_ = getattr(torch, f"_foreach_{name}_")
    s, t1, t2 = positive(), positive(seed=5), positive(seed=9)
    assert_same(f, s, t1, t2)
    assert_same(lambda a, b, c: f(a, b, c, value=-0.5), s, t1, t2)
    assert_same(inplace(f_, value=2), s, t1, t2)
    values = [0.1, -1.0, 2.0, 0.5, 3.0]
    assert_same(inplace(f_, values), s, t1, t2)
    assert_same(inplace(f_, torch.tensor(values)), s, t1, t2)  # the Tensor overload (CPU values)


def test_lerp():
    a, b = tensors(), tensors(seed=7)
    assert_same(lambda x, y: torch._foreach_lerp(x, y, 0.3), a, b)
    assert_same(inplace(torch._foreach_lerp_, 0.9), a, b)
    w = [torch.rand(t.shape, generator=torch.Generator().manual_seed(i)).to(t.dtype) for i, t in enumerate(a)]
    assert_same(inplace(torch._foreach_lerp_), a, b, w)


def test_unary():
    xs, ps = tensors(), positive()
    for name in ["sqrt", "exp", "reciprocal"]:
        assert_same(getattr(torch, f"_foreach_{name}"), ps)
        assert_same(inplace(getattr(torch, f"_foreach_{name}_")), ps)
    for name in ["neg", "abs", "sign"]:
        assert_same(getattr(torch, f"_foreach_{name}"), xs)
        assert_same(inplace(getattr(torch, f"_foreach_{name}_")), xs)


def test_unary_of_integers():
    ints = [torch.arange(5) - 2, torch.arange(4).reshape(2, 2)]
    assert_same(torch._foreach_neg, ints)
    assert_same(torch._foreach_abs, ints)
    assert_same(torch._foreach_sqrt, [i.abs() for i in ints])  # to the default float
    assert_same(inplace(torch._foreach_sqrt_), ints)  # float into int: error like CPU


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_maximum_minimum_clamp(dtype):
    a, b = [t.mul(4).to(dtype) for t in tensors()], [t.mul(4).to(dtype) for t in tensors(seed=20)]
    assert_same(torch._foreach_maximum, a, b)
    assert_same(inplace(torch._foreach_maximum_), a, b)
    assert_same(inplace(torch._foreach_minimum_), a, b)
    assert_same(inplace(torch._foreach_clamp_min_, -1), a)
    assert_same(inplace(torch._foreach_clamp_max_, 1), a)
    assert_same(lambda x: torch._foreach_clamp_max(x, [1, 2, 3, 0, 1]), a)


def test_maximum_propagates_nan():
    a = [torch.tensor([1.0, float("nan"), 2.0])]
    b = [torch.tensor([float("nan"), 1.0, 3.0])]
    assert_same(torch._foreach_maximum, a, b)


def test_pow():
    xs = positive()
    assert_same(lambda x: torch._foreach_pow(x, 2.0), xs)
    assert_same(lambda x: torch._foreach_pow(x, 1.7), xs)
    assert_same(lambda x: torch._foreach_pow(x, [1.0, 2.0, 0.5, 3.0, 2.0]), xs)
    assert_same(torch._foreach_pow, xs, positive(seed=4))
    assert_same(lambda x: torch._foreach_pow(0.9, x), xs)  # Scalar base (Adam's bias corrections)


@pytest.mark.parametrize("ord", [2, 1, float("inf")], ids=str)
def test_norm(ord):
    xs = tensors()[:4]  # an empty tensor has no inf norm
    assert_same(lambda x: torch._foreach_norm(x, ord), xs)


def test_norm_with_dtype_and_empty():
    xs = tensors(torch.bfloat16)
    assert_same(lambda x: torch._foreach_norm(x, 2, dtype=torch.float32), xs)
    assert_same(lambda x: torch._foreach_norm(x, float("inf")), xs)  # empty: CPU's error


def test_zero_and_copy():
    xs, ys = tensors(), tensors(torch.bfloat16, seed=3)
    assert_same(inplace(torch._foreach_zero_), xs)
    assert_same(inplace(torch._foreach_copy_), xs, ys)
    # non-contiguous destinations are written through their views
    base = rand(4, 6)
    dsts_cpu = [base.clone()[:, ::2], base.clone().t()]
    srcs = [rand(4, 3, seed=1), rand(6, 4, seed=2)]
    dsts_tpu = to_tpu(dsts_cpu)
    torch._foreach_copy_(dsts_cpu, srcs)
    torch._foreach_copy_(dsts_tpu, to_tpu(srcs))
    for d, e in zip(dsts_tpu, dsts_cpu):
        torch.testing.assert_close(d.cpu(), e)


@pytest.mark.parametrize("update", [
    lambda xs: torch._foreach_mul_(xs, 2.0),
    lambda xs: torch._foreach_add_(xs, xs, alpha=0.5),
    lambda xs: torch._foreach_exp_(xs),
    lambda xs: torch._foreach_addcmul_(xs, xs, xs, value=0.1),
    lambda xs: torch._foreach_lerp_(xs, [torch.zeros_like(x) for x in xs], 0.5),
    lambda xs: torch._foreach_zero_(xs),
])
def test_inplace_lists_bump_versions_so_autograd_sees_them(update):
    # An in-place list update of a tensor saved for backward must make the
    # backward fail, as on CPU and CUDA, not use the updated values.
    def run(device):
        x = torch.randn(4, 3, generator=torch.Generator().manual_seed(0)).to(device).requires_grad_()
        y = x.exp()  # saves its result
        before = y._version
        update([y])
        assert y._version > before
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()

    run("cpu")
    run("tpu")


def test_foreach_copy_bumps_versions():
    xs = [torch.zeros(3, device="tpu"), torch.zeros(2, 2, device="tpu")]
    torch._foreach_copy_(xs, [torch.ones(3, device="tpu"), torch.ones(2, 2, device="tpu")])
    assert [x._version for x in xs] == [1, 1]


def test_optimizer_step_before_backward_is_detected():
    w = torch.tensor([1.0, 2.0, 3.0], device="tpu", requires_grad=True)
    opt = torch.optim.Adam([w], lr=0.1, foreach=True)
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_one_program_per_list_call():
    xs = to_tpu([rand(3, 4, seed=i) for i in range(8)])
    ys = to_tpu([rand(3, 4, seed=10 + i) for i in range(8)])
    for lr in (0.1, 0.2):  # the second call is a cache hit: a runtime scalar
        before = runtime.cache_stats()
        torch._foreach_add_(xs, ys, alpha=-lr)
        torch._foreach_mul_(xs, 1 - lr)
        torch._foreach_addcdiv_(xs, ys, ys, [lr] * 8)
        torch._foreach_norm(xs)
        after = runtime.cache_stats()
        assert after["requests"] - before["requests"] == 4
    assert after["compiles"] == before["compiles"]


# ---- optimizers ----------------------------------------------------------------------------------


def make_params(shapes=((4, 3), (3,), (2, 2, 2)), dtype=torch.float32):
    return [rand(*s, dtype=dtype, seed=i + 1).requires_grad_() for i, s in enumerate(shapes)]


def run_steps(make_opt, steps=3, shapes=((4, 3), (3,), (2, 2, 2)), scheduler=None):
    """The same optimizer on CPU and tpu parameters over `steps` steps."""
    pc = make_params(shapes)
    pt = [p.detach().to("tpu").requires_grad_() for p in pc]
    oc, ot = make_opt(pc, "cpu"), make_opt(pt, "tpu")
    sc = scheduler(oc) if scheduler else None
    st = scheduler(ot) if scheduler else None
    for step in range(steps):
        for i, (a, b) in enumerate(zip(pc, pt)):
            g = rand(*a.shape, seed=100 * step + i)
            a.grad = g.clone()
            b.grad = g.to("tpu")
        oc.step()
        ot.step()
        if sc:
            sc.step()
            st.step()
    for a, b in zip(pc, pt):
        torch.testing.assert_close(b.detach().cpu(), a.detach(), rtol=2e-5, atol=2e-6)
    return pc, pt, oc, ot


FOREACH = {
    "sgd": lambda p, kw: torch.optim.SGD(p, lr=0.1, **kw),
    "sgd_momentum_nesterov_wd": lambda p, kw: torch.optim.SGD(
        p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, **kw
    ),
    "sgd_momentum_dampening_maximize": lambda p, kw: torch.optim.SGD(
        p, lr=0.05, momentum=0.8, dampening=0.1, maximize=True, **kw
    ),
    "adam": lambda p, kw: torch.optim.Adam(p, lr=0.01, **kw),
    "adam_amsgrad_wd": lambda p, kw: torch.optim.Adam(p, lr=0.01, amsgrad=True, weight_decay=0.1, **kw),
    "adamw": lambda p, kw: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1, **kw),
    "adamw_amsgrad_maximize": lambda p, kw: torch.optim.AdamW(p, lr=0.01, amsgrad=True, maximize=True, **kw),
    "adagrad": lambda p, kw: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.01, weight_decay=0.05, **kw),
    "rmsprop": lambda p, kw: torch.optim.RMSprop(p, lr=0.01, **kw),
    "rmsprop_centered_momentum": lambda p, kw: torch.optim.RMSprop(
        p, lr=0.01, centered=True, momentum=0.9, weight_decay=0.01, **kw
    ),
}


@pytest.mark.parametrize("name", FOREACH)
def test_foreach_optimizers_match_cpu(name):
    run_steps(lambda p, dev: FOREACH[name](p, {"foreach": True}))


FUSED = {
    "adam": lambda p, kw: torch.optim.Adam(p, lr=0.01, **kw),
    "adam_amsgrad_wd_maximize": lambda p, kw: torch.optim.Adam(
        p, lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True, **kw
    ),
    "adamw": lambda p, kw: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1, **kw),
    "adamw_amsgrad": lambda p, kw: torch.optim.AdamW(p, lr=0.01, amsgrad=True, **kw),
    "sgd": lambda p, kw: torch.optim.SGD(p, lr=0.1, **kw),
    "sgd_momentum_nesterov_wd": lambda p, kw: torch.optim.SGD(
        p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, **kw
    ),
    "sgd_momentum_dampening_maximize": lambda p, kw: torch.optim.SGD(
        p, lr=0.05, momentum=0.8, dampening=0.1, maximize=True, **kw
    ),
    "adagrad": lambda p, kw: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.01, weight_decay=0.05, **kw),
}


@pytest.mark.parametrize("name", FUSED)
def test_fused_optimizers_match_cpu(name):
    run_steps(lambda p, dev: FUSED[name](p, {"fused": True}))


def test_fused_adam_with_tensor_lr():
    run_steps(lambda p, dev: torch.optim.Adam(p, lr=torch.tensor(0.01), fused=True))
    run_steps(lambda p, dev: torch.optim.AdamW(p, lr=torch.tensor(0.01, device=dev), fused=True))
    # a 1-element lr of shape [1]: the kernel reshapes it to 0-dim (a temporary the call must keep)
    run_steps(lambda p, dev: torch.optim.AdamW(p, lr=torch.tensor([0.01], device=dev), fused=True))


def test_fused_adam_bf16_params():
    pc = make_params(dtype=torch.bfloat16)
    pt = [p.detach().to("tpu").requires_grad_() for p in pc]
    oc, ot = torch.optim.Adam(pc, lr=0.01, fused=True), torch.optim.Adam(pt, lr=0.01, fused=True)
    for step in range(2):
        for i, (a, b) in enumerate(zip(pc, pt)):
            g = rand(*a.shape, dtype=torch.bfloat16, seed=step * 10 + i)
            a.grad, b.grad = g.clone(), g.to("tpu")
        oc.step()
        ot.step()
    for a, b in zip(pc, pt):
        torch.testing.assert_close(b.detach().cpu(), a.detach(), rtol=1.6e-2, atol=1e-2)


def programs_per_step(make_opt, n_params):
    p = [rand(3, 2, seed=i).to("tpu").requires_grad_() for i in range(n_params)]
    opt = make_opt(p)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)  # lr changes every step
    counts, compiles = [], None
    for step in range(4):
        for i, x in enumerate(p):
            x.grad = rand(3, 2, seed=50 + step * 10 + i).to("tpu")
        if step == 2:
            compiles = runtime.cache_stats()["compiles"]
        before = requests()
        opt.step()
        counts.append(requests() - before)
        sched.step()
    p[0].detach().cpu()
    assert runtime.cache_stats()["compiles"] == compiles, "a changing lr must not recompile"
    return counts[-1]


@pytest.mark.parametrize(
    "name,make,limit",
    [
        ("adam_foreach", lambda p: torch.optim.Adam(p, lr=0.01, foreach=True), 12),
        ("adamw_fused", lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1, fused=True), 3),
        ("sgd_fused", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, fused=True), 2),
        ("sgd_foreach", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=True), 6),
    ],
)
def test_programs_per_step_are_few_and_do_not_recompile(name, make, limit):
    few, many = programs_per_step(make, 2), programs_per_step(make, 7)
    assert few == many, "the number of programs must not grow with the number of parameters"
    assert many <= limit


def test_lr_scheduler_matches_cpu():
    run_steps(
        lambda p, dev: torch.optim.Adam(p, lr=0.05, fused=True),
        steps=4,
        scheduler=lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5),
    )


def test_fused_errors():
    p = [torch.zeros(3, device="tpu")]
    with pytest.raises(RuntimeError):
        torch._fused_adam_(p, [torch.zeros(2, device="tpu")], p, p, [], [torch.zeros((), device="tpu")],
                           lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False,
                           maximize=False)


# ---- clip_grad_norm_ -----------------------------------------------------------------------------


@pytest.mark.parametrize("norm_type", [2.0, float("inf")], ids=str)
def test_clip_grad_norm_matches_cpu(norm_type):
    pc = make_params()
    pt = [p.detach().to("tpu").requires_grad_() for p in pc]
    for i, (a, b) in enumerate(zip(pc, pt)):
        g = rand(*a.shape, seed=i) * 3
        a.grad, b.grad = g.clone(), g.to("tpu")
    nc = torch.nn.utils.clip_grad_norm_(pc, max_norm=1.0, norm_type=norm_type, foreach=True)
    nt = torch.nn.utils.clip_grad_norm_(pt, max_norm=1.0, norm_type=norm_type, foreach=True)
    torch.testing.assert_close(nt.cpu(), nc)
    for a, b in zip(pc, pt):
        torch.testing.assert_close(b.grad.cpu(), a.grad)


def test_clip_grad_value_matches_cpu():
    pc = make_params()
    pt = [p.detach().to("tpu").requires_grad_() for p in pc]
    for i, (a, b) in enumerate(zip(pc, pt)):
        g = rand(*a.shape, seed=i) * 3
        a.grad, b.grad = g.clone(), g.to("tpu")
    torch.nn.utils.clip_grad_value_(pc, 0.5, foreach=True)
    torch.nn.utils.clip_grad_value_(pt, 0.5, foreach=True)
    for a, b in zip(pc, pt):
        torch.testing.assert_close(b.grad.cpu(), a.grad)


# ---- autocast ------------------------------------------------------------------------------------


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16], ids=str)
def test_autocast_policy_dtypes(low):
    a, b = rand(4, 8).to("tpu"), rand(8, 3, seed=1).to("tpu")
    w, bias = rand(5, 8, seed=2).to("tpu"), rand(5, seed=3).to("tpu")
    with torch.autocast("tpu", dtype=low):
        assert torch.mm(a, b).dtype == low
        assert (a @ b).dtype == low
        assert torch.nn.functional.linear(a, w, bias).dtype == low
        assert torch.addmm(rand(3).to("tpu"), a, b).dtype == low
        assert torch.bmm(a[None], b[None]).dtype == low
        h = torch.mm(a, b)
        assert torch.softmax(h, -1).dtype == torch.float32
        assert torch.log_softmax(h, -1).dtype == torch.float32
        assert torch.exp(h).dtype == torch.float32
        assert h.sum().dtype == torch.float32
        assert torch.nn.functional.layer_norm(h, (3,)).dtype == torch.float32
        assert torch.nn.functional.mse_loss(h, h.float()).dtype == torch.float32
        # promote: the widest input type
        assert torch.addcmul(h, h, a[:, :3]).dtype == torch.float32
        assert torch.addcmul(h, h, h).dtype == low
        # other ops run in whatever type they get
        assert torch.relu(h).dtype == low
        assert (a + 1).dtype == torch.float32
        assert torch.cat([h, h]).dtype == low
    assert torch.mm(a, b).dtype == torch.float32  # off again


def test_autocast_default_dtype_is_bfloat16_in_every_thread():
    """torch.autocast("tpu") without a dtype casts to bfloat16 (PyTorch's
    default for an accelerator it does not know is float16); PyTorch keeps
    the dtype per thread, and a thread's own choice stays its own."""
    import threading

    seen = {}

    def check(name, explicit=None):
        a = torch.ones(2, 2, device="tpu")
        if explicit is not None:
            torch.set_autocast_dtype("tpu", explicit)
        seen[name] = [torch.get_autocast_dtype("tpu")]
        with torch.autocast("tpu"):
            seen[name].append((a @ a).dtype)
        seen[name].append(torch.get_autocast_dtype("tpu"))  # restored on exit

    for name, explicit in (("default", None), ("float16", torch.float16), ("default again", None)):
        t = threading.Thread(target=check, args=(name, explicit))
        t.start()
        t.join()
    assert seen["default"] == [torch.bfloat16] * 3
    assert seen["float16"] == [torch.float16] * 3
    assert seen["default again"] == [torch.bfloat16] * 3
    assert torch.get_autocast_dtype("cpu") == torch.bfloat16  # other devices' unchanged
    assert torch.get_autocast_dtype("cuda") == torch.float16

    def region(x):
        with torch.autocast("tpu"):
            return x @ x

    assert torch.compile(region, backend="tpu")(torch.ones(2, 2, device="tpu")).dtype == torch.bfloat16


def test_autocast_values_match_cpu_autocast():
    a, b = rand(4, 8), rand(8, 3, seed=1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = torch.mm(a, b)
    with torch.autocast("tpu", dtype=torch.bfloat16):
        actual = torch.mm(a.to("tpu"), b.to("tpu"))
    assert actual.dtype == expected.dtype == torch.bfloat16
    torch.testing.assert_close(actual.cpu(), expected)


def test_autocast_backward_gives_f32_grads():
    w = rand(3, 8).to("tpu").requires_grad_()
    x = rand(4, 8, seed=1).to("tpu")
    with torch.autocast("tpu", dtype=torch.bfloat16):
        y = torch.nn.functional.linear(x, w)
        loss = y.float().pow(2).mean()
    loss.backward()
    assert w.grad.dtype == torch.float32
    wc = w.detach().cpu().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        lc = torch.nn.functional.linear(x.cpu(), wc).float().pow(2).mean()
    lc.backward()
    torch.testing.assert_close(w.grad.cpu(), wc.grad, rtol=2e-2, atol=2e-2)


def test_autocast_bce_is_refused():
    p = torch.rand(4).to("tpu")
    with torch.autocast("tpu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            torch.nn.functional.binary_cross_entropy(p, p)


# ---- GradScaler ----------------------------------------------------------------------------------


def test_amp_unscale_and_check_matches_cpu():
    def fn(grads, found, inv):
        grads = [g.clone() for g in grads]
        found = found.clone()
        torch._amp_foreach_non_finite_check_and_unscale_(grads, found, inv)
        return grads + [found]

    grads = [rand(3, 4), rand(5, seed=1), rand(2, dtype=torch.bfloat16, seed=2)]
    assert_same(fn, grads, torch.tensor(0.0), torch.tensor(0.25))
    bad = [rand(3, 4), torch.tensor([1.0, float("inf")])]
    assert_same(fn, bad, torch.tensor(0.0), torch.tensor(0.5))
    nan = [torch.tensor([float("nan")]), rand(2)]
    assert_same(fn, nan, torch.tensor(0.0), torch.tensor(0.5))


def test_amp_update_scale_matches_cpu():
    def run(device):
        scale = torch.tensor(1024.0, device=device)
        tracker = torch.tensor(0, dtype=torch.int32, device=device)
        out = []
        for found in [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]:
            torch._amp_update_scale_(scale, tracker, torch.tensor(found, device=device), 2.0, 0.5, 2)
            out.append((scale.item(), tracker.item()))
        return out

    assert run("tpu") == run("cpu")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def train(device, fused, steps=5):
    net = Net().to(device)
    opt = torch.optim.AdamW(net.parameters(), lr=0.01, fused=fused, foreach=None if fused else True)
    scaler = torch.amp.GradScaler(device, init_scale=256.0)
    x = rand(16, 8, seed=1).to(device)
    y = rand(16, 4, seed=2).to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast(device, dtype=torch.bfloat16):
            out = net(x)
            loss = torch.nn.functional.mse_loss(out, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("fused", [False, True], ids=["foreach", "fused"])
def test_training_with_autocast_and_grad_scaler_matches_cpu(fused):
    expected = train("cpu", fused)
    actual = train("tpu", fused)
    assert actual[-1] < actual[0]
    torch.testing.assert_close(torch.tensor(actual), torch.tensor(expected), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("fused", [False, True], ids=["foreach", "fused"])
def test_grad_scaler_skips_step_with_inf_grads(fused):
    net = Net().to("tpu")
    opt = torch.optim.Adam(net.parameters(), lr=0.1, fused=fused, foreach=None if fused else True)
    scaler = torch.amp.GradScaler("tpu", init_scale=128.0)
    before = [p.detach().cpu().clone() for p in net.parameters()]
    with torch.autocast("tpu", dtype=torch.bfloat16):
        loss = net(rand(2, 8).to("tpu")).sum()
    scaler.scale(loss).backward()
    next(net.parameters()).grad[0, 0] = float("inf")
    scaler.step(opt)
    scaler.update()
    for b, p in zip(before, net.parameters()):
        torch.testing.assert_close(p.detach().cpu(), b, rtol=0, atol=0)
    assert scaler.get_scale() == 64.0


def test_linalg_vector_norm():
    x = rand(3, 4, dtype=torch.bfloat16)
    assert_same(lambda t: torch.linalg.vector_norm(t, 2, dim=1, keepdim=True), x)
    assert_same(lambda t: torch.linalg.vector_norm(t, float("inf"), dim=(0, 1), dtype=torch.float32), x)
    assert_same(lambda t: torch.linalg.vector_norm(t, 3.0), rand(5).t())
    assert_same(lambda t: torch.linalg.vector_norm(t), torch.arange(4))  # integers: CPU's error
    assert_same(lambda t: torch.linalg.vector_norm(t, float("inf"), dim=0), rand(0, 3))  # no identity
    x = rand(3, 4)
    xc, xt = x.clone().requires_grad_(), x.to("tpu").requires_grad_()
    torch.linalg.vector_norm(xc).backward()
    torch.linalg.vector_norm(xt).backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad)


def test_a_narrowing_norm_dtype_is_refused_as_on_cpu():
    x = torch.tensor([3.0, 4.0], dtype=torch.float64)
    for t in (x, to_tpu(x)):
        with pytest.raises(RuntimeError, match="should be convertible without narrowing"):
            torch.linalg.vector_norm(t, dtype=torch.float32)
        with pytest.raises(RuntimeError, match="should be convertible without narrowing"):
            torch._foreach_norm([t], 2, dtype=torch.float32)


def test_fused_steps_of_double_parameters_keep_double_precision():
    """CPU's fused kernels compute a float64 parameter's lr, betas and bias
    corrections in double; rounding them to float32 moved the parameter by
    about 1e-8 relative per step."""
    results = []
    for device in ("cpu", "tpu"):
        p = torch.nn.Parameter(torch.ones(3, dtype=torch.float64, device=device))
        q = torch.nn.Parameter(torch.ones(3, dtype=torch.float64, device=device))
        adam = torch.optim.Adam([p], lr=1e-3, fused=True)
        sgd = torch.optim.SGD([q], lr=0.1, momentum=0.9, fused=True)
        for _ in range(3):
            p.grad, q.grad = torch.ones_like(p), torch.ones_like(q)
            adam.step()
            sgd.step()
        results.append((p.detach().cpu(), q.detach().cpu()))
    for got, want in zip(results[1], results[0]):
        torch.testing.assert_close(got, want, rtol=1e-15, atol=0)


def test_fused_sgd_first_step_with_found_inf_keeps_the_buffers():
    outs = []
    for device in ("cpu", "tpu"):
        p, g, buf = torch.ones(3, device=device), torch.ones(3, device=device), torch.full((3,), 7.0, device=device)
        torch._fused_sgd_([p], [g], [buf], weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.0, nesterov=False,
                          maximize=False, is_first_step=True, found_inf=torch.tensor(1.0, device=device))
        outs.append((p.cpu(), buf.cpu()))
    for got, want in zip(outs[1], outs[0]):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("views", ["whole_and_view", "overlapping_slices", "disjoint_slices"])
def test_foreach_in_place_on_views_of_one_tensor(views):
    """Destinations that share memory are updated one after another, as on
    CPU; disjoint views of one buffer still run as one program."""
    def run(device):
        x = torch.arange(8.0, device=device)
        dsts = {"whole_and_view": [x, x.view(2, 4)], "overlapping_slices": [x[:4], x[2:6]],
                "disjoint_slices": [x[:4], x[4:]]}[views]
        torch._foreach_add_(dsts, 1.0)
        torch._foreach_mul_(dsts, [torch.full_like(d, 2.0) for d in dsts])
        torch._foreach_copy_(dsts, [torch.full_like(d, float(i)) for i, d in enumerate(dsts)])
        return x.cpu()
    torch.testing.assert_close(run("tpu"), run("cpu"))


@pytest.mark.parametrize("views", ["whole_and_view", "overlapping_slices", "disjoint_slices", "same_slice"])
def test_foreach_zero_of_views_of_one_tensor(views):
    # zero_grad(set_to_none=False) over gradients viewing one DDP bucket.
    def run(device):
        x = torch.arange(1.0, 11.0, device=device)
        dsts = {"whole_and_view": [x, x[2:4]], "overlapping_slices": [x[0:5], x[3:8]],
                "disjoint_slices": [x[0:4], x[4:8]], "same_slice": [x[0:3], x[0:3]]}[views]
        torch._foreach_zero_(dsts)
        return x.cpu()
    torch.testing.assert_close(run("tpu"), run("cpu"))


def test_foreach_in_place_reading_another_elements_destination():
    """CPU's loop reads a destination written by an earlier element."""
    def run(device):
        a, b = torch.ones(3, device=device), torch.full((3,), 2.0, device=device)
        torch._foreach_add_([a, b], [b, a])
        c, d = torch.ones(3, device=device), torch.full((3,), 2.0, device=device)
        torch._foreach_copy_([c, d], [d, c])
        x = torch.arange(6.0, device=device)
        torch._foreach_mul_([x[:3], x[3:]], [x[3:], x[:3]])
        g = torch.arange(8.0, device=device)  # side by side, each its own input: still one program
        torch._foreach_mul_([g[:4], g[4:]], [g[:4], g[4:]])
        # A later element reading across the end, or the start, of an earlier one's destination.
        h = torch.arange(8.0, device=device)
        torch._foreach_add_([h[0:2], h[4:6]], [h[6:8], h[1:3]])
        k = torch.arange(8.0, device=device)
        torch._foreach_add_([k[4:6], k[0:2]], [k[6:8], k[3:5]])
        return [t.cpu() for t in (a, b, c, d, x, g, h, k)]
    for got, want in zip(run("tpu"), run("cpu")):
        torch.testing.assert_close(got, want)


def test_foreach_over_tensors_on_two_devices():
    """One program per device; every result where its inputs are."""
    xs = [torch.randn(3), torch.randn(2, 2), torch.randn(4)]
    ys = [torch.randn(3), torch.randn(2, 2), torch.randn(4)]
    devices = ["tpu:0", "tpu:1", "tpu:0"]
    txs = [x.to(d) for x, d in zip(xs, devices)]
    tys = [y.to(d) for y, d in zip(ys, devices)]
    got = torch._foreach_add(txs, tys, alpha=2.0)
    assert [str(t.device) for t in got] == devices
    torch._foreach_mul_(txs, 3.0)
    torch._foreach_addcmul_(txs, tys, tys, value=0.5)
    want = torch._foreach_add(xs, ys, alpha=2.0)
    torch._foreach_mul_(xs, 3.0)
    torch._foreach_addcmul_(xs, ys, ys, value=0.5)
    for g, w in zip(list(got) + txs, list(want) + xs):
        torch.testing.assert_close(g.cpu(), w)


def test_foreach_results_keep_their_inputs_layout():
    xs = [torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last), torch.randn(4, 3).t()]
    want = torch._foreach_add(xs, 1.0)
    got = torch._foreach_add(to_tpu(xs), 1.0)
    assert [t.stride() for t in got] == [t.stride() for t in want]
    for g, w in zip(got, want):
        torch.testing.assert_close(g.cpu(), w)


def test_amp_unscale_of_integer_gradients_is_refused_as_on_cpu():
    for device in ("cpu", "tpu"):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            torch._amp_foreach_non_finite_check_and_unscale_([torch.ones(2, dtype=torch.long, device=device)],
                                                             torch.zeros(1, device=device),
                                                             torch.ones(1, device=device))


def test_torch_tpu_amp_is_torch_cuda_amp_for_tpu():
    # Older CUDA code imports its AMP names from torch.cuda.amp; the tpu
    # module has them too, deprecated the same way, on device "tpu".
    import torch.tpu.amp
    from torch.tpu.amp import GradScaler, autocast, custom_bwd, custom_fwd

    x = torch.ones(2, 2, device="tpu")
    with pytest.warns(FutureWarning, match="torch.amp.autocast\\('tpu'"):
        region = autocast(dtype=torch.bfloat16)
    with region:
        assert (x @ x).dtype == torch.bfloat16
    with pytest.warns(FutureWarning, match="GradScaler"):
        scaler = GradScaler(init_scale=8.0)
    assert isinstance(scaler, torch.amp.GradScaler) and scaler._device == "tpu"
    assert torch.tpu.amp.autocast is autocast

    with pytest.warns(FutureWarning):
        class Double(torch.autograd.Function):
            @staticmethod
            @custom_fwd(cast_inputs=torch.float32)
            def forward(ctx, t):
                return t * 2

            @staticmethod
            @custom_bwd
            def backward(ctx, grad):
                return grad * 2

    t = torch.ones(2, device="tpu", dtype=torch.bfloat16, requires_grad=True)
    with torch.autocast("tpu", dtype=torch.bfloat16):
        out = Double.apply(t)
    assert out.dtype == torch.float32  # cast_inputs ran the forward in float32
    out.sum().backward()
    assert t.grad.dtype == torch.bfloat16 and t.grad.cpu().tolist() == [2.0, 2.0]
