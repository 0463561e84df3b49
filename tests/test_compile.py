"""torch.compile(backend="tpu"): compiled code computes what eager tpu code
computes (forward, loss, gradients, optimizer and BatchNorm state), graph
breaks fall back to eager, a second call compiles nothing, and Inductor on
tpu tensors says to use backend="tpu"."""

from __future__ import annotations

import copy
import importlib
import os
import sys

import pytest
import torch
import torch._dynamo
from torch import nn
from torch._dynamo.utils import counters
from torch.nn import functional as F

import torch_tpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

TPU = "tpu"


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    yield
    torch._dynamo.reset()


def graphs_compiled() -> int:
    return counters["stats"]["unique_graphs"]


def programs_compiled() -> int:
    return torch_tpu.runtime.cache_stats()["compiles"]


def to_tpu(x):
    if isinstance(x, (list, tuple)):
        return type(x)(to_tpu(v) for v in x)
    return x.to(TPU)


def assert_close(actual, expected, **tol):
    torch.testing.assert_close(actual.cpu(), expected.cpu(), **(tol or dict(rtol=1e-4, atol=1e-5)))


# The example models, built small: (model, inputs, loss of the output).
def _mingpt():
    mingpt = importlib.import_module("mingpt")
    cfg = mingpt.GPTConfig(vocab_size=16, block_size=8, n_layer=1, n_head=2, n_embd=16)
    data = torch.randint(16, (2, 9), generator=torch.Generator().manual_seed(0))
    return mingpt.GPT(cfg), (data[:, :-1], data[:, 1:]), lambda out: out[1]


def _llama():
    llama = importlib.import_module("llama")
    cfg = llama.LlamaConfig(vocab_size=16, dim=16, n_layers=1, n_heads=2, n_kv_heads=1, hidden_dim=32,
                            max_seq_len=8)
    data = llama.sequences(cfg, 2, 9).to(TPU)
    return llama.Llama(cfg), (data[:, :-1],), lambda out: F.cross_entropy(out.flatten(0, 1), data[:, 1:].flatten())


def _resnet():
    resnet = importlib.import_module("resnet")
    x, y = resnet.images(4)
    y = y.to(TPU)
    return resnet.ResNet(widths=(4, 8, 8)), (x[:, :, :8, :8],), lambda out: F.cross_entropy(out, y)


def _dlrm():
    dlrm = importlib.import_module("dlrm")
    dense, ids, labels = dlrm.clicks(4)
    offsets = torch.arange(4) * dlrm.BAG_SIZE
    labels = labels.to(TPU)
    inputs = (dense, [i.flatten() for i in ids], [offsets] * len(ids))
    return dlrm.DLRM(), inputs, lambda out: F.binary_cross_entropy_with_logits(out, labels)


def _unet():
    unet = importlib.import_module("unet")
    noisy, clean = unet.noisy_images(1, size=8)
    clean = clean.to(TPU)
    return unet.UNet(widths=(4, 8)), (noisy,), lambda out: F.mse_loss(out, clean)


