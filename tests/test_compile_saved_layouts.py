"""Saved convolution activations cross from a compiled forward to its
backward channels-last on the CPU plugin (torch_tpu/_compile/saved_layouts.py):
the values and gradients stay those of eager, on the captured calls and on
the replayed ones."""

from __future__ import annotations

import copy

import pytest
import torch
import torch._dynamo
from torch import nn

import torch_tpu
from torch_tpu._compile import saved_layouts

TPU = "tpu"

pytestmark = pytest.mark.skipif(torch_tpu.runtime.platform() != "cpu",
                                reason="saved activations change layout on the CPU plugin only")


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class ConvBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv1(x)))
        y = torch.relu(self.conv2(y) + y[:, :, ::2, ::2])
        return self.head(y.mean((2, 3)))


def saved_tensors_of(fn, *args):
    """The tensors the compiled forward saves for backward, and fn's result."""
    saved = []

    def pack(t):
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*args)
    return saved, out


def channels_last_only(t: torch.Tensor) -> bool:
    """Channels (dim 1) innermost in memory, the rest in order."""
    if t.dim() < 3 or t.is_contiguous():
        return False
    order = (0, *range(2, t.dim()), 1)
    return t.permute(order).is_contiguous()


def check_training_matches_eager(model, batches, compile_kwargs=None):
    cpu_model = copy.deepcopy(model)
    tpu_model = copy.deepcopy(model).to(TPU)
    compiled = torch.compile(tpu_model, backend="tpu", **(compile_kwargs or {}))
    for x in batches:
        expected = cpu_model(x)
        expected.square().sum().backward()
        out = compiled(x.to(TPU))
        out.square().sum().backward()
        torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-4)
        for (name, p), q in zip(cpu_model.named_parameters(), tpu_model.parameters()):
            torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-4, atol=1e-4, msg=name)
        torch.testing.assert_close(tpu_model.bn.running_mean.cpu(), cpu_model.bn.running_mean)
        cpu_model.zero_grad()
        tpu_model.zero_grad()


def test_conv_activations_are_saved_channels_last():
    model = ConvBlock().to(TPU)
    compiled = torch.compile(model, backend="tpu")
    x = torch.randn(2, 3, 8, 8, device=TPU)
    for _ in range(4):  # captured twice, then replayed
        saved, out = saved_tensors_of(compiled, x)
        out.sum().backward()
        shapes = [tuple(t.shape) for t in saved if t.dim() == 4]
        layouts = [channels_last_only(t) for t in saved if t.dim() == 4]
        # conv1's output (read by batch norm's backward) and the relu that
        # conv2 reads (saved for conv2's backward and for the relu's own)
        # cross channels-last; the batch and the weights (forward inputs)
        # and the last relu (no convolution reads it) as they are.
        expected = {(2, 8, 8, 8): True, (2, 3, 8, 8): False, (8, 3, 3, 3): False, (8, 8, 3, 3): False,
                    (2, 8, 4, 4): False}
        assert sorted(set(shapes)) == sorted(expected) and shapes.count((2, 8, 8, 8)) == 3
        assert layouts == [expected[s] for s in shapes]


def test_training_matches_eager_on_captured_and_replayed_calls():
    torch.manual_seed(0)
    check_training_matches_eager(ConvBlock(), [torch.randn(4, 3, 9, 9) for _ in range(5)])


def test_channels_last_model_matches_eager():
    torch.manual_seed(1)
    model = ConvBlock().to(memory_format=torch.channels_last)
    batches = [torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last) for _ in range(4)]
    check_training_matches_eager(model, batches)


def test_dynamic_batch_saves_sizes_beside_the_tensors():
    # The backward takes saved sizes before the saved tensors, the forward
    # returns them after: the tensors are matched by name, not position.
    torch.manual_seed(2)
    batches = [torch.randn(n, 3, 8, 8) for n in (2, 3, 5, 3)]
    check_training_matches_eager(ConvBlock(), batches, {"dynamic": True})


def test_other_saved_tensors_keep_their_layout():
    def f(a, b):
        return torch.tanh(a * b).sum()

    compiled = torch.compile(f, backend="tpu")
    a = torch.randn(2, 3, 4, 5, device=TPU, requires_grad=True)
    b = torch.randn(2, 3, 4, 5, device=TPU, requires_grad=True)
    saved, out = saved_tensors_of(compiled, a, b)
    assert saved and not any(channels_last_only(t) for t in saved)


def test_1d_and_3d_convolution_activations_keep_their_layout():
    # XLA's CPU convolutions are channels-last in 1-d and 3-d as well, but
    # converting their activations measured no faster (1-d) or slower (3-d).
    for conv, shape in ((nn.Conv1d, (2, 3, 9)), (nn.Conv3d, (2, 3, 5, 5, 5))):
        model = nn.Sequential(conv(3, 6, 3), nn.ReLU(), conv(6, 4, 3)).to(TPU)
        saved, out = saved_tensors_of(torch.compile(model, backend="tpu"), torch.randn(shape, device=TPU))
        assert saved and not any(channels_last_only(t) for t in saved)


def test_a_tensor_saved_twice_is_converted_once():
    base = torch.randn(2, 3, 4, 4, device=TPU)
    outputs = saved_layouts.to_channels_last((base, base[:], base + 1), [0, 1])
    assert outputs[0] is outputs[1] and channels_last_only(outputs[0])
    assert outputs[2].is_contiguous()
    torch.testing.assert_close(outputs[0].cpu(), base.cpu())
