"""The eager modes: fused (deferred graphs), debug (blocking, checks) and
the mode API. tests/test_fused_suite.py reruns whole test files in fused
mode; this file tests what is particular to each mode."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import gc
import threading
import time

import pytest
import torch
from torch import nn
import torch.nn.functional as F

import torch_tpu
from torch_tpu import runtime


@pytest.fixture
def fused():
    with torch_tpu.eager_mode("fused"):
        torch_tpu.reset_fused_stats()
        yield


def compiles() -> int:
    return runtime.cache_stats()["compiles"]


def test_mode_api_round_trip():
    assert torch_tpu.get_eager_mode() == "strict"
    with torch_tpu.eager_mode("fused"):
        assert torch_tpu.get_eager_mode() == "fused"
        with torch_tpu.eager_mode("debug"):
            assert torch_tpu.get_eager_mode() == "debug"
        assert torch_tpu.get_eager_mode() == "fused"
    assert torch_tpu.get_eager_mode() == "strict"
    with pytest.raises(ValueError, match="unknown tpu eager mode 'lazy'"):
        torch_tpu.set_eager_mode("lazy")
    with pytest.raises(ValueError, match="checks of the 'debug' eager mode"):
        torch_tpu.set_eager_mode("fused", check_finite=True)


def test_environment_sets_the_start_up_mode(tmp_path):
    code = "import torch, torch_tpu; print(torch_tpu.get_eager_mode())"
    env = dict(os.environ, TORCH_TPU_EAGER_MODE="fused")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stdout.strip() == "fused"
    env = dict(os.environ, TORCH_TPU_EAGER_MODE="bogus")
    code = "import torch\ntry:\n    torch.ones(2, device='tpu')\nexcept ValueError as e:\n    print(e)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert "TORCH_TPU_EAGER_MODE='bogus' is not a tpu eager mode" in out.stdout, out


def test_an_unknown_check_of_the_mode_context_is_named():
    with pytest.raises(TypeError, match="eager_mode\\(\\) got unknown arguments \\['check_nan'\\].*check_finite"):
        with torch_tpu.eager_mode("debug", check_nan=True):
            pass
    assert torch_tpu.get_eager_mode() == "strict"


def test_fused_ops_run_as_one_graph_at_the_read(fused):
    x = torch.randn(5, 7)
    w = torch.randn(7, 3)
    t = x.to("tpu")
    y = (t * 2 + 1).relu() @ w.to("tpu")
    z = y.softmax(-1).sum(0)
    stats = torch_tpu.fused_stats()
    assert stats["graphs_run"] == 0 or stats["materializations"]["read"] == 0
    recorded = stats["ops_recorded"]
    assert recorded >= 5
    result = z.cpu()
    torch.testing.assert_close(result, ((x * 2 + 1).relu() @ w).softmax(-1).sum(0))
    stats = torch_tpu.fused_stats()
    assert stats["materializations"]["read"] == 1
    assert stats["graphs_run"] == 1


def test_fused_views_and_in_place_writes_match_cpu(fused):
    def program(a):
        v = a[1:, ::2]
        v.mul_(3)
        a.t()[0].add_(1)
        b = a.view(-1)
        b[2:5] = b[:3] + 10
        return a.sum(1), v.clone(), b.reshape(3, 4).T

    a = torch.arange(12.0).reshape(3, 4)
    expected = program(a.clone())
    got = program(a.to("tpu"))
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.cpu(), e)


def test_fused_lowers_each_op_once(fused):
    # An op recorded again with the same key reuses its first lowering
    # (csrc/aten/op_fragments.h): a training loop lowers nothing after its
    # first step, and a new shape lowers anew.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to("tpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(4, 8, device="tpu")

    def step():
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    losses = [step() for _ in range(3)]
    before = torch_tpu.fused_stats()
    losses += [step() for _ in range(3)]
    after = torch_tpu.fused_stats()
    assert after["ops_recorded"] - before["ops_recorded"] >= 3 * 8
    assert after["ops_lowered"] == before["ops_lowered"]
    assert losses[-1] < losses[0]
    (x[:3] + 1).cpu()
    assert torch_tpu.fused_stats()["ops_lowered"] == after["ops_lowered"] + 1


def test_fused_write_is_guarded_only_where_its_update_reads_the_target(fused):
    # Each op is lowered alone; where a partial write's safe form depends on
    # what the graph computes its update from, the graph picks the form
    # (see the test below for the miscompile the guarded form avoids).
    k = torch.randn(6, 6)
    cache = torch.zeros(4, 6, device="tpu")
    k_tpu = k.to("tpu")
    cache[1] = (k_tpu @ k_tpu)[0] * 2  # the update reads k only
    torch_tpu.materialize()
    assert "guarded" not in torch_tpu.diagnostics.last_graph()
    flat = cache.view(-1)
    flat[2:5] = flat[:3] + 10  # the update reads what the write overwrites
    torch_tpu.materialize()
    assert "guarded" in torch_tpu.diagnostics.last_graph()
    want = torch.zeros(4, 6)
    want[1] = (k @ k)[0] * 2
    want.view(-1)[2:5] = want.view(-1)[:3] + 10
    torch.testing.assert_close(cache.cpu(), want)


@pytest.mark.parametrize("first", ["none", "stepped_view", "rows"])
@pytest.mark.parametrize("then_read", ["stepped_view", "rows", "sum"])
def test_fused_write_computed_from_the_region_it_overwrites(fused, first, then_read):
    # b[2:5] = b[:3] + 10 reads b[2] and writes it. With the tensor kept and
    # read again in the same graph, XLA's CPU compiler once emitted the
    # write in place with the read fused into it, so b[4] got the new b[2]
    # plus 10 (20 instead of 12).
    def program(a):
        if first == "stepped_view":
            a[1:, ::2].mul_(3)
        elif first == "rows":
            a[1:].mul_(3)
        b = a.view(-1)
        b[2:5] = b[:3] + 10
        return {"stepped_view": lambda: a[1:, ::2].clone(), "rows": lambda: a[1:].clone(),
                "sum": lambda: a.sum(1)}[then_read]()

    a = torch.arange(12.0).reshape(3, 4)
    on_tpu = a.to("tpu")
    got = program(on_tpu)
    want = program(a)
    torch_tpu.materialize()
    assert torch.equal(got.cpu(), want)
    assert torch.equal(on_tpu.cpu(), a)


def test_fused_dead_results_are_not_computed(fused):
    t = torch.randn(64, 64).to("tpu")
    keep = t + 1
    for _ in range(5):
        t @ t  # noqa: B018  (the result dies at once)
    keep.cpu()
    stats = torch_tpu.fused_stats()
    assert stats["results_computed"] == 1
    assert stats["results_dropped"] >= 5


def test_fused_same_structure_hits_one_cache_entry(fused):
    def step(a, b):
        return ((a * b).sin() + a).sum().item()

    step(torch.randn(8, 3).to("tpu"), torch.randn(8, 3).to("tpu"))
    before = compiles()
    for _ in range(3):
        step(torch.randn(8, 3).to("tpu"), torch.randn(8, 3).to("tpu"))
    assert compiles() == before
    step(torch.randn(9, 3).to("tpu"), torch.randn(9, 3).to("tpu"))  # new shapes: a new program
    assert compiles() == before + 1


def test_fused_training_reaches_a_steady_state_and_matches_strict():
    def train(mode):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4)).to("tpu")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        data = torch.randn(6, 32, 16)
        target = torch.randint(0, 4, (6, 32))
        losses, compiles_per_step = [], []
        with torch_tpu.eager_mode(mode):
            for x, y in zip(data, target):
                before = compiles()
                loss = F.cross_entropy(model(x.to("tpu")), y.to("tpu"))
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
                compiles_per_step.append(compiles() - before)
        return losses, compiles_per_step

    strict, _ = train("strict")
    torch_tpu.reset_fused_stats()
    fused_losses, fused_compiles = train("fused")
    assert fused_losses == pytest.approx(strict, rel=1e-5, abs=1e-6)
    assert fused_compiles[3:] == [0, 0, 0], fused_compiles
    # two graphs per step: the previous step's update with this step's
    # forward, launched when backward starts, and the backward, launched
    # where it ends; loss.item() finds them run
    stats = torch_tpu.fused_stats()
    assert stats["materializations"]["start_of_backward"] == 6
    assert stats["materializations"]["end_of_backward"] == 6
    assert stats["materializations"]["read"] == 0
    assert stats["graphs_run"] == 13  # and the last update, leaving fused mode


def test_fused_training_in_one_program_per_step_without_the_backward_split():
    # TORCH_TPU_FUSED_SPLIT_BACKWARD=0: forward and backward stay one graph.
    code = textwrap.dedent('''
        import torch, torch_tpu
        from torch import nn
        x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
        losses = {}
        for mode in ("strict", "fused"):
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).to("tpu")
            opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
            with torch_tpu.eager_mode(mode):
                torch_tpu.reset_fused_stats()
                losses[mode] = []
                for _ in range(4):
                    loss = nn.functional.cross_entropy(model(x.to("tpu")), y.to("tpu"))
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    losses[mode].append(loss.item())
        stats = torch_tpu.fused_stats()
        assert stats["materializations"]["start_of_backward"] == 0, stats
        assert stats["materializations"]["end_of_backward"] == 4, stats
        assert stats["graphs_run"] == 5, stats
        torch.testing.assert_close(losses["fused"], losses["strict"], rtol=1e-5, atol=1e-6)
    ''')
    env = dict(os.environ, TORCH_TPU_FUSED_SPLIT_BACKWARD="0")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_fused_training_in_several_threads_reaches_a_steady_state():
    """Each thread records into graphs of its own (a backward pass joins the
    graph of the forward it differentiates): threads training at the same
    time compile nothing once one thread has run the step, and compute what
    strict eager computes. With one graph shared by the threads their
    interleaving was part of the key (2 threads: 16 compiles in 30 steps)."""
    def job(seed):  # made in the main thread: seeding is the process's
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to("tpu")
        return model, torch.randn(8, 16).to("tpu"), torch.randn(8, 1).to("tpu")

    def train(model, x, y, losses):
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(10):
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())

    seeds = (1, 2, 3)
    strict = {seed: [] for seed in seeds}
    for seed in seeds:
        train(*job(seed), strict[seed])
    with torch_tpu.eager_mode("fused"):
        # The warm-up runs in a thread too: the last optimizer step a thread
        # leaves is a graph of its own, run by the next op of any thread.
        warm_job = job(0)  # held, as the jobs below are: its last update is computed
        warm_up = threading.Thread(target=train, args=(*warm_job, []))
        warm_up.start()
        warm_up.join()
        # join() returns once the thread's Python state is gone; its C++
        # thread-local state, whose destructor hands the open graph over, goes
        # a moment later (on a busy machine, after the next op): wait for it.
        deadline = time.monotonic() + 30
        while True:
            torch.ones(1, device="tpu").add_(1)
            if torch_tpu.fused_stats()["materializations"]["thread_end"] >= 1 or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        assert torch_tpu.fused_stats()["materializations"]["thread_end"] >= 1
        jobs = {seed: job(seed) for seed in seeds}
        torch.tpu.synchronize()
        before = compiles()
        torch_tpu.reset_fused_stats()
        fused = {seed: [] for seed in seeds}
        workers = [threading.Thread(target=train, args=(*jobs[seed], fused[seed])) for seed in seeds]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert compiles() == before
        assert torch_tpu.fused_stats()["materializations"]["end_of_backward"] == 30  # one program per step
    for seed in strict:
        assert fused[seed] == pytest.approx(strict[seed], rel=1e-5, abs=1e-6)


def test_fused_work_a_thread_leaves_runs_at_the_next_op():
    """A thread that ends with its graph open (the optimizer's last update)
    does not hold that graph's buffers until a synchronize: the next op of
    any thread runs it."""
    def train():
        model = nn.Linear(256, 256).to("tpu")
        opt = torch.optim.Adam(model.parameters())
        for _ in range(2):
            loss = model(torch.randn(8, 256).to("tpu")).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        loss.item()

    torch.tpu.synchronize()
    baseline = torch.tpu.memory_allocated()
    with torch_tpu.eager_mode("fused"):
        for _ in range(3):
            worker = threading.Thread(target=train)
            worker.start()
            worker.join()
        gc.collect()
        (torch.ones(1, device="tpu") + 1).cpu()
        assert torch.tpu.memory_allocated() - baseline < 64 * 1024
        assert torch_tpu.fused_stats()["materializations"]["thread_end"] >= 3


def test_compiled_function_called_from_several_threads():
    """Captures finishing in any order, and the graph runner's fused
    recording confined to its thread: no error, and the process stays in
    strict mode."""
    def f(x):
        for _ in range(5):
            x = torch.sin(x) * 1.01 + 0.1
        return x

    compiled = torch.compile(f, backend="tpu")
    x = torch.ones(64, device="tpu")
    want = f(x).cpu()
    barrier = threading.Barrier(4)
    results, errors = [], []

    def call():
        barrier.wait()
        try:
            for _ in range(6):
                results.append(compiled(x).cpu())
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    workers = [threading.Thread(target=call) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert torch_tpu.get_eager_mode() == "strict"
    for r in results:
        torch.testing.assert_close(r, want)


def test_fused_pending_work_runs_at_a_mode_switch():
    torch_tpu.reset_fused_stats()
    with torch_tpu.eager_mode("fused"):
        y = torch.ones(3).to("tpu") * 4
    assert torch_tpu.fused_stats()["materializations"]["mode_switch"] == 1
    assert y.tolist() == [4.0, 4.0, 4.0]


def test_fused_synchronize_and_explicit_materialize(fused):
    y = torch.ones(3, device="tpu") + 1
    torch.tpu.synchronize()
    z = y * 3
    torch_tpu.materialize()
    stats = torch_tpu.fused_stats()
    assert stats["materializations"]["synchronize"] == 1
    assert stats["materializations"]["explicit"] == 1
    assert z.tolist() == [6.0, 6.0, 6.0]


def test_fused_deferred_check_raises_at_the_read(fused):
    table = torch.randn(4, 2).to("tpu")
    out = F.embedding(torch.tensor([1, 7]).to("tpu"), table)
    with pytest.raises(IndexError, match="out of range|index"):
        out.cpu()


def test_fused_graph_size_limit(tmp_path):
    code = textwrap.dedent("""
        import torch, torch_tpu
        torch_tpu.set_eager_mode("fused")
        x = torch.zeros(4, device="tpu")
        for i in range(25):
            x = x + 1
        print(x.tolist(), torch_tpu.fused_stats()["materializations"]["size_limit"])
    """)
    env = dict(os.environ, TORCH_TPU_FUSED_MAX_OPS="10")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stdout.split("]")[0] + "]" == str([25.0] * 4)
    assert int(out.stdout.split("]")[1]) == 2


def test_fused_graph_size_limit_counts_each_foreach_element(tmp_path):
    # 30 optimizer-like updates over 20 tensors are 600 values: with a limit
    # of 100 a graph holds at most a few calls, never all 30.
    code = textwrap.dedent("""
        import torch, torch_tpu
        xs = [torch.zeros(3, device="tpu") for _ in range(20)]
        torch_tpu.set_eager_mode("fused")
        for i in range(30):
            torch._foreach_add_(xs, 1.0)
        print(xs[7].tolist(), torch_tpu.fused_stats()["materializations"]["size_limit"])
    """)
    env = dict(os.environ, TORCH_TPU_FUSED_MAX_OPS="100")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stdout.split("]")[0] + "]" == str([30.0] * 3)
    assert int(out.stdout.split("]")[1]) == 5  # a graph runs before the 6th, 11th, ... 26th call


def test_fused_memory_is_counted_once_values_exist(fused):
    base = torch.tpu.memory_allocated()
    y = torch.ones(256, device="tpu")
    z = y * 2
    torch.tpu.synchronize()
    assert torch.tpu.memory_allocated() - base == 2 * 256 * 4
    del y, z
    assert torch.tpu.memory_allocated() == base


def test_debug_mode_raises_at_the_op():
    table = torch.randn(4, 2).to("tpu")
    index = torch.tensor([1, 7]).to("tpu")
    with torch_tpu.eager_mode("debug"):
        with pytest.raises(IndexError):
            F.embedding(index, table)  # not deferred to a later sync


def test_debug_check_finite_names_op_and_call_site():
    x = torch.tensor([1.0, 0.0]).to("tpu")
    with torch_tpu.eager_mode("debug", check_finite=True):
        ok = x + 1
        with pytest.raises(RuntimeError, match=r"aten\.log\.default produced NaN or Inf, called at .*test_eager_modes\.py"):
            torch.log(x)
    assert ok.tolist() == [2.0, 1.0]


def test_debug_checks_accept_any_index_among_ties_and_intended_infinities():
    """Sorting and selection ops may return any index among tied values (the
    tpu sort is stable, CPU's is not): compare_cpu checks that the indices
    point at the values instead of comparing them with CPU's. An infinite
    scalar input (SDPA's boolean mask made additive) makes infinities in the
    output intended: check_finite then looks for NaN only."""
    from torch_tpu._debug_checks import DebugChecks

    x = torch.tensor([0.0, 1.0, 0.0, 1.0] * 25).to("tpu")
    q = torch.randn(1, 2, 4, 8).to("tpu")
    mask = torch.ones(4, 4, dtype=torch.bool).tril().to("tpu")
    with torch_tpu.eager_mode("debug", compare_cpu=True, check_finite=True):
        torch.sort(x)
        torch.topk(x, 10)
        x.view(10, 10).max(1)
        torch.kthvalue(x, 3)
        torch.cummax(x, 0)
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        with pytest.raises(RuntimeError, match=r"aten\.div\.Tensor produced NaN or Inf"):
            torch.zeros(2, device="tpu") / 0.0
    checks = DebugChecks(check_finite=False, compare_cpu=True, rtol=None, atol=None)
    source = torch.tensor([3.0, 1.0, 1.0, 2.0])
    values = torch.tensor([1.0, 1.0, 2.0, 3.0])
    sort = torch.ops.aten.sort.default
    assert checks._chosen_indices(sort, (x,), {}, [values, torch.tensor([2, 1, 3, 0])], (source,)) == 1
    for wrong in ([1, 1, 3, 0], [0, 1, 3, 2]):  # repeated, or pointing at other values
        with pytest.raises(RuntimeError, match="indices that do not point at its values"):
            checks._chosen_indices(sort, (x,), {}, [values, torch.tensor(wrong)], (source,))


def test_debug_checks_do_not_blame_ops_that_pass_along_what_their_inputs_hold():
    """A causal mask's -inf through triu, a view, a cast or an additive mask
    is not where the infinity appeared; compare_cpu allows the rounding of
    long reductions; embedding_bag's bookkeeping outputs are CPU's own."""
    with torch_tpu.eager_mode("debug", check_finite=True, compare_cpu=True):
        mask = nn.Transformer.generate_square_subsequent_mask(4, device="tpu")
        mask[None].to(torch.bfloat16)
        torch.randn(4, 4, device="tpu") + mask
        torch.tensor([float("inf"), 1.0], device="tpu").clamp(max=5)
        layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0).to("tpu")
        layer(torch.randn(2, 4, 8, device="tpu"), src_mask=mask, is_causal=True)
        F.conv2d(torch.randn(2, 64, 8, 8, device="tpu"), torch.randn(64, 64, 3, 3, device="tpu"))
        torch.randn(64, 2048, device="tpu") @ torch.randn(2048, 64, device="tpu")
        x = torch.randn(100000, device="tpu")
        x.cumsum(0)
        (x - x.mean()).sum()
        nn.EmbeddingBag(10, 4, mode="mean").to("tpu")(torch.tensor([[1, 2], [3, 4]], device="tpu"))
        with pytest.raises(RuntimeError, match=r"aten\.log\.default produced NaN or Inf"):
            torch.log(torch.zeros(2, device="tpu"))  # a new infinity is still reported


@pytest.fixture(scope="module")
def miscomputed_op():
    """An op whose tpu kernel disagrees with its CPU kernel."""
    lib = torch.library.Library("tpu_debug_test", "DEF")
    lib.define("plus(Tensor x) -> Tensor")
    lib.impl("plus", lambda x: x + 1, "CPU")
    lib.impl("plus", lambda x: x + 1.5, "PrivateUse1")
    yield torch.ops.tpu_debug_test.plus
    lib._destroy()


def test_debug_compare_cpu_catches_a_wrong_kernel(miscomputed_op):
    x = torch.randn(8).to("tpu")
    with torch_tpu.eager_mode("debug", compare_cpu=True):
        model = nn.Linear(8, 3).to("tpu")
        model(x).sum().backward()  # right kernels pass
        with pytest.raises(RuntimeError, match=r"tpu_debug_test\.plus.*differs from the CPU .*max abs difference 0\.5"):
            miscomputed_op(x)
    assert torch_tpu.get_eager_mode() == "strict"
    miscomputed_op(x)  # checks are gone with the mode


def test_debug_checks_look_inside_tensor_subclasses(miscomputed_op):
    """Subclasses with their own dispatch (DTensor and FSDP2's parameters
    among them) are checked through the plain tensors inside them: calling
    `.cpu()` or `isnan().any()` on the subclass itself failed."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.testing._internal.two_tensor import TwoTensor

    a = torch.randn(3, device="tpu")
    with torch_tpu.eager_mode("debug", check_finite=True, compare_cpu=True):
        pair = TwoTensor(a, a * 2) + 1
        torch.testing.assert_close(pair.a.cpu(), a.cpu() + 1)
        with pytest.raises(RuntimeError, match=r"tpu_debug_test\.plus.*differs from the CPU"):
            miscomputed_op(TwoTensor(a, a))
        with pytest.raises(RuntimeError, match=r"aten\.log\.default produced NaN"):
            TwoTensor(a, a).neg().abs().neg().log()
        with FakeTensorMode():
            assert (torch.empty(3, device="tpu") + 1).shape == (3,)
        jagged = torch.nested.nested_tensor([a[:1], a], layout=torch.jagged)
        torch.testing.assert_close((jagged * 2).values().cpu(), torch.cat([a[:1], a]).cpu() * 2)


def test_debug_compare_cpu_names_itself_when_only_the_cpu_run_fails():
    lib = torch.library.Library("tpu_debug_cpu_raises", "DEF")
    try:
        lib.define("twice(Tensor x) -> Tensor")
        def refuse(x):
            raise RuntimeError("no CPU path")
        lib.impl("twice", refuse, "CPU")
        lib.impl("twice", lambda x: x * 2, "PrivateUse1")
        x = torch.ones(2, device="tpu")
        with torch_tpu.eager_mode("debug", compare_cpu=True):
            with pytest.raises(RuntimeError, match=r"twice.*ran on tpu, but its CPU run for comparison .*raised RuntimeError: no CPU path"):
                torch.ops.tpu_debug_cpu_raises.twice(x)
        assert torch.ops.tpu_debug_cpu_raises.twice(x).tolist() == [2.0, 2.0]
    finally:
        lib._destroy()


@pytest.fixture()
def miscomputed_inplace_op():
    """An op writing into its argument, whose tpu kernel disagrees with CPU's."""
    lib = torch.library.Library("tpu_debug_inplace", "DEF")
    lib.define("bump_(Tensor(a!) x) -> ()")
    def bump(amount):
        def kernel(x):
            x.add_(amount)
        return kernel

    lib.impl("bump_", bump(1), "CPU")
    lib.impl("bump_", bump(1.5), "PrivateUse1")
    yield torch.ops.tpu_debug_inplace.bump_
    lib._destroy()


def test_debug_checks_see_what_ops_write_into_their_arguments(miscomputed_inplace_op):
    # _foreach_*_ and the fused optimizers return nothing: what they write is their result.
    with torch_tpu.eager_mode("debug", check_finite=True):
        with pytest.raises(RuntimeError, match=r"_foreach_div_\.List produced NaN or Inf"):
            torch._foreach_div_([torch.zeros(3, device="tpu")], [torch.zeros(3, device="tpu")])
        w = torch.zeros(3, device="tpu", requires_grad=True)
        optimizer = torch.optim.Adam([w], eps=0.0, fused=True)
        (w * 0).sum().backward()
        with pytest.raises(RuntimeError, match=r"_fused_adam_\.default produced NaN or Inf"):
            optimizer.step()
    with torch_tpu.eager_mode("debug", compare_cpu=True):
        model = nn.Linear(8, 3).to("tpu")
        for options in (dict(foreach=True), dict(fused=True)):
            optimizer = torch.optim.AdamW(model.parameters(), **options)
            model(torch.randn(4, 8, device="tpu")).sum().backward()
            optimizer.step()  # right kernels pass
        with pytest.raises(RuntimeError, match=r"bump_.*differs from the CPU"):
            miscomputed_inplace_op(torch.zeros(4, device="tpu"))


def test_debug_compare_cpu_accepts_vectors_of_either_sign():
    # Singular and eigenvectors are unique up to sign: compared through what they rebuild.
    a = torch.randn(6, 5, device="tpu")
    with torch_tpu.eager_mode("debug", compare_cpu=True):
        torch.linalg.svd(a)
        torch.linalg.svd(a, full_matrices=False)
        torch.linalg.svdvals(a)
        torch.linalg.matrix_rank(a)
        torch.linalg.eigh(a.mT @ a)
        torch.linalg.eigvalsh(a.mT @ a)


def test_debug_check_in_backward_names_the_backward_node():
    w = torch.tensor([0.0, 1.0], device="tpu", requires_grad=True)
    with torch_tpu.eager_mode("debug", check_finite=True):
        with pytest.raises(RuntimeError, match=r"div\.Tensor produced NaN or Inf, called at the backward of SqrtBackward0"):
            w.sqrt().sum().backward()
        with torch.autograd.detect_anomaly(check_nan=False):
            y = w.sqrt().sum()  # the forward's call site is reported
            with pytest.raises(RuntimeError, match=r"SqrtBackward0, whose forward was called at .*test_eager_modes\.py"):
                y.backward()


def test_debug_checks_leave_other_dispatch_modes_and_threads_alone():
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    from torch.utils.flop_counter import FlopCounterMode

    a = torch.randn(4, 4, device="tpu")
    torch_tpu.set_eager_mode("debug", check_finite=True)
    try:
        with FlopCounterMode(display=False) as counter:
            with torch_tpu.eager_mode("fused"):  # turns the checks off under the user's mode
                a @ a
        assert counter.get_total_flops() == 128
        # switching from another thread neither fails nor leaves the checks on
        worker = threading.Thread(target=torch_tpu.set_eager_mode, args=("strict",))
        worker.start()
        worker.join()
        assert torch_tpu.get_eager_mode() == "strict"
        assert torch.tensor([-1.0], device="tpu").log().isnan().item()
    finally:
        torch_tpu.set_eager_mode("strict")
    assert _get_current_dispatch_mode_stack() == []


def test_fused_graph_ends_with_the_backward_pass(fused):
    torch.manual_seed(0)
    w = torch.randn(8, 4, device="tpu", requires_grad=True)
    x = torch.randn(5, 8, device="tpu")
    loss = (x @ w).tanh().sum()
    loss.backward()
    stats = torch_tpu.fused_stats()
    # the forward runs when backward starts, the backward where it ends
    assert stats["materializations"]["start_of_backward"] == 1
    assert stats["materializations"]["end_of_backward"] == 1
    assert stats["graphs_run"] == 2 and stats["materializations"]["read"] == 0
    with torch.no_grad():
        w -= 0.1 * w.grad  # recorded into the next graph
    assert torch_tpu.fused_stats()["graphs_run"] == 2
    ref_w = w.detach().cpu()  # the read runs the update
    wc = (w.detach().cpu() + 0.1 * w.grad.cpu()).requires_grad_()
    (x.cpu() @ wc).tanh().sum().backward()
    torch.testing.assert_close(w.grad.cpu(), wc.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ref_w, wc.detach() - 0.1 * wc.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.complex64])
def test_strict_scalar_fills_launch_nothing_and_share_no_writes(dtype):
    """A 0-dim fill in strict eager (a loss's seed gradient, an optimizer's
    step count) takes the value's cached device copy: no program runs, and
    an in-place update of one such tensor leaves the others alone."""
    with torch_tpu.eager_mode("strict"):
        before = runtime.cache_stats()["requests"]
        a, b = torch.ones((), device="tpu", dtype=dtype), torch.ones((), device="tpu", dtype=dtype)
        z = torch.zeros((), device="tpu", dtype=dtype)
        assert runtime.cache_stats()["requests"] == before
        a.add_(b)  # a program reading the shared value, writing a's own
        assert a.item() == torch.ones((), dtype=dtype).add_(torch.ones((), dtype=dtype)).item()
        assert b.item() == torch.ones((), dtype=dtype).item() and z.item() == 0
        if dtype.is_floating_point:
            x = torch.randn(5, device="tpu", requires_grad=True)
            launched = runtime.cache_stats()["requests"]
            (x * 3).sum().backward()  # the seed gradient is such a fill
            assert runtime.cache_stats()["requests"] - launched == 3  # mul, sum, mul's backward
            assert x.grad.tolist() == [3.0] * 5


@pytest.mark.parametrize("mode", ["strict", "debug", "fused"])
def test_in_place_updates_donate_their_buffers(mode):
    n = 1 << 18
    with torch_tpu.eager_mode(mode):
        torch_tpu.reset_fused_stats()
        x = torch.ones(n, device="tpu")
        torch.tpu.synchronize()
        base = torch.tpu.memory_allocated()
        torch.tpu.reset_peak_memory_stats()
        x.add_(1)
        x.mul_(3)
        assert x[:2].tolist() == [6.0, 6.0]
        # the updates reused x's buffer: no second n-element buffer at any time
        assert torch.tpu.max_memory_allocated() - base < n * 4 // 2
        if mode == "fused":
            assert torch_tpu.fused_stats()["buffers_donated"] >= 1
        torch.tpu.reset_peak_memory_stats()
        x[1:].sub_(1)  # a partial write reads and updates the storage: donated too
        assert x[:3].tolist() == [6.0, 5.0, 5.0]
        assert torch.tpu.max_memory_allocated() - base < n * 4 // 2
        torch.tpu.reset_peak_memory_stats()
        x[2:4] = torch.tensor([7.0, 8.0], device="tpu")  # copy_ into a slice (a KV-cache write)
        x[4:6].copy_(torch.tensor([9, 10], device="tpu"))
        assert x[:7].tolist() == [6.0, 5.0, 7.0, 8.0, 9.0, 10.0, 5.0]
        assert torch.tpu.max_memory_allocated() - base < n * 4 // 2
        y = x.clone()  # shares x's value: x.add_ must not donate it
        x.add_(1)
        x.add_(x)  # x's buffer read twice by one program: one argument, donated
        assert y[:2].tolist() == [6.0, 5.0] and x[:2].tolist() == [14.0, 12.0]
        z = x.view(torch.int32)  # a reinterpreting view writes a new value
        z.bitwise_and_(-1)
        assert x[:2].tolist() == [14.0, 12.0]


def test_diagnostics_dump_and_last_graph(fused, tmp_path):
    torch_tpu.diagnostics.set_dump_dir(tmp_path)
    try:
        (torch.arange(7.0, device="tpu") * 5 + 3).cpu()
    finally:
        torch_tpu.diagnostics.set_dump_dir(None)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files and all(f.endswith(".mlir") for f in files), files
    last = torch_tpu.diagnostics.last_graph()
    assert "stablehlo.multiply" in last and "func.func public @main" in last
    (torch.arange(7.0, device="tpu") * 2).cpu()
    assert torch_tpu.diagnostics.last_graph() != last


def test_diagnostics_explain_a_recompile():
    torch_tpu.diagnostics.explain_recompiles(True)
    torch_tpu.diagnostics.clear_recompile_explanations()
    try:
        a = torch.randn(13, 7, device="tpu")  # shapes no other test compiles
        with pytest.warns(UserWarning, match="aten::sin compiled again"):
            torch.sin(a)
            torch.sin(a.t())  # the same op on a view
        with torch_tpu.eager_mode("fused"):
            (a.sin() + 1).cpu()
            with pytest.warns(UserWarning, match="fused graph from aten::sin compiled again: was 'op 1: aten::add"):
                (a.sin() * 1.5).cpu()
    finally:
        torch_tpu.diagnostics.explain_recompiles(False)
    explanations = torch_tpu.diagnostics.recompile_explanations()
    assert any("operand 0" in e and "view" in e for e in explanations), explanations


def test_programs_loaded_from_disk_are_not_explained_as_recompiles(tmp_path):
    code = textwrap.dedent("""
        import torch, torch_tpu
        torch.randn(3, 4, device="tpu").sin()
        torch.randn(4, 3, device="tpu").sin()
        torch.tpu.synchronize()
        print("compiles", torch_tpu.runtime.cache_stats()["compiles"])
    """)
    env = dict(os.environ, TORCH_TPU_EXPLAIN_RECOMPILES="1", TORCH_TPU_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                           cwd=tmp_path, timeout=120) for _ in range(2)]
    assert "aten::sin compiled again" in runs[0].stderr, runs[0].stderr
    assert "compiles 0" in runs[1].stdout, runs[1].stdout
    assert "compiled again" not in runs[1].stderr, runs[1].stderr


def test_a_second_process_compiles_nothing(tmp_path):
    """The persistent cache: the same script in a new process loads every
    program (strict ops, fused graphs, torch.compile graphs) from disk."""
    script = textwrap.dedent("""
        import sys, torch, torch_tpu
        sys.path.insert(0, sys.argv[1])
        import mingpt
        from mingpt import GPTConfig
        cfg = GPTConfig(vocab_size=32, block_size=16, n_layer=1, n_head=2, n_embd=32)
        for mode in ("strict", "fused"):
            with torch_tpu.eager_mode(mode):
                step, _ = mingpt.make_step("tpu", cfg, batch=4)
                for i in range(3):
                    step(i).item()
        step, _ = mingpt.make_step("tpu", cfg, batch=4, backend="tpu", whole_step=True)
        for i in range(4):
            step(i).item()
        s = torch_tpu.runtime.cache_stats()
        print(s["compiles"], s["disk_hits"])
    """)
    examples = str(pathlib.Path(__file__).parent.parent / "examples")
    env = dict(os.environ, TORCH_TPU_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "-c", script, examples], env=env, capture_output=True, text=True,
                           cwd=tmp_path, check=True).stdout.split() for _ in range(2)]
    first_compiles, _ = map(int, runs[0])
    second_compiles, second_disk_hits = map(int, runs[1])
    assert first_compiles > 0
    assert second_compiles == 0
    assert second_disk_hits > 0


