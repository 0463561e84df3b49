"""torch.tpu's functions as compiled code meets them.

They call into the runtime through pybind functions, which Dynamo cannot
trace: it broke the graph at each one with a warning asking to wrap it in a
custom op. Marked as not traced, they break the graph quietly and run
eagerly, where they belong (a synchronize, a seed, a memory query). The
queries whose answer is fixed for the process (is_available, device_count,
...) are instead answered once while tracing and kept as constants, as
Dynamo folds torch.cuda's, so `if torch.tpu.is_available():` compiles under
fullgraph=True. Dynamo knows torch.cuda's functions from its own tables;
these are marked when Dynamo is imported, so a program that never compiles
pays nothing.
"""

from __future__ import annotations

import inspect


# Answers that cannot change while the process runs.
CONSTANT_QUERIES = ("is_available", "device_count", "get_device_name", "is_bf16_supported", "platform",
                    "get_amp_supported_dtype")


def register() -> None:
    import torch._dynamo

    import torch_tpu.tpu as tpu

    for name in tpu.__all__:
        fn = getattr(tpu, name)
        if not inspect.isfunction(fn) or getattr(fn, "_torchdynamo_disable", False):
            continue
        if name in CONSTANT_QUERIES:
            setattr(tpu, name, torch._dynamo.assume_constant_result(fn))
        else:
            setattr(tpu, name, torch._dynamo.disable(fn, reason=f"torch.tpu.{name} runs eagerly"))
