"""Random ops that AOTAutograd wraps to replay them in backward.

Activation checkpointing (torch.utils.checkpoint) recomputes its region in
backward, and random ops there must draw what they drew in forward: the
forward graph runs them under ``run_and_save_rng_state`` (returning the
generator's state beside the result) and the backward graph under
``run_with_rng_state`` (running them from that state). PyTorch implements
those two operators per device for CUDA, CPU, HPU and XPU only; this pass
replaces them in a graph with the same thing for tpu, the state being
``torch.tpu.get_rng_state`` of the device the op runs on.

A graph holding them is not replayed (graph_runner): a replayed program
draws its random ops' seeds from the generator anew, where these must
follow the state the graph sets.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._prims.rng_prims import run_and_save_rng_state, run_with_rng_state


def _device_of(args: tuple, kwargs: dict) -> torch.device:
    device = kwargs.get("device")
    if device is not None:
        return torch.device(device)
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    return torch.device("tpu", torch.tpu.current_device())


def tpu_run_and_save_rng_state(op: Any, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, Any]:
    device = _device_of(args, kwargs)
    if device.type != "tpu":  # a CPU random op: PyTorch's own implementation
        return run_and_save_rng_state(op, *args, **kwargs)
    return torch.tpu.get_rng_state(device), op(*args, **kwargs)


def tpu_run_with_rng_state(rng_state: torch.Tensor, op: Any, *args: Any, **kwargs: Any) -> Any:
    device = _device_of(args, kwargs)
    if device.type != "tpu":
        return run_with_rng_state(rng_state, op, *args, **kwargs)
    current = torch.tpu.get_rng_state(device)
    torch.tpu.set_rng_state(rng_state.cpu(), device)
    try:
        return op(*args, **kwargs)
    finally:
        torch.tpu.set_rng_state(current, device)


_REPLACEMENTS = {run_and_save_rng_state: tpu_run_and_save_rng_state, run_with_rng_state: tpu_run_with_rng_state}


def replace_rng_state_ops(gm: torch.fx.GraphModule) -> bool:
    """Rewrites the graph's RNG-state operators; True when it had any."""
    found = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in _REPLACEMENTS:
            node.target = _REPLACEMENTS[node.target]
            found = True
    if found:
        gm.recompile()
    return found
