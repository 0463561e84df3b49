"""Conformance on PyTorch's own test inputs: every OpInfo in `op_db` runs
its sample inputs on CPU and on tpu and the results are compared (forward,
and the gradients of every input that requires grad).

Run all of op_db and write a JSON report:

    python tests/opinfo_conformance.py --all --report opinfo.json

`--refs` runs `python_ref_db` instead: PyTorch's Python references
(`torch._refs`, the decompositions torch.compile traces through), whose
prims run as aten ops on the device. `--inputs reference` runs each op's
reference inputs (PyTorch's larger, harder set: extremal values, large
arguments, type promotion, noncontiguous layouts) instead of its sample
inputs; `--inputs noncontiguous` its sample inputs with every tensor a
strided view of a larger one; `--inputs inplace` runs each op's in-place
variant (`x.add_(y)`) on its sample inputs and compares the result and the
written input.

`tests/test_opinfo.py` runs a representative subset in CI and checks that
only the listed expected failures fail.
"""

from __future__ import annotations

import argparse
import functools
import sys

import torch
from torch.utils import _pytree as pytree

import conformance_common
from conformance_common import DEVICE, MAX_MESSAGE, Result, Skip, compare, run_all, run_cases, to_device

# Ops whose results are random: only shapes and dtypes are compared.
RANDOM_OPS = {
    "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial", "normal",
    "nn.functional.alpha_dropout", "nn.functional.dropout", "nn.functional.dropout2d",
    "nn.functional.dropout3d", "nn.functional.feature_alpha_dropout", "nn.functional.rrelu",
    "rand_like", "randint", "randint_like", "randn", "randn_like", "uniform",
    "torch.ops.aten._efficientzerotensor", "empty", "empty_like", "empty_strided", "new_empty",
    "new_empty_strided", "empty_permuted", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d", "randperm", "item",
    "normal_",  # a reference's name (python_ref_db)
}

# Samples that are random although their op is not (dropout inside).
RANDOM_SAMPLES = {
    "nn.functional.scaled_dot_product_attention": lambda s: s.kwargs.get("dropout_p", 0.0) > 0,
    "nn.functional.multi_head_attention_forward": lambda s: bool(s.kwargs.get("training", False)),
    # A - M has more than q singular values: the result depends on the
    # random sketch (CPU's and the tpu's generators differ), which two power
    # iterations do not wash out.
    "svd_lowrank": lambda s: s.kwargs.get("M") is not None,
}

# Ops whose vectors are defined only up to sign (phase): eigenvectors and
# singular vectors. Their results are compared through the samples'
# output_process_fn_grad, which PyTorch's own gradient tests use to make them
# unique (absolute values, U @ Vh).
GAUGE_OPS = {"linalg.eigh", "linalg.svd", "svd", "svd_lowrank", "pca_lowrank", "linalg.eig"}

# Ops whose tensor arguments other than the input must stay on the CPU
# (PyTorch requires it), as users call them.
HOST_ARGUMENT_OPS = {"tensor_split"}

# Ops whose saved statistics (outputs 1 and 2) follow PyTorch's shape
# functions for accelerators, as CUDA's kernels do, not CPU's: in the
# input's accumulation type (float32 for a 16-bit input), and batch norm's
# in evaluation mode the running mean and 1 / sqrt(running variance + eps),
# where CPU returns empty tensors.
NORM_STATISTICS_OPS = {"native_layer_norm", "native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update"}

DTYPES = ("float32", "float64", "bfloat16", "float16", "complex64", "int64", "int32", "bool")


def full_name(op) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def base_name(op) -> str:
    """The op's name without a reference's `_refs.` prefix: what the sets
    above name."""
    return op.name.removeprefix("_refs.")


def _move_sample(sample, device, host_arguments=False):
    move = lambda v: pytree.tree_map(lambda x: to_device(x, device), v)  # noqa: E731
    rest = "cpu" if host_arguments else device
    move_rest = lambda v: pytree.tree_map(lambda x: to_device(x, rest), v)  # noqa: E731
    return move(sample.input), move_rest(tuple(sample.args)), move_rest(dict(sample.kwargs))


