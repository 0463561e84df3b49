"""Making a graph independent of the tpu kernels' output strides.

AOTAutograd traces with fake tensors whose strides come from PyTorch's meta
kernels, and bakes them in: ``aten.view`` where the traced layout allowed
a view, saved tensors and output aliases rebuilt from those strides. A tpu
kernel may return another (always valid, usually contiguous) layout for
the same values. Two rewrites keep the graph correct either way:

- inside the graph, views become reshapes: a view where the layout allows
  it, a copy where it does not (reading is all a functional graph does);
- at the graph's end, an output whose strides differ from the traced ones
  is copied into them, so AOTAutograd's epilogue (saved tensors, output
  aliases, the backward graph) sees the layout it traced.
"""

from __future__ import annotations

from typing import Any

import torch

aten = torch.ops.aten

_VIEWS = (aten.view.default, aten._unsafe_view.default)


def views_to_reshapes(gm: torch.fx.GraphModule) -> None:
    """In the graph and in its subgraphs (the branches and bodies of
    torch.cond, while_loop, scan, ...)."""
    for module in gm.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        changed = False
        for node in module.graph.nodes:
            if node.op == "call_function" and node.target in _VIEWS:
                node.target = aten.reshape.default
                changed = True
        if changed:
            module.recompile()


def traced_layouts(gm: torch.fx.GraphModule) -> list[Any]:
    """The traced strides of each tensor output; None for other outputs and
    for symbolic strides (dynamic shapes), which are not checked."""
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    layouts = []
    for arg in output.args[0]:
        val = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
        if isinstance(val, torch.Tensor) and not _has_symbols(val):
            layouts.append(tuple(val.stride()))
        else:
            layouts.append(None)
    return layouts


def _has_symbols(t: torch.Tensor) -> bool:
    return any(isinstance(s, torch.SymInt) for s in (*t.shape, *t.stride(), t.storage_offset()))


def _same_layout(t: torch.Tensor, strides: tuple) -> bool:
    """Equal strides, ignoring dimensions of size 1 (never stepped over)."""
    return all(a == b or n == 1 for n, a, b in zip(t.shape, t.stride(), strides))


def restore_layouts(outputs: Any, layouts: list[Any]) -> Any:
    """Copies each output whose strides differ from the traced ones."""
    fixed = None
    for i, strides in enumerate(layouts):
        out = outputs[i]
        if strides is None or not isinstance(out, torch.Tensor) or _same_layout(out, strides):
            continue
        if fixed is None:
            fixed = list(outputs)
        copy = torch.empty_strided(out.shape, strides, dtype=out.dtype, device=out.device)
        fixed[i] = copy.copy_(out)
    if fixed is None:
        return outputs
    return type(outputs)(fixed) if isinstance(outputs, tuple) else fixed
