"""Training on tpu tracks the same run on CPU: an MLP classifier for 50
steps and a small transformer block; no op falls back; device memory
returns to its baseline."""

from __future__ import annotations

import math

import torch
from torch import nn
import torch.nn.functional as F

import torch_tpu


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.0), nn.Linear(32, 32), nn.GELU(),
                         nn.Linear(32, 5))


class Block(nn.Module):
    """Pre-norm self-attention + MLP, written with plain ops."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool).tril().to(x.device)  # tril has no tpu lowering yet
        scores = torch.where(mask, scores, torch.tensor(float("-inf")))
        att = scores.softmax(dim=-1) @ v
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


def train(model_fn, device, steps, make_batch, loss_fn, lr=1e-2, optimizer=torch.optim.AdamW):
    model = model_fn().to(device)
    opt = optimizer(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        x, y = make_batch(step)
        loss = loss_fn(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


def test_mlp_50_steps_track_cpu():
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(32, 16, generator=g), torch.randint(0, 5, (32,), generator=g)) for _ in range(4)]
    torch_tpu.reset_cpu_fallback_counts()
    tpu_losses, _ = train(mlp, "tpu", 50, lambda i: data[i % 4], F.cross_entropy)
    cpu_losses, _ = train(mlp, "cpu", 50, lambda i: data[i % 4], F.cross_entropy)
    assert torch_tpu.cpu_fallback_counts() == {}
    for a, b in zip(tpu_losses, cpu_losses):
        assert abs(a - b) <= 1e-4 * max(1.0, abs(b)), (tpu_losses, cpu_losses)
    assert tpu_losses[-1] < tpu_losses[0]


def test_transformer_block_trains_like_cpu():
    def block():
        torch.manual_seed(0)
        return Block()

    g = torch.Generator().manual_seed(2)
    data = [(torch.randn(2, 8, 32, generator=g), torch.randn(2, 8, 32, generator=g)) for _ in range(5)]
    # SGD: Adam would turn the rounding noise of gradients that are zero in
    # exact arithmetic (the key bias under softmax) into full-size steps.
    tpu_losses, tpu_model = train(block, "tpu", 5, lambda i: data[0], F.mse_loss, lr=0.05,
                                  optimizer=torch.optim.SGD)
    cpu_losses, cpu_model = train(block, "cpu", 5, lambda i: data[0], F.mse_loss, lr=0.05,
                                  optimizer=torch.optim.SGD)
    for a, b in zip(tpu_losses, cpu_losses):
        assert abs(a - b) <= 1e-4 * max(1.0, abs(b))
    assert tpu_losses[-1] < tpu_losses[0]
    for (name, pt), pc in zip(tpu_model.named_parameters(), cpu_model.parameters()):
        torch.testing.assert_close(pt.detach().cpu(), pc.detach(), rtol=1e-4, atol=1e-5,
                                   msg=lambda m, name=name: f"{name}: {m}")


def test_memory_returns_to_baseline():
    torch.tpu.synchronize()
    base = torch.tpu.memory_allocated()
    model = mlp().to("tpu")
    x = torch.randn(8, 16).to("tpu")
    loss = model(x).sum()
    loss.backward()
    assert torch.tpu.memory_allocated() > base
    peak = torch.tpu.max_memory_allocated()
    assert peak >= torch.tpu.memory_allocated()
    del model, x, loss
    torch.tpu.synchronize()
    assert torch.tpu.memory_allocated() == base


def test_accelerator_memory_api_counts_device_buffers():
    torch.tpu.synchronize()
    base = torch.accelerator.memory_allocated()
    x = torch.ones(1000).to("tpu")
    assert torch.accelerator.memory_allocated() == base + 4000
    assert torch.accelerator.memory_stats()["allocated_bytes.all.current"] == base + 4000
    del x
    assert torch.accelerator.memory_allocated() == base
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == base


def test_module_to_keeps_parameter_objects_and_ties():
    # As on CUDA, .to("tpu") moves each Parameter in place: tied weights stay
    # one parameter and an optimizer built before the move updates it.
    model = nn.Module()
    model.embed = nn.Embedding(10, 4)
    model.head = nn.Linear(4, 10, bias=False)
    model.head.weight = model.embed.weight
    weight = model.embed.weight
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    assert torch._has_compatible_shallow_copy_type(torch.ones(1), torch.ones(1, device="tpu"))
    model.to("tpu")
    assert model.head.weight is model.embed.weight is weight and weight.device.type == "tpu"
    before = weight.detach().cpu().clone()
    tokens = torch.tensor([1, 2, 3], device="tpu")
    model.head(model.embed(tokens)).logsumexp(-1).sum().backward()
    optimizer.step()
    assert not torch.equal(weight.detach().cpu(), before)
    model.to("cpu")
    assert model.head.weight is weight and weight.device.type == "cpu" and weight.grad.device.type == "cpu"
