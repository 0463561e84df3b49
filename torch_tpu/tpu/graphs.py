"""Graph capture and replay on tpu: ``torch.tpu.graph`` and ``TPUGraph``,
shaped like ``torch.cuda.graph`` and ``CUDAGraph``, over
``torch.accelerator.Graph`` (csrc/aten/device_graph.h).

A capture records the ops between its start and end, forward, backward and
optimizer step alike, into one program; ``replay()`` launches that program
on the current values of the tensors the capture read and writes the new
results into the tensors it wrote, with no Python and no per-op work. As on
CUDA, the captured work takes effect only at replays, and nothing inside a
capture may wait for a result (``item()``, printing, ``synchronize()``).
Memory pools are accepted for compatibility and have no effect: a replay's
results replace its outputs' values, and the old values are freed.
"""

from __future__ import annotations

import gc
import itertools
from typing import Any

import torch

from torch_tpu import _C, _after_import

__all__ = ["TPUGraph", "graph", "graph_pool_handle", "is_current_stream_capturing"]

_pool_ids = itertools.count(1 << 32)


def is_current_stream_capturing() -> bool:
    """Whether this thread is capturing a tpu graph on the current device."""
    return _C.aten.graph_capturing()


def graph_pool_handle() -> tuple[int, int]:
    """An opaque memory pool id for ``TPUGraph.capture_begin(pool=...)``
    (accepted for CUDA compatibility; tpu graphs do not pool memory)."""
    return (0, next(_pool_ids))


class TPUGraph(torch.accelerator.Graph):
    """A tpu graph (``torch.accelerator.Graph``), with ``CUDAGraph``'s
    ``capture_begin(pool=None, capture_error_mode=...)`` signature."""

    def capture_begin(self, pool: tuple[int, int] | None = None, capture_error_mode: str | None = None) -> None:
        if pool is not None:
            self.graph_pool = pool
        if capture_error_mode is not None:
            self.capture_error_mode = capture_error_mode
        super().capture_begin()


class graph:
    """Context manager capturing the ops it runs into ``tpu_graph``, as
    ``torch.cuda.graph`` does: ``with torch.tpu.graph(g): out = model(x)``,
    then ``g.replay()``. ``pool``, ``stream`` and ``capture_error_mode`` are
    accepted for compatibility; a tpu capture records the calling thread's
    ops (and the backward passes it runs) whatever its stream."""

    def __init__(self, tpu_graph: torch.accelerator.Graph, pool: tuple[int, int] | None = None,
                 stream: torch.Stream | None = None, capture_error_mode: str = "global"):
        self.tpu_graph = tpu_graph
        self.pool = pool
        self.capture_error_mode = capture_error_mode
        self.stream_context = torch.tpu.stream(stream) if stream is not None else None

    def __enter__(self) -> None:
        torch.tpu.synchronize()
        gc.collect()  # as torch.cuda.graph: tensors freed now are not read by the capture
        if self.stream_context is not None:
            self.stream_context.__enter__()
        if isinstance(self.tpu_graph, TPUGraph):
            self.tpu_graph.capture_begin(pool=self.pool, capture_error_mode=self.capture_error_mode)
        else:
            self.tpu_graph.capture_begin()

    def __exit__(self, *exc_info: Any) -> None:
        try:
            if exc_info[0] is None:
                self.tpu_graph.capture_end()
            else:
                # The captured code failed: the capture ends (what it
                # changed is put back) and holds nothing to replay.
                try:
                    self.tpu_graph.capture_end()
                except RuntimeError:
                    pass
                self.tpu_graph.reset()
        finally:
            if self.stream_context is not None:
                self.stream_context.__exit__(*exc_info)


def _refuse_uncapturable_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    """An optimizer step pre-hook: an optimizer that keeps its step count on
    the host (capturable=False) would bake the count of the captured step
    into the graph, so every replay would take that step's bias correction.
    PyTorch refuses this for CUDA graphs; this does the same for tpu."""
    if not _C.aten.graph_capturing():
        return
    if not all(group.get("capturable", True) for group in optimizer.param_groups):
        raise RuntimeError(
            f"Attempting tpu graph capture of step() for an instance of {type(optimizer).__name__} but "
            "param_groups' capturable is False; construct the optimizer with capturable=True")


# torch_tpu loads while `import torch` runs, before torch.optim.
_after_import.when_imported(
    "torch.optim.optimizer", lambda module: module.register_optimizer_step_pre_hook(_refuse_uncapturable_step))
