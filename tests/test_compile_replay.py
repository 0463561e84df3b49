"""Replaying a compiled graph's captured program (csrc/aten/graph_capture.h):
after two calls capture the same program, later calls launch it directly,
with the results, input updates, random draws and deferred checks of the
recorded calls; inputs that do not fit the capture are recorded again."""

from __future__ import annotations

import copy

import pytest
import torch
import torch._dynamo
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn import functional as F

import torch_tpu
from torch_tpu import _C
from torch_tpu._compile.graph_runner import make_runner

TPU = "tpu"


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def replayed() -> int:
    return torch_tpu.fused_stats()["graphs_replayed"]


def runner_of(fn, *examples):
    """A graph runner for `fn`'s aten graph, traced on `examples` (`fn`
    returns a tuple, as AOTAutograd's graphs do)."""
    gm = make_fx(fn)(*examples)
    return make_runner(gm, fuse=True)


def test_calls_after_two_matching_captures_are_replayed():
    f = torch.compile(lambda x, w: torch.relu(x @ w) * 2 + x.sum(), backend="tpu")
    w = torch.randn(5, 3)
    xs = [torch.randn(4, 5) for _ in range(5)]
    before = replayed()
    for i, x in enumerate(xs):
        out = f(x.to(TPU), w.to(TPU))
        torch.testing.assert_close(out.cpu(), torch.relu(x @ w) * 2 + x.sum(), rtol=1e-5, atol=1e-5)
        # calls 0 and 1 are captured, from call 2 on they replay
        assert replayed() - before == max(0, i - 1)


def test_replay_writes_input_updates_and_donates_the_old_buffer():
    def step(p, g):
        p.copy_(p - 0.1 * g)
        return (p.sum(),)

    p = torch.randn(256, 256)
    g = torch.randn(256, 256)
    run = runner_of(step, p.clone(), g)
    p_tpu, g_tpu = p.to(TPU), g.to(TPU)
    expected = p.clone()
    for i in range(4):
        before = torch.tpu.memory_allocated()
        (total,) = run([p_tpu, g_tpu])
        expected = expected - 0.1 * g
        torch.testing.assert_close(p_tpu.cpu(), expected)
        torch.testing.assert_close(total.cpu(), expected.sum(), rtol=1e-4, atol=1e-3)
        if i >= 2:
            # The update reused the parameter's memory: only the 0-dim sum is new.
            torch.tpu.synchronize()
            assert torch.tpu.memory_allocated() - before <= 64
    assert run.replayer.plans


def test_a_clone_sharing_the_updated_buffer_keeps_its_value():
    def step(p):
        p.add_(1)
        return (p * 2,)

    run = runner_of(step, torch.zeros(8))
    p = torch.zeros(8, device=TPU)
    for _ in range(3):
        run([p])
    assert run.replayer.plans
    snapshot = p.clone()  # shares p's device value until one is written
    (doubled,) = run([p])
    torch.testing.assert_close(snapshot.cpu(), torch.full((8,), 3.0))
    torch.testing.assert_close(p.cpu(), torch.full((8,), 4.0))
    torch.testing.assert_close(doubled.cpu(), torch.full((8,), 8.0))


def test_inputs_that_do_not_fit_the_capture_are_recorded():
    def f(a, b):
        return (a + b * 2,)

    run = runner_of(f, torch.ones(6), torch.ones(6))
    a, b = torch.arange(6.0, device=TPU), torch.ones(6, device=TPU)
    for _ in range(3):
        run([a, b])
    assert run.replayer.plans
    before = replayed()
    # the same tensor twice: one buffer where the capture had two
    (out,) = run([a, a])
    torch.testing.assert_close(out.cpu(), torch.arange(6.0) * 3)
    # a transposed view: other strides
    m = torch.arange(6.0, device=TPU).reshape(2, 3).t().reshape(-1)
    (out,) = run([a, m])
    torch.testing.assert_close(out.cpu(), torch.arange(6.0) + m.cpu() * 2)
    assert replayed() == before
    (out,) = run([b, a])
    torch.testing.assert_close(out.cpu(), torch.ones(6) + torch.arange(6.0) * 2)
    assert replayed() == before + 1