EXAMPLES = {"mingpt": _mingpt, "llama": _llama, "resnet": _resnet, "dlrm": _dlrm, "unet": _unet}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_forward_loss_gradients_match_eager(name):
    torch.manual_seed(0)
    model, inputs, loss_of = EXAMPLES[name]()
    model, inputs = model.to(TPU), to_tpu(inputs)
    compiled_model = copy.deepcopy(model)
    compiled = torch.compile(compiled_model, backend="tpu")

    expected_out, actual_out = model(*inputs), compiled(*inputs)
    assert graphs_compiled() >= 1
    for a, e in zip(torch.utils._pytree.tree_leaves(actual_out), torch.utils._pytree.tree_leaves(expected_out)):
        assert_close(a, e)
    expected, actual = loss_of(expected_out), loss_of(actual_out)
    assert_close(actual, expected)
    expected.backward()
    actual.backward()
    for (pname, p), q in zip(model.named_parameters(), compiled_model.parameters()):
        assert q.grad is not None, pname
        assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5)

    # Same shapes again: no Dynamo graph and no device program is compiled.
    graphs, programs = graphs_compiled(), programs_compiled()
    compiled_model.zero_grad()
    loss_of(compiled(*inputs)).backward()
    assert (graphs_compiled(), programs_compiled()) == (graphs, programs)

    # From the third call on the graphs' captured programs are replayed
    # (docs/compile.md): still the eager loss and gradients.
    compiled(*inputs)
    replayed = torch_tpu.fused_stats()["graphs_replayed"]
    model.zero_grad()
    compiled_model.zero_grad()
    expected, actual = loss_of(model(*inputs)), loss_of(compiled(*inputs))
    expected.backward()
    actual.backward()
    assert torch_tpu.fused_stats()["graphs_replayed"] - replayed >= 2  # forward and backward
    assert_close(actual, expected)
    for (pname, p), q in zip(model.named_parameters(), compiled_model.parameters()):
        assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5)


class BNDropNet(nn.Module):
    """BatchNorm (running statistics) and dropout (the device generator)."""

    def __init__(self):
        super().__init__()
        # No bias before the norm: its gradient is rounding noise, which
        # Adam's normalized step would turn into differences of size lr.
        self.fc1, self.bn, self.fc2 = nn.Linear(6, 16, bias=False), nn.BatchNorm1d(16), nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.dropout(F.relu(self.bn(self.fc1(x))), p=0.3, training=self.training))


def train_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


@pytest.mark.parametrize("optimizer", [torch.optim.Adam, torch.optim.AdamW])
def test_whole_training_step_matches_eager(optimizer):
    torch.manual_seed(0)
    model = BNDropNet().to(TPU)
    compiled_model = copy.deepcopy(model)
    opt = optimizer(model.parameters(), lr=1e-2, capturable=True)
    compiled_opt = optimizer(compiled_model.parameters(), lr=1e-2, capturable=True)
    step = torch.compile(train_step, backend="tpu")
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(8, 6, generator=g).to(TPU), torch.randint(3, (8,), generator=g).to(TPU))
               for _ in range(3)]

    for i, (x, y) in enumerate(batches):
        # The same generator state on both sides: the same dropout masks.
        torch.tpu.manual_seed(i)
        expected = train_step(model, opt, x, y)
        torch.tpu.manual_seed(i)
        if i == 2:
            graphs, programs = graphs_compiled(), programs_compiled()
        actual = step(compiled_model, compiled_opt, x, y)
        assert_close(actual, expected)
    # The third step ran cached graphs and programs only.
    assert (graphs_compiled(), programs_compiled()) == (graphs, programs)
    for p, q in zip(model.parameters(), compiled_model.parameters()):
        assert_close(q, p, rtol=1e-4, atol=1e-5)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_close(getattr(compiled_model.bn, name), getattr(model.bn, name))


@pytest.mark.parametrize("name", ["mingpt", "resnet"])
def test_example_whole_step_compiled_matches_eager(name):
    """make_step(whole_step=True), benchmarks/modes.py's compiled-step: the
    losses of eager tpu code, a few programs per step (forward, backward,
    optimizer, dropping the gradients), none compiled after the first."""
    example = importlib.import_module(name)
    size = {"batch": 4}
    if name == "mingpt":
        size["cfg"] = example.GPTConfig(vocab_size=example.corpus()[1], block_size=8, n_layer=1, n_head=2, n_embd=16)
    eager, _ = example.make_step(TPU, **size)
    compiled, _ = example.make_step(TPU, backend="tpu", whole_step=True, **size)
    expected = [eager(i).item() for i in range(4)]
    actual = [compiled(i).item() for i in range(3)]
    programs, launches = programs_compiled(), torch_tpu.runtime.cache_stats()["requests"]
    actual.append(compiled(3).item())
    assert programs_compiled() == programs
    assert torch_tpu.runtime.cache_stats()["requests"] - launches <= 4
    torch.testing.assert_close(torch.tensor(actual), torch.tensor(expected), rtol=1e-4, atol=1e-5)


