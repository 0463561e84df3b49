"""Fused graphs with long runs of cheap elementwise ops, with and without
the cap on their length (TORCH_TPU_FUSED_MAX_CHAIN; docs/eager_modes.md,
"Long runs of cheap ops") or on the size of the kernels XLA fuses them
into (TORCH_TPU_FUSED_MAX_KERNEL, "Large kernels"), side by side.

    .venv/bin/python benchmarks/long_chains.py [--cases recurrence:100 recurrence:200 lstm:40 lstm:80 qwen]
        [--limit chain|kernel] [--limits 0 32] [--repeats 5]

Each case runs in a fresh process per limit (the limit is read once per
process) with an empty compile cache, so its first call compiles:

- recurrence:N: `x = x * 1.01 + 0.5` N times in fused eager, every step
  kept, read at the end (a [64, 64] tensor);
- lstm:T: an nn.LSTM(32, 64) forward and backward over T time steps,
  batch 8, in fused eager;
- noise:N: `x = x + 0.1 * torch.randn(256)` N times in fused eager, read
  at the end (each step's sampling feeds the next step alone);
- qwen / mingpt: the example training step (examples/qwen.py,
  examples/mingpt.py) in fused eager.

"first" is the wall time of the first call (two calls for lstm and qwen,
whose second step compiles again: its backward accumulates into .grad)
and "step" the median of `--repeats` timed calls after that, each call
ending in a read. Ratios are against the first limit given.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(case: str, repeats: int) -> dict:
    import torch
    import torch_tpu

    torch_tpu.set_eager_mode("fused")
    name, _, arg = case.partition(":")
    if name == "recurrence":
        steps = int(arg)
        x = torch.randn(64, 64).to("tpu")

        def call():
            y, outs = x, []
            for _ in range(steps):
                y = y * 1.01 + 0.5
                outs.append(y)
            torch.stack(outs).sum().item()

        warm_calls = 1
    elif name == "noise":
        steps = int(arg)
        x = torch.zeros(256).to("tpu")

        def call():
            y = x
            for _ in range(steps):
                y = y + 0.1 * torch.randn(256, device="tpu")
            y.sum().item()

        warm_calls = 1
    elif name == "lstm":
        torch.manual_seed(0)
        lstm = torch.nn.LSTM(32, 64).to("tpu")
        x = torch.randn(int(arg), 8, 32).to("tpu")

        def call():
            out, _ = lstm(x)
            out.square().sum().backward()
            lstm.weight_hh_l0.grad.sum().item()

        warm_calls = 2
    elif name in ("qwen", "mingpt"):
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
        example = __import__(name)

        step, _ = example.make_step("tpu")
        counter = iter(range(10**6))

        def call():
            step(next(counter)).item()

        warm_calls = 2
    else:
        raise SystemExit(f"unknown case {case!r}")
    torch.tpu.synchronize()
    start = time.perf_counter()
    for _ in range(warm_calls):
        call()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    stats = torch_tpu.fused_stats()
    return {"first_s": first, "step_ms": statistics.median(times) * 1e3,
            "barriers": stats["chain_barriers"], "cuts": stats["kernel_cuts"]}


LIMIT_VARIABLES = {"chain": "TORCH_TPU_FUSED_MAX_CHAIN", "kernel": "TORCH_TPU_FUSED_MAX_KERNEL"}


def run_case(case: str, which: str, limit: int, repeats: int) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TORCH_TPU_CACHE_DIR=cache, PYTHONWARNINGS="ignore")
        env[LIMIT_VARIABLES[which]] = str(limit)
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", case, "--repeats", str(repeats)],
                             capture_output=True, text=True, env=env, cwd=tempfile.gettempdir(), timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"{case} with limit {limit} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=["recurrence:100", "recurrence:200", "lstm:40", "lstm:80", "qwen"])
    parser.add_argument("--limit", choices=sorted(LIMIT_VARIABLES), default="chain",
                        help="which limit --limits sets (the other keeps its default)")
    parser.add_argument("--limits", nargs="+", type=int, default=[0, 32])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.repeats)))
        return
    print(f"{'case':<16} {args.limit:>6} {'first s':>9} {'ratio':>7} {'step ms':>9} {'ratio':>7} {'barriers':>9}"
          f" {'cuts':>6}")
    for case in args.cases:
        base = None
        for limit in args.limits:
            r = run_case(case, args.limit, limit, args.repeats)
            base = base or r
            print(f"{case:<16} {limit:>6} {r['first_s']:>9.2f} {base['first_s'] / r['first_s']:>6.2f}x "
                  f"{r['step_ms']:>9.2f} {base['step_ms'] / r['step_ms']:>6.2f}x {r['barriers']:>9} {r['cuts']:>6}",
                  flush=True)


if __name__ == "__main__":
    main()
