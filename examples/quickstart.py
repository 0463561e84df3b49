"""Quickstart: train a small classifier on the `tpu` device.

An ordinary PyTorch training loop (nn.Module, autograd, AdamW); the only
torch-tpu specific line is `device = "tpu"`. On a machine without a TPU or
GPU, the device runs on the XLA CPU plugin. Prints the platform, the loss
curve and steps per second, and checks the result against the same run on
the CPU.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

import torch_tpu  # noqa: F401  (`import torch` loads it too, when installed)


def make_data(n=512, features=20, classes=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, features, generator=g) * 2
    labels = torch.randint(0, classes, (n,), generator=g)
    x = centers[labels] + torch.randn(n, features, generator=g)
    return x, labels


def make_model(features=20, classes=4):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, classes))


def train(device: str, steps: int = 60, batch: int = 64):
    x, y = make_data()
    x, y = x.to(device), y.to(device)
    model = make_model().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    warmup = 10  # the first steps compile each op's program once
    for step in range(steps):
        if step == warmup:
            if device == "tpu":
                torch.tpu.synchronize()
            start = time.perf_counter()
        i = (step * batch) % x.shape[0]
        xb, yb = x[i:i + batch], y[i:i + batch]
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)
    losses = [l.item() for l in losses]  # one sync point at the end
    elapsed = time.perf_counter() - start
    with torch.no_grad():
        accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
    return losses, (steps - warmup) / elapsed, accuracy


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help; no options
    print(f"torch-tpu: platform '{torch.tpu.platform()}', {torch.tpu.device_count()} device(s), "
          f"{torch.tpu.get_device_name()}")
    losses, speed, accuracy = train("tpu")
    cpu_losses, cpu_speed, _ = train("cpu")
    for step in range(0, len(losses), 10):
        print(f"step {step:3d}  loss {losses[step]:.4f}  (cpu {cpu_losses[step]:.4f})")
    print(f"final loss {losses[-1]:.4f}, accuracy {accuracy:.1%}")
    print(f"{speed:.0f} steps/s on tpu after warm-up; {cpu_speed:.0f} steps/s in PyTorch's CPU eager "
          "(same process: it shares the cores with the XLA plugin's worker threads)")
    drift = max(abs(a - b) for a, b in zip(losses, cpu_losses))
    print(f"largest difference from the CPU run: {drift:.2e}")


if __name__ == "__main__":
    main()
