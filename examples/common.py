"""The training loop the example models share: the same steps on any
device, with the numbers a reader wants (losses, steps per second, and on
tpu the programs compiled per step, which must fall to zero after the
first steps)."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

import torch_tpu  # noqa: F401  (registers the device when not autoloaded)


@dataclass
class TrainResult:
    device: str
    losses: list[float]
    steps_per_second: float  # after the warm-up steps
    compiles_per_step: list[int] = field(default_factory=list)  # tpu only


def _compiles() -> int:
    return torch_tpu.runtime.cache_stats()["compiles"]


def _sync(device: str) -> None:
    if torch.device(device).type == "tpu":
        torch.tpu.synchronize()


def train(step_fn: Callable[[int], torch.Tensor], device: str, steps: int, warmup: int = 2) -> TrainResult:
    """Runs `step_fn(step)` (one training step returning its loss tensor)
    `steps` times; reads the losses only at the end, so the device runs
    ahead of the host as a training loop should."""
    on_tpu = torch.device(device).type == "tpu"
    losses, compiles = [], []
    start = time.perf_counter()
    for step in range(steps):
        if step == warmup:
            _sync(device)
            start = time.perf_counter()
        before = _compiles() if on_tpu else 0
        losses.append(step_fn(step).detach())
        if on_tpu:
            compiles.append(_compiles() - before)
    values = [l.item() for l in losses]
    elapsed = time.perf_counter() - start
    timed = max(steps - warmup, 1)
    return TrainResult(device, values, timed / elapsed, compiles)


def parse_args(description: str, steps: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--device", default="tpu")
    parser.add_argument("--steps", type=int, default=steps,
                        help="training steps (at least 3: the first 2 warm up and are not timed)")
    parser.add_argument("--compare-cpu", action="store_true", help="also run on CPU and print the loss drift")
    args = parser.parse_args()
    if args.steps < 3:
        parser.error("--steps must be at least 3 (2 warm-up steps, then the timed ones)")
    return args


def run_example(name: str, doc: str, make_step, steps: int):
    """The command line every example shares: train on --device (and on the
    CPU with --compare-cpu), print the report; returns (args, model)."""
    args = parse_args(doc.splitlines()[0], steps)
    step, model = make_step(args.device)
    result = train(step, args.device, args.steps)
    cpu = None
    if args.compare_cpu:
        cpu_step, _ = make_step("cpu")
        cpu = train(cpu_step, "cpu", args.steps)
    report(name, result, cpu)
    return args, model


def report(name: str, result: TrainResult, cpu: TrainResult | None = None) -> None:
    print(f"{name} on {result.device}: {result.steps_per_second:.1f} steps/s after warm-up")
    for i in range(0, len(result.losses), max(len(result.losses) // 8, 1)):
        line = f"  step {i:3d}  loss {result.losses[i]:.4f}"
        if cpu is not None:
            line += f"  (cpu {cpu.losses[i]:.4f})"
        print(line)
    if result.compiles_per_step:
        print(f"  programs compiled per step: {result.compiles_per_step}")
    if cpu is not None:
        drift = max(abs(a - b) for a, b in zip(result.losses, cpu.losses))
        print(f"  largest loss difference from the CPU run: {drift:.2e}; "
              f"CPU eager: {cpu.steps_per_second:.1f} steps/s")
