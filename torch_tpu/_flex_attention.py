"""FlexAttention takes tpu tensors.

``torch.nn.attention.flex_attention`` checks its inputs' device against a
fixed list (CUDA, CPU, XPU, HPU, MPS) and refused tpu tensors with "only
supported on CUDA, CPU, HPU, or MPS devices". Nothing else in it is
device-specific for the tpu: called eagerly it runs its higher-order op's
dense implementation (scores materialized, ``score_mod`` and the block
mask applied by ordinary ops, which the tpu lowers, backward included),
and under ``torch.compile(backend="tpu")`` it becomes part of the graph's
program like any other op. So the check lets tpu tensors through and keeps
every other device's verdict.
"""

from __future__ import annotations

from torch_tpu import _after_import


def _validate_device(original, query, key, value):
    if query.device.type != "tpu":
        original(query, key, value)


def install() -> None:
    _after_import.when_imported(
        "torch.nn.attention.flex_attention",
        lambda flex: _after_import.wrap(flex, "_validate_device", _validate_device))
