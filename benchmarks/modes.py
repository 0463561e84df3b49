"""Training-step time of the example models under each tpu execution mode,
beside PyTorch's own CPU eager (and CUDA eager where a GPU is there) and
torchax (PyTorch on JAX), in one run.

    .venv/bin/python benchmarks/modes.py [--models mingpt resnet] [--steps 10] [--inference]

Each (model, mode) pair builds the model afresh with the same seed, runs
warm-up steps (compiling), then times `--steps` steps, each ending with
`loss.item()` as a logging training loop does (`--read-every N`: every N
steps, as a loop that logs less often; then the host records the next
steps while the device runs the previous ones). Prints milliseconds per step, the ratio to
strict eager, to CPU eager, to CUDA eager and to torchax, the programs launched per step
and compiled during the timed steps, and the device's peak memory during
one timed step. `--inference` times the evaluation forward and loss
(`model.eval()`, no gradients) instead of the training step.

The "torchax" row runs benchmarks/torchax_step.py (the same model, batches
and optimizer under torchax with jax.jit, on the platform JAX finds: XLA's
CPU compiler, as the tpu device's CPU plugin, or the GPU) in the environment
benchmarks/torchax_env.sh creates,
found at $TORCH_TPU_TORCHAX_PYTHON or ~/.cache/torch-tpu/torchax-venv; the
row says how to create it when it is not there. The "torchax-plugin" row
runs the same on the PJRT plugin the tpu device loaded, so that both sides
run one XLA build: JAX's own CPU client is a newer XLA than the pinned CPU
plugin, and against it the difference is partly the compiler's. It is meant
for the CPU plugin: a TPU or GPU that this process holds may refuse the
child a client of its own (the row then shows the child's error).
BENCHMARKS.md records the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import mingpt  # noqa: E402
import resnet  # noqa: E402

MODELS = {"mingpt": mingpt.make_step, "resnet": resnet.make_step}
# "compiled": the model under torch.compile(backend="tpu") (its forward and
# backward graphs, each one program), the optimizer in strict eager;
# "compiled-step": the whole step under torch.compile(backend="tpu")
# (forward, backward, optimizer step); "cpu-inductor": the model under
# PyTorch's default backend on the CPU; "cuda" / "cuda-inductor": the same
# on an NVIDIA GPU through PyTorch's own CUDA backend, the reference where
# the tpu device runs on the CUDA PJRT plugin (default only where CUDA is
# available); "torchax" and "torchax-plugin": see the docstring.
MODES = ("cpu", "cpu-inductor", "cuda", "cuda-inductor", "strict", "fused", "debug", "compiled",
         "compiled-step", "torchax", "torchax-plugin")
INFERENCE_MODES = ("cpu", "cpu-inductor", "cuda", "cuda-inductor", "strict", "fused", "compiled", "torchax",
                   "torchax-plugin")
HERE = os.path.dirname(os.path.abspath(__file__))
TORCHAX_PYTHON = os.environ.get("TORCH_TPU_TORCHAX_PYTHON",
                                os.path.expanduser("~/.cache/torch-tpu/torchax-venv/bin/python"))


def time_steps(make_step, mode: str, steps: int, warmup: int, train: bool, read_every: int = 1) -> dict:
    """Milliseconds per step: the median over groups of `read_every` steps,
    each group ending with its last loss read on the host."""
    device = mode.split("-")[0] if mode.startswith(("cpu", "cuda")) else "tpu"
    on_tpu, on_cuda = device == "tpu", device == "cuda"
    backend = {"compiled": "tpu", "compiled-step": "tpu", "cpu-inductor": "inductor",
               "cuda-inductor": "inductor"}.get(mode)
    if backend and "torch._dynamo" in sys.modules:
        torch._dynamo.reset()  # each mode compiles its own graphs
    step, _ = make_step(device, backend=backend, whole_step=mode == "compiled-step", train=train)
    times, host = [], []
    waits = 0
    peak = None
    eager = "strict" if mode.startswith("compiled") else mode
    groups = max(steps // read_every, 1)
    if on_tpu:
        import torch_tpu
    cache_stats = torch_tpu.runtime.cache_stats if on_tpu else dict
    with torch_tpu.eager_mode(eager) if on_tpu else contextlib.nullcontext():
        for i in range(warmup):
            step(i).item()
        stats = cache_stats()
        i = warmup
        for g in range(groups):
            last = g == groups - 1
            if last and (on_tpu or on_cuda):
                getattr(torch, device).reset_peak_memory_stats()
            start, start_cpu = time.perf_counter(), time.thread_time()
            start_waits = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
            for _ in range(read_every):
                loss = step(i)
                i += 1
            loss.item()
            times.append((time.perf_counter() - start) / read_every)
            host.append((time.thread_time() - start_cpu) / read_every)
            waits += resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - start_waits
            if last and (on_tpu or on_cuda):
                peak = getattr(torch, device).max_memory_allocated()
        after = cache_stats()
    timed = groups * read_every
    return {"ms": statistics.median(times) * 1e3, "peak": peak,
            # the calling thread's own CPU time, and how often it blocked
            # (voluntary context switches): wall time beyond the first is
            # waiting or being preempted
            "host_ms": statistics.median(host) * 1e3, "waits": waits / timed,
            "compiles": after["compiles"] - stats["compiles"] if on_tpu else None,
            # every program launch looks its program up in the cache once
            "launches": (after["requests"] - stats["requests"]) / timed if on_tpu else None}


def time_cuda(model: str, mode: str, args) -> dict:
    """A cuda row, measured in a child process that does not load torch_tpu:
    while a PrivateUse1 backend is registered, PyTorch's autograd engine
    (2.11 at least) fails CUDA backward passes with "opt_ready_stream &&
    opt_parent_stream" (pytorch/pytorch#161129)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--models", model, "--modes", mode,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--read-every", str(args.read_every),
           "--mingpt-size", args.mingpt_size] + (["--inference"] if args.inference else [])
    if args.cpu_threads:
        cmd += ["--cpu-threads", str(args.cpu_threads)]
    run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    lines = [l for l in run.stdout.splitlines() if l.startswith("ROW ")]
    if run.returncode or not lines:
        return {"skipped": f"the cuda child failed ({run.returncode}): {run.stderr.strip()[-300:]}"}
    return json.loads(lines[-1][len("ROW "):])


