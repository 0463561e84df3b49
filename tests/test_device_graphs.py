"""Device graphs: torch.accelerator.Graph and torch.tpu.graph / TPUGraph
capture the ops between their start and end into one program and replay it
on the current values of the tensors the capture read, as CUDA graphs do
(csrc/aten/device_graph.h)."""

from __future__ import annotations

import copy
import os

import pytest
import torch
import torch.nn.functional as F
import torch_tpu

TPU = "tpu"


def test_replay_reads_what_was_written_into_its_inputs_since():
    x = torch.arange(4.0, device=TPU)
    w = torch.full((4,), 2.0, device=TPU)
    graph = torch.accelerator.Graph()
    with graph:
        y = x * w + 1
    x.copy_(torch.tensor([10.0, 20.0, 30.0, 40.0]))
    graph.replay()
    assert y.cpu().tolist() == [21.0, 41.0, 61.0, 81.0]
    w.fill_(-1.0)
    graph.replay()
    assert y.cpu().tolist() == [-9.0, -19.0, -29.0, -39.0]


def test_captured_work_takes_effect_only_at_replays():
    """As on CUDA: capturing an in-place update does not apply it."""
    z = torch.zeros(3, device=TPU)
    graph = torch.tpu.TPUGraph()
    with torch.tpu.graph(graph):
        z.add_(1).mul_(2)
    assert z.cpu().tolist() == [0.0, 0.0, 0.0]
    graph.replay()
    graph.replay()
    assert z.cpu().tolist() == [6.0, 6.0, 6.0]
    # the program is launched once per replay, not op by op
    before = torch_tpu.fused_stats()["graphs_replayed"]
    graph.replay()
    assert torch_tpu.fused_stats()["graphs_replayed"] == before + 1
    assert z.cpu().tolist() == [14.0, 14.0, 14.0]


def _data():
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(6, 8, generator=generator), torch.randn(6, 3, generator=generator)) for _ in range(6)]


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.GELU(),
                               torch.nn.Linear(16, 3))


@pytest.mark.parametrize("optimizer", ["Adam", "AdamW", "SGD"])
def test_a_captured_training_step_replays_as_eager_steps_run(optimizer):
    """Forward, backward and the optimizer's step in one capture, replayed
    on new batches: the losses and parameters of eager steps on the CPU."""
    make_opt = {
        "Adam": lambda p, capturable: torch.optim.Adam(p, lr=1e-2, capturable=capturable),
        "AdamW": lambda p, capturable: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, capturable=capturable),
        "SGD": lambda p, capturable: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    }[optimizer]
    base, data = _model(), _data()

    cpu = copy.deepcopy(base)
    opt = make_opt(cpu.parameters(), False)
    expected = []
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(cpu(x), y)
        loss.backward()
        opt.step()
        expected.append(loss.item())

    model = copy.deepcopy(base).to(TPU)
    opt = make_opt(model.parameters(), True)
    static_x, static_y = data[0][0].to(TPU), data[0][1].to(TPU)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(static_x), static_y)
        loss.backward()
        opt.step()
        return loss

    losses = [step().item()]  # the warm-up step makes the optimizer's state outside the capture
    graph = torch.accelerator.Graph()
    with graph:
        static_loss = step()
    for x, y in data[1:]:
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()
        losses.append(static_loss.item())
    assert losses == pytest.approx(expected, rel=1e-5, abs=1e-6)
    for p, q in zip(model.parameters(), cpu.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-5, atol=1e-6)
    # the gradients made inside the capture are the last replay's
    for p in model.parameters():
        assert p.grad is not None and p.grad.device.type == TPU


def test_batch_norm_buffers_update_at_each_replay():
    torch.manual_seed(0)
    cpu_bn = torch.nn.BatchNorm1d(4)
    bn = copy.deepcopy(cpu_bn).to(TPU)
    batches = [torch.randn(8, 4) for _ in range(3)]
    static = torch.zeros(8, 4, device=TPU)
    graph = torch.accelerator.Graph()
    with graph:
        out = bn(static)
    assert bn.num_batches_tracked.item() == 0  # not applied by the capture
    for b in batches:
        static.copy_(b)
        graph.replay()
        expected = cpu_bn(b)
    torch.testing.assert_close(out.cpu(), expected.detach())
    torch.testing.assert_close(bn.running_mean.cpu(), cpu_bn.running_mean)
    torch.testing.assert_close(bn.running_var.cpu(), cpu_bn.running_var)
    assert bn.num_batches_tracked.item() == 3


