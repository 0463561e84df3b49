"""Conformance on PyTorch's own optimizer configurations: every
OptimizerInfo in `optim_db` (torch.testing._internal.common_optimizers)
with each of its hyperparameter sets (the accelerator's set: capturable
and tensor learning rates included) runs a few steps on tpu parameters, in
each implementation the optimizer has (the per-parameter loop, `foreach`,
`fused`, `differentiable`), against the per-parameter loop on CPU. The
parameters and the optimizer's state are compared after every step.

    python tests/optimizer_conformance.py --all --report optimizers.json

`tests/test_module_conformance.py` runs it in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys

import torch
import torch.nn.functional as F

import conformance_common
from conformance_common import DEVICE, Result, Skip, compare, run_all, run_cases

STEPS = 4
# L-BFGS's state (step sizes, curvature pairs) is compared in float64
# only: after its 20 iterations a step the problem is solved to float32
# rounding and those ratios of tiny differences are noise.
STATE_IN_FLOAT64_ONLY = {"LBFGS"}
# L-BFGS runs up to 20 iterations a step, each a line search over dot
# products: float32 rounding grows to 1e-3 relative over the steps (the
# float64 run matches CPU to 1e-7, the dtype's tolerance).
LOOSER = {("LBFGS", torch.float32): dict(rtol=5e-3, atol=5e-3)}


def full_name(optim_info) -> str:
    return optim_info.optim_cls.__name__


def _make_params(optim_info, dtype, generator):
    """Parameters of several ranks (one 0-dim) and their closure's
    constants; Muon takes matrices only, SparseAdam an embedding table."""
    name = full_name(optim_info)
    if name == "SparseAdam":
        shapes = [(10, 4), (6, 3)]
    elif name == "Muon":
        shapes = [(5, 4), (3, 6)]
    else:
        shapes = [(5, 4), (5,), (2, 3, 2), ()]
    params = [torch.randn(s, dtype=dtype, generator=generator) for s in shapes]
    constants = [torch.randn(s, dtype=dtype, generator=generator) for s in shapes]
    return params, constants


def _loss(optim_info, params, constants):
    if full_name(optim_info) == "SparseAdam":
        ids = torch.tensor([1, 3, 3, 0], device=params[0].device)
        return sum((F.embedding(ids, p, sparse=True) * c[: len(ids)]).sin().sum() for p, c in zip(params, constants))
    # Gradients that depend on the parameters, so each step's differ.
    return sum(((p * c).sin() + 0.1 * p * p).sum() for p, c in zip(params, constants))


def _run(optim_info, kwargs, params, constants, steps, compiled=False):
    """The parameters and state after each step; the step takes a closure
    that computes the gradients on the parameters' device. Compiled, the
    gradients are computed before `torch.compile(optimizer.step)` runs
    without a closure, as compiled training loops call it."""
    optimizer = optim_info.optim_cls(params, **kwargs)
    if compiled:
        torch._dynamo.reset()  # each configuration is a new optimizer of the same class
        step = torch.compile(optimizer.step, backend="tpu")
    history = []
    for _ in range(steps):
        def closure():
            optimizer.zero_grad()
            loss = _loss(optim_info, params, constants)
            loss.backward()
            return loss

        if compiled:
            closure()
            step()
        else:
            optimizer.step(closure)
        history.append(_snapshot(optimizer, params))
    return history


def _run_differentiable(optim_info, kwargs, leaves, constants, steps):
    """`differentiable=True`: the parameters are functions of `leaves`, the
    gradients are set by hand, the steps are recorded by autograd; the
    history ends with the gradient of the final parameters with respect to
    the leaves, which flows back through every update."""
    params = [leaf.clone() for leaf in leaves]
    optimizer = optim_info.optim_cls(params, **kwargs)
    history = []
    for _ in range(steps):
        grads = torch.autograd.grad(_loss(optim_info, params, constants), params)
        for p, g in zip(params, grads):
            p.grad = g.detach()
        optimizer.step()
        history.append(_snapshot(optimizer, params))
    weights = [torch.linspace(-1, 1, p.numel(), dtype=p.dtype).reshape(p.shape).to(p.device) for p in params]
    through = torch.autograd.grad(sum((p * w).sum() for p, w in zip(params, weights)), leaves)
    return history, [g.detach() for g in through]


def _snapshot(optimizer, params):
    state = [{k: v.detach().clone() if isinstance(v, torch.Tensor) else v for k, v in optimizer.state[p].items()}
             for p in params]
    return [p.detach().clone() for p in params], state


def _reference_kwargs(kwargs):
    """The per-parameter loop on CPU with the same hyperparameters."""
    reference = {k: v for k, v in kwargs.items() if k not in ("foreach", "fused")}
    if "foreach" in kwargs:
        reference["foreach"] = False
    return reference


@contextlib.contextmanager
def _capturable_on_cpu():
    """PyTorch's optimizers refuse `capturable=True` for CPU parameters,
    although the capturable update is plain tensor math: admitting the CPU
    while the reference runs makes it take the same update as the tpu."""
    import importlib
    import pkgutil

    import torch.optim

    patched = []
    for info in pkgutil.iter_modules(torch.optim.__path__):
        module = importlib.import_module(f"torch.optim.{info.name}")
        original = getattr(module, "_get_capturable_supported_devices", None)
        if original is not None:
            patched.append((module, original))
            module._get_capturable_supported_devices = lambda *a, _o=original, **k: [*_o(*a, **k), "cpu"]
    try:
        yield
    finally:
        for module, original in patched:
            module._get_capturable_supported_devices = original


def _compare_state(actual, expected, what, tol):
    for a, e in zip(actual, expected):
        for key in e:
            if key not in a:
                raise AssertionError(f"{what}: state {key!r} missing")
            av, ev = a[key], e[key]
            if isinstance(ev, torch.Tensor) and ev.dim() == 0 and not isinstance(av, torch.Tensor):
                av = torch.tensor(av, dtype=ev.dtype)
            if isinstance(av, torch.Tensor) and av.dim() == 0 and not isinstance(ev, torch.Tensor):
                ev = torch.tensor(ev, dtype=av.dtype)
            if isinstance(av, torch.Tensor) and isinstance(ev, torch.Tensor) and av.dtype != ev.dtype:
                av = av.to(ev.dtype)  # a capturable `step` is a float tensor, the loop's may differ
            compare(av, ev, f"{what}: state {key!r}", tol=tol)


def _run_case(optim_info, kwargs, dtype, compiled=False) -> None:
    gen = torch.Generator().manual_seed(0)
    params, constants = _make_params(optim_info, dtype, gen)
    cpu_params = [p.clone().requires_grad_() for p in params]
    tpu_params = [p.to(DEVICE).requires_grad_() for p in params]
    tpu_constants = [c.to(DEVICE) for c in constants]
    run = _run_differentiable if kwargs.get("differentiable") else _run
    run_on_tpu = functools.partial(_run, compiled=True) if compiled else run
    try:
        with _capturable_on_cpu():
            expected = run(optim_info, _reference_kwargs(kwargs), cpu_params, constants, STEPS)
    except Exception:  # noqa: BLE001  (CPU refuses these hyperparameters: nothing to compare)
        raise Skip()
    actual = run_on_tpu(optim_info, kwargs, tpu_params, tpu_constants, STEPS)
    tol = LOOSER.get((full_name(optim_info), dtype))
    if kwargs.get("differentiable"):
        (actual, a_through), (expected, e_through) = actual, expected
        compare(a_through, e_through, "gradient through the steps", backward=True, tol=tol)
    for step, ((a_params, a_state), (e_params, e_state)) in enumerate(zip(actual, expected), 1):
        compare(a_params, e_params, f"step {step}: parameters", tol=tol)
        if dtype == torch.float64 or full_name(optim_info) not in STATE_IN_FLOAT64_ONLY:
            _compare_state(a_state, e_state, f"step {step}", tol)


def _configurations(optim_info):
    """(description, kwargs): every hyperparameter set, in the loop and in
    each implementation the optimizer has."""
    for optim_input in optim_info.optim_inputs_func(device="cuda"):
        if optim_input.params is not None:
            continue  # the inputs that bring their own parameters test the API, not the device
        desc = optim_input.desc or "default"
        base = dict(optim_input.kwargs)
        for flag in optim_info.supported_impls:
            base.setdefault(flag, False)
        yield desc, base
        for flag in optim_info.supported_impls:
            yield f"{desc} & {flag}", dict(base, **{flag: True})


def run_optimizer(optim_info, dtype=torch.float32, compiled=False) -> Result:
    configurations = list(_configurations(optim_info))
    if compiled:
        # L-BFGS's step needs its closure; a differentiable step is for
        # autograd to record, not for Dynamo.
        configurations = [] if full_name(optim_info) == "LBFGS" else [
            (desc, kwargs) for desc, kwargs in configurations if not kwargs.get("differentiable")]
    return run_cases(full_name(optim_info), [(desc, functools.partial(_run_case, optim_info, kwargs, dtype, compiled))
                                             for desc, kwargs in configurations])


def select_optimizers(names=None):
    from torch.testing._internal.common_optimizers import optim_db

    return [o for o in optim_db if names is None or full_name(o) in set(names)]


def summarize(results, dtype=torch.float32) -> str:
    return conformance_common.summarize("optimizers", "optimizers", "configurations", results, dtype)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="every optimizer in optim_db")
    parser.add_argument("--optimizers", nargs="*", help="only these (class names, e.g. AdamW)")
    parser.add_argument("--report", default="optimizer_report.json")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--compile", action="store_true",
                        help='run the tpu step under torch.compile(backend="tpu")')
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    run_all(select_optimizers(args.optimizers), lambda item: run_optimizer(item, dtype, args.compile), summarize,
            args.report, dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main())
