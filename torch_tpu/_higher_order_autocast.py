"""Higher-order ops (torch.cond, while_loop, scan, map, invoke_subgraph)
under ``torch.autocast("tpu")``.

A higher-order op has no kernel of its own at the autocast dispatch keys:
PyTorch lets it fall through them for CPU, CUDA and XPU only
(``torch._ops._HIGHER_ORDER_OP_DEFAULT_FALLTHROUGH_DISPATCH_KEYS``), so on
tpu every one of them failed with "could not find kernel for
HigherOrderOperator cond at dispatch key AutocastPrivateUse1". The ops in
their bodies are cast by autocast as usual, as on CUDA.
"""

from __future__ import annotations

import torch
from torch._C import DispatchKey


def install() -> None:
    key = DispatchKey.AutocastPrivateUse1
    defaults = torch._ops._HIGHER_ORDER_OP_DEFAULT_FALLTHROUGH_DISPATCH_KEYS
    if key not in defaults:
        defaults.append(key)  # ops created from now on
    for op in torch._ops._higher_order_ops.values():  # ops that exist already
        if key not in op.py_kernels:
            op.fallthrough(key)
