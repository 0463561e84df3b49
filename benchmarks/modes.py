"""Training-step time of the example models under each tpu execution mode,
beside PyTorch's own CPU eager (and CUDA eager where a GPU is there) and
torchax (PyTorch on JAX), in one run.

    .venv/bin/python benchmarks/modes.py [--models mingpt resnet] [--steps 10] [--rounds 1] [--inference]

Each (model, mode) pair builds the model afresh with the same seed and runs
warm-up steps (compiling); then each pair times `--steps` steps, each ending with
`loss.item()` as a logging training loop does (`--read-every N`: every N
steps, as a loop that logs less often; then the host records the next
steps while the device runs the previous ones). With `--rounds N` the pairs
take turns N times (every mode set up first, the child processes of the
cuda and torchax rows kept waiting), and each ratio is the median of the N
rounds' ratios: the speed of a shared machine drifts by tens of percent
within minutes, which a ratio of two modes timed minutes apart would
include. Prints milliseconds per step, the ratio to
strict eager, to CPU eager, to CUDA eager and to torchax, the programs launched per step
and compiled during the timed steps, and the peak device memory of one
timed step (the pair's own, though other pairs' models share the device:
what it keeps between steps plus the most its step adds). `--inference` times the evaluation forward and loss
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
# available); "graph": the whole step captured once into a device graph
# (torch.accelerator.Graph, examples/graph_step.py) and replayed;
# "torchax" and "torchax-plugin": see the docstring.
MODES = ("cpu", "cpu-inductor", "cuda", "cuda-inductor", "strict", "fused", "debug", "compiled",
         "compiled-step", "graph", "torchax", "torchax-plugin")
INFERENCE_MODES = ("cpu", "cpu-inductor", "cuda", "cuda-inductor", "strict", "fused", "compiled", "graph",
                   "torchax", "torchax-plugin")
HERE = os.path.dirname(os.path.abspath(__file__))
TORCHAX_PYTHON = os.environ.get("TORCH_TPU_TORCHAX_PYTHON",
                                os.path.expanduser("~/.cache/torch-tpu/torchax-venv/bin/python"))


class Stepper:
    """One (model, mode) pair in this process, built and warmed up once,
    then timed in blocks (`time`), so that blocks of several modes can
    alternate (`--rounds`)."""

    def __init__(self, make_step, mode: str, warmup: int, train: bool, read_every: int = 1):
        self.read_every = read_every
        self.device = mode.split("-")[0] if mode.startswith(("cpu", "cuda")) else "tpu"
        self.on_tpu = self.device == "tpu"
        backend = {"compiled": "tpu", "compiled-step": "tpu", "cpu-inductor": "inductor",
                   "cuda-inductor": "inductor"}.get(mode)
        self.accelerator = getattr(torch, self.device) if self.device in ("tpu", "cuda") else None
        before = self.accelerator.memory_allocated() if self.accelerator else 0
        self.step, _ = make_step(self.device, backend=backend, whole_step=mode == "compiled-step", train=train,
                                 graphed=mode == "graph")
        self.eager = "strict" if mode.startswith("compiled") or mode == "graph" else mode
        self.i = 0
        with self._mode():
            for _ in range(warmup):
                self.step(self.i).item()
                self.i += 1
        # What this pair keeps on the device between steps (parameters,
        # optimizer state, gradients): other pairs' memory is there too.
        self.resident = self.accelerator.memory_allocated() - before if self.accelerator else 0

    def _mode(self):
        if not self.on_tpu:
            return contextlib.nullcontext()
        import torch_tpu
        return torch_tpu.eager_mode(self.eager)

    def time(self, groups: int, peak: bool = False) -> dict:
        """Times `groups` groups of `read_every` steps, each group ending
        with its last loss read on the host: milliseconds and the calling
        thread's CPU milliseconds per step for each group, blocking waits,
        compiles and launches in the block, and (with `peak`) the peak device
        memory of the last group's steps (this pair's own: its resident
        memory plus the most the steps added to what was allocated)."""
        if self.on_tpu:
            import torch_tpu
        cache_stats = torch_tpu.runtime.cache_stats if self.on_tpu else dict
        accelerator = self.accelerator
        times, host = [], []
        waits = 0
        peak_bytes = None
        with self._mode():
            stats = cache_stats()
            for g in range(groups):
                last = g == groups - 1
                if last and peak and accelerator:
                    accelerator.reset_peak_memory_stats()
                    at_start = accelerator.memory_allocated()
                start, start_cpu = time.perf_counter(), time.thread_time()
                start_waits = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
                for _ in range(self.read_every):
                    loss = self.step(self.i)
                    self.i += 1
                loss.item()
                times.append((time.perf_counter() - start) / self.read_every * 1e3)
                host.append((time.thread_time() - start_cpu) / self.read_every * 1e3)
                waits += resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - start_waits
                if last and peak and accelerator:
                    # the step's own peak: what it kept plus what it added
                    peak_bytes = self.resident + accelerator.max_memory_allocated() - at_start
            after = cache_stats()
            if accelerator:
                # work the last step left running (a backward or optimizer
                # program after the loss was read) must not slow the next block
                accelerator.synchronize()
        steps = groups * self.read_every
        return {"times": times, "host": host, "peak": peak_bytes,
                # wall time beyond the calling thread's own CPU time is waiting
                # or being preempted; voluntary context switches count the waits
                "waits": waits / steps,
                "compiles": after["compiles"] - stats["compiles"] if self.on_tpu else None,
                # every program launch looks its program up in the cache once
                "launches": (after["requests"] - stats["requests"]) / steps if self.on_tpu else None}

    def close(self) -> None:
        pass


def serve(stepper) -> None:
    """The child side of ChildStepper: READY, then one JSON block per
    `groups` line read from stdin."""
    print("READY", flush=True)
    for line in sys.stdin:
        groups, peak = line.split()
        print("BLOCK " + json.dumps(stepper.time(int(groups), peak == "1")), flush=True)


class ChildStepper:
    """A (model, mode) pair in a child process that `serve`s blocks: the
    cuda rows (a process without torch_tpu) and torchax's. `skipped` says
    why there is none."""

    def __init__(self, cmd: list[str], env: dict, what: str):
        self.skipped = None
        self.what = what
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self._read("READY")

    def _read(self, tag: str) -> str | None:
        for line in self.proc.stdout:
            if line.startswith(tag):
                return line[len(tag):].strip()
        self.skipped = f"{self.what} failed ({self.proc.wait()}): {self.proc.stderr.read().strip()[-300:]}"
        return None

    def time(self, groups: int, peak: bool = False) -> dict:
        if self.skipped:
            return {"skipped": self.skipped}
        self.proc.stdin.write(f"{groups} {int(peak)}\n")
        self.proc.stdin.flush()
        block = self._read("BLOCK ")
        return json.loads(block) if block else {"skipped": self.skipped}

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()


def cuda_stepper(model: str, mode: str, args) -> ChildStepper:
    """A cuda row, measured in a child process that does not load torch_tpu:
    while a PrivateUse1 backend is registered, PyTorch's autograd engine
    (2.11 at least) fails CUDA backward passes with "opt_ready_stream &&
    opt_parent_stream" (pytorch/pytorch#161129)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--models", model, "--modes", mode,
           "--warmup", str(args.warmup), "--read-every", str(args.read_every),
           "--mingpt-size", args.mingpt_size] + (["--inference"] if args.inference else [])
    if args.cpu_threads:
        cmd += ["--cpu-threads", str(args.cpu_threads)]
    return ChildStepper(cmd, {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, "the cuda child")


def torchax_stepper(model: str, warmup: int, train: bool, mingpt_size: str, plugin: str | None = None):
    """benchmarks/torchax_step.py --serve in the torchax environment (on the
    PJRT plugin at `plugin` if given), or a row that says how to create that
    environment."""
    if not os.path.exists(TORCHAX_PYTHON):
        return {"skipped": f"no torchax environment at {TORCHAX_PYTHON}: create it with "
                           "`bash benchmarks/torchax_env.sh` (or set TORCH_TPU_TORCHAX_PYTHON)"}
    cmd = [TORCHAX_PYTHON, os.path.join(HERE, "torchax_step.py"), "--model", model, "--serve",
           "--warmup", str(warmup), "--mingpt-size", mingpt_size]
    cmd += [] if train else ["--inference"]
    cmd += ["--plugin", plugin] if plugin else []
    # On a GPU, JAX would otherwise take 75% of its memory up front, beside
    # this process's device.
    # torchax registers PrivateUse1 as "jax": torch must not load torch_tpu there.
    env = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", **os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    return ChildStepper(cmd, env, "torchax_step.py")


def summarize(blocks: list[dict]) -> dict:
    """One row from a mode's blocks (one per round)."""
    times = [t for b in blocks for t in b["times"]]
    rounds = [statistics.median(b["times"]) for b in blocks]
    host = [h for b in blocks for h in b["host"]] if blocks[0].get("host") else None
    return {"ms": statistics.median(times), "rounds": rounds, "peak": blocks[-1].get("peak"),
            "host_ms": statistics.median(host) if host else None,
            "waits": statistics.mean(b["waits"] for b in blocks) if blocks[0].get("waits") is not None else None,
            "compiles": sum(b["compiles"] for b in blocks) if blocks[0].get("compiles") is not None else None,
            "launches": statistics.mean(b["launches"] for b in blocks)
            if blocks[0].get("launches") is not None else None,
            **({"note": blocks[0]["note"]} if "note" in blocks[0] else {})}


def ratio(ref: dict, row: dict) -> float:
    """How many times faster `row` is than `ref`: the median over rounds of
    the two modes' medians in the same round, which cancels the machine's
    drift between rounds (a single round: the ratio of the two medians)."""
    return statistics.median(a / b for a, b in zip(ref["rounds"], row["rounds"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--modes", nargs="+", choices=list(MODES),
                        help=f"default: {' '.join(MODES)}; with --inference: {' '.join(INFERENCE_MODES)} "
                             "(the cuda modes only where CUDA is available)")
    parser.add_argument("--inference", action="store_true", help="time the evaluation forward, not training")
    parser.add_argument("--steps", type=int, default=10, help="timed steps of each mode per round")
    parser.add_argument("--rounds", type=int, default=1,
                        help="time the modes in this many alternating rounds (all modes set up first); the "
                             "ratios are then the median of each round's ratio, which cancels a drift of "
                             "the machine's speed between rounds")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--read-every", type=int, default=1, metavar="N",
                        help="read the loss on the host every N steps instead of every step (a training "
                             "loop that logs less often; lets the device run while the host goes on)")
    parser.add_argument("--mingpt-size", default="small", choices=list(mingpt.SIZES),
                        help="minGPT's configuration: the example's default (small) or nanoGPT's "
                             "character-level one (medium: 6 layers, 384 wide, 256 tokens)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # serves one mode's blocks
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
        serve(Stepper(makers[args.models[0]], modes[0], args.warmup, train, args.read_every))
        return
    import torch_tpu  # torch.tpu; the cuda children must not load it
    print(f"{'training' if train else 'inference'} steps; tpu platform: {torch.tpu.platform()}; "
          f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads; minGPT {args.mingpt_size}; "
          f"{args.steps} timed steps after {args.warmup} warm-up steps (median)"
          + (f", in {args.rounds} alternating rounds" if args.rounds > 1 else "") +
          f", the loss read every {args.read_every} step(s)", flush=True)
    refs = [name for name in ("strict", "cpu", "cuda", "torchax", "torchax-plugin") if name in modes]
    widths = [max(10, len("vs " + n)) for n in refs]
    header = (f"{'model':<8} {'mode':<14} {'ms/step':>9} " +
              " ".join(f"{'vs ' + n:>{w}}" for n, w in zip(refs, widths)) +
              f" {'host ms':>8} {'waits':>6} {'launches':>9} {'compiles':>9} {'peak MiB':>9}")
    table = []
    for model in args.models:
        steppers = {}
        for mode in modes:
            if mode.startswith("cuda") and not torch.cuda.is_available():
                steppers[mode] = {"skipped": "PyTorch has no CUDA device here"}
            elif mode.startswith("cuda"):
                steppers[mode] = cuda_stepper(model, mode, args)
            elif mode.startswith("torchax"):
                plugin = torch_tpu.runtime.initialize().path if mode == "torchax-plugin" else None
                steppers[mode] = (torchax_stepper(model, args.warmup, train, args.mingpt_size, plugin)
                                  if args.read_every == 1 else {"skipped": "torchax_step.py reads the loss every step"})
            else:
                steppers[mode] = Stepper(makers[model], mode, args.warmup, train, args.read_every)
        blocks = {mode: [] for mode in modes}
        for r in range(args.rounds):
            for mode, stepper in steppers.items():
                if isinstance(stepper, dict) or (blocks[mode] and "skipped" in blocks[mode][-1]):
                    continue
                steps = max(args.steps // 3, 2) if mode == "debug" else args.steps
                blocks[mode].append(stepper.time(max(steps // args.read_every, 1), peak=r == args.rounds - 1))
                # as each block is done: a run cut short still shows what it measured
                b = blocks[mode][-1]
                print(f"  {model} {mode} (round {r + 1}): " +
                      (f"{statistics.median(b['times']):.2f} ms/step" if "times" in b else b["skipped"]),
                      file=sys.stderr, flush=True)
        rows = {}
        for mode, stepper in steppers.items():
            if isinstance(stepper, dict):
                rows[mode] = stepper
            elif "skipped" in blocks[mode][-1]:
                rows[mode] = blocks[mode][-1]
            else:
                rows[mode] = summarize(blocks[mode])
            if not isinstance(stepper, dict):
                stepper.close()
        ref = {name: rows[name] if "ms" in rows[name] else None for name in refs}
        for mode, r in rows.items():
            if "skipped" in r:
                table.append(f"{model:<8} {mode:<14} skipped: {r['skipped']}")
                continue
            vs = [f"{ratio(ref[name], r):.2f}x" if ref[name] else "-" for name in refs]
            launches = "-" if r["launches"] is None else f"{r['launches']:.0f}"
            comp = "-" if r["compiles"] is None else str(r["compiles"])
            peak = "-" if r["peak"] is None else f"{r['peak'] / 2**20:.1f}"
            host = "-" if r["host_ms"] is None else f"{r['host_ms']:.2f}"
            waits = "-" if r["waits"] is None else f"{r['waits']:.1f}"
            table.append(f"{model:<8} {mode:<14} {r['ms']:>9.2f} " + " ".join(f"{v:>{w}}" for v, w in zip(vs, widths)) +
                         f" {host:>8} {waits:>6} {launches:>9} {comp:>9} {peak:>9}" +
                         (f"  ({r['note']})" if "note" in r else ""))
    print(header, *table, sep="\n")
    print("vs X: speed relative to that row (higher is faster; with rounds, the median of the rounds' ratios); "
          "host ms: the calling thread's CPU time per step; waits: times per step it blocked; launches: "
          "programs launched per step.")


if __name__ == "__main__":
    main()
