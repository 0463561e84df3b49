"""Runs an AOTAutograd graph (functional aten ops) on tpu tensors.

Each node calls its op through the dispatcher, so it reaches the same
lowering as in eager code. Under the fused eager mode the ops are recorded
rather than run and the graph's end materializes them as one program; under
strict eager (or where the fused mode does not exist yet) each op is its
own cached program.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

import torch

import torch_tpu


def _fused_scope() -> contextlib.AbstractContextManager:
    eager_mode = getattr(torch_tpu, "eager_mode", None)
    return eager_mode("fused") if eager_mode is not None else contextlib.nullcontext()


def _materialize() -> None:
    materialize = getattr(torch_tpu, "_materialize", None)
    if materialize is not None:
        materialize()


def make_runner(gm: torch.fx.GraphModule, fuse: bool) -> Callable[[list], Any]:
    """The compiled function AOTAutograd calls, in its boxed convention (one
    list of inputs, which the callee may clear to free them early)."""

    def run(args: list) -> Any:
        if not fuse:
            return gm(*args)
        with _fused_scope():
            outputs = gm(*args)
            _materialize()
        return outputs

    run._boxed_call = True  # type: ignore[attr-defined]
    return run
