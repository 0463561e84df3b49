"""Conformance on PyTorch's own module test inputs: every ModuleInfo in
`module_db` (torch.testing._internal.common_modules) is built on the CPU,
copied to tpu, and both run each sample input, in training and, where the
module behaves differently, in eval mode. Compared against CPU: the
outputs, the buffers after the forward (BatchNorm's running statistics),
the gradients of the inputs and of every parameter, in float64 the second
derivatives; the same again with channels-last inputs and modules where
the inputs are 4-d or 5-d. The module's error inputs must raise the error
PyTorch documents for them. `--compile` runs the tpu module under
torch.compile(backend="tpu").

    python tests/module_conformance.py --all --report modules.json

`tests/test_module_conformance.py` runs it in CI.
"""

from __future__ import annotations

import argparse
import copy
import functools
import re
import sys

import torch
from torch.utils import _pytree as pytree

import conformance_common
from conformance_common import DEVICE, MAX_MESSAGE, Result, Skip, compare, run_all, run_cases, to_device

# Modules whose outputs are random: only shapes and dtypes are compared
# (unless the sample fixes the randomness, as FractionalMaxPool's
# `_random_samples` does).
RANDOM_MODULES = {"nn.FractionalMaxPool2d", "nn.FractionalMaxPool3d"}


def full_name(module_info) -> str:
    return module_info.name


def _is_random(module_info, module_input) -> bool:
    if getattr(module_info, "random_outputs", False):  # set by tests/nn_tests_conformance.py
        return True
    if module_info.name not in RANDOM_MODULES:
        return False
    return "_random_samples" not in module_input.constructor_input.kwargs


def _move(value, device):
    return pytree.tree_map(lambda x: to_device(x, device), value)


def _image_rank(module_input) -> int | None:
    """4 or 5 when the forward takes a batched image (2-d or 3-d) input."""
    leaves = pytree.tree_leaves((module_input.forward_input.args, module_input.forward_input.kwargs))
    ranks = {x.dim() for x in leaves if isinstance(x, torch.Tensor) and x.dim() in (4, 5)}
    return ranks.pop() if len(ranks) == 1 else None


def _channels_last_format(rank):
    return torch.channels_last if rank == 4 else torch.channels_last_3d


def _channels_last(value, rank):
    def convert(x):
        if isinstance(x, torch.Tensor) and x.dim() == rank:
            return x.detach().to(memory_format=_channels_last_format(rank)).requires_grad_(x.requires_grad)
        return x

    return pytree.tree_map(convert, value)


def _is_lazy(module) -> bool:
    from torch.nn.modules.lazy import LazyModuleMixin

    return any(isinstance(m, LazyModuleMixin) for m in module.modules())


def _build(module_info, module_input, training, dtype=None):
    """The module on the CPU, its floating-point state in `dtype` as
    PyTorch's module tests build it (error inputs keep theirs: a mismatch
    may be the error)."""
    torch.manual_seed(0)
    c = module_input.constructor_input
    module = module_info.module_cls(*c.args, **c.kwargs)
    if dtype is not None:
        module.to(dtype)
    module.train(training)
    return module


def _run_input(module_info, module_input, training, dtype, channels_last_rank=None, compiled=False) -> None:
    """Raises on a mismatch; NotImplementedError when the tpu refuses."""
    check_values = not _is_random(module_info, module_input)
    args, kwargs = module_input.forward_input.args, module_input.forward_input.kwargs
    if channels_last_rank:
        args, kwargs = _channels_last((args, kwargs), channels_last_rank)
    c_args, c_kwargs = _move((args, kwargs), "cpu")
    t_args, t_kwargs = _move((args, kwargs), DEVICE)
    cpu_module = _build(module_info, module_input, training, dtype)
    tpu_module = copy.deepcopy(cpu_module).to(DEVICE)
    # Lazy modules initialize their parameters at the first forward, each
    # from its own device's generator: both run one forward without
    # gradients (the tpu one materializing on the device), then the tpu
    # module takes the CPU's values.
    lazy = _is_lazy(cpu_module)
    try:
        if lazy:
            with torch.no_grad(), torch.random.fork_rng(devices=[]):
                cpu_module(*c_args, **c_kwargs)
            materialized = copy.deepcopy(cpu_module.state_dict())
        if channels_last_rank:
            cpu_module.to(memory_format=_channels_last_format(channels_last_rank))
        with torch.random.fork_rng(devices=[]):
            expected = cpu_module(*c_args, **c_kwargs)
    except Exception:  # noqa: BLE001  (CPU refuses this input too: nothing to compare)
        raise Skip()
    if lazy:
        with torch.no_grad():
            tpu_module(*t_args, **t_kwargs)
        tpu_module.load_state_dict(materialized)
    if channels_last_rank:
        tpu_module.to(memory_format=_channels_last_format(channels_last_rank))
    if compiled:
        # Every input builds a new module of the same class: without a
        # reset Dynamo would stop recompiling after its cache limit and
        # run the rest eagerly.
        torch._dynamo.reset()
        actual = torch.compile(tpu_module, backend="tpu")(*t_args, **t_kwargs)
    else:
        actual = tpu_module(*t_args, **t_kwargs)
    compare(actual, expected, "forward", check_values)
    compare(dict(tpu_module.named_buffers()), dict(cpu_module.named_buffers()), "buffers", check_values)
    c_out = [o for o in pytree.tree_leaves(expected) if isinstance(o, torch.Tensor) and o.requires_grad]
    t_out = [o for o in pytree.tree_leaves(actual) if isinstance(o, torch.Tensor) and o.requires_grad]
    if len(c_out) != len(t_out):
        raise AssertionError(f"{len(t_out)} outputs require grad, CPU's {len(c_out)}")
    if not check_values or not c_out:
        return
    gen = torch.Generator().manual_seed(0)
    weights = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in c_out]
    c_wrt = _differentiable_leaves(c_args, c_kwargs, cpu_module)
    t_wrt = _differentiable_leaves(t_args, t_kwargs, tpu_module)
    # Second derivatives too, as PyTorch's CPU / CUDA parity tests check
    # them (gradient penalties, meta-learning), in float64: in float32 they
    # are as far from float64's on CPU as on the tpu (MultiheadAttention's
    # 1e-3 where values reach 80 - 1500), while the formulas are the same
    # in every dtype. Not for compiled modules, whose backward graph
    # AOTAutograd compiles without a double backward.
    gradgrad = getattr(module_info, "supports_gradgrad", False) and dtype == torch.float64 and not compiled
    try:
        c_grads = torch.autograd.grad(c_out, c_wrt, weights, allow_unused=True, create_graph=gradgrad)
    except Exception:  # noqa: BLE001  (CPU's backward refuses it: nothing to compare)
        raise Skip()
    t_grads = torch.autograd.grad(t_out, t_wrt, [w.to(DEVICE) for w in weights], allow_unused=True,
                                  create_graph=gradgrad)
    compare(_zeros_for_none(t_grads, t_wrt), _zeros_for_none(c_grads, c_wrt), "gradients", backward=True)
    c_pairs = [(g, x) for g, x in zip(c_grads, c_wrt) if g is not None and g.requires_grad]
    t_pairs = [(g, x) for g, x in zip(t_grads, t_wrt) if g is not None and g.requires_grad]
    if not gradgrad or not c_pairs or len(c_pairs) != len(t_pairs):
        return
    second = [torch.randn(g.shape, dtype=g.dtype, generator=gen) for g, _ in c_pairs]
    try:
        c_second = torch.autograd.grad([g for g, _ in c_pairs], c_wrt, second, allow_unused=True)
    except Exception:  # noqa: BLE001  (CPU has no double backward here either)
        return
    t_second = torch.autograd.grad([g for g, _ in t_pairs], t_wrt, [v.to(DEVICE) for v in second], allow_unused=True)
    compare(_zeros_for_none(t_second, t_wrt), _zeros_for_none(c_second, c_wrt), "second derivatives", backward=True)