def test_random_ops_draw_new_numbers_at_each_replay_and_the_capture_draws_none():
    x = torch.ones(2000, device=TPU)
    torch.tpu.manual_seed(7)
    state = torch.tpu.get_rng_state()
    graph = torch.accelerator.Graph()
    with graph:
        out = F.dropout(x, 0.5)
    assert torch.equal(torch.tpu.get_rng_state(), state)  # put back, as CUDA leaves its generator
    graph.replay()
    first = out.cpu()
    torch.tpu.set_rng_state(state)
    assert torch.equal(first, F.dropout(x, 0.5).cpu())  # the draws an eager op makes from that state
    graph.replay()
    second = out.cpu()
    assert not torch.equal(first, second)
    assert abs(second.mean().item() - 1.0) < 0.1


def test_a_static_input_never_written_before_the_capture():
    static = torch.empty(5, device=TPU)
    graph = torch.accelerator.Graph()
    with graph:
        out = static.sum() * 2
    static.copy_(torch.arange(5.0))
    graph.replay()
    assert out.item() == 20.0


def test_an_input_given_a_value_of_another_shape_is_read_as_captured():
    """A whole-storage copy shares its source's value in the source's
    shape: the replay reads it as the capture did."""
    static = torch.zeros(12, device=TPU)
    graph = torch.accelerator.Graph()
    with graph:
        out = static.cumsum(0)
    static.copy_(torch.arange(12.0, device=TPU).reshape(3, 4).view(12))
    graph.replay()
    assert out.cpu().tolist() == torch.arange(12.0).cumsum(0).tolist()


def test_tensors_made_inside_the_capture_hold_what_it_computed():
    x = torch.tensor([1.0, 2.0], device=TPU)
    graph = torch.accelerator.Graph()
    with graph:
        y = x.exp()
    torch.testing.assert_close(y.cpu(), torch.tensor([1.0, 2.0]).exp())


def test_reading_a_value_inside_a_capture_raises_and_puts_everything_back():
    z = torch.zeros(3, device=TPU)
    graph = torch.tpu.TPUGraph()
    with pytest.raises(RuntimeError, match="tpu graph capture: the captured code copies a device value to the host"):
        with torch.tpu.graph(graph):
            z.add_(1)
            (z * 2).sum().item()
    assert z.cpu().tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="replay\\(\\) without a captured graph"):
        graph.replay()
    # nor an op whose result's size depends on values
    with pytest.raises(RuntimeError, match="tpu graph capture"):
        with torch.tpu.graph(torch.tpu.TPUGraph()):
            torch.nonzero(z)
    # the device works as before
    assert (z + 1).cpu().tolist() == [1.0, 1.0, 1.0]


def test_synchronize_inside_a_capture_raises():
    x = torch.ones(2, device=TPU)
    graph = torch.accelerator.Graph()
    graph.capture_begin()
    y = x + 1
    with pytest.raises(RuntimeError, match="synchronizes the device"):
        torch.tpu.synchronize()
    with pytest.raises(RuntimeError, match="tpu graph capture failed"):
        graph.capture_end()
    assert y.cpu().tolist() == [2.0, 2.0]


def test_an_optimizer_keeping_its_step_count_on_the_host_is_refused():
    p = torch.nn.Parameter(torch.ones(3, device=TPU))
    p.grad = torch.ones(3, device=TPU)
    opt = torch.optim.Adam([p], lr=0.1)
    with pytest.raises(RuntimeError, match="capturable is False"):
        with torch.tpu.graph(torch.tpu.TPUGraph()):
            opt.step()
    assert p.detach().cpu().tolist() == [1.0, 1.0, 1.0]


def test_capture_state_api_and_recapture():
    assert not torch.tpu.is_current_stream_capturing()
    x = torch.ones(2, device=TPU)
    graph = torch.tpu.TPUGraph()
    pool = torch.tpu.graph_pool_handle()
    with torch.tpu.graph(graph, pool=pool):
        assert torch.tpu.is_current_stream_capturing()
        assert torch.accelerator.current_stream().is_capturing()
        y = x + 1
    assert graph.pool() == pool
    assert not torch.tpu.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="already holds a capture"):
        graph.capture_begin()
    graph.reset()
    with torch.tpu.graph(graph):
        y = x * 5
    graph.replay()
    assert y.cpu().tolist() == [5.0, 5.0]
    with pytest.raises(RuntimeError, match="capture_end\\(\\) without capture_begin\\(\\)"):
        torch.accelerator.Graph().capture_end()


def test_debug_dump_writes_the_program(tmp_path):
    x = torch.ones(3, device=TPU)
    graph = torch.accelerator.Graph()
    with graph:
        y = x.sin()
    path = os.path.join(tmp_path, "graph.mlir")
    graph.enable_debug_mode()
    graph.debug_dump(path)
    text = open(path).read()
    assert "stablehlo.sine" in text and "func.func" in text
    del y


