"""Bad input on tpu raises what CPU raises: every OpInfo in PyTorch's op_db
that lists error inputs (wrong shapes, dtypes, overlapping out= tensors,
values that overflow the destination) runs them on the device and must
raise the documented exception type with a message matching the
documented pattern, as PyTorch's own test_errors does per device.

The inputs op_db makes for the tpu include those it makes for every
accelerator (tensors on two devices); an input made for both devices counts
only where CPU itself raises as documented. The value errors op_db makes
for CPU alone (gather's index out of range, multinomial's invalid
distributions) run on the tpu too and must raise the documented type. The
error is looked for at the op or at the sync right after it: checks that
need device values (an index out of range, a fill value that overflows) are
deferred to the next sync.
"""

from __future__ import annotations

import re

import pytest
import torch
from torch.utils import _pytree as pytree
from torch.testing._internal.common_methods_invocations import op_db

# Ops whose tpu error names the op and the problem in other words than
# CPU's: adaptive max pooling refuses a bad output_size by name where CPU
# fails creating a tensor of negative size or on an internal assert;
# ormqr checks the input's dtype before tau's shape; histogramdd is
# computed on the host by CPU only (NotImplementedError, a RuntimeError).
OTHER_MESSAGE = {
    "nn.functional.adaptive_max_pool1d", "nn.functional.adaptive_max_pool2d", "nn.functional.adaptive_max_pool3d",
    "ormqr", "histogramdd",
}


# Ops whose value errors op_db makes for CPU alone (CUDA reports them by
# device-side asserts): the tpu's deferred checks must raise them, with
# messages of their own (gather's does not name the offending index).
CPU_ONLY_VALUE_ERRORS = {"gather", "scatter", "scatter_add", "multinomial"}


def full_name(op) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


OPS = [op for op in op_db if op.error_inputs_func is not None]


def on_tpu(value):
    return value.to("tpu") if isinstance(value, torch.Tensor) else value


def raised(op, error_input, move=False):
    """The exception op raises on error_input (at the op or the next sync), or None."""
    sample = error_input.sample_input
    inp, args, kwargs = sample.input, sample.args, sample.kwargs
    if move:
        inp, args, kwargs = pytree.tree_map(on_tpu, (inp, args, kwargs))
    try:
        op(inp, *args, **kwargs)
        if torch.tpu.is_initialized():
            torch.tpu.synchronize()
    except Exception as e:  # noqa: BLE001 - the exception is the result
        return e
    return None


def documented(error, error_input, check_message=True):
    return isinstance(error, error_input.error_type) and (
        not check_message or re.search(error_input.error_regex, str(error)) is not None)


def key(error_input):
    return error_input.error_type, error_input.error_regex


@pytest.mark.parametrize("op", OPS, ids=full_name)
def test_error_inputs_raise_as_on_cpu(op):
    name = full_name(op)
    check_message = name not in OTHER_MESSAGE
    cpu_holds = {}
    for error_input in op.error_inputs(device="cpu"):
        holds = documented(raised(op, error_input), error_input)
        cpu_holds[key(error_input)] = cpu_holds.get(key(error_input), True) and holds
    checked = 0
    tpu_inputs = list(op.error_inputs(device="tpu"))
    for i, error_input in enumerate(tpu_inputs):
        if not cpu_holds.get(key(error_input), True):
            continue  # CPU does not behave as this input documents
        error = raised(op, error_input)
        assert documented(error, error_input, check_message), (
            f"{name} error input {i} ({error_input.error_type.__name__}: {error_input.error_regex!r}): "
            f"tpu raised {error!r}")
        checked += 1
    tpu_keys = {key(e) for e in tpu_inputs}
    for i, error_input in enumerate(op.error_inputs(device="cpu")):
        if name not in CPU_ONLY_VALUE_ERRORS or key(error_input) in tpu_keys or not cpu_holds[key(error_input)]:
            continue
        error = raised(op, error_input, move=True)
        assert documented(error, error_input, check_message=False), (
            f"{name} CPU error input {i} ({error_input.error_type.__name__}) on tpu: raised {error!r}")
        checked += 1
    if checked == 0:
        pytest.skip("CPU raises none of its error inputs as documented")
