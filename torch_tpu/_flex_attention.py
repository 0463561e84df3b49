"""FlexAttention takes tpu tensors.

``torch.nn.attention.flex_attention`` checks its inputs' device against a
fixed list (CUDA, CPU, XPU, HPU, MPS) and refused tpu tensors with "only
supported on CUDA, CPU, HPU, or MPS devices". Nothing else in it is
device-specific for the tpu: called eagerly it runs its higher-order op's
dense implementation (scores materialized, ``score_mod`` and the block
mask applied by ordinary ops, which the tpu lowers, backward included),
and under ``torch.compile(backend="tpu")`` it becomes part of the graph's
program like any other op. So the check lets tpu tensors through and keeps
every other device's verdict. ``create_block_mask(..., _compile=True)``
(transformers asks for it) compiles with inductor, which has no tpu code
generation: for tpu it makes the mask eagerly.
"""

from __future__ import annotations

import torch

from torch_tpu import _after_import


def _validate_device(original, query, key, value):
    if query.device.type != "tpu":
        original(query, key, value)


def _create_block_mask(original, *args, **kwargs):
    # `_compile=True` (a keyword-only flag in practice) compiles the mask's
    # construction with inductor, which has no tpu code generation; on tpu
    # the same mask is made eagerly. Nothing else is read, so a traced call
    # (torch.compile(create_block_mask)) sees only a dict lookup.
    if kwargs.get("_compile"):
        device = kwargs.get("device", args[5] if len(args) > 5 else None)
        device = device or torch.accelerator.current_accelerator() or "cpu"
        if torch.device(device).type == "tpu":
            kwargs["_compile"] = False
    return original(*args, **kwargs)


def _patch(flex) -> None:
    _after_import.wrap(flex, "_validate_device", _validate_device)
    _after_import.wrap(flex, "create_block_mask", _create_block_mask, copies=True)


def install() -> None:
    _after_import.when_imported("torch.nn.attention.flex_attention", _patch)
