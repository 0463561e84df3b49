"""``torch.compile(model, backend="tpu")``.

Dynamo captures the Python code as FX graphs; AOTAutograd turns each into
functional aten graphs, a forward and (when gradients are needed) a
backward, applying decompositions only for ops without a tpu lowering. The
compiled functions run those graphs on tpu tensors through the same
lowerings as eager code (see graph_runner).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.partitioners import default_partition

from torch_tpu._compile.decompositions import tpu_decompositions
from torch_tpu._compile.graph_runner import make_runner
from torch_tpu._compile import saved_layouts

# options={...} of torch.compile, with their defaults.
OPTIONS = {
    # Run each graph as one fused program (when the runtime's fused eager
    # mode exists); False: one cached program per op, as in strict eager.
    "fuse": True,
    # Once two calls of a graph capture the same program, launch it directly
    # on later calls instead of recording the graph again (graph_runner).
    "replay": True,
}


# torch.compile's modes; each compiles the same way here.
MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def _check_mode(mode: str | None) -> None:
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"torch.compile(backend=\"tpu\"): unrecognized mode={mode}, should be one of: "
                           f"{', '.join(MODES)}")


def _check_options(options: dict | None) -> dict:
    merged = dict(OPTIONS)
    for name, value in (options or {}).items():
        if name not in OPTIONS:
            raise ValueError(
                f"torch.compile(backend=\"tpu\") has no option {name!r}; "
                f"options are {sorted(OPTIONS)}"
            )
        merged[name] = value
    return merged


def tpu_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *,
                options: dict | None = None, mode: str | None = None) -> Any:
    """The Dynamo backend registered as "tpu". ``mode`` (torch.compile's
    "default", "reduce-overhead", ...) has no effect: every graph is
    compiled the same way, and replayed once captured (graph_runner); an
    unknown mode is refused as inductor refuses it."""
    _check_mode(mode)
    config = _check_options(options)

    def compile_graph(graph: torch.fx.GraphModule, inputs: Sequence[Any]) -> Any:
        return make_runner(graph, config["fuse"], config["replay"])

    def partition(joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any) -> Any:
        fw, bw = default_partition(joint, joint_inputs, **kwargs)
        saved_layouts.mark(fw, bw)
        return fw, bw

    return aot_autograd(
        fw_compiler=compile_graph,
        bw_compiler=compile_graph,
        inference_compiler=compile_graph,
        decompositions=tpu_decompositions(),
        partition_fn=partition,
        # BatchNorm's running statistics and other buffer updates stay in
        # the graph (as copy_ into the input) instead of an epilogue.
        keep_inference_input_mutations=True,
    )(gm, example_inputs)
