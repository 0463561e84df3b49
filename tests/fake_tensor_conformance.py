"""tpu results against PyTorch's shape functions: each OpInfo sample runs on
tpu tensors and on FakeTensors of them, and the results must agree in
number, dtype, shape, device and significant strides (those of dimensions
longer than 1).

FakeTensors run the meta kernels and decompositions that torch.compile,
torch.export and AOTAutograd trace with: a tpu result that differs from
them makes a traced graph describe tensors the device does not produce
(a later view or reshape recorded for the promised strides, a saved
statistic of another dtype). Where PyTorch's shape functions distinguish
devices, an accelerator's (CUDA's) promise is the one checked.

    python tests/fake_tensor_conformance.py --all --dtype bfloat16

`tests/test_fake_tensor_conformance.py` runs every op in CI on a few
samples and checks that only the listed differences remain.
"""

from __future__ import annotations

import functools
import sys

import torch
from torch._prims_common import check_significant_strides
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils import _pytree as pytree

import conformance_common
from conformance_common import DEVICE, MAX_MESSAGE, Result, Skip, run_cases
from opinfo_conformance import HOST_ARGUMENT_OPS, _move_sample, full_name, run_command_line


def _tensors(value) -> list:
    return [t for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def _check_sample(op, sample) -> None:
    """Raises on a difference; Skip when either side cannot run the sample."""
    try:
        t_in, t_args, t_kwargs = _move_sample(sample, DEVICE, op.name in HOST_ARGUMENT_OPS)
        real = _tensors(op(t_in, *t_args, **t_kwargs))
    except Exception:  # refused on tpu: the OpInfo runner reports that
        raise Skip()
    mode = FakeTensorMode()
    fake_of = functools.partial(pytree.tree_map, lambda x: mode.from_tensor(x) if isinstance(x, torch.Tensor) else x)
    try:
        f_in, f_args, f_kwargs = fake_of(t_in), fake_of(t_args), fake_of(t_kwargs)
        with mode:
            fake = _tensors(op(f_in, *f_args, **f_kwargs))
    except Exception:  # no shape function (data-dependent sizes, an op without a meta kernel)
        raise Skip()
    if len(real) != len(fake):
        raise AssertionError(f"{len(real)} tensors, the shape function gives {len(fake)}")
    for i, (r, f) in enumerate(zip(real, fake)):
        for what in ("dtype", "shape", "device", "layout"):
            if getattr(r, what) != getattr(f, what):
                raise AssertionError(f"result {i}: {what} {getattr(r, what)}, the shape function gives "
                                     f"{getattr(f, what)}")
        if r.layout == torch.strided and not check_significant_strides(r, f, only_cuda=False)[0]:
            raise AssertionError(f"result {i} of shape {list(r.shape)}: strides {r.stride()}, the shape function "
                                 f"gives {f.stride()}")


def run_op(op, dtype=torch.float32, max_samples=None) -> Result:
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
    except Exception as e:  # noqa: BLE001
        return Result(full_name(op), errors=[f"sample_inputs: {e}"[:MAX_MESSAGE]])
    return run_cases(full_name(op), [("", functools.partial(_check_sample, op, s)) for s in samples[:max_samples]])


def summarize(results, dtype=torch.float32) -> str:
    return conformance_common.summarize("fake tensor", "ops", "samples", results, dtype)


def main(argv=None) -> int:
    return run_command_line(argv, __doc__.splitlines()[0], run_op, summarize, "fake_tensor_report.json")


if __name__ == "__main__":
    sys.exit(main())
