"""Training steps of an embedding-bag table with dense and with sparse COO
gradients (`nn.EmbeddingBag(sparse=...)`), on PyTorch's CPU eager and on the
tpu device in strict and fused eager mode, timed in alternating rounds.

    .venv/bin/python benchmarks/sparse_embedding.py [--rows 200000] [--dim 64]
        [--bags 256] [--ids-per-bag 8] [--optimizer sgd|adagrad]
        [--modes cpu-dense cpu-sparse strict-dense strict-sparse fused-dense fused-sparse]
        [--steps 10] [--warmup 3] [--rounds 3] [--cpu-threads N]

A step: the bags' sum pooling, a squared loss, backward, the optimizer's
step, `zero_grad(set_to_none=True)` and `loss.item()`. A dense gradient is
the whole table (rows x dim) and the optimizer updates every row; a sparse
one holds the rows the batch used (bags x ids-per-bag entries before
coalescing), which is why recommendation models use it for large tables.
Each mode's row: the median over the rounds of its ms per step, and that
median's ratio to strict eager with dense gradients (higher is faster).
BENCHMARKS.md records the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import torch
from torch import nn

import torch_tpu

MODES = ("cpu-dense", "cpu-sparse", "strict-dense", "strict-sparse", "fused-dense", "fused-sparse")
OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.05),
    "adagrad": lambda params: torch.optim.Adagrad(params, lr=0.05),
}


def make_step(mode: str, args):
    device_mode, gradients = mode.split("-")
    device = "cpu" if device_mode == "cpu" else "tpu"
    torch.manual_seed(0)
    table = nn.EmbeddingBag(args.rows, args.dim, mode="sum", sparse=gradients == "sparse").to(device)
    optimizer = OPTIMIZERS[args.optimizer](table.parameters())
    generator = torch.Generator().manual_seed(1)
    batches = [(torch.randint(0, args.rows, (args.bags * args.ids_per_bag,), generator=generator).to(device),
                torch.randn(args.bags, args.dim, generator=generator).to(device)) for _ in range(4)]
    offsets = (torch.arange(args.bags) * args.ids_per_bag).to(device)
    eager_mode = None if device == "cpu" else device_mode

    def step(i: int) -> float:
        ids, target = batches[i % len(batches)]
        loss = (table(ids, offsets) - target).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    def run(steps: int) -> float:
        """Seconds per step over `steps` steps."""
        with torch_tpu.eager_mode(eager_mode) if eager_mode else contextlib.nullcontext():
            start = time.perf_counter()
            for i in range(steps):
                step(i)
            if device != "cpu":
                # The last optimizer step runs after its loss was read: the
                # next mode's timing must not wait for it.
                torch.tpu.synchronize()
            return (time.perf_counter() - start) / steps

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--bags", type=int, default=256)
    parser.add_argument("--ids-per-bag", type=int, default=8)
    parser.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="sgd")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu-threads", type=int, default=None)
    args = parser.parse_args()
    if args.cpu_threads:
        torch.set_num_threads(args.cpu_threads)

    runs = {}
    for mode in args.modes:
        runs[mode] = make_step(mode, args)
        runs[mode](args.warmup)
    times = {mode: [] for mode in args.modes}
    for _ in range(args.rounds):
        for mode, run in runs.items():
            times[mode].append(run(args.steps) * 1e3)

    print(f"embedding bag {args.rows} x {args.dim}, {args.bags} bags of {args.ids_per_bag} ids, {args.optimizer}; "
          f"{args.steps} steps in {args.rounds} alternating rounds")
    baseline = statistics.median(times["strict-dense"]) if "strict-dense" in times else None
    print(f"{'mode':14s} {'ms/step':>9s} {'rounds':>17s} {'vs strict-dense':>16s}")
    for mode, ms in times.items():
        median = statistics.median(ms)
        ratio = f"{baseline / median:.2f}x" if baseline else "-"
        print(f"{mode:14s} {median:9.2f} {min(ms):8.2f}-{max(ms):<8.2f} {ratio:>16s}")


if __name__ == "__main__":
    main()
