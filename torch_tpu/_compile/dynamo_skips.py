"""torch.tpu's functions as compiled code meets them.

They call into the runtime through pybind functions, which Dynamo cannot
trace: it broke the graph at each one with a warning asking to wrap it in a
custom op. Marked as not traced, they break the graph quietly and run
eagerly, where they belong (a synchronize, a seed, a memory query). Dynamo
knows torch.cuda's functions from its own tables; these are marked when
Dynamo is imported, so a program that never compiles pays nothing.
"""

from __future__ import annotations

import inspect


def register() -> None:
    import torch._dynamo

    import torch_tpu.tpu as tpu

    for name in tpu.__all__:
        fn = getattr(tpu, name)
        if inspect.isfunction(fn) and not getattr(fn, "_torchdynamo_disable", False):
            setattr(tpu, name, torch._dynamo.disable(fn, reason=f"torch.tpu.{name} runs eagerly"))
