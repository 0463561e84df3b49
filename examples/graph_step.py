"""A training step replayed as one captured graph (torch.accelerator.Graph),
the way CUDA graphs are used: the examples' `make_step(..., graphed=True)`.

The step's batch is copied into static tensors the graph reads, and the
loss returned is a copy of the graph's output tensor, which the next
replay overwrites (on tpu the copy shares the device value: no program).
The first call runs the step eagerly, so the optimizer creates its state
outside the capture (a state made inside it would be made again by every
replay); the second captures the step, and every call replays it.
"""

from __future__ import annotations

from typing import Callable

import torch


def graphed(update: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    state: dict = {}

    def step(*batch: torch.Tensor) -> torch.Tensor:
        if "static" not in state:
            state["static"] = [t.clone() for t in batch]
            return update(*state["static"])
        for static, t in zip(state["static"], batch):
            static.copy_(t)
        if "graph" not in state:
            graph = torch.accelerator.Graph()
            with graph:
                state["loss"] = update(*state["static"])
            state["graph"] = graph
        state["graph"].replay()
        return state["loss"].clone()

    return step
