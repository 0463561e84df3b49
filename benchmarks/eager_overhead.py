"""Strict eager host overhead: microseconds per cached op on tpu beside
PyTorch's own CPU eager, in one run.

    .venv/bin/python benchmarks/eager_overhead.py

Each case runs a warm-up (compiling once), then times N launches without
waiting for the device, then waits once. "tpu us/op" is the wall-clock time
per op of the Python thread: dispatch, key, cache lookup, launch. On the CPU
plugin the device's work runs on the same two cores, so "host-thread us" adds
the thread's own CPU time per op, the host cost a real accelerator would
see. The "fused" columns are the same loop in fused eager mode: dispatch and
recording into the deferred graph, which runs at the sync. BENCHMARKS.md
records the figures.
"""

from __future__ import annotations

import statistics
import time

import torch

import torch_tpu  # noqa: F401  (registers the device)


def per_op_us(fn, n: int, sync) -> tuple[float, float]:
    """Median over 5 batches of n calls: wall-clock and the calling thread's
    CPU time, in microseconds per call. On the CPU plugin the "device" is
    the same two cores, so XLA's threads running earlier ops preempt the
    host thread; its CPU time is the host's own cost per op."""
    fn()
    sync()
    wall, cpu = [], []
    for _ in range(5):
        start, start_cpu = time.perf_counter(), time.thread_time()
        for _ in range(n):
            fn()
        cpu.append((time.thread_time() - start_cpu) / n * 1e6)
        wall.append((time.perf_counter() - start) / n * 1e6)
        sync()
    return statistics.median(wall), statistics.median(cpu)


def cases(device: str):
    a = torch.randn(64, 64, device="cpu").to(device)
    b = torch.randn(64, 64, device="cpu").to(device)
    x = torch.randn(32, 64, device="cpu").to(device)
    linear = torch.nn.Linear(64, 64).to(device)

    def linear_relu_step():
        y = torch.relu(linear(x))
        y.sum().backward()

    # An optimizer step: foreach ops over every parameter (the shapes of
    # examples/mingpt.py's 29 parameters), the host cost per tensor.
    shapes = ([(19, 64), (32, 64)] + [(64,), (64,), (192, 64), (192,), (64, 64), (64,), (64,), (64,), (256, 64),
                                      (256,), (64, 256), (64,)] * 2 + [(64,), (64,), (19, 64)])
    params = [torch.nn.Parameter(torch.randn(s).to(device)) for s in shapes]
    for p in params:
        p.grad = torch.randn(p.shape).to(device)
    adamw = torch.optim.AdamW(params, lr=1e-4, foreach=True)

    return {
        "add 64x64": lambda: a + b,
        "mul_ by scalar 64x64": lambda: a.mul_(1.0001),
        "matmul 64x64": lambda: a @ b,
        "Linear+ReLU fwd+bwd (ops per step vary)": linear_relu_step,
        "AdamW step over 29 parameters (foreach)": adamw.step,
    }


def main() -> None:
    torch.manual_seed(0)
    print(f"tpu platform: {torch.tpu.platform()}")
    cpu_cases, tpu_cases = cases("cpu"), cases("tpu")
    sync_tpu = torch.tpu.synchronize
    print(f"{'case':<40} {'cpu us/op':>9} {'tpu us/op':>10} {'ratio':>6} {'tpu host-thread us':>19} "
          f"{'fused us/op':>12} {'fused host-thread us':>21}")
    for name in cpu_cases:
        try:
            cpu_us, _ = per_op_us(cpu_cases[name], 200, lambda: None)
            tpu_us, tpu_thread = per_op_us(tpu_cases[name], 200, sync_tpu)
            # Fused eager: recording only; the graph runs at the sync.
            with torch_tpu.eager_mode("fused"):
                fused_us, fused_thread = per_op_us(tpu_cases[name], 200, sync_tpu)
        except NotImplementedError as e:
            print(f"{name:<40} not supported yet: {e}")
            continue
        print(f"{name:<40} {cpu_us:>9.1f} {tpu_us:>10.1f} {tpu_us / cpu_us:>6.2f} {tpu_thread:>19.1f} "
              f"{fused_us:>12.1f} {fused_thread:>21.1f}")
    print("tpu / fused us/op: wall-clock per op (strict eager, fused recording); host-thread: the calling "
          "thread's CPU time per op, without the time XLA's threads take the cores from it.")


if __name__ == "__main__":
    main()