def test_outputs_keep_views_aliases_and_nones():
    def f(x):
        y = x * 3
        return y, y.t(), x.t(), None

    run = runner_of(f, torch.ones(2, 3))
    x = torch.arange(6.0).reshape(2, 3)
    for _ in range(4):
        y, yt, xt, none = run([x.to(TPU)])
    assert run.replayer.plans
    assert none is None
    assert yt.stride() == (1, 3) and y.untyped_storage().data_ptr() == yt.untyped_storage().data_ptr()
    torch.testing.assert_close(yt.cpu(), (x * 3).t())
    torch.testing.assert_close(xt.cpu(), x.t())
    y.add_(1)  # an alias of y sees the write, as in eager code
    torch.testing.assert_close(yt.cpu(), (x * 3 + 1).t())


def test_random_draws_advance_the_generator_as_eager_code_does():
    f = torch.compile(lambda x: F.dropout(x, 0.5) + torch.rand_like(x), backend="tpu")
    x = torch.ones(64, device=TPU)
    torch.tpu.manual_seed(5)
    expected = [(F.dropout(x, 0.5) + torch.rand_like(x)).cpu() for _ in range(5)]
    state = torch.tpu.get_rng_state()
    torch.tpu.manual_seed(5)
    before = replayed()
    actual = [f(x).cpu() for _ in range(5)]
    assert replayed() - before == 3
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e)
    assert not torch.equal(actual[3], actual[4])
    assert torch.equal(torch.tpu.get_rng_state(), state)
    # A new seed reaches the replayed program.
    torch.tpu.manual_seed(5)
    torch.testing.assert_close(f(x).cpu(), expected[0])


def test_deferred_checks_of_a_replayed_call_still_raise():
    emb = nn.Embedding(10, 4).to(TPU)
    f = torch.compile(emb, backend="tpu")
    with torch.no_grad():
        for _ in range(3):
            f(torch.tensor([1, 2, 3], device=TPU))
        before = replayed()
        out = f(torch.tensor([1, 12, 3], device=TPU))
        assert replayed() == before + 1
        with pytest.raises(IndexError, match="index out of range"):
            out.cpu()


def test_batchnorm_training_step_replays_with_eager_running_stats():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)).to(TPU)
    compiled_model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    compiled_opt = torch.optim.SGD(compiled_model.parameters(), lr=0.1)
    forward = torch.compile(compiled_model, backend="tpu")
    before = replayed()
    for i in range(5):
        x = torch.randn(16, 6, device=TPU)
        for m, o, fwd in ((model, opt, model), (compiled_model, compiled_opt, forward)):
            o.zero_grad()
            fwd(x).square().mean().backward()
            o.step()
    assert replayed() - before >= 6  # forward and backward, calls 2 to 4
    for p, q in zip(model.state_dict().values(), compiled_model.state_dict().values()):
        torch.testing.assert_close(q.cpu(), p.cpu(), rtol=1e-4, atol=1e-5)


def test_replay_can_be_turned_off():
    f = torch.compile(lambda x: x * 2, backend="tpu", options={"replay": False})
    before = replayed()
    for _ in range(4):
        f(torch.ones(3, device=TPU))
    assert replayed() == before
    # replay_status() lists the graph and says why (it left such graphs out).
    assert any(s["failure"] and "replay" in s["failure"] for s in torch_tpu.diagnostics.replay_status())


def test_a_graph_that_sets_the_rng_state_is_listed_as_not_replayed():
    def checkpointed_dropout(a):
        return torch.utils.checkpoint.checkpoint(lambda b: F.dropout(b.sin(), 0.5), a, use_reentrant=False)

    f = torch.compile(checkpointed_dropout, backend="tpu")
    a = torch.randn(8, device=TPU, requires_grad=True)
    for _ in range(3):
        f(a).sum().backward()
    assert any(s["failure"] and "RNG state" in s["failure"] for s in torch_tpu.diagnostics.replay_status())


def test_graphs_that_cannot_be_replayed_say_why():
    run = runner_of(lambda x: (x + 1,), torch.ones(2))
    run([torch.ones(2)])  # a CPU input
    assert "not a tpu tensor" in run.replayer.failure


def test_an_unfinished_or_failed_capture_has_no_plan():
    capture = _C.capture.GraphCapture([torch.ones(2, device=TPU)])
    with pytest.raises(RuntimeError, match="has not finished"):
        capture.plan()
    capture.abandon()
    assert capture.failure == "the call failed"
    with pytest.raises(RuntimeError, match="cannot be replayed"):
        capture.plan()


