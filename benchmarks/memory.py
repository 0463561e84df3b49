"""Peak memory of one training step of the example models: PyTorch's CPU
eager beside the tpu device in strict eager, fused eager and compiled mode.

    .venv/bin/python benchmarks/memory.py [--models mingpt resnet llama dlrm unet]
        [--modes cpu strict fused compiled] [--no-xla-temp] [--strict-temp] [--check]

`--check` tests both countings on allocations of known sizes.

Both sides are measured the same way: tensor storage, counted when it is
allocated and when it is freed, during ONE steady-state step (after
`--warmup` steps; the step includes its `loss.item()`).

- state: bytes of the distinct storages of the model's parameters and
  buffers, their `.grad`s (still there from the previous step, since the
  examples zero gradients with set_to_none after the forward) and the
  optimizer's state tensors, on the run's device, before the step.
- above: the highest point, during the step, of allocated minus freed bytes
  since the step began.
- peak = state + above: the live bytes at the step's high-water mark.

CPU eager: PyTorch's profiler with profile_memory=True, which sees every
allocation and free of c10's CPU allocator, with the allocator's running
total taken under its lock. The warm-up steps run under the
profiler too, because it reports the free of a block only when it saw the
block's allocation. CPU kernels' private scratch memory (oneDNN's) is not
counted.

tpu: torch.tpu's memory statistics, which count the logical bytes of every
live PJRT buffer (csrc/runtime/device_buffer.cc): "above" is
max_memory_allocated() after reset_peak_memory_stats() at the step's start
minus memory_allocated() then. Buffers are counted when the host creates
and drops them, not when the device uses them; in fused eager a graph's
inputs are dropped (donated ones first) before its results are counted,
so the figure is the larger of the two sides of a launch, not their sum.

What the tpu figures leave out: memory that XLA allocates inside a program
for its intermediate values (its "temp" block), which is no PJRT buffer. In
fused and compiled mode a step's activations and gradients live there, so
the counted peak of those modes says little on its own. The step's fused
programs are therefore built again in one more step (the compile cache's
memory tier cleared, their StableHLO dumped with
torch_tpu.diagnostics.set_dump_dir) and compiled in a child process with
XLA_FLAGS=--xla_dump_to; XLA's *buffer-assignment.txt of each gives its
temp block and its outputs that do not reuse a parameter's memory. "XLA
temp" is the largest temp block; "with temp" is the step's peak counting,
at each fused program's launch, the live buffers (its inputs among them)
plus its new outputs plus its temp block, or the counted peak if higher.
This assumes the device holds a program's inputs, outputs and temp block
for the whole run, which is how XLA's buffer assignment works. Strict-mode
programs are single ops with small temps; `--strict-temp` adds them as an
upper bound (counted peak plus the largest, marked ^; slow: every op is
compiled again).

BENCHMARKS.md records the figures.
"""

from __future__ import annotations

import argparse
import glob
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile

import torch
from torch._C._profiler import _EventType
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.profiler import ProfilerActivity, profile

import torch_tpu
from torch_tpu import _C

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import dlrm  # noqa: E402
import llama  # noqa: E402
import mingpt  # noqa: E402
import resnet  # noqa: E402
import unet  # noqa: E402

MODELS = {"mingpt": mingpt.make_step, "resnet": resnet.make_step, "llama": llama.make_step,
          "dlrm": dlrm.make_step, "unet": unet.make_step}
MODES = ("cpu", "strict", "fused", "compiled")
MiB = 2**20


def state_bytes(model: torch.nn.Module, optimizers: list, device_type: str) -> int:
    """Bytes of the distinct storages of parameters, buffers, gradients and
    optimizer state on `device_type`."""
    tensors = list(model.parameters()) + list(model.buffers())
    tensors += [p.grad for p in model.parameters() if p.grad is not None]
    for opt in optimizers:
        for state in opt.state.values():
            tensors += [v for v in state.values() if isinstance(v, torch.Tensor)]
    seen = {}
    for t in tensors:
        if t.device.type == device_type:
            storage = t.untyped_storage()
            seen[storage._cdata] = storage.nbytes()
    return sum(seen.values())


def allocation_deltas(prof) -> list[int]:
    """The CPU allocator's running total (bytes) after each allocation or
    free the profiler saw, relative to the total before the first."""
    events, stack = [], list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        event = stack.pop()
        stack.extend(event.children)
        if event.tag == _EventType.Allocation and event.extra_fields.device.type == "cpu":
            events.append((event.extra_fields.total_allocated, event.extra_fields.alloc_size, event.start_time_ns))
    if not events:
        return [0]
    # Each running total is a snapshot taken under the allocator's lock, so
    # their maximum is exact whatever the order; time order gives the start.
    events.sort(key=lambda e: e[2])
    start = events[0][0] - events[0][1]
    return [0] + [total - start for total, _, _ in events]


