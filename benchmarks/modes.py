"""Training-step time of the example models under each tpu execution mode,
beside PyTorch's own CPU eager, in one run.

    .venv/bin/python benchmarks/modes.py [--models mingpt resnet] [--steps 10]

Each (model, mode) pair builds the model afresh with the same seed, runs
warm-up steps (compiling), then times `--steps` steps, each ending with
`loss.item()` as a logging training loop does (in fused mode that read is
where the step's graph runs). Prints milliseconds per step, the ratio to
strict eager and to CPU eager, programs compiled during the timed steps,
and the device's peak memory during one timed step. BENCHMARKS.md records
the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

import torch

import torch_tpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import mingpt  # noqa: E402
import resnet  # noqa: E402

MODELS = {"mingpt": mingpt.make_step, "resnet": resnet.make_step}
# "compiled": the model under torch.compile(backend="tpu") (its forward and
# backward graphs, each one program), the optimizer in strict eager;
# "cpu-inductor": the same with PyTorch's default backend on the CPU.
MODES = ("cpu", "cpu-inductor", "strict", "fused", "debug", "compiled")


def time_steps(make_step, mode: str, steps: int, warmup: int) -> dict:
    on_tpu = not mode.startswith("cpu")
    backend = {"compiled": "tpu", "cpu-inductor": "inductor"}.get(mode)
    step, _ = make_step("tpu" if on_tpu else "cpu", backend=backend)
    times = []
    peak = None
    eager = "strict" if mode == "compiled" else mode
    with torch_tpu.eager_mode(eager) if on_tpu else contextlib.nullcontext():
        for i in range(warmup):
            step(i).item()
        compiles = torch_tpu.runtime.cache_stats()["compiles"]
        for i in range(warmup, warmup + steps):
            last = i == warmup + steps - 1
            if on_tpu and last:
                torch.tpu.reset_peak_memory_stats()
            start = time.perf_counter()
            step(i).item()
            times.append(time.perf_counter() - start)
            if on_tpu and last:
                peak = torch.tpu.max_memory_allocated()
        compiles = torch_tpu.runtime.cache_stats()["compiles"] - compiles
    return {"ms": statistics.median(times) * 1e3, "compiles": compiles if on_tpu else None, "peak": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    print(f"tpu platform: {torch.tpu.platform()}; torch {torch.__version__}; "
          f"{args.steps} timed steps after {args.warmup} warm-up steps (median)")
    header = f"{'model':<8} {'mode':<12} {'ms/step':>9} {'vs strict':>10} {'vs cpu':>8} {'compiles':>9} {'peak MiB':>9}"
    print(header)
    for model in args.models:
        rows = {}
        for mode in args.modes:
            steps = max(args.steps // 3, 2) if mode == "debug" else args.steps
            rows[mode] = time_steps(MODELS[model], mode, steps, args.warmup)
        for mode, r in rows.items():
            strict = rows.get("strict", {}).get("ms")
            cpu = rows.get("cpu", {}).get("ms")
            vs_strict = f"{strict / r['ms']:.2f}x" if strict else "-"
            vs_cpu = f"{cpu / r['ms']:.2f}x" if cpu else "-"
            comp = "-" if r["compiles"] is None else str(r["compiles"])
            peak = "-" if r["peak"] is None else f"{r['peak'] / 2**20:.1f}"
            print(f"{model:<8} {mode:<12} {r['ms']:>9.2f} {vs_strict:>10} {vs_cpu:>8} {comp:>9} {peak:>9}")
    print("vs strict / vs cpu: speed relative to that row (higher is faster).")


if __name__ == "__main__":
    main()
