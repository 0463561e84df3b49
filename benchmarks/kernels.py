"""Custom kernels beside the same computation in torch ops, in one run.

RMSNorm (examples/custom_kernel.py): its forward as one StableHLO kernel
against the same math in torch ops (five ops, five programs in strict
eager), forward alone and forward + backward (the backward kernel is JAX),
in strict and fused eager, beside PyTorch's CPU eager. Then the host cost of
one call on a tiny tensor: a kernel goes through torch.library's Python
dispatch, a native op does not.

    .venv/bin/python benchmarks/kernels.py [--rows 256] [--dim 1024]

Times are medians over repeats of `--calls` calls, each run to completion
(`torch.tpu.synchronize()`). BENCHMARKS.md records the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

import torch_tpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
from custom_kernel import EPS, reference_rms_norm, rms_norm  # noqa: E402


def per_call_ms(fn, sync, calls: int, repeats: int) -> float:
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        # Results kept alive: fused eager never computes what nobody holds.
        results = [fn() for _ in range(calls)]
        sync()
        del results
        times.append((time.perf_counter() - start) * 1e3 / calls)
    return statistics.median(times)


def host_us(fn, calls: int) -> float:
    """Host time per call while the device runs behind (no sync inside)."""
    for _ in range(10):
        fn()
    torch.tpu.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.tpu.synchronize()
    return elapsed * 1e6 / calls


def cases(x: torch.Tensor, w: torch.Tensor):
    xg = x.detach().requires_grad_()
    wg = w.detach().requires_grad_()

    def forward_backward(norm):
        def run():
            norm(xg, wg, EPS).sum().backward()
            grads = (xg.grad, wg.grad)
            xg.grad = wg.grad = None
            return grads
        return run

    return {
        "forward": {"torch ops": lambda: reference_rms_norm(x, w, EPS), "kernel": lambda: rms_norm(x, w, EPS)},
        "forward + backward": {"torch ops": forward_backward(reference_rms_norm),
                               "kernel": forward_backward(rms_norm)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    g = torch.Generator().manual_seed(0)
    x_cpu = torch.randn(args.rows, args.dim, generator=g)
    w_cpu = torch.rand(args.dim, generator=g) + 0.5
    print(f"RMSNorm of f32[{args.rows}, {args.dim}], ms per call "
          f"(platform {torch_tpu.runtime.platform()})")
    print(f"{'case':<20} {'mode':<7} {'cpu ops':>9} {'tpu ops':>9} {'tpu kernel':>11} {'ops/kernel':>11}")
    cpu = cases(x_cpu, w_cpu)
    tpu = cases(x_cpu.to("tpu"), w_cpu.to("tpu"))
    for case in cpu:
        cpu_ms = per_call_ms(cpu[case]["torch ops"], lambda: None, args.calls, args.repeats)
        for mode in ("strict", "fused"):
            with torch_tpu.eager_mode(mode):
                ops_ms = per_call_ms(tpu[case]["torch ops"], torch.tpu.synchronize, args.calls, args.repeats)
                kernel_ms = per_call_ms(tpu[case]["kernel"], torch.tpu.synchronize, args.calls, args.repeats)
            print(f"{case:<20} {mode:<7} {cpu_ms:9.3f} {ops_ms:9.3f} {kernel_ms:11.3f} {ops_ms / kernel_ms:10.2f}x")

    tiny = torch.ones(8, device="tpu")
    two = torch.full((8,), 2.0, device="tpu")
    native = host_us(lambda: torch.mul(tiny, two), 2000)
    kernel = host_us(lambda: rms_norm(tiny, two, EPS), 2000)
    print(f"host time per call on f32[8], strict eager: native mul {native:.1f} us, "
          f"rms_norm kernel {kernel:.1f} us")


if __name__ == "__main__":
    main()