def _differentiable_leaves(args, kwargs, module) -> list:
    """The inputs that require grad, then the module's parameters."""
    inputs = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor) and x.requires_grad]
    return inputs + [p for p in module.parameters() if p.requires_grad]


def _zeros_for_none(grads, wrt) -> list:
    return [g if g is not None else torch.zeros_like(x) for g, x in zip(grads, wrt)]


def _run_error_input(module_info, error_input) -> None:
    """Raises unless the tpu module raises the documented error."""
    from torch.testing._internal.common_modules import ModuleErrorEnum

    module_input = error_input.module_error_input
    if error_input.error_on != ModuleErrorEnum.FORWARD_ERROR:
        raise Skip()  # construction errors do not involve the device
    module = _build(module_info, module_input, training=True).to(DEVICE)
    args, kwargs = _move((module_input.forward_input.args, module_input.forward_input.kwargs), DEVICE)
    try:
        module(*args, **kwargs)
        torch.tpu.synchronize()
    except error_input.error_type as e:
        if not re.search(error_input.error_regex, str(e)):
            raise AssertionError(f"error input: {type(e).__name__} {str(e)[:150]!r} does not match "
                                 f"{error_input.error_regex!r}")
        return
    raise AssertionError(f"error input: no {error_input.error_type.__name__} ({error_input.error_regex!r})")


def _cases(module_info, dtype, compiled):
    for training in ((True, False) if module_info.train_and_eval_differ else (True,)):
        inputs = module_info.module_inputs_func(module_info, device="cpu", dtype=dtype, requires_grad=True,
                                                training=training)
        for module_input in inputs:
            if module_input.forward_input is None:
                continue
            desc = f"{module_input.desc or 'default'} ({'train' if training else 'eval'}"
            run = functools.partial(_run_input, module_info, module_input, training, dtype, compiled=compiled)
            yield f"{desc})", run
            rank = _image_rank(module_input)
            if rank is not None:
                yield f"{desc}, channels_last)", functools.partial(run, channels_last_rank=rank)
    if module_info.module_error_inputs_func is not None:
        for error_input in module_info.module_error_inputs_func(module_info, device="cpu", dtype=dtype,
                                                                requires_grad=False, training=True):
            yield "error input", functools.partial(_run_error_input, module_info, error_input)


def run_module(module_info, dtype=torch.float32, compiled=False) -> Result:
    try:
        cases = list(_cases(module_info, dtype, compiled))
    except Exception as e:  # noqa: BLE001
        return Result(full_name(module_info), errors=[f"module_inputs: {e}"[:MAX_MESSAGE]])
    return run_cases(full_name(module_info), cases)


def select_modules(names=None, dtype=torch.float32):
    from torch.testing._internal.common_modules import module_db

    modules = [m for m in module_db if dtype in m.dtypes]
    if names is not None:
        modules = [m for m in modules if m.name in set(names)]
    return modules


def summarize(results, dtype=torch.float32) -> str:
    return conformance_common.summarize("modules", "modules", "inputs", results, dtype)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="every module in module_db")
    parser.add_argument("--modules", nargs="*", help="only these modules (ModuleInfo names, e.g. nn.Conv2d)")
    parser.add_argument("--report", default="module_report.json")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--compile", action="store_true",
                        help='run the tpu module under torch.compile(backend="tpu")')
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    run_all(select_modules(args.modules, dtype), lambda item: run_module(item, dtype, args.compile), summarize,
            args.report, dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main())