def test_outputs_that_are_inputs_or_their_views_stay_tied_to_them():
    run = runner_of(lambda x: (x, x.t(), x * 2), torch.ones(2, 3))
    x = torch.arange(6.0, device=TPU).reshape(2, 3)
    for _ in range(3):
        same, view, _ = run([x])
    assert run.replayer.plans
    assert same is x
    x.add_(1)  # autograd's check of saved tensors relies on the shared counter
    assert view._version == x._version
    torch.testing.assert_close(view.cpu(), (torch.arange(6.0).reshape(2, 3) + 1).t())


def test_a_call_that_changes_an_input_layout_is_not_replayed():
    def f(x):
        x.t_()
        return (x * 2,)

    run = runner_of(f, torch.ones(2, 3))
    run([torch.ones(2, 3, device=TPU)])
    assert "another storage or layout" in run.replayer.failure


def test_graph_constants_are_told_apart_from_inputs_sharing_their_value():
    x = torch.arange(4.0, device=TPU)
    c = x.clone()  # shares x's device value until one is written

    def f(x):
        x.add_(1)
        return (x + c,)

    run = runner_of(f, torch.zeros(4, device=TPU))
    expected = torch.arange(4.0)
    for _ in range(4):
        (out,) = run([x])
        expected = expected + 1
        torch.testing.assert_close(out.cpu(), expected + torch.arange(4.0))
    assert run.replayer.plans


def test_symbolic_graphs_get_a_plan_per_size():
    f = torch.compile(lambda x: x * 2 + x.sum(), backend="tpu")
    before = replayed()
    for n in [3, 5] * 5:
        x = torch.arange(float(n))
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(f(x.to(TPU)).cpu(), x * 2 + x.sum())
    # The symbolic graph's calls with each size: two captures, then
    # replays (Dynamo may run the first call through a static graph).
    assert replayed() - before >= 4


def test_replay_under_fused_eager_reads_pending_inputs():
    f = torch.compile(lambda x, y: (x @ y).relu() + 1, backend="tpu")
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    before = replayed()
    with torch_tpu.eager_mode("fused"):
        for i in range(4):
            x = a.to(TPU) * (i + 1)  # pending in the fused graph
            out = f(x, b.to(TPU)) * 2
            torch.testing.assert_close(out.cpu(), ((a * (i + 1)) @ b).relu().add(1) * 2, rtol=1e-5, atol=1e-5)
    assert replayed() - before == 2


def test_replay_of_a_backward_under_fused_eager():
    """The compiled backward runs on the autograd engine's thread, and its
    incoming gradient is pending in the graph of the thread that called
    backward: the capture computes it first and records the call's ops in
    a graph of its own, so the backward replays too."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    compiled = torch.compile(copy.deepcopy(model).to(TPU), backend="tpu")
    x = torch.randn(4, 8)
    before = replayed()
    with torch_tpu.eager_mode("fused"):
        for _ in range(5):
            loss = (compiled(x.to(TPU) * 2) ** 2).sum()
            loss.item()  # the seed gradient of backward is then a fresh pending value
            loss.backward()
            (model(x * 2) ** 2).sum().backward()
    assert replayed() - before >= 6  # forward and backward from the third call on
    for p, q in zip(compiled.parameters(), model.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-4, atol=1e-5)


def test_replay_after_the_compile_cache_forgot_the_program():
    f = torch.compile(lambda x: x.exp() * 3, backend="tpu")
    x = torch.randn(5, device=TPU)
    for _ in range(3):
        f(x)
    _C.runtime.clear_cache_memory()  # the plan rebuilds its program text for the cache
    before = replayed()
    torch.testing.assert_close(f(x).cpu(), x.cpu().exp() * 3)
    assert replayed() == before + 1


def test_replay_status_says_which_graphs_replay_and_why_not():
    f = torch.compile(lambda x, s: x * s + 1, backend="tpu")
    g = torch.compile(lambda x: x.sin() * 2, backend="tpu")
    x = torch.randn(3, device=TPU)
    for _ in range(3):
        f(x, torch.tensor(2.0))  # a CPU tensor input: recorded every call
        g(x)
    status = torch_tpu.diagnostics.replay_status()
    assert any(s["plans"] == 1 and s["failure"] is None for s in status), status
    assert any(s["failure"] and "not a tpu tensor" in s["failure"] for s in status), status