def _accelerator_statistics(sample, expected, actual):
    """(expected, actual) of a NORM_STATISTICS_OPS op with the statistics
    compared as an accelerator's shape function gives them: the tpu's must
    be in the accumulation type, and are compared in CPU's type (CPU rounds
    them to it)."""
    out, mean, rstd, *rest = expected
    acc = torch.float32 if out.dtype in (torch.float16, torch.bfloat16) else out.dtype
    for t in actual[1:3]:
        if t.dtype != acc:
            raise AssertionError(f"forward: statistics of dtype {t.dtype}, expected {acc} (the accumulation type)")
    if mean.numel() == 0 and sample.input.numel() > 0:  # batch norm in evaluation mode
        running_mean, running_var, eps = sample.args[2], sample.args[3], sample.args[6]
        mean = running_mean.detach().to(acc).to(mean.dtype)
        rstd = torch.rsqrt(running_var.detach().to(acc) + eps).to(rstd.dtype)
    actual = (actual[0], actual[1].to(mean.dtype), actual[2].to(rstd.dtype), *actual[3:])
    return (out, mean, rstd, *rest), actual


def _grad_inputs(inputs) -> list:
    return [t for t in pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor) and t.requires_grad]


def _differentiable(outputs) -> list:
    return [t for t in pytree.tree_leaves(outputs)
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()]


def _run_sample(op, sample, dtype) -> None:
    """Raises on a mismatch; NotImplementedError when the tpu refuses."""
    name = base_name(op)
    check_values = name not in RANDOM_OPS and not RANDOM_SAMPLES.get(name, lambda s: False)(sample)
    with torch.random.fork_rng(devices=[]):
        try:
            c_in, c_args, c_kwargs = _move_sample(sample, "cpu")
            expected = op(c_in, *c_args, **c_kwargs)
        except Exception:  # CPU refuses this sample too: nothing to compare
            raise Skip()
    t_in, t_args, t_kwargs = _move_sample(sample, DEVICE, name in HOST_ARGUMENT_OPS)
    actual = op(t_in, *t_args, **t_kwargs)
    if name in NORM_STATISTICS_OPS:
        expected, actual = _accelerator_statistics(sample, expected, actual)
    if name in GAUGE_OPS:
        expected, actual = sample.output_process_fn_grad(expected), sample.output_process_fn_grad(actual)
    compare(actual, expected, "forward", check_values)
    if not (op.supports_autograd and check_values and (dtype.is_floating_point or dtype.is_complex)):
        return
    c_grad_in, t_grad_in = _grad_inputs((c_in, c_args, c_kwargs)), _grad_inputs((t_in, t_args, t_kwargs))
    c_out, t_out = _differentiable(expected), _differentiable(actual)
    if not c_grad_in or not c_out or len(c_out) != len(t_out):
        return
    gen = torch.Generator().manual_seed(0)
    weights = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in c_out]
    try:
        c_grads = torch.autograd.grad(c_out, c_grad_in, weights, allow_unused=True)
    except RuntimeError:  # CPU has no derivative here either (remainder of a Python number by a tensor)
        return
    t_grads = torch.autograd.grad(t_out, t_grad_in, [w.to(DEVICE) for w in weights], allow_unused=True)
    c_grads = [g if g is not None else torch.zeros_like(x) for g, x in zip(c_grads, c_grad_in)]
    t_grads = [g if g is not None else torch.zeros_like(x) for g, x in zip(t_grads, t_grad_in)]
    compare(t_grads, c_grads, "backward", backward=True)


