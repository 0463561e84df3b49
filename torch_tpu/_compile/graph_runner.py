"""Runs an AOTAutograd graph (functional aten ops) on tpu tensors.

Each node calls its op through the dispatcher, so it reaches the same
lowering as in eager code. With fusing on (the default), the graph runs in
fused eager mode: the ops are recorded rather than run, and the graph's end
materializes them as one program, found in the shared compile cache by the
graph's structure. Without it each op is its own cached program, as in
strict eager.

Recording costs host time per node on every call, for a program that is the
same every time. So the first calls are captured (csrc/aten/graph_capture.h):
when two calls capture the same signature (the same program, its arguments
taken from the same inputs and random draws, its results going to the same
outputs and input updates), later calls replay it: one launch, no recording.
A call whose inputs do not fit the capture (another layout, storages shared
differently) is recorded as before.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import torch

import torch_tpu
from torch_tpu import _C
from torch_tpu._compile import input_updates, strides

log = logging.getLogger(__name__)

# Calls captured before giving up on replaying a graph whose captures differ.
_CAPTURES = 3


class _Replayer:
    """Captures a graph's calls until two agree, then replays them."""

    def __init__(self, name: str):
        self.name = name
        self.plan = None
        self.signature = None
        self.captures_left = _CAPTURES
        self.failure = None  # why the graph is recorded on every call

    def wants_capture(self, args: list) -> bool:
        if self.plan is not None or self.failure is not None:
            return False
        if not all(isinstance(a, torch.Tensor) and a.device.type == "tpu" for a in args):
            self._give_up("an input is not a tpu tensor (a CPU tensor, or a symbolic size)")
            return False
        return True

    def observe(self, capture, template: list) -> None:
        if capture.failure and not capture.transient:
            self._give_up(capture.failure)
            return
        signature = (capture.signature, template)
        if not capture.failure and signature == self.signature:
            self.plan = capture.plan()
            log.debug("%s: replaying its program from now on", self.name)
            return
        self.signature = None if capture.failure else signature
        self.captures_left -= 1
        if self.captures_left == 0:
            self._give_up(capture.failure or "its calls did not capture the same program twice")

    def _give_up(self, why: str) -> None:
        self.failure = why
        log.debug("%s is recorded on every call: %s", self.name, why)


def _split_outputs(outputs: Any) -> tuple[list, list] | None:
    """The tensor outputs, and a template of the others (None where a tensor
    goes); None when an output is neither a tensor nor None (a size, a value
    read from the device), which replay could not reproduce."""
    tensors, template = [], []
    for out in outputs:
        if isinstance(out, torch.Tensor):
            tensors.append(out)
            template.append(None)
        elif out is None:
            template.append(_NONE)
        else:
            return None
    return tensors, template


_NONE = object()  # a None output, in a template


def _fill(template: list, tensors: list) -> list:
    it = iter(tensors)
    return [None if slot is _NONE else next(it) for slot in template]


def _attr(gm: torch.fx.GraphModule, target: str) -> Any:
    obj = gm
    for name in target.split("."):
        obj = getattr(obj, name, None)
    return obj


def make_runner(gm: torch.fx.GraphModule, fuse: bool, replay: bool = True) -> Callable[[list], Any]:
    """The compiled function AOTAutograd calls, in its boxed convention (one
    list of inputs)."""
    strides.views_to_reshapes(gm)
    input_updates.batch_input_copies(gm)
    layouts = strides.traced_layouts(gm)
    replayer = _Replayer(f"graph of {len(gm.graph.nodes)} nodes") if fuse and replay else None
    template: list = []
    # Tensors the graph holds itself (get_attr): captured and checked like
    # inputs, so a program argument is never mistaken for one of them.
    # (CPU ones are literals the ops read as scalars.)
    constants = [t for t in (_attr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr")
                 if isinstance(t, torch.Tensor) and t.device.type == "tpu"]

    def record(args: list) -> Any:
        with torch_tpu.eager_mode("fused"):
            outputs = strides.restore_layouts(gm(*args), layouts)
            torch_tpu.materialize()
        return outputs

    def record_and_capture(args: list) -> Any:
        nonlocal template
        capture = _C.capture.GraphCapture(list(args) + constants)
        try:
            with torch_tpu.eager_mode("fused"):
                outputs = strides.restore_layouts(gm(*args), layouts)
                split = _split_outputs(outputs)
                capture.finish(split[0] if split else [])
        except BaseException:
            capture.abandon()
            raise
        if split is None:
            replayer._give_up("an output is neither a tensor nor None")
        else:
            template = split[1]
            replayer.observe(capture, template)
        return outputs

    def run(args: list) -> Any:
        if not fuse:
            return strides.restore_layouts(gm(*args), layouts)
        if replayer is None:
            return record(args)
        if replayer.plan is not None:
            tensors = replayer.plan.replay(list(args) + constants if constants else args)
            if tensors is not None:
                return _fill(template, tensors)
            return record(args)
        if replayer.wants_capture(args):
            return record_and_capture(args)
        return record(args)

    run._boxed_call = True  # type: ignore[attr-defined]
    run.replayer = replayer  # type: ignore[attr-defined]
    return run