def time_torchax(model: str, steps: int, warmup: int, train: bool, mingpt_size: str,
                 plugin: str | None = None) -> dict:
    """benchmarks/torchax_step.py in the torchax environment (on the PJRT
    plugin at `plugin` if given), or a row that says how to create that
    environment."""
    if not os.path.exists(TORCHAX_PYTHON):
        return {"skipped": f"no torchax environment at {TORCHAX_PYTHON}: create it with "
                           "`bash benchmarks/torchax_env.sh` (or set TORCH_TPU_TORCHAX_PYTHON)"}
    cmd = [TORCHAX_PYTHON, os.path.join(HERE, "torchax_step.py"), "--model", model,
           "--steps", str(steps), "--warmup", str(warmup), "--mingpt-size", mingpt_size]
    cmd += [] if train else ["--inference"]
    cmd += ["--plugin", plugin] if plugin else []
    # On a GPU, JAX would otherwise take 75% of its memory up front, beside
    # this process's device.
    # torchax registers PrivateUse1 as "jax": torch must not load torch_tpu there.
    env = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", **os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    run = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [l for l in run.stdout.splitlines() if l.startswith("TORCHAX ")]
    if run.returncode or not lines:
        return {"skipped": f"torchax_step.py failed ({run.returncode}): {run.stderr.strip()[-300:]}"}
    result = json.loads(lines[-1][len("TORCHAX "):])
    return {"ms": result["ms"], "peak": None, "compiles": None, "launches": None, "host_ms": None, "waits": None,
            "note": f"jax {result['jax']} on {result['platform']}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--modes", nargs="+", choices=list(MODES),
                        help=f"default: {' '.join(MODES)}; with --inference: {' '.join(INFERENCE_MODES)} "
                             "(the cuda modes only where CUDA is available)")
    parser.add_argument("--inference", action="store_true", help="time the evaluation forward, not training")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--read-every", type=int, default=1, metavar="N",
                        help="read the loss on the host every N steps instead of every step (a training "
                             "loop that logs less often; lets the device run while the host goes on)")
    parser.add_argument("--mingpt-size", default="small", choices=list(mingpt.SIZES),
                        help="minGPT's configuration: the example's default (small) or nanoGPT's "
                             "character-level one (medium: 6 layers, 384 wide, 256 tokens)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # one row, as JSON
    parser.add_argument("--cpu-threads", type=int, help="PyTorch's CPU threads (its default: one per core); "
                        "1 on a machine whose cores are busy with other work, where waiting threads stall")
    args = parser.parse_args()
    train = not args.inference
    if args.cpu_threads:
        torch.set_num_threads(args.cpu_threads)
    modes = args.modes or [m for m in (MODES if train else INFERENCE_MODES)
                           if torch.cuda.is_available() or not m.startswith("cuda")]
    makers = dict(MODELS, mingpt=functools.partial(mingpt.make_step, cfg=mingpt.config(args.mingpt_size)))
    if args.child:
        print("ROW " + json.dumps(time_steps(makers[args.models[0]], modes[0], args.steps, args.warmup, train,
                                             args.read_every)))
        return
    import torch_tpu  # torch.tpu; the cuda children must not load it
    print(f"{'training' if train else 'inference'} steps; tpu platform: {torch.tpu.platform()}; "
          f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads; minGPT {args.mingpt_size}; "
          f"{args.steps} timed steps after {args.warmup} warm-up steps (median), "
          f"the loss read every {args.read_every} step(s)", flush=True)
    refs = [name for name in ("strict", "cpu", "cuda", "torchax", "torchax-plugin") if name in modes]
    widths = [max(10, len("vs " + n)) for n in refs]
    header = (f"{'model':<8} {'mode':<14} {'ms/step':>9} " +
              " ".join(f"{'vs ' + n:>{w}}" for n, w in zip(refs, widths)) +
              f" {'host ms':>8} {'waits':>6} {'launches':>9} {'compiles':>9} {'peak MiB':>9}")
    table = []
    for model in args.models:
        rows = {}
        for mode in modes:
            steps = max(args.steps // 3, 2) if mode == "debug" else args.steps
            if mode.startswith("cuda") and not torch.cuda.is_available():
                rows[mode] = {"skipped": "PyTorch has no CUDA device here"}
            elif mode.startswith("cuda"):
                rows[mode] = time_cuda(model, mode, args)
            elif mode.startswith("torchax"):
                plugin = torch_tpu.runtime.initialize().path if mode == "torchax-plugin" else None
                rows[mode] = (time_torchax(model, steps, args.warmup, train, args.mingpt_size, plugin)
                              if args.read_every == 1 else {"skipped": "torchax_step.py reads the loss every step"})
            else:
                rows[mode] = time_steps(makers[model], mode, steps, args.warmup, train, args.read_every)
            # as each row is done: a run cut short still shows what it measured
            print(f"  {model} {mode}: " + (f"{rows[mode]['ms']:.2f} ms/step" if "ms" in rows[mode]
                                           else rows[mode]["skipped"]), file=sys.stderr, flush=True)
        ref = {name: rows[name].get("ms") for name in refs}
        for mode, r in rows.items():
            if "skipped" in r:
                table.append(f"{model:<8} {mode:<14} skipped: {r['skipped']}")
                continue
            vs = [f"{ref[name] / r['ms']:.2f}x" if ref[name] else "-" for name in refs]
            launches = "-" if r["launches"] is None else f"{r['launches']:.0f}"
            comp = "-" if r["compiles"] is None else str(r["compiles"])
            peak = "-" if r["peak"] is None else f"{r['peak'] / 2**20:.1f}"
            host = "-" if r["host_ms"] is None else f"{r['host_ms']:.2f}"
            waits = "-" if r["waits"] is None else f"{r['waits']:.1f}"
            table.append(f"{model:<8} {mode:<14} {r['ms']:>9.2f} " + " ".join(f"{v:>{w}}" for v, w in zip(vs, widths)) +
                         f" {host:>8} {waits:>6} {launches:>9} {comp:>9} {peak:>9}" +
                         (f"  ({r['note']})" if "note" in r else ""))
    print(header, *table, sep="\n")
    print("vs X: speed relative to that row (higher is faster); host ms: the calling thread's CPU time per "
          "step; waits: times per step it blocked; launches: programs launched per step.")


if __name__ == "__main__":
    main()
