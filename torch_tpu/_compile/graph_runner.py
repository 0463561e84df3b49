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

import contextlib
import logging
import threading
import weakref
from typing import Any, Callable

import torch

import torch_tpu
from torch_tpu import _C
from torch_tpu._compile import input_updates, rng_state, saved_layouts, strides

log = logging.getLogger(__name__)

# Calls captured before giving up on replaying a graph whose captures differ.
_CAPTURES = 3
# Plans kept per graph: one per set of sizes a symbolic graph is called with.
_MAX_PLANS = 16

_SCALARS = (int, float, bool)


class _Replayer:
    """Captures a graph's calls until two agree, then replays them. A graph
    with symbolic sizes takes them as int arguments: each set of values gets
    its own captures and plan (the program has static shapes), as does each
    float32 matmul precision."""

    def __init__(self, name: str):
        self.name = name
        self.plans: dict[tuple, Any] = {}
        self.pending: dict[tuple, _Captures] = {}
        self.failure = None  # why the graph is recorded on every call
        # A compiled function may be called from several threads at once:
        # their captures finish in any order.
        self.lock = threading.Lock()
        _LIVE.add(self)

    def plan_for(self, key: tuple):
        with self.lock:
            return self.plans.get(key)

    def wants_capture(self, args: list, key: tuple) -> bool:
        with self.lock:
            if self.failure is not None:
                return False
            if not all(isinstance(a, _SCALARS) or (isinstance(a, torch.Tensor) and a.device.type == "tpu")
                       for a in args):
                self._give_up("an input is not a tpu tensor or a size")
                return False
            if key not in self.pending and len(self.plans) + len(self.pending) >= _MAX_PLANS:
                return False  # sizes seen too many: record the rare ones
            return not self.pending.setdefault(key, _Captures()).done

    def observe(self, key: tuple, capture, template: list) -> None:
        with self.lock:
            self._observe(key, capture, template)

    def _observe(self, key: tuple, capture, template: list) -> None:
        captures = self.pending.get(key)
        if captures is None:
            return  # another thread's capture made the plan (or gave up) meanwhile
        if capture.failure and not capture.transient:
            self._give_up(capture.failure)
            return
        if capture.failure and captures.transient_left > 0:
            # Perhaps another thread's work got in the way: such a call
            # counts against a budget of its own, not the captures'.
            captures.transient_left -= 1
            return
        signature = (capture.signature, template)
        if not capture.failure and signature == captures.signature:
            self.plans[key] = capture.plan()
            del self.pending[key]
            log.debug("%s: replaying its program from now on for %s", self.name, key)
            return
        captures.signature = None if capture.failure else signature
        captures.left -= 1
        if captures.left == 0:
            captures.done = True
            log.debug("%s is recorded on every call for %s: %s", self.name, key,
                      capture.failure or "its calls did not capture the same program twice")

    def give_up(self, why: str) -> None:
        with self.lock:
            self._give_up(why)

    def _give_up(self, why: str) -> None:
        self.failure = why
        self.plans.clear()
        self.pending.clear()
        log.debug("%s is recorded on every call: %s", self.name, why)


_LIVE: "weakref.WeakSet[_Replayer]" = weakref.WeakSet()  # the live graphs' replayers


def replay_status() -> list[dict]:
    """torch_tpu.diagnostics.replay_status()."""
    status = []
    for r in list(_LIVE):
        with r.lock:
            status.append({"graph": r.name, "plans": len(r.plans),
                           "capturing": sum(not c.done for c in r.pending.values()), "failure": r.failure})
    return status


@contextlib.contextmanager
def _fused_on_this_thread():
    """Records the graph in fused eager on the calling thread alone: calls
    in several threads must not switch each other's (or the process's)
    mode, as overlapping torch_tpu.eager_mode() contexts would."""
    previous = _C.aten.set_thread_eager_mode("fused")
    try:
        yield
    finally:
        _C.aten.set_thread_eager_mode(previous)


class _Captures:
    """The captures of one graph at one key (matmul precision and sizes)."""

    def __init__(self):
        self.signature = None
        self.left = _CAPTURES
        self.transient_left = 3 * _CAPTURES
        self.done = False  # gave up