def cpu_profile():
    return profile(activities=[ProfilerActivity.CPU], profile_memory=True)


def measure(make_step, mode: str, warmup: int, temp_dir: str | None) -> dict:
    on_tpu = mode != "cpu"
    kwargs = {}
    if mode == "compiled":
        if "backend" not in inspect.signature(make_step).parameters:
            return {}
        kwargs["backend"] = "tpu"
    optimizers = []
    hook = register_optimizer_step_post_hook(
        lambda opt, args, kw: optimizers.append(opt) if opt not in optimizers else None)
    try:
        step, model = make_step("tpu" if on_tpu else "cpu", **kwargs)
        if not on_tpu:
            with cpu_profile():
                for i in range(warmup):
                    step(i).item()
            state = state_bytes(model, optimizers, "cpu")
            with cpu_profile() as prof:
                step(warmup).item()
            deltas = allocation_deltas(prof)
            return {"state": state, "above": max(deltas), "end": deltas[-1]}
        with torch_tpu.eager_mode("strict" if mode == "compiled" else mode):
            for i in range(warmup):
                step(i).item()
            torch.tpu.synchronize()
            state = state_bytes(model, optimizers, "tpu")
            live = torch.tpu.memory_allocated()
            torch.tpu.reset_peak_memory_stats()
            # Live bytes when each fused program is launched: at the read in
            # fused mode, at each graph end (torch_tpu.materialize) when compiled.
            launches = []
            materialize = torch_tpu.materialize

            def noting_materialize():
                launches.append(torch.tpu.memory_allocated() - live)
                materialize()

            torch_tpu.materialize = noting_materialize
            try:
                loss = step(warmup)
            finally:
                torch_tpu.materialize = materialize
            if mode == "fused":
                launches.append(torch.tpu.memory_allocated() - live)
            loss.item()
            del loss
            torch.tpu.synchronize()
            result = {"state": state, "live": live, "above": torch.tpu.max_memory_allocated() - live,
                      "end": torch.tpu.memory_allocated() - live, "launches": launches}
            if temp_dir is not None:
                # One more step with every program built again, its StableHLO dumped.
                torch_tpu.diagnostics.set_dump_dir(temp_dir)
                _C.runtime.clear_cache_memory()
                try:
                    step(warmup + 1).item()
                    torch.tpu.synchronize()
                finally:
                    torch_tpu.diagnostics.set_dump_dir(None)
            return result
    finally:
        hook.remove()


def known_allocations(device: str) -> torch.Tensor:
    """Allocates 4, 8, frees 4, allocates 12, frees 8 and 12, keeps 1 MiB:
    a high-water mark of 20 MiB above the start, 1 MiB at the end."""
    a = torch.ones(1 << 20, device=device)
    b = torch.ones(2 << 20, device=device)
    del a
    c = torch.ones(3 << 20, device=device)
    del b, c
    return torch.ones(1 << 18, device=device)


def check_counting() -> None:
    """Both sides' counting on known_allocations()."""
    kept = []
    with cpu_profile() as prof:
        kept.append(known_allocations("cpu"))
    deltas = allocation_deltas(prof)
    tpu_start = torch.tpu.memory_allocated()
    torch.tpu.reset_peak_memory_stats()
    kept.append(known_allocations("tpu"))
    torch.tpu.synchronize()
    tpu = (torch.tpu.max_memory_allocated() - tpu_start, torch.tpu.memory_allocated() - tpu_start)
    for name, (above, end) in (("cpu", (max(deltas), deltas[-1])), ("tpu", tpu)):
        print(f"check {name}: above {above / MiB:.2f} MiB, end {end / MiB:.2f} MiB (expected 20.00, 1.00)")
        assert (above, end) == (20 * MiB, MiB), name


def program_bytes(buffer_assignment: str) -> tuple[int, int]:
    """(temp, output) bytes of a program from XLA's buffer assignment: temp
    is every allocation that is none of its parameters, outputs or constants
    (the preallocated temp block, thread-local scratch); output is the
    results that do not reuse a parameter's memory."""
    temp = output = 0
    for line in buffer_assignment.splitlines():
        m = re.match(r"allocation \d+: size (\d+), (.*)", line)
        if not m:
            continue
        size, kinds = int(m.group(1)), m.group(2)
        if "parameter" in kinds or "constant" in kinds:
            continue
        if "output shape" in kinds or "maybe-live-out" in kinds:
            output += size
        else:
            temp += size
    return temp, output


