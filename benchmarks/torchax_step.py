"""The example models' training and inference steps under torchax (PyTorch
on JAX) with jax.jit, for benchmarks/modes.py to compare with the tpu
device: the same model code, configuration, seed, batches and optimizer,
run by JAX on XLA's CPU compiler.

Runs in the environment benchmarks/torchax_env.sh creates (not the
project's: torchax pins its own jax):

    VENV/bin/python benchmarks/torchax_step.py --model mingpt [--inference] [--steps 10]

`--plugin PATH` runs JAX on that PJRT plugin instead of its own CPU or GPU
client (modes.py passes the plugin the tpu device loaded, so both sides run
the same XLA build and the difference between them is the frameworks' own).

Prints one line `TORCHAX {json}` with the median milliseconds per step
(each step uploads its batch, runs the jitted step and reads the loss on
the host, as modes.py's steps do), the first compile's seconds and the
losses. `--check` also runs the same steps in PyTorch's CPU eager and
prints the largest loss difference. `--serve` (modes.py --rounds) warms up,
then times blocks of steps whenever modes.py asks.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import mingpt  # noqa: E402
import resnet  # noqa: E402


def _import_torchax():
    # torchax 0.0.13 names aten overloads that torch 2.13 no longer has (the
    # named-dimension ones), as entries of its decomposition list and
    # autocast table only: stand-ins that are no operator let the import
    # succeed, and match no op.
    import importlib.util
    import pathlib
    import re

    root = pathlib.Path(importlib.util.find_spec("torchax").origin).parent
    for source in root.rglob("*.py"):
        for op, overload in re.findall(r"torch\.ops\.aten\.(\w+)\.(\w+)", source.read_text()):
            packet = getattr(torch.ops.aten, op, None)
            if packet is not None and overload not in packet.overloads() and overload != "default":
                setattr(packet, overload, f"missing overload aten.{op}.{overload}")
    import torchax
    return torchax


torchax = _import_torchax()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


# Each model: (module, host batches i -> (inputs, target), loss of the
# module's output and the target, optimizer), as in examples/*.py make_step.
def _mingpt(batch: int, seed: int = 0, size: str = "small"):
    cfg = mingpt.config(size)
    torch.manual_seed(seed)
    model = mingpt.GPT(cfg)
    next_windows = mingpt.windows(cfg, batch, seed + 1)

    def batches(i):
        chunk = next_windows()
        return chunk[:, :-1], chunk[:, 1:]

    return model, batches, lambda out, y: F.cross_entropy(out.flatten(0, 1), y.flatten()), adamw(3e-3, 0.1)


def _resnet(batch: int, seed: int = 0, size: str = "small"):
    torch.manual_seed(seed)
    model = resnet.ResNet()
    x, y = resnet.images(128)

    def batches(i):
        j = (i * batch) % len(x)
        return x[j:j + batch], y[j:j + batch]

    return model, batches, F.cross_entropy, sgd(0.05, 0.9, 5e-4)


MODELS = {"mingpt": _mingpt, "resnet": _resnet}


# The optimizers in JAX, as torch.optim computes them (AdamW's decoupled
# weight decay and bias corrections; SGD's momentum with weight decay
# added to the gradient, the first step's buffer being the gradient).
def adamw(lr, weight_decay, betas=(0.9, 0.999), eps=1e-8):
    b1, b2 = betas

    def init(params):
        return {"step": jnp.zeros((), jnp.float32), "m": jax.tree.map(jnp.zeros_like, params),
                "v": jax.tree.map(jnp.zeros_like, params)}

    def update(params, grads, state):
        step = state["step"] + 1
        m = jax.tree.map(lambda m, g: m + (g - m) * (1 - b1), state["m"], grads)
        v = jax.tree.map(lambda v, g: v * b2 + (1 - b2) * g * g, state["v"], grads)
        step_size = lr / (1 - b1 ** step)
        bc2_sqrt = jnp.sqrt(1 - b2 ** step)

        def new(p, m, v):
            p = p * (1 - lr * weight_decay)
            return p - step_size * m / (jnp.sqrt(v) / bc2_sqrt + eps)

        return jax.tree.map(new, params, m, v), {"step": step, "m": m, "v": v}

    return init, update


def sgd(lr, momentum, weight_decay):
    def init(params):
        return {"first": jnp.ones((), jnp.bool_), "buf": jax.tree.map(jnp.zeros_like, params)}

    def update(params, grads, state):
        grads = jax.tree.map(lambda g, p: g + weight_decay * p, grads, params)
        buf = jax.tree.map(lambda b, g: jnp.where(state["first"], g, b * momentum + g), state["buf"], grads)
        return jax.tree.map(lambda p, b: p - lr * b, params, buf), {"first": jnp.zeros((), jnp.bool_), "buf": buf}

    return init, update


def make_step(name: str, batch: int, train: bool, size: str = "small"):
    """A function i -> loss (a jax scalar) running step i under jax.jit."""
    model, batches, loss_of, (opt_init, opt_update) = MODELS[name](batch, size=size)
    env = torchax.default_env()
    params = env.t2j_copy(dict(model.named_parameters()))
    buffers = env.t2j_copy(dict(model.named_buffers()))
    if not train:
        model.eval()

    def loss_and_buffers(params, buffers, x, y):
        p, b, x, y = env.j2t_iso((params, buffers, x, y))
        with env:
            # A functional call: BatchNorm's running statistics are
            # updated in the buffers passed in, returned as new values.
            out = torch.func.functional_call(model, {**p, **b}, (x,))
            out = out[0] if isinstance(out, tuple) else out
            loss = loss_of(out, y)
        return env.t2j_iso(loss), env.t2j_iso(b)

    def train_step(params, buffers, opt_state, x, y):
        (loss, buffers), grads = jax.value_and_grad(loss_and_buffers, has_aux=True)(params, buffers, x, y)
        params, opt_state = opt_update(params, grads, opt_state)
        return loss, params, buffers, opt_state

    state = {"params": params, "buffers": buffers, "opt": opt_init(params)}
    # Donated like the in-place updates of the torch optimizer.
    jit_train = jax.jit(train_step, donate_argnums=(0, 1, 2))
    jit_eval = jax.jit(lambda params, buffers, x, y: loss_and_buffers(params, buffers, x, y)[0])

    def step(i: int):
        x, y = (jnp.asarray(t.numpy()) for t in batches(i))
        if not train:
            return jit_eval(state["params"], state["buffers"], x, y)
        loss, state["params"], state["buffers"], state["opt"] = jit_train(
            state["params"], state["buffers"], state["opt"], x, y)
        return loss

    return step


def torch_losses(name: str, batch: int, steps: int, train: bool, size: str) -> list[float]:
    """The same steps in PyTorch's CPU eager, through the example's own step."""
    sized = {"cfg": mingpt.config(size)} if name == "mingpt" else {}
    step, _ = {"mingpt": mingpt, "resnet": resnet}[name].make_step("cpu", batch=batch, train=train, **sized)
    return [step(i).item() for i in range(steps)]


def use_plugin(path: str) -> None:
    """Makes the PJRT plugin at `path` JAX's only platform (JAX uses its first
    device). Called before anything asks JAX for a device: backends are
    created on first use."""
    from jax._src import xla_bridge

    xla_bridge.register_plugin("plugin", library_path=path)
    jax.config.update("jax_platforms", "plugin")


def platform(plugin: str | None) -> str:
    return jax.devices()[0].platform + (f" ({os.path.basename(plugin)})" if plugin else "")


def serve(step, warmup: int, versions: dict) -> None:
    """modes.py's side of a torchax row timed in rounds: each request times
    `groups` steps (each one reading its loss, as modes.py's steps do)."""
    i = 0
    for i in range(warmup):
        float(step(i))
    print("READY", flush=True)
    for line in sys.stdin:
        groups = int(line.split()[0])
        times = []
        for _ in range(groups):
            i += 1
            start = time.perf_counter()
            float(step(i))
            times.append((time.perf_counter() - start) * 1e3)
        block = {"times": times, "host": None, "waits": None, "compiles": None, "launches": None, "peak": None,
                 "note": f"jax {versions['jax']} on {versions['platform']}"}
        print("BLOCK " + json.dumps(block), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mingpt", choices=list(MODELS))
    parser.add_argument("--inference", action="store_true", help="time the evaluation forward and loss")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--mingpt-size", default="small", choices=list(mingpt.SIZES))
    parser.add_argument("--check", action="store_true", help="compare the losses with PyTorch's CPU eager")
    parser.add_argument("--plugin", metavar="PATH", help="a PJRT plugin for JAX to run on (on its first device)")
    parser.add_argument("--serve", action="store_true",
                        help="after the warm-up, print READY and time blocks of steps on request (a line "
                             "'GROUPS PEAK' on stdin, answered by 'BLOCK {json}'), for modes.py --rounds")
    args = parser.parse_args()
    train = not args.inference
    if args.plugin:
        use_plugin(args.plugin)

    step = make_step(args.model, args.batch, train, args.mingpt_size)
    if args.serve:
        serve(step, args.warmup, {"jax": jax.__version__, "platform": platform(args.plugin)})
        return
    losses, times = [], []
    start = time.perf_counter()
    losses.append(float(step(0)))
    compile_s = time.perf_counter() - start
    for i in range(1, args.warmup + args.steps):
        start = time.perf_counter()
        losses.append(float(step(i)))  # a host read of the loss, as modes.py's steps end
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
    result = {"model": args.model, "train": train, "ms": statistics.median(times) * 1e3,
              "compile_s": compile_s, "losses": losses, "jax": jax.__version__,
              "platform": platform(args.plugin)}
    if args.check:
        expected = torch_losses(args.model, args.batch, len(losses), train, args.mingpt_size)
        result["max_loss_diff_vs_torch_cpu"] = max(abs(a - b) for a, b in zip(losses, expected))
    print("TORCHAX " + json.dumps(result))


if __name__ == "__main__":
    main()