def test_optimizer_step_writes_its_updates_with_one_op():
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode

    class CountOps(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops[func] += 1
            return func(*args, **(kwargs or {}))

    model = nn.Linear(4, 3).to(TPU)
    model(torch.randn(2, 4, device=TPU)).sum().backward()
    opt = torch.optim.Adam(model.parameters(), capturable=True)
    step = torch.compile(opt.step, backend="tpu")
    step()
    with CountOps() as counted:
        step()
    aten = torch.ops.aten
    # parameters, moments and step counts of weight and bias: one op
    assert counted.ops[aten._foreach_copy_.default] == 1
    assert counted.ops[aten.copy_.default] == 0


def test_dropout_draws_from_the_device_generator():
    f = torch.compile(lambda x: F.dropout(x, 0.5), backend="tpu")
    x = torch.ones(64, device=TPU)
    torch.tpu.manual_seed(3)
    a = f(x).cpu()
    b = f(x).cpu()
    torch.tpu.manual_seed(3)
    assert torch.equal(f(x).cpu(), a)
    assert not torch.equal(a, b)
    torch.tpu.manual_seed(3)
    assert torch.equal(F.dropout(x, 0.5).cpu(), a)


def test_checkpointed_dropout_recomputes_the_same_mask():
    """Activation checkpointing recomputes its region in backward; AOTAutograd
    wraps the region's random ops in run_and_save_rng_state /
    run_with_rng_state, which the tpu backend implements with the device
    generator's state."""
    from torch.utils.checkpoint import checkpoint

    def loss(x):
        return checkpoint(lambda t: F.dropout(t.sin(), 0.5), x, use_reentrant=False).sum()

    compiled = torch.compile(loss, backend="tpu")
    x = torch.randn(256, device=TPU, requires_grad=True)
    for step in range(3):  # past the graph runner's captures
        torch.tpu.manual_seed(step)
        loss(x).backward()
        eager_grad, x.grad = x.grad, None
        torch.tpu.manual_seed(step)
        compiled(x).backward()
        torch.testing.assert_close(x.grad.cpu(), eager_grad.cpu())
        kept = eager_grad.cpu() != 0
        assert 0.3 < kept.float().mean() < 0.7  # a mask was drawn
        torch.testing.assert_close(x.grad.cpu(), kept * 2 * x.detach().cpu().cos())
        x.grad = None


def test_graph_break_falls_back_to_eager():
    def f(x):
        y = x.sin() * 2
        print("a graph break", end="\r")
        return y.cos() + x

    x = torch.randn(4, 5, device=TPU)
    compiled = torch.compile(f, backend="tpu")
    assert_close(compiled(x), f(x))
    assert graphs_compiled() == 2
    assert sum(counters["graph_break"].values()) >= 1


def test_recompiles_only_when_a_guard_fails():
    compiled = torch.compile(lambda x: (x * 3).relu().sum(0), backend="tpu", dynamic=False)
    a, b = torch.randn(4, 3, device=TPU), torch.randn(5, 3, device=TPU)
    compiled(a)
    compiled(torch.randn(4, 3, device=TPU))
    assert graphs_compiled() == 1
    assert_close(compiled(b), (b * 3).relu().sum(0))  # a new shape fails the guard
    assert graphs_compiled() == 2
    compiled(a)
    assert graphs_compiled() == 2


def test_mark_dynamic_compiles_one_graph_for_all_sizes():
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(TPU)
    compiled_model = copy.deepcopy(model)
    compiled = torch.compile(compiled_model, backend="tpu")
    for n in (3, 5):
        x = torch.randn(n, 4, device=TPU)
        torch._dynamo.mark_dynamic(x, 0)
        actual, expected = compiled(x), model(x)
        assert_close(actual, expected)
        actual.sum().backward()
        expected.sum().backward()
    assert graphs_compiled() == 1
    for p, q in zip(model.parameters(), compiled_model.parameters()):
        assert_close(q.grad, p.grad)


def test_default_dynamic_traces_one_symbolic_graph_after_a_new_shape():
    compiled = torch.compile(lambda x: (x * x.shape[0]).cumsum(0), backend="tpu")
    for n in (2, 3, 4, 5):
        x = torch.randn(n, 3, device=TPU)
        assert_close(compiled(x), (x * n).cumsum(0))
    assert graphs_compiled() == 2  # the first, static one; then one for every size


def test_results_do_not_depend_on_kernel_output_layouts():
    # The traced (meta) layouts of an elementwise result on a transposed
    # input and of an attention output allow views (AOTAutograd turns the
    # reshape into one); the tpu kernels return other layouts for the same
    # values. The CPU is the reference.
    def f(q, k, v):
        y = F.scaled_dot_product_attention(q, k, v).transpose(1, 2)
        z = (q.transpose(1, 2) * 2).transpose(1, 2).view(2, 60)
        return y.reshape(2, 5, 12), z

    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    out = torch.compile(f, backend="tpu")(*to_tpu((q, k, v)))
    expected = (F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 5, 12), (q * 2).reshape(2, 60))
    for a, e in zip(out, expected):
        assert_close(a, e)


