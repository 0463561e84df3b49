"""Runs an AOTAutograd graph (functional aten ops) on tpu tensors.

Each node calls its op through the dispatcher, so it reaches the same
lowering as in eager code. With fusing on (the default), the graph runs in
fused eager mode: the ops are recorded rather than run, and the graph's end
materializes them as one program, found in the shared compile cache by the
graph's structure. Without it each op is its own cached program, as in
strict eager.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

import torch_tpu
from torch_tpu._compile import input_updates, strides


def make_runner(gm: torch.fx.GraphModule, fuse: bool) -> Callable[[list], Any]:
    """The compiled function AOTAutograd calls, in its boxed convention (one
    list of inputs)."""
    strides.views_to_reshapes(gm)
    input_updates.batch_input_copies(gm)
    layouts = strides.traced_layouts(gm)

    def run(args: list) -> Any:
        if not fuse:
            return strides.restore_layouts(gm(*args), layouts)
        with torch_tpu.eager_mode("fused"):
            outputs = strides.restore_layouts(gm(*args), layouts)
            torch_tpu.materialize()
        return outputs

    run._boxed_call = True  # type: ignore[attr-defined]
    return run
