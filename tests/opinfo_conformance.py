"""Conformance on PyTorch's own test inputs: every OpInfo in `op_db` runs
its sample inputs on CPU and on tpu and the results are compared (forward,
and the gradients of every input that requires grad).

Run all of op_db and write a JSON report:

    python tests/opinfo_conformance.py --all --report opinfo.json

`tests/test_opinfo.py` runs a representative subset in CI and checks that
only the listed expected failures fail.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field

import torch
import torch_tpu  # noqa: F401  (registers the device)
from torch.utils import _pytree as pytree


DEVICE = "tpu"

# Ops whose results are random: only shapes and dtypes are compared.
RANDOM_OPS = {
    "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial", "normal",
    "nn.functional.alpha_dropout", "nn.functional.dropout", "nn.functional.dropout2d",
    "nn.functional.dropout3d", "nn.functional.feature_alpha_dropout", "nn.functional.rrelu",
    "rand_like", "randint", "randint_like", "randn", "randn_like", "uniform",
    "torch.ops.aten._efficientzerotensor", "empty", "empty_like", "empty_strided", "new_empty",
    "new_empty_strided", "empty_permuted", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d", "randperm", "item",
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

# Tolerances by the dtype of the compared result: XLA's CPU compiler
# vectorizes transcendental functions and reorders reductions, so float
# results differ from ATen's in the last bits; integer and bool results are
# exact. (forward, backward)
TOLERANCES = {
    torch.float32: (dict(rtol=1e-4, atol=1e-5), dict(rtol=1e-3, atol=1e-4)),
    torch.float64: (dict(rtol=1e-7, atol=1e-7), dict(rtol=1e-6, atol=1e-6)),
    torch.bfloat16: (dict(rtol=2e-2, atol=2e-2), dict(rtol=5e-2, atol=5e-2)),
    torch.float16: (dict(rtol=2e-3, atol=2e-3), dict(rtol=1e-2, atol=1e-2)),
}
TOLERANCES[torch.complex64] = TOLERANCES[torch.float32]
TOLERANCES[torch.complex128] = TOLERANCES[torch.float64]
EXACT = dict(rtol=0, atol=0)
DTYPES = ("float32", "float64", "bfloat16", "float16", "complex64", "int64", "int32", "bool")


def tolerance(dtype, backward=False) -> dict:
    return TOLERANCES[dtype][int(backward)] if dtype in TOLERANCES else EXACT


MAX_MESSAGE = 300


@dataclass
class OpResult:
    name: str
    samples: int = 0
    passed: int = 0
    unsupported: int = 0  # samples refused with NotImplementedError
    errors: list = field(default_factory=list)  # first few failure messages

    @property
    def status(self) -> str:
        if self.samples == 0:
            return "no-samples"
        if self.passed == self.samples:
            return "pass"
        if self.passed > 0:
            return "partial"
        if self.unsupported == self.samples:
            return "unsupported"
        return "fail"


def full_name(op) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def _to_device(value, device):
    if isinstance(value, torch.Tensor):
        requires_grad = value.requires_grad
        if device != "cpu":
            # The whole storage moved, then viewed the same way: as_strided
            # samples address the storage beyond the view. A lazily
            # conjugated or negated view stays one on the device.
            conj, neg = value.is_conj(), value.is_neg()
            value = value.detach()
            value = value.conj() if conj else value
            value = torch._neg_view(value) if neg else value
            flat = torch.empty(0, dtype=value.dtype).set_(value.untyped_storage())
            moved = flat.to(device).as_strided(value.size(), value.stride(), value.storage_offset())
            moved = moved.conj() if conj else moved
            moved = torch._neg_view(moved) if neg else moved
        else:
            moved = value.detach()
        return moved.requires_grad_(requires_grad)
    if isinstance(value, torch.device) or (isinstance(value, str) and value == "cpu"):
        return torch.device(device) if isinstance(value, torch.device) else device
    return value


def _move_sample(sample, device, host_arguments=False):
    move = lambda v: pytree.tree_map(lambda x: _to_device(x, device), v)  # noqa: E731
    rest = "cpu" if host_arguments else device
    move_rest = lambda v: pytree.tree_map(lambda x: _to_device(x, rest), v)  # noqa: E731
    return move(sample.input), move_rest(tuple(sample.args)), move_rest(dict(sample.kwargs))


def _grad_inputs(inputs) -> list:
    return [t for t in pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor) and t.requires_grad]


def _differentiable(outputs) -> list:
    return [t for t in pytree.tree_leaves(outputs)
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()]


def _compare(actual, expected, what, values=True, backward=False):
    a_leaves, a_spec = pytree.tree_flatten(actual)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    if len(a_leaves) != len(e_leaves):
        raise AssertionError(f"{what}: {len(a_leaves)} results, CPU gave {len(e_leaves)}")
    for a, e in zip(a_leaves, e_leaves):
        if isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                raise AssertionError(f"{what}: got {type(a).__name__}, CPU gave a tensor")
            a = a.cpu()
            if values:
                torch.testing.assert_close(a, e, equal_nan=True, check_stride=False, **tolerance(e.dtype, backward),
                                           msg=None)
            elif a.shape != e.shape or a.dtype != e.dtype:
                raise AssertionError(f"{what}: {a.dtype}{list(a.shape)} vs CPU {e.dtype}{list(e.shape)}")
        elif isinstance(e, float) and values:
            torch.testing.assert_close(a, e, equal_nan=True, **tolerance(torch.float32, backward))
        elif values and not isinstance(e, (torch.dtype, torch.device, torch.Size)) and a != e:
            raise AssertionError(f"{what}: {a!r} vs CPU {e!r}")


def _run_sample(op, sample, dtype) -> None:
    """Raises on a mismatch; NotImplementedError when the tpu refuses."""
    check_values = op.name not in RANDOM_OPS and not RANDOM_SAMPLES.get(op.name, lambda s: False)(sample)
    with torch.random.fork_rng(devices=[]):
        try:
            c_in, c_args, c_kwargs = _move_sample(sample, "cpu")
            expected = op(c_in, *c_args, **c_kwargs)
        except Exception:  # CPU refuses this sample too: nothing to compare
            raise _Skip()
    t_in, t_args, t_kwargs = _move_sample(sample, DEVICE, op.name in HOST_ARGUMENT_OPS)
    actual = op(t_in, *t_args, **t_kwargs)
    if op.name in GAUGE_OPS:
        expected, actual = sample.output_process_fn_grad(expected), sample.output_process_fn_grad(actual)
    _compare(actual, expected, "forward", check_values)
    if not (op.supports_autograd and check_values and (dtype.is_floating_point or dtype.is_complex)):
        return
    c_grad_in, t_grad_in = _grad_inputs((c_in, c_args, c_kwargs)), _grad_inputs((t_in, t_args, t_kwargs))
    c_out, t_out = _differentiable(expected), _differentiable(actual)
    if not c_grad_in or not c_out or len(c_out) != len(t_out):
        return
    gen = torch.Generator().manual_seed(0)
    weights = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in c_out]
    c_grads = torch.autograd.grad(c_out, c_grad_in, weights, allow_unused=True)
    t_grads = torch.autograd.grad(t_out, t_grad_in, [w.to(DEVICE) for w in weights], allow_unused=True)
    c_grads = [g if g is not None else torch.zeros_like(x) for g, x in zip(c_grads, c_grad_in)]
    t_grads = [g if g is not None else torch.zeros_like(x) for g, x in zip(t_grads, t_grad_in)]
    _compare(t_grads, c_grads, "backward", backward=True)


class _Skip(Exception):
    pass


def run_op(op, dtype=torch.float32, max_samples=None) -> OpResult:
    result = OpResult(full_name(op))
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=op.supports_autograd))
    except Exception as e:  # noqa: BLE001
        result.errors.append(f"sample_inputs: {e}"[:MAX_MESSAGE])
        return result
    for sample in samples[:max_samples]:
        try:
            _run_sample(op, sample, dtype)
            result.passed += 1
        except _Skip:
            continue
        except NotImplementedError as e:
            result.unsupported += 1
            if len(result.errors) < 3:
                result.errors.append(f"NotImplementedError: {e}"[:MAX_MESSAGE])
        except Exception as e:  # noqa: BLE001  (any failure is a result)
            if len(result.errors) < 3:
                result.errors.append(f"{type(e).__name__}: {e}"[:MAX_MESSAGE])
        finally:
            # A failed deferred check belongs to this sample, not the next.
            try:
                torch.tpu.synchronize()
            except Exception:  # noqa: BLE001
                pass
        result.samples += 1
    return result


def select_ops(names=None, dtype=torch.float32):
    from torch.testing._internal.common_methods_invocations import op_db

    ops = [op for op in op_db if dtype in op.supported_dtypes("cpu")]
    if names is not None:
        wanted = set(names)
        ops = [op for op in ops if full_name(op) in wanted or op.name in wanted]
    return ops


def summarize(results, dtype=torch.float32) -> str:
    counts = {s: 0 for s in ("pass", "partial", "unsupported", "fail", "no-samples")}
    for r in results:
        counts[r.status] += 1
    ops = len(results) - counts["no-samples"]
    samples = sum(r.samples for r in results)
    passed = sum(r.passed for r in results)
    share = 100.0 * counts["pass"] / max(ops, 1)
    return (f"opinfo {str(dtype).removeprefix('torch.')}: {ops} ops: {counts['pass']} fully passing ({share:.1f}%), "
            f"{counts['partial']} partly, {counts['unsupported']} unsupported, {counts['fail']} failing; "
            f"samples passing {passed}/{samples}")


def write_report(path, results, summary, dtype=torch.float32) -> None:
    report = {
        "dtype": str(dtype),
        "summary": summary,
        "ops": {r.name: dict(asdict(r), status=r.status) for r in results},
    }
    with open(path, "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="every op in op_db (default: the CI subset)")
    parser.add_argument("--ops", nargs="*", help="only these ops (OpInfo names)")
    parser.add_argument("--max-samples", type=int, default=None)
    parser.add_argument("--report", default="opinfo_report.json")
    parser.add_argument("--dtype", default="float32", choices=DTYPES, help="the dtype of the samples")
    args = parser.parse_args(argv)
    from test_opinfo import CI_OPS

    dtype = getattr(torch, args.dtype)
    names = args.ops if args.ops else (None if args.all else CI_OPS)
    results = []
    start = time.time()
    for op in select_ops(names, dtype):
        r = run_op(op, dtype, max_samples=args.max_samples)
        results.append(r)
        print(f"{r.status:12s} {r.passed:3d}/{r.samples:<3d} {r.name}", file=sys.stderr, flush=True)
    summary = summarize(results, dtype)
    write_report(args.report, results, summary, dtype)
    print(f"{summary} ({time.time() - start:.0f} s; report: {args.report})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