@pytest.mark.parametrize("mode", ["fused", "debug"])
def test_capture_in_other_eager_modes(mode):
    x = torch.arange(3.0, device=TPU)
    with torch_tpu.eager_mode(mode):
        graph = torch.accelerator.Graph()
        with graph:
            y = (x * x).sum()
        x.copy_(torch.tensor([1.0, 1.0, 1.0]))
        graph.replay()
        assert y.item() == 3.0


def test_two_tensors_that_shared_a_value_at_capture_must_share_it_at_replay():
    a = torch.ones(3, device=TPU)
    b = a.clone()  # shares a's device value
    graph = torch.accelerator.Graph()
    with graph:
        out = a + b
    graph.replay()
    assert out.cpu().tolist() == [2.0, 2.0, 2.0]
    a.fill_(5.0)
    with pytest.raises(RuntimeError, match="shared one device value when it was captured"):
        graph.replay()


def test_a_compiled_function_called_inside_a_capture_is_captured():
    x = torch.ones(3, device=TPU)
    compiled = torch.compile(lambda a: a * 2 + 1, backend="tpu")
    for _ in range(3):  # replayed from its own captured program by now
        compiled(x)
    graph = torch.accelerator.Graph()
    with graph:
        y = compiled(x)
    x.fill_(5.0)
    graph.replay()
    assert y.cpu().tolist() == [11.0, 11.0, 11.0]


def test_a_deferred_check_of_a_captured_op_is_checked_at_each_replay():
    x = torch.arange(4.0, device=TPU)
    index = torch.tensor([0, 3], device=TPU)
    graph = torch.accelerator.Graph()
    with graph:
        y = x[index]
    graph.replay()
    assert y.cpu().tolist() == [0.0, 3.0]
    index.copy_(torch.tensor([1, 9]))
    graph.replay()
    with pytest.raises(IndexError):
        torch.tpu.synchronize()


def test_make_graphed_callables_trains_modules_like_eager_cpu_modules():
    torch.manual_seed(0)
    first = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU())
    second = torch.nn.Linear(16, 3)
    cpu_first, cpu_second = copy.deepcopy(first), copy.deepcopy(second)
    first, second = first.to(TPU), second.to(TPU)
    sample_x = torch.randn(4, 8, device=TPU, requires_grad=True)
    sample_h = torch.randn(4, 16, device=TPU, requires_grad=True)
    first, second = torch.tpu.make_graphed_callables((first, second), ((sample_x,), (sample_h,)))
    params = list(first.parameters()) + list(second.parameters())
    cpu_params = list(cpu_first.parameters()) + list(cpu_second.parameters())
    opt, cpu_opt = torch.optim.SGD(params, lr=0.1), torch.optim.SGD(cpu_params, lr=0.1)
    generator = torch.Generator().manual_seed(3)
    replays = torch_tpu.fused_stats()["graphs_replayed"]
    for _ in range(4):
        x, target = torch.randn(4, 8, generator=generator), torch.randn(4, 3, generator=generator)
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(second(first(x.to(TPU))), target.to(TPU))
        loss.backward()
        opt.step()
        cpu_opt.zero_grad(set_to_none=True)
        cpu_loss = F.mse_loss(cpu_second(cpu_first(x)), target)
        cpu_loss.backward()
        cpu_opt.step()
        assert loss.item() == pytest.approx(cpu_loss.item(), rel=1e-5)
    assert torch_tpu.fused_stats()["graphs_replayed"] - replays == 4 * 4  # two forward, two backward graphs a step
    for p, q in zip(params, cpu_params):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-5, atol=1e-6)
    # in the other training mode a module runs eagerly
    first.eval()
    torch.testing.assert_close(first(sample_x).detach().cpu(), cpu_first.eval()(sample_x.detach().cpu()),
                               rtol=1e-5, atol=1e-6)


def test_make_graphed_callables_of_a_function():
    def f(a, b):
        return (a.sin() * b).sum()

    sample = (torch.randn(5, device=TPU, requires_grad=True), torch.randn(5, device=TPU))
    graphed = torch.tpu.make_graphed_callables(f, sample)
    a, b = torch.randn(5, requires_grad=True), torch.randn(5)
    a_tpu = a.detach().to(TPU).requires_grad_()
    out = graphed(a_tpu, b.to(TPU))
    out.backward()
    expected = f(a, b)
    expected.backward()
    assert out.item() == pytest.approx(expected.item(), rel=1e-5)
    torch.testing.assert_close(a_tpu.grad.cpu(), a.grad, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="only tensor arguments"):
        torch.tpu.make_graphed_callables(f, (sample[0], 2.0))


def test_one_capture_at_a_time():
    x = torch.ones(2, device=TPU)
    outer = torch.accelerator.Graph()
    with outer:
        y = x + 1
        with pytest.raises(RuntimeError, match="another capture is active"):
            torch.accelerator.Graph().capture_begin()
    outer.replay()
    assert y.cpu().tolist() == [2.0, 2.0]