def test_inference_keeps_buffer_updates():
    bn = nn.BatchNorm1d(4).to(TPU)
    reference = copy.deepcopy(bn)
    x = torch.randn(8, 4, device=TPU)
    with torch.no_grad():
        assert_close(torch.compile(bn, backend="tpu")(x), reference(x))
    assert_close(bn.running_mean, reference.running_mean)
    assert_close(bn.running_var, reference.running_var)


def test_each_graph_runs_as_one_fused_program():
    x = torch.randn(3, device=TPU)
    torch.tpu.synchronize()
    torch_tpu.reset_fused_stats()
    out = torch.compile(lambda x: (x.exp() + 1).sin() * 2, backend="tpu")(x)
    stats = torch_tpu.fused_stats()
    assert stats["graphs_run"] == 1 and stats["materializations"]["explicit"] == 1
    assert stats["ops_recorded"] >= 4
    assert torch_tpu.get_eager_mode() == "strict"  # the caller's mode is back
    assert_close(out, (x.exp() + 1).sin() * 2)
    torch_tpu.reset_fused_stats()
    torch.compile(lambda x: x.exp() - 1, backend="tpu", options={"fuse": False})(x)
    assert torch_tpu.fused_stats()["ops_recorded"] == 0


def test_unknown_option_is_refused():
    with pytest.raises(Exception, match="no option 'fusion'"):
        torch.compile(lambda x: x + 1, backend="tpu", options={"fusion": True})(torch.ones(2, device=TPU))


def test_decompositions_only_for_ops_without_a_tpu_lowering():
    from torch_tpu._compile.decompositions import tpu_decompositions

    table = tpu_decompositions()
    aten = torch.ops.aten
    assert aten.native_layer_norm.default not in table  # has a tpu lowering
    assert aten._softmax.default not in table
    assert all(not torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "PrivateUse1") for op in table)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape, target", [((4, 5), [[1, 2, -1, 0, 0], [0, 1, 2, 3, 4], [-1, 0, 0, 0, 0], [4, -1, 3, 3, 3]]),
                                           ((5,), [1, -1, 0, 0, 0])], ids=["batch", "unbatched"])