def _run_inplace_sample(op, sample) -> None:
    """op's in-place variant on the sample on CPU and on a copy of it (the
    same strides and storage offsets) on tpu: the results and the written
    inputs must agree."""
    t_in, t_args, t_kwargs = _move_sample(sample, DEVICE, base_name(op) in HOST_ARGUMENT_OPS)
    with torch.random.fork_rng(devices=[]):
        try:
            c_in, c_args, c_kwargs = _move_sample(sample, "cpu")
            expected = op.inplace_variant(c_in, *c_args, **c_kwargs)
        except Exception:  # CPU refuses this sample (a result type self cannot hold)
            raise Skip()
    actual = op.inplace_variant(t_in, *t_args, **t_kwargs)
    compare(actual, expected, "in-place result")
    compare(t_in, c_in, "written input")


# Which inputs run_op takes from an OpInfo: its sample inputs, its
# reference inputs, its sample inputs made noncontiguous (every tensor a
# strided view of a larger one, as PyTorch's test_noncontiguous_samples),
# or its sample inputs through its in-place variant.
INPUTS = ("sample", "reference", "noncontiguous", "inplace")


def run_op(op, dtype=torch.float32, max_samples=None, inputs="sample") -> Result:
    name = full_name(op)
    if inputs == "inplace" and (op.inplace_variant is None or base_name(op) in RANDOM_OPS):
        return Result(name)
    try:
        make = op.reference_inputs if inputs == "reference" else op.sample_inputs
        samples = list(make("cpu", dtype, requires_grad=op.supports_autograd and inputs != "inplace"))
        if inputs == "noncontiguous":
            samples = [sample.noncontiguous() for sample in samples]
    except Exception as e:  # noqa: BLE001
        return Result(name, errors=[f"{inputs} inputs: {e}"[:MAX_MESSAGE]])
    run = (lambda s: functools.partial(_run_inplace_sample, op, s)) if inputs == "inplace" else (
        lambda s: functools.partial(_run_sample, op, s, dtype))
    return run_cases(name, [("", run(s)) for s in samples[:max_samples]])


def select_ops(names=None, dtype=torch.float32, refs=False):
    from torch.testing._internal.common_methods_invocations import op_db, python_ref_db

    ops = [op for op in (python_ref_db if refs else op_db) if dtype in op.supported_dtypes("cpu")]
    if names is not None:
        wanted = set(names)
        ops = [op for op in ops if full_name(op) in wanted or op.name in wanted]
    return ops


def summarize(results, dtype=torch.float32) -> str:
    return conformance_common.summarize("opinfo", "ops", "samples", results, dtype)


def run_command_line(argv, description, run_op, summarize, default_report, choose_inputs=False) -> int:
    """The op runners' command line: which ops (the CI subset, --all,
    --refs, --ops), their dtype and samples (and with `choose_inputs`,
    which inputs: --inputs), and the report's path."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--all", action="store_true", help="every op in op_db (default: the CI subset)")
    parser.add_argument("--refs", action="store_true", help="every reference in python_ref_db instead of op_db")
    parser.add_argument("--ops", nargs="*", help="only these ops (OpInfo names)")
    parser.add_argument("--max-samples", type=int, default=None)
    parser.add_argument("--report", default=default_report)
    parser.add_argument("--dtype", default="float32", choices=DTYPES, help="the dtype of the samples")
    if choose_inputs:
        parser.add_argument("--inputs", default="sample", choices=INPUTS,
                            help="sample inputs, reference inputs, or the in-place variants on sample inputs")
    args = parser.parse_args(argv)
    from test_opinfo import CI_OPS

    dtype = getattr(torch, args.dtype)
    names = args.ops if args.ops else (None if args.all or args.refs else CI_OPS)
    inputs = {"inputs": args.inputs} if "inputs" in args else {}
    run_all(select_ops(names, dtype, args.refs), lambda op: run_op(op, dtype, args.max_samples, **inputs),
            summarize, args.report, dtype)
    return 0


def main(argv=None) -> int:
    return run_command_line(argv, __doc__.splitlines()[0], run_op, summarize, "opinfo_report.json",
                            choose_inputs=True)


if __name__ == "__main__":
    sys.exit(main())
