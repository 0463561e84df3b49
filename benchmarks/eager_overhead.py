"""Strict eager host overhead: microseconds per cached op on tpu beside
PyTorch's own CPU eager, in one run.

    .venv/bin/python benchmarks/eager_overhead.py

Each case runs a warm-up (compiling once), then times N launches without
waiting for the device, then waits once. "host us/op" is the time the
Python thread spent per op: dispatch, key, cache lookup, launch. "fused
host us/op" is the same loop in fused eager mode: dispatch and recording
into the deferred graph, which runs at the sync. BENCHMARKS.md
records the figures.
"""

from __future__ import annotations

import statistics
import time

import torch

import torch_tpu  # noqa: F401  (registers the device)


def per_op_us(fn, n: int, sync) -> float:
    fn()
    sync()
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - start) / n * 1e6)
        sync()
    return statistics.median(samples)


def cases(device: str):
    a = torch.randn(64, 64, device="cpu").to(device)
    b = torch.randn(64, 64, device="cpu").to(device)
    x = torch.randn(32, 64, device="cpu").to(device)
    linear = torch.nn.Linear(64, 64).to(device)

    def linear_relu_step():
        y = torch.relu(linear(x))
        y.sum().backward()

    return {
        "add 64x64": lambda: a + b,
        "mul_ by scalar 64x64": lambda: a.mul_(1.0001),
        "matmul 64x64": lambda: a @ b,
        "Linear+ReLU fwd+bwd (ops per step vary)": linear_relu_step,
    }


def main() -> None:
    torch.manual_seed(0)
    print(f"tpu platform: {torch.tpu.platform()}")
    cpu_cases, tpu_cases = cases("cpu"), cases("tpu")
    sync_tpu = torch.tpu.synchronize
    print(f"{'case':<42} {'cpu us/op':>10} {'tpu host us/op':>15} {'ratio':>7} {'fused host us/op':>17}")
    for name in cpu_cases:
        try:
            cpu_us = per_op_us(cpu_cases[name], 200, lambda: None)
            tpu_us = per_op_us(tpu_cases[name], 200, sync_tpu)
            # Fused eager: recording only; the graph runs at the sync.
            with torch_tpu.eager_mode("fused"):
                fused_us = per_op_us(tpu_cases[name], 200, sync_tpu)
        except NotImplementedError as e:
            print(f"{name:<42} not supported yet: {e}")
            continue
        print(f"{name:<42} {cpu_us:>10.1f} {tpu_us:>15.1f} {tpu_us / cpu_us:>7.2f} {fused_us:>17.1f}")


if __name__ == "__main__":
    main()
