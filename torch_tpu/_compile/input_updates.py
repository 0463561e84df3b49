"""Writing a graph's input updates back with one op.

A functional graph ends with one ``copy_(input, new_value)`` per mutated
input (an optimizer step's parameters and states, BatchNorm's running
statistics). Under strict eager each copy would be its own program; one
``_foreach_copy_`` over all of them is one program writing every
destination. (Under fused eager they join the graph's program either way.)
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _val(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _batchable(node: torch.fx.Node) -> bool:
    """copy_(placeholder, computed value of the same dtype, shape and device)."""
    if node.op != "call_function" or node.target is not aten.copy_.default or node.users:
        return False
    if len(node.args) != 2 or node.kwargs:
        return False
    dst, src = node.args
    if not isinstance(dst, torch.fx.Node) or dst.op != "placeholder":
        return False
    if not isinstance(src, torch.fx.Node) or src.op == "placeholder":
        return False
    d, s = _val(dst), _val(src)
    return (isinstance(d, torch.Tensor) and isinstance(s, torch.Tensor) and d.dtype == s.dtype
            and d.device == s.device and d.device.type == "tpu" and d.shape == s.shape)


def batch_input_copies(gm: torch.fx.GraphModule) -> None:
    nodes = list(gm.graph.nodes)
    copies = [n for n in nodes if _batchable(n)]
    if len(copies) < 2:
        return
    dsts = [c.args[0] for c in copies]
    if len(set(dsts)) != len(dsts):
        return  # an input written twice: keep the order as it is
    # The copies move to the last one: nothing between the first and the
    # last may read a destination (it would see the update too early; a
    # later read is fine, the copies' order among themselves is irrelevant).
    first, last = nodes.index(copies[0]), nodes.index(copies[-1])
    batched = set(copies)
    targets = set(dsts)
    for n in nodes[first:last]:
        if n not in batched and any(a in targets for a in n.all_input_nodes):
            return
    with gm.graph.inserting_after(copies[-1]):
        gm.graph.call_function(aten._foreach_copy_.default, ([c.args[0] for c in copies], [c.args[1] for c in copies]))
    for c in copies:
        gm.graph.erase_node(c)
    gm.recompile()
