"""Matrix decompositions on tpu beside PyTorch's CPU (LAPACK), in one run:
milliseconds per call for LU (lu_factor, solve), QR, the Hermitian
eigendecomposition, the SVD, least squares and the matrix exponential at a
few sizes, and the ratio.

    .venv/bin/python benchmarks/linalg.py [--sizes 16 64 256] [--batch 1] [--cases lu solve]

Each tpu case is compiled once (not timed), then timed to completion
(`torch.tpu.synchronize()`; eigh and svd also read their error flags on the
host each call, as CPU and CUDA do). XLA has no decomposition op every
plugin lowers, so these are HLO loops (blocked LU and QR, Jacobi rotations,
`docs/design.md`): on the CPU plugin they run on the same cores as LAPACK
would, which is the comparison printed. BENCHMARKS.md records the figures.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import torch_tpu  # noqa: F401  (registers the device)


def median_ms(fn, sync, repeats: int) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def cases(n: int, batch: int, device: str):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(batch, n, n, generator=g).to(device)
    h = a + a.mT
    tall = torch.randn(batch, 2 * n, n, generator=g).to(device)
    rhs = torch.randn(batch, 2 * n, 4, generator=g).to(device)
    small = a / (4 * n**0.5)
    return {
        "lu_factor": lambda: torch.linalg.lu_factor(a),
        "solve (n x 4)": lambda: torch.linalg.solve(a, rhs[:, :n]),
        "qr": lambda: torch.linalg.qr(a),
        "eigh": lambda: torch.linalg.eigh(h),
        "svd": lambda: torch.linalg.svd(a),
        "lstsq (2n x n, gelsd)": lambda: torch.linalg.lstsq(tall, rhs, driver="gelsd"),
        "matrix_exp": lambda: torch.linalg.matrix_exp(small),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[16, 64, 256])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", nargs="*", help="only the cases whose names start with these")
    args = parser.parse_args()
    print(f"{'case':<24} {'n':>5} {'cpu ms':>9} {'tpu ms':>9} {'tpu/cpu':>8}")
    for n in args.sizes:
        cpu_cases = cases(n, args.batch, "cpu")
        tpu_cases = cases(n, args.batch, "tpu")
        for name in cpu_cases:
            if args.cases and not any(name.startswith(c) for c in args.cases):
                continue
            cpu = median_ms(cpu_cases[name], lambda: None, args.repeats)
            tpu = median_ms(tpu_cases[name], torch.tpu.synchronize, args.repeats)
            print(f"{name:<24} {n:>5} {cpu:>9.2f} {tpu:>9.2f} {tpu / cpu:>7.1f}x", flush=True)


if __name__ == "__main__":
    main()
