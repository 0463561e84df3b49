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
from torch_tpu._compile import input_updates, strides


def _fused_scope() -> contextlib.AbstractContextManager:
    eager_mode = getattr(torch_tpu, "eager_mode", None)
    return eager_mode("fused") if eager_mode is not None else contextlib.nullcontext()


def _materialize() -> None:
    materialize = getattr(torch_tpu, "_materialize", None)
    if materialize is not None:
        materialize()


def make_runner(gm: torch.fx.GraphModule, fuse: bool) -> Callable[[list], Any]:
    """The compiled function AOTAutograd calls, in its boxed convention (one
    list of inputs)."""
    strides.views_to_reshapes(gm)
    input_updates.batch_input_copies(gm)
    layouts = strides.traced_layouts(gm)

    def run(args: list) -> Any:
        if not fuse:
            return strides.restore_layouts(gm(*args), layouts)
        with _fused_scope():
            outputs = strides.restore_layouts(gm(*args), layouts)
            _materialize()
        return outputs

    run._boxed_call = True  # type: ignore[attr-defined]
    return run