def test_multilabel_margin_loss_compiles_to_eager_values(shape, target, reduction):
    # PyTorch's decomposition, which tracing applies in spite of the tpu
    # kernel, counted class 0 once for every slot after a -1 terminator.
    x = torch.randn(shape)
    t = torch.tensor(target)
    ref = x.clone().requires_grad_()
    F.multilabel_margin_loss(ref, t, reduction=reduction).sum().backward()
    got = x.to(TPU).requires_grad_()
    loss = torch.compile(lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction), backend="tpu")(got, t.to(TPU))
    loss.sum().backward()
    torch.testing.assert_close(loss.detach().cpu(), F.multilabel_margin_loss(x, t, reduction=reduction))
    torch.testing.assert_close(got.grad.cpu(), ref.grad)


def test_dynamo_sees_tpu_as_an_accelerator():
    from torch._dynamo.device_interface import get_interface_for_device

    from torch_tpu._compile.device_interface import TpuInterface

    interface = get_interface_for_device("tpu")
    assert interface is TpuInterface
    assert interface.is_available() and interface.device_count() == torch.tpu.device_count()
    assert interface.current_device() == torch.tpu.current_device()
    assert interface.current_stream().device.type == TPU
    interface.synchronize()
    assert "tpu" in torch._dynamo.list_backends()


def test_inductor_on_tpu_points_to_the_tpu_backend():
    x = torch.randn(4, device=TPU)
    with pytest.raises(Exception, match='backend="tpu"'):
        torch.compile(lambda x: x.sin() * 2)(x)


def test_aot_inductor_on_tpu_points_to_the_tpu_backend(tmp_path):
    ep = torch.export.export(torch.nn.Linear(4, 2).to(TPU), (torch.randn(3, 4, device=TPU),))
    with pytest.raises(Exception, match='backend="tpu"'):
        torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "m.pt2"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_grouped_mm_compiles_for_every_float_dtype(dtype):
    """PyTorch's shape function for _grouped_mm takes bf16 only (cuBLAS);
    on tpu any float runs, so a float32 mixture-of-experts layer compiles."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(6, 8, generator=g).to(dtype), torch.randn(2, 8, 8, generator=g).to(dtype)  # rows of 16 bytes, as the op demands
    offs = torch.tensor([2, 6], dtype=torch.int32)

    def step(a, b, offs):
        a, b = a.detach().requires_grad_(), b.detach().requires_grad_()
        out = torch.compile(lambda a, b, o: F.grouped_mm(a, b, offs=o), backend="tpu")(a, b, offs)
        out.float().pow(2).sum().backward()
        return out, a.grad, b.grad

    torch._dynamo.reset()
    want = [F.grouped_mm(a, b, offs=offs)]
    ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
    F.grouped_mm(ac, bc, offs=offs).float().pow(2).sum().backward()
    want += [ac.grad, bc.grad]
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-5)
    for got, expected in zip(step(a.to(TPU), b.to(TPU), offs.to(TPU)), want):
        torch.testing.assert_close(got.cpu(), expected, **tol)


def test_torch_tpu_calls_inside_compiled_code_run_eagerly_without_warnings():
    import warnings

    @torch.compile(backend="tpu")
    def f(x):
        y = x * 2
        torch.tpu.synchronize()
        return y + torch.tpu.device_count() + torch.tpu.memory_allocated() * 0

    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(torch.ones(3, device=TPU))
    assert torch.equal(out.cpu(), torch.full((3,), 2.0 + torch.tpu.device_count()))
    assert not [w for w in caught if "Dynamo does not know how to trace" in str(w.message)]


def test_device_queries_are_constants_in_a_full_graph():
    """torch.tpu's fixed answers fold into the graph, as Dynamo folds
    torch.cuda's: no graph break, so fullgraph=True compiles."""
    torch._dynamo.reset()

    @torch.compile(backend="tpu", fullgraph=True)
    def step(x):
        if torch.tpu.is_available() and torch.tpu.device_count() > 0 and torch.tpu.is_bf16_supported():
            return x * 2 + len(torch.tpu.get_device_name())
        return x

    x = torch.ones(3, device="tpu")
    torch.testing.assert_close(step(x).cpu(), (x * 2 + len(torch.tpu.get_device_name())).cpu())
    assert torch.tpu.is_available() and isinstance(torch.tpu.device_count(), int)  # eager calls unchanged


