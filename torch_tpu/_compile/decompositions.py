"""The decompositions AOTAutograd applies for backend="tpu".

Only where no tpu lowering exists: an op with a PrivateUse1 kernel runs as
one lowering (one cached program, or one node of a fused graph), which
beats the several smaller ops of its decomposition. The table is built on
first use because kernels register when the extension loads.
"""

from __future__ import annotations

import functools

import torch
from torch._decomp import core_aten_decompositions


def has_tpu_kernel(op: torch._ops.OpOverload) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "PrivateUse1")


@functools.cache
def tpu_decompositions() -> dict:
    return {op: fn for op, fn in core_aten_decompositions().items() if not has_tpu_kernel(op)}