def xla_programs(mlir_files: list[str]) -> list[tuple[int, int]]:
    """Compiles each StableHLO file in a child process that has XLA dump its
    buffer assignments; returns each program's (temp, output) bytes."""
    if not mlir_files:
        return []
    with tempfile.TemporaryDirectory() as dump:
        env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump} " + os.environ.get("XLA_FLAGS", ""),
                   TORCH_TPU_DISK_CACHE="0")
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--compile-for-temps", *mlir_files],
                             env=env, capture_output=True, text=True, check=True).stdout
        return [tuple(p) for p in json.loads(out.splitlines()[-1])]


def compile_for_temps(files: list[str]) -> None:
    """Child process: compiles each file and prints each one's (temp,
    output) bytes, as JSON on the last line."""
    dump = re.search(r"--xla_dump_to=(\S+)", os.environ["XLA_FLAGS"]).group(1)
    programs = []
    for path in files:
        before = set(glob.glob(os.path.join(dump, "*buffer-assignment.txt")))
        with open(path) as f:
            torch_tpu.runtime.compile(f.read())
        (new,) = set(glob.glob(os.path.join(dump, "*buffer-assignment.txt"))) - before
        with open(new) as f:
            programs.append(program_bytes(f.read()))
    print(json.dumps(programs))


def estimate(r: dict, programs: list[tuple[int, int]]) -> tuple[int, bool]:
    """The step's peak with XLA's temporaries: at each fused program's
    launch, the live buffers (its inputs among them) plus its new outputs
    plus its temp block; the counted peak when higher. Exact in what it
    adds only when the launches line up with the dumped programs; else the
    counted peak plus the largest temp, an upper bound (second value False)."""
    peak = r["state"] + r["above"]
    if programs and len(programs) == len(r["launches"]):
        at_launch = max(r["state"] + live + temp + out for live, (temp, out) in zip(r["launches"], programs))
        return max(peak, at_launch), True
    return peak + max((temp for temp, _ in programs), default=0), False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["mingpt", "resnet"], choices=list(MODELS))
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--no-xla-temp", action="store_true", help="skip the XLA temp column")
    parser.add_argument("--strict-temp", action="store_true", help="XLA temps of strict mode's op programs too")
    parser.add_argument("--check", action="store_true", help="check the counting on known allocations")
    parser.add_argument("--compile-for-temps", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compile_for_temps:
        compile_for_temps(args.compile_for_temps)
        return
    if args.check:
        check_counting()
        return
    print(f"tpu platform: {torch.tpu.platform()}; torch {torch.__version__}; "
          f"one step after {args.warmup} warm-up steps; MiB")
    print(f"{'model':<7} {'mode':<9} {'state':>7} {'above':>7} {'peak':>7} {'XLA temp':>9} {'with temp':>10} "
          f"{'peak/cpu':>9} {'w.t./cpu':>9}")
    for model in args.models:
        cpu_peak = None
        for mode in args.modes:
            want_temp = not args.no_xla_temp and (mode in ("fused", "compiled") or
                                                  (mode == "strict" and args.strict_temp))
            with tempfile.TemporaryDirectory() as mlir:
                r = measure(MODELS[model], mode, args.warmup, mlir if want_temp else None)
                if not r:
                    print(f"{model:<7} {mode:<9} (its make_step takes no torch.compile backend)")
                    continue
                # The fused programs (compiled mode's strict optimizer ops
                # are single ops, measured with --strict-temp only).
                pattern = "*.mlir" if mode == "strict" else "*-fused_graph.mlir"
                programs = xla_programs(sorted(glob.glob(os.path.join(mlir, pattern)))) if want_temp else []
            peak = r["state"] + r["above"]
            if mode == "cpu":
                cpu_peak = peak
            ratio = f"{peak / cpu_peak:.2f}" if cpu_peak else "-"
            temp = with_temp = ratio_temp = "-"
            if want_temp:
                est, exact = estimate(r, programs)
                temp = f"{max((t for t, _ in programs), default=0) / MiB:.2f}"
                with_temp = f"{est / MiB:.2f}" + ("" if exact else "^")
                ratio_temp = f"{est / cpu_peak:.2f}" if cpu_peak else "-"
            print(f"{model:<7} {mode:<9} {r['state'] / MiB:>7.2f} {r['above'] / MiB:>7.2f} {peak / MiB:>7.2f} "
                  f"{temp:>9} {with_temp:>10} {ratio:>9} {ratio_temp:>9}")
            if mode != "cpu" and abs(r["live"] - r["state"]) > 0.01 * r["state"]:
                print(f"        note: {r['live'] / MiB:.2f} MiB of device buffers live at the step's start")
    print("state: parameters, buffers, gradients, optimizer state before the step. above: the step's high-water "
          "mark above its start. peak = state + above. XLA temp: the largest temp block of the step's fused "
          "programs. with temp: the peak with each fused program's temp block and outputs added at its "
          "launch (^: counted peak + largest temp, an upper bound).")

if __name__ == "__main__":
    main()
