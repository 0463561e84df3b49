"""Tensor transfers between the host and the tpu, beside the same copies
between CPU tensors, in one run: `t.cpu()` (a new host tensor), `copy_`
of a tpu tensor into an existing host tensor, and `.to("tpu")` run to
completion, at growing sizes. Milliseconds per copy (median) and GB/s.

    .venv/bin/python benchmarks/transfers.py [--sizes-mb 0.25 4 16 64] [--repeats 9]

The CPU rows are the floor on this machine: `clone()` allocates fresh
memory as `t.cpu()` does (large allocations come fresh from the kernel,
page by page), `copy_` into an existing tensor does not.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import torch_tpu  # noqa: F401  (registers the tpu device)


def median_ms(fn, repeats: int) -> float:
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=float, nargs="*", default=[0.25, 4, 16, 64])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    print(f"{'MB':>7} {'copy':28} {'ms':>8} {'GB/s':>7}")
    for mb in args.sizes_mb:
        n = max(1, int(mb * 2**20) // 4)
        host = torch.randn(n)
        into = torch.empty(n)
        device = host.to("tpu")
        torch.tpu.synchronize()

        def upload():
            host.to("tpu")
            torch.tpu.synchronize()

        rows = {
            "tpu -> new host tensor": lambda: device.cpu(),
            "tpu -> existing host tensor": lambda: into.copy_(device),
            "host -> tpu": upload,
            "cpu clone (fresh memory)": lambda: host.clone(),
            "cpu copy_ (existing)": lambda: into.copy_(host),
        }
        for name, fn in rows.items():
            ms = median_ms(fn, args.repeats)
            print(f"{n * 4 / 2**20:7.2f} {name:28} {ms:8.3f} {n * 4 / ms / 1e6:7.2f}", flush=True)


if __name__ == "__main__":
    main()
