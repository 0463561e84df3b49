"""Saved convolution activations kept channels-last between the forward and
backward programs, on the CPU plugin.

XLA's CPU compiler runs 2-d convolutions on NHWC data: inside one program
a convolution's output, and the elementwise ops between it and the next
convolution, stay NHWC in memory whatever the graph's logical layout. At
the edge of AOTAutograd's forward program they do not: a saved activation
leaves as a contiguous NCHW buffer (a transposing copy in the forward) and
the backward transposes it back for its own convolutions and batch norms.
torchax's whole step is one program and has neither transpose.

So on that platform the forward returns those saved tensors channels-last
(an NHWC buffer: the transpose is a bitcast of what XLA computed), and the
backward makes them contiguous again as its first ops (a bitcast of the
NHWC buffer into the layout its convolutions want). Both conversions are
recorded into the graphs' fused programs, so neither is a launch of its
own. Saved tensors are not user outputs: nothing else sees their layout.

Only 2-d convolutions: XLA holds 1-d and 3-d ones channels-last too, but
there the same change measured no faster (1-d) or slower (3-d: a
conv-bn-relu stack's step 530 / 547 -> 574 / 621 ms). Other platforms
choose their convolution layouts differently (TPU tiles, cuDNN's NCHW
kernels for f32), so they get the graphs as traced.
"""

from __future__ import annotations

from typing import Any

import torch

from torch_tpu import runtime

aten = torch.ops.aten

_CONVOLUTIONS = (aten.convolution.default,)
# Saved as another name for a tensor (threshold_backward's copy of a relu:
# `detach` in the graph, which the backend does not decompose;
# decompositions.py).
_ALIASES = (aten.alias.default, aten.detach.default, aten.alias_copy.default)

_FORWARD_KEY = "tpu_channels_last_outputs"
_BACKWARD_KEY = "tpu_channels_last_inputs"


def _touches_a_convolution(node: torch.fx.Node) -> bool:
    """A convolution's output or input: XLA's CPU compiler holds both NHWC.
    Not a forward input (a batch the backward reads): converting it would
    copy it."""
    while node.op == "call_function" and node.target in _ALIASES:
        node = node.args[0]
    if node.op == "placeholder":
        return False
    if node.op == "call_function" and node.target in _CONVOLUTIONS:
        return True
    return any(u.op == "call_function" and u.target in _CONVOLUTIONS and u.args[0] is node for u in node.users)


def mark(fw: torch.fx.GraphModule, bw: torch.fx.GraphModule) -> None:
    """Records in the graphs' ``meta`` which saved tensors cross channels-last:
    forward outputs for ``forward_outputs``, backward inputs for
    ``backward_inputs``."""
    if runtime.platform() != "cpu":
        return
    outs = next(n for n in reversed(fw.graph.nodes) if n.op == "output").args[0]
    # A saved tensor is a backward placeholder named as the forward node it
    # comes from; it follows the forward's own outputs (the same node may be
    # both), hence the last position.
    position = {out.name: i for i, out in enumerate(outs) if isinstance(out, torch.fx.Node)}
    fw_outputs, bw_inputs = [], []
    placeholders = [n for n in bw.graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders):
        val = node.meta.get("val")
        out = position.get(node.name)
        if (out is not None and isinstance(val, torch.Tensor) and val.dim() == 4
                and val.is_floating_point() and val.is_contiguous() and _touches_a_convolution(outs[out])):
            fw_outputs.append(out)
            bw_inputs.append(i)
    if fw_outputs:
        fw.meta[_FORWARD_KEY] = fw_outputs
        bw.meta[_BACKWARD_KEY] = bw_inputs


def forward_outputs(gm: torch.fx.GraphModule) -> list[int]:
    return gm.meta.get(_FORWARD_KEY, [])


def backward_inputs(gm: torch.fx.GraphModule) -> list[int]:
    return gm.meta.get(_BACKWARD_KEY, [])


def to_channels_last(outputs: Any, indices: list[int]) -> Any:
    if not indices:
        return outputs
    fixed = list(outputs)
    converted: dict[tuple, torch.Tensor] = {}
    for i in indices:
        t = fixed[i]
        # A tensor saved twice (as itself and as an alias) converts once.
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride())
        if key not in converted:
            converted[key] = t.contiguous(memory_format=torch.channels_last)
        fixed[i] = converted[key]
    return type(outputs)(fixed) if isinstance(outputs, tuple) else fixed


def to_contiguous(args: list, indices: list[int]) -> list:
    if not indices:
        return args
    args = list(args)
    for i in indices:
        args[i] = args[i].contiguous()
    return args
