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


# Kept as they are, though no tpu kernel has them: `detach` and `alias_copy`
# decomposed into other views make a differentiable `scan`'s body look as if
# it returned an alias of its input, which scan's functionalization refuses
# ("scan might be aliasing the input or the output"; Inductor fails the same
# way). As they are, they are views the eager kernels already make.
_KEPT = {torch.ops.aten.detach.default, torch.ops.aten.alias_copy.default}


@functools.cache
def tpu_decompositions() -> dict:
    return {op: fn for op, fn in core_aten_decompositions().items() if op not in _KEPT and not has_tpu_kernel(op)}