@pytest.mark.parametrize("mode", ["strict", "fused", "debug"])
def test_threads_writing_and_reading_one_tensor_lose_nothing(mode):
    """An in-place write is a read-modify-write of the whole storage, and an
    in-place op may donate the buffer a reader is about to use: threads
    writing disjoint rows of one tensor lost each other's updates, and a
    read beside an in-place loop met a donated buffer."""
    with torch_tpu.eager_mode(mode):
        rows = torch.zeros(4, 16, device="tpu")

        def write_row(r):
            for _ in range(50):
                rows[r].add_(1)

        workers = [threading.Thread(target=write_row, args=(r,)) for r in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert rows.cpu().eq(50).all()

        x = torch.zeros(256, device="tpu")
        writer = threading.Thread(target=lambda: [x.add_(1) for _ in range(200)])
        writer.start()
        seen = [x.cpu()[0].item() for _ in range(200)]
        writer.join()
        assert seen == sorted(seen) and x.cpu().eq(200).all()


def test_fused_read_waits_only_for_checks_the_value_may_depend_on(fused):
    """A read raises the failed checks of the graphs its value may come from;
    a check of a graph that runs later stays pending for the next read of
    a value that may depend on it, or the next synchronize. A loss read in
    a training step so waits for its forward's graph, not for the backward's
    checks (the indices of the index_put_ that accumulates a gradient)."""
    bad = torch.tensor([7], device="tpu")
    for sync in (lambda b: b.cpu(), lambda b: torch.tpu.synchronize()):
        a = torch.ones(4, device="tpu") * 2
        torch_tpu.materialize()  # a's graph runs
        b = torch.zeros(4, device="tpu").index_add(0, bad, torch.ones(1, device="tpu"))
        assert a.tolist() == [2.0] * 4  # b's graph and its check are not needed for this
        with pytest.raises(RuntimeError, match="index_add_: index out of bounds"):
            sync(b)
    with torch_tpu.eager_mode("strict"):
        # A strict op may make its flag after its result: reading the result
        # reads every pending flag.
        c = torch.zeros(4, device="tpu").index_add(0, bad, torch.ones(1, device="tpu"))
        with pytest.raises(RuntimeError, match="index_add_: index out of bounds"):
            c.cpu()