def test_an_unknown_mode_is_refused():
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: x + 1, backend="tpu", mode="bogus")
    with pytest.raises(Exception, match="unrecognized mode=bogus"):
        compiled(torch.ones(2, device="tpu"))
    torch._dynamo.reset()
    assert torch.compile(lambda x: x + 1, backend="tpu", mode="reduce-overhead")(torch.ones(2, device="tpu")).sum() == 4


def test_channels_last_convolutions_inside_cond_branches_and_export():
    # The branches are subgraphs: their views of a channels_last result must
    # hold too (they failed with "view size is not compatible").
    torch._dynamo.reset()
    x = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    w = torch.randn(2, 3, 2, 2)

    def f(x, w):
        return torch.cond(x.sum() > -1e9, lambda x, w: F.conv2d(x, w).reshape(2, -1),
                          lambda x, w: -F.conv2d(x, w).reshape(2, -1), (x, w))

    got = torch.compile(f, backend="tpu")(x.to(TPU), w.to(TPU))
    torch.testing.assert_close(got.cpu(), F.conv2d(x, w).reshape(2, -1), rtol=1e-5, atol=1e-5)

    conv = nn.Conv2d(3, 4, 2)
    flat = nn.Sequential(conv, nn.Flatten())
    want = flat(x)
    program = torch.export.export(flat.to(TPU), (x.to(TPU),)).run_decompositions()
    torch.testing.assert_close(program.module()(x.to(TPU)).cpu(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("compiled", [False, True])
def test_control_flow_under_autocast(compiled):
    # PyTorch lets higher-order ops skip autocast only for CPU, CUDA and XPU.
    torch._dynamo.reset()
    x, w = torch.randn(4, 6), torch.randn(6, 6)

    def f(x, w):
        with torch.autocast(x.device.type, dtype=torch.bfloat16):
            branch = torch.cond(x.sum() > 0, lambda x: x @ w, lambda x: x @ w.t(), (x,))
            carried = torch._higher_order_ops.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, (y @ w).float()),
                                                         (torch.zeros((), dtype=torch.int64, device=x.device), x))
        return branch, carried[1]

    run = torch.compile(f, backend="tpu") if compiled else f
    for got, want in zip(run(x.to(TPU), w.to(TPU)), f(x, w)):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got.float().cpu(), want.float(), rtol=2e-2, atol=5e-2)


def test_scan_with_gradients():
    # Decomposing detach / alias_copy made scan's functionalization see its
    # body alias an input ("scan might be aliasing the input or the output").
    from torch._higher_order_ops.scan import scan

    def f(init, xs):
        carry, ys = scan(lambda c, x: (torch.tanh(c * x), torch.tanh(c * x) * 2), init, xs)
        return carry.sum() + ys.sum()

    init, xs = torch.randn(3, requires_grad=True), torch.randn(5, 3, requires_grad=True)
    f(init, xs).backward()
    tpu_init, tpu_xs = (t.detach().to(TPU).requires_grad_() for t in (init, xs))
    loss = torch.compile(f, backend="tpu", fullgraph=True)(tpu_init, tpu_xs)
    loss.backward()
    torch.testing.assert_close(loss.cpu(), f(init, xs).detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(tpu_init.grad.cpu(), init.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(tpu_xs.grad.cpu(), xs.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", ["cpu", TPU])
def test_compiled_optimizer_step_does_not_trace_the_capture_check(device):
    # torch_tpu's optimizer pre-hook (graphs.py) runs for every optimizer in
    # the process; Dynamo must not meet the extension's builtin in it.
    import warnings

    model = nn.Linear(4, 4).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.1, capturable=device != "cpu")
    model(torch.randn(2, 4, device=device)).sum().backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.compile(opt.step, backend="tpu" if device != "cpu" else "eager")()
    assert not [w for w in caught if "torch_tpu" in str(w.message)]
