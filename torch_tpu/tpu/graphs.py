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
from typing import Any, Callable

import torch
from torch.utils import _pytree as pytree

from torch_tpu import _C, _after_import

__all__ = ["TPUGraph", "graph", "graph_pool_handle", "is_current_stream_capturing", "make_graphed_callables"]

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


def make_graphed_callables(callables: Any, sample_args: tuple, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool: tuple[int, int] | None = None) -> Any:
    """``torch.cuda.make_graphed_callables`` for tpu: each callable (a
    function or a module) gets its forward and its backward captured as two
    graphs from `sample_args`, and is returned as a callable (a module's
    forward replaced) whose calls replay them, inside autograd: the
    forward graph on the call's tensors, the backward graph on the incoming
    gradients. As on CUDA, the arguments must be tensors of the sample's
    shapes, dtypes and layouts, a module must have no hooks and only
    buffers without gradients, and the outputs (and gradients) are the
    graphs' static tensors, overwritten by the next replay. A module runs
    its graphs only in the training mode it was captured in."""
    if torch.is_autocast_enabled("tpu") and torch.is_autocast_cache_enabled():
        raise RuntimeError("make_graphed_callables does not support the autocast caching; "
                           "use torch.autocast(..., cache_enabled=False)")
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    graphed = []
    for func, args in zip(callables, sample_args):
        if isinstance(func, torch.nn.Module):
            if func._backward_hooks or func._forward_hooks or func._forward_pre_hooks:
                raise RuntimeError("modules given to make_graphed_callables must have no hooks "
                                   "(they would not run at replays)")
            if any(b.requires_grad for b in func.buffers()):
                raise RuntimeError("modules given to make_graphed_callables may only have buffers without "
                                   "requires_grad")
        flat_args, _ = pytree.tree_flatten(args)
        if not all(isinstance(a, torch.Tensor) for a in flat_args):
            raise TypeError("make_graphed_callables takes only tensor arguments (sample_args holds something else)")
        params = tuple(func.parameters()) if isinstance(func, torch.nn.Module) else ()
        graphed.append(_graph_callable(func, args, tuple(flat_args), params, num_warmup_iters,
                                       allow_unused_input, pool))
    return graphed[0] if just_one else tuple(graphed)


def _graph_callable(func: Callable, args: Any, flat_args: tuple, params: tuple, num_warmup_iters: int,
                    allow_unused_input: bool, pool: tuple[int, int] | None) -> Any:
    inputs = flat_args + params  # what the backward graph differentiates against
    wants_grad = [x for x in inputs if x.requires_grad]

    def grads_of(outputs: list, grad_outputs: list) -> tuple:
        if not outputs or not wants_grad:
            return ()
        return torch.autograd.grad(outputs, wants_grad, grad_outputs=grad_outputs, only_inputs=True,
                                   allow_unused=allow_unused_input)

    # Warm-up runs: what creates state lazily does so outside the captures.
    for _ in range(num_warmup_iters):
        outputs = [o for o in pytree.tree_leaves(func(*args)) if isinstance(o, torch.Tensor) and o.requires_grad]
        grads_of(outputs, [torch.ones_like(o) for o in outputs])
    del outputs
    fwd_graph, bwd_graph = TPUGraph(), TPUGraph()
    with graph(fwd_graph, pool=pool):
        static_out = func(*args)
    static_outputs, out_spec = pytree.tree_flatten(static_out)
    static_outputs = tuple(static_outputs)
    static_grad_outputs = tuple(torch.empty_like(o) if isinstance(o, torch.Tensor) and o.requires_grad else None
                                for o in static_outputs)
    with graph(bwd_graph, pool=pool):
        grads = grads_of([o for o, g in zip(static_outputs, static_grad_outputs) if g is not None],
                         [g for g in static_grad_outputs if g is not None])
    grads = iter(grads)
    static_grad_inputs = tuple(next(grads) if x.requires_grad else None for x in inputs)

    class Graphed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *call_inputs: torch.Tensor) -> tuple:
            for static, x in zip(inputs, call_inputs):
                if static.data_ptr() != x.data_ptr():
                    static.copy_(x)
            fwd_graph.replay()
            return tuple(o.detach() if isinstance(o, torch.Tensor) else o for o in static_outputs)

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, *grads: torch.Tensor) -> tuple:
            for static, g in zip(static_grad_outputs, grads):
                if static is not None and g is not None and static.data_ptr() != g.data_ptr():
                    static.copy_(g)
            bwd_graph.replay()
            return tuple(g.detach() if g is not None else None for g in static_grad_inputs)

    def functionalized(*user_args: Any, **user_kwargs: Any) -> Any:
        if user_kwargs:
            raise TypeError("a graphed callable takes its arguments as positional tensors, as captured")
        flat, _ = pytree.tree_flatten(user_args)
        return pytree.tree_unflatten(list(Graphed.apply(*(tuple(flat) + params))), out_spec)

    if not isinstance(func, torch.nn.Module):
        return functionalized
    captured_training = func.training
    eager_forward = func.forward

    def forward(*user_args: Any, **user_kwargs: Any) -> Any:
        if func.training == captured_training:
            return functionalized(*user_args, **user_kwargs)
        return eager_forward(*user_args, **user_kwargs)

    func.forward = forward
    return func


def _refuse_uncapturable_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    """An optimizer step pre-hook: an optimizer that keeps its step count on
    the host (capturable=False) would bake the count of the captured step
    into the graph, so every replay would take that step's bias correction.
    PyTorch refuses this for CUDA graphs; this does the same for tpu.

    Registered for every optimizer in the process, so it steps aside under
    torch.compile, as PyTorch's check for CUDA graphs does: Dynamo cannot
    trace the extension's builtin, and tracing into it warned and split
    every compiled ``step()``, on any device, into dozens of frames."""
    if torch.compiler.is_compiling() or not _C.aten.graph_capturing():
        return
    if not all(group.get("capturable", True) for group in optimizer.param_groups):
        raise RuntimeError(
            f"Attempting tpu graph capture of step() for an instance of {type(optimizer).__name__} but "
            "param_groups' capturable is False; construct the optimizer with capturable=True")


# torch_tpu loads while `import torch` runs, before torch.optim.
_after_import.when_imported(
    "torch.optim.optimizer", lambda module: module.register_optimizer_step_pre_hook(_refuse_uncapturable_step))
