"""Training-step time of the example models under each tpu execution mode,
beside PyTorch's own CPU eager and torchax (PyTorch on JAX), in one run.

    .venv/bin/python benchmarks/modes.py [--models mingpt resnet] [--steps 10] [--inference]

Each (model, mode) pair builds the model afresh with the same seed, runs
warm-up steps (compiling), then times `--steps` steps, each ending with
`loss.item()` as a logging training loop does (`--read-every N`: every N
steps, as a loop that logs less often; then the host records the next
steps while the device runs the previous ones). Prints milliseconds per step, the ratio to
strict eager, to CPU eager and to torchax, the programs launched per step
and compiled during the timed steps, and the device's peak memory during
one timed step. `--inference` times the evaluation forward and loss
(`model.eval()`, no gradients) instead of the training step.

The "torchax" row runs benchmarks/torchax_step.py (the same model, batches
and optimizer under torchax with jax.jit, on XLA's CPU compiler as the tpu
device's CPU plugin) in the environment benchmarks/torchax_env.sh creates,
found at $TORCH_TPU_TORCHAX_PYTHON or ~/.cache/torch-tpu/torchax-venv; the
row says how to create it when it is not there. BENCHMARKS.md records the
figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
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
# "compiled-step": the whole step under torch.compile(backend="tpu")
# (forward, backward, optimizer step); "cpu-inductor": the model under
# PyTorch's default backend on the CPU; "torchax": see the docstring.
MODES = ("cpu", "cpu-inductor", "strict", "fused", "debug", "compiled", "compiled-step", "torchax")
INFERENCE_MODES = ("cpu", "cpu-inductor", "strict", "fused", "compiled", "torchax")
HERE = os.path.dirname(os.path.abspath(__file__))
TORCHAX_PYTHON = os.environ.get("TORCH_TPU_TORCHAX_PYTHON",
                                os.path.expanduser("~/.cache/torch-tpu/torchax-venv/bin/python"))


def time_steps(make_step, mode: str, steps: int, warmup: int, train: bool, read_every: int = 1) -> dict:
    """Milliseconds per step: the median over groups of `read_every` steps,
    each group ending with its last loss read on the host."""
    on_tpu = not mode.startswith("cpu")
    backend = {"compiled": "tpu", "compiled-step": "tpu", "cpu-inductor": "inductor"}.get(mode)
    if backend and "torch._dynamo" in sys.modules:
        torch._dynamo.reset()  # each mode compiles its own graphs
    step, _ = make_step("tpu" if on_tpu else "cpu", backend=backend, whole_step=mode == "compiled-step",
                        train=train)
    times = []
    peak = None
    eager = "strict" if mode.startswith("compiled") else mode
    groups = max(steps // read_every, 1)
    with torch_tpu.eager_mode(eager) if on_tpu else contextlib.nullcontext():
        for i in range(warmup):
            step(i).item()
        stats = torch_tpu.runtime.cache_stats()
        i = warmup
        for g in range(groups):
            last = g == groups - 1
            if on_tpu and last:
                torch.tpu.reset_peak_memory_stats()
            start = time.perf_counter()
            for _ in range(read_every):
                loss = step(i)
                i += 1
            loss.item()
            times.append((time.perf_counter() - start) / read_every)
            if on_tpu and last:
                peak = torch.tpu.max_memory_allocated()
        after = torch_tpu.runtime.cache_stats()
    timed = groups * read_every
    return {"ms": statistics.median(times) * 1e3, "peak": peak,
            "compiles": after["compiles"] - stats["compiles"] if on_tpu else None,
            # every program launch looks its program up in the cache once
            "launches": (after["requests"] - stats["requests"]) / timed if on_tpu else None}


def time_torchax(model: str, steps: int, warmup: int, train: bool) -> dict:
    """benchmarks/torchax_step.py in the torchax environment, or a row that
    says how to create that environment."""
    if not os.path.exists(TORCHAX_PYTHON):
        return {"skipped": f"no torchax environment at {TORCHAX_PYTHON}: create it with "
                           "`bash benchmarks/torchax_env.sh` (or set TORCH_TPU_TORCHAX_PYTHON)"}
    cmd = [TORCHAX_PYTHON, os.path.join(HERE, "torchax_step.py"), "--model", model,
           "--steps", str(steps), "--warmup", str(warmup)] + ([] if train else ["--inference"])
    run = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in run.stdout.splitlines() if l.startswith("TORCHAX ")]
    if run.returncode or not lines:
        return {"skipped": f"torchax_step.py failed ({run.returncode}): {run.stderr.strip()[-300:]}"}
    result = json.loads(lines[-1][len("TORCHAX "):])
    return {"ms": result["ms"], "peak": None, "compiles": None, "launches": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--modes", nargs="+", choices=list(MODES),
                        help=f"default: {' '.join(MODES)}; with --inference: {' '.join(INFERENCE_MODES)}")
    parser.add_argument("--inference", action="store_true", help="time the evaluation forward, not training")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--read-every", type=int, default=1, metavar="N",
                        help="read the loss on the host every N steps instead of every step (a training "
                             "loop that logs less often; lets the device run while the host goes on)")
    parser.add_argument("--cpu-threads", type=int, help="PyTorch's CPU threads (its default: one per core); "
                        "1 on a machine whose cores are busy with other work, where waiting threads stall")
    args = parser.parse_args()
    train = not args.inference
    if args.cpu_threads:
        torch.set_num_threads(args.cpu_threads)
    modes = args.modes or list(MODES if train else INFERENCE_MODES)
    print(f"{'training' if train else 'inference'} steps; tpu platform: {torch.tpu.platform()}; "
          f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads; "
          f"{args.steps} timed steps after {args.warmup} warm-up steps (median), "
          f"the loss read every {args.read_every} step(s)")
    header = (f"{'model':<8} {'mode':<14} {'ms/step':>9} {'vs strict':>10} {'vs cpu':>8} {'vs torchax':>11} "
              f"{'launches':>9} {'compiles':>9} {'peak MiB':>9}")
    print(header)
    for model in args.models:
        rows = {}
        for mode in modes:
            steps = max(args.steps // 3, 2) if mode == "debug" else args.steps
            if mode == "torchax":
                rows[mode] = (time_torchax(model, steps, args.warmup, train) if args.read_every == 1 else
                              {"skipped": "torchax_step.py reads the loss every step"})
            else:
                rows[mode] = time_steps(MODELS[model], mode, steps, args.warmup, train, args.read_every)
        ref = {name: rows.get(name, {}).get("ms") for name in ("strict", "cpu", "torchax")}
        for mode, r in rows.items():
            if "skipped" in r:
                print(f"{model:<8} {mode:<14} skipped: {r['skipped']}")
                continue
            vs = [f"{ref[name] / r['ms']:.2f}x" if ref[name] else "-" for name in ("strict", "cpu", "torchax")]
            launches = "-" if r["launches"] is None else f"{r['launches']:.0f}"
            comp = "-" if r["compiles"] is None else str(r["compiles"])
            peak = "-" if r["peak"] is None else f"{r['peak'] / 2**20:.1f}"
            print(f"{model:<8} {mode:<14} {r['ms']:>9.2f} {vs[0]:>10} {vs[1]:>8} {vs[2]:>11} "
                  f"{launches:>9} {comp:>9} {peak:>9}")
    print("vs strict / cpu / torchax: speed relative to that row (higher is faster); "
          "launches: programs launched per step.")


if __name__ == "__main__":
    main()