def _split_outputs(outputs: Any) -> tuple[list, list]:
    """The tensor outputs, and a template of the call's outputs with the
    others in place (sizes, None) and _TENSOR where a tensor goes. Replay
    reuses the template: a capture fails when a value comes from the device
    (a copy to the host), so the other outputs are fixed by the graph and
    the sizes it was called with."""
    tensors, template = [], []
    for out in outputs:
        if isinstance(out, torch.Tensor):
            tensors.append(out)
            template.append(_TENSOR)
        else:
            template.append(out)
    return tensors, template


_TENSOR = object()  # where a tensor output goes, in a template


def _fill(template: list, tensors: list) -> list:
    it = iter(tensors)
    return [next(it) if slot is _TENSOR else slot for slot in template]


def _attr(gm: torch.fx.GraphModule, target: str) -> Any:
    obj = gm
    for name in target.split("."):
        obj = getattr(obj, name, None)
    return obj


def _tensors(args: list) -> list:
    return [a for a in args if isinstance(a, torch.Tensor)]


def make_runner(gm: torch.fx.GraphModule, fuse: bool, replay: bool = True) -> Callable[[list], Any]:
    """The compiled function AOTAutograd calls, in its boxed convention (one
    list of inputs)."""
    strides.views_to_reshapes(gm)
    input_updates.batch_input_copies(gm)
    sets_rng_state = rng_state.replace_rng_state_ops(gm)
    layouts = strides.traced_layouts(gm)
    # Saved activations crossing from forward to backward channels-last
    # (saved_layouts): only when the graph is one program, where the
    # conversions cost nothing.
    channels_last_outputs = saved_layouts.forward_outputs(gm) if fuse else []
    channels_last_inputs = saved_layouts.backward_inputs(gm) if fuse else []

    def call(args: list) -> Any:
        outputs = gm(*saved_layouts.to_contiguous(args, channels_last_inputs))
        return saved_layouts.to_channels_last(strides.restore_layouts(outputs, layouts), channels_last_outputs)

    # A graph that is not replayed still gets a replayer, given up from the
    # start, so replay_status() lists it with the reason.
    replayer = _Replayer(f"graph of {len(gm.graph.nodes)} nodes") if fuse else None
    if replayer is not None and not replay:
        replayer.give_up('compiled with options={"replay": False}')
    elif replayer is not None and sets_rng_state:
        replayer.give_up("it saves or sets the RNG state (activation checkpointing of random ops; "
                          "torch_tpu/_compile/rng_state.py)")
    templates: dict[tuple, list] = {}  # the outputs of each planned key
    # Tensors the graph holds itself (get_attr): captured and checked like
    # inputs, so a program argument is never mistaken for one of them.
    # (CPU ones are literals the ops read as scalars.)
    constants = [t for t in (_attr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr")
                 if isinstance(t, torch.Tensor) and t.device.type == "tpu"]

    def record(args: list) -> Any:
        with _fused_on_this_thread():
            outputs = call(args)
            torch_tpu.materialize()
        return outputs

    def record_and_capture(args: list, key: tuple) -> Any:
        capture = _C.capture.GraphCapture(_tensors(args) + constants)
        try:
            with _fused_on_this_thread():
                outputs = call(args)
                tensors, template = _split_outputs(outputs)
                capture.finish(tensors)
        except BaseException:
            capture.abandon()
            raise
        if all(o is _TENSOR or isinstance(o, (type(None),) + _SCALARS) for o in template):
            templates[key] = template
            replayer.observe(key, capture, template)
        else:
            replayer.give_up("an output is neither a tensor, a size nor None")
        return outputs

    def run(args: list) -> Any:
        if not fuse:
            return call(args)
        if _C.aten.graph_capturing():
            # Inside a device graph capture (docs/graphs.md) the graph's ops
            # join the capture's program, which runs only when replayed.
            with _fused_on_this_thread():
                return call(args)
        if replayer is None or replayer.failure is not None:
            return record(args)
        # A plan per set of sizes, and per float32 matmul precision: the ops
        # read the level as they are recorded (csrc/aten/matmul_precision.h),
        # so a plan captured under one level is not replayed under another.
        key = (torch.get_float32_matmul_precision(),) + tuple(a for a in args if not isinstance(a, torch.Tensor))
        plan = replayer.plan_for(key)
        if plan is not None:
            tensors = plan.replay(_tensors(args) + constants)
            if tensors is not None:
                return _fill(templates[key], tensors)
            return record(args)
        if replayer.wants_capture(args, key):
            return record_and_capture(args, key)
        return record(args)

    run._boxed_call = True  # type: ignore[attr-defined]
    run.replayer = replayer  # type: ignore[attr-defined]
    return run
