"""torch.compile support for the tpu device.

- ``backend="tpu"``: torch_tpu._compile.backend, registered by name once
  Dynamo is imported, and a ``torch_dynamo_backends`` entry point (for a
  process where torch_tpu was not imported).
- Dynamo's device interface for "tpu" (device_interface).
- Inductor on tpu tensors raises a message pointing to ``backend="tpu"``
  (inductor).
- torch.tpu's functions run eagerly, without Dynamo's warnings, inside
  compiled code (dynamo_skips).
- Fake-tensor shape rules for tpu where PyTorch's meta functions carry a
  CUDA kernel's restrictions (fake_rules).
- Corrections of PyTorch decompositions that tracing applies to tpu tensors
  in spite of their kernels (decomposition_fixes).

Nothing here is imported with torch_tpu: Dynamo and Inductor take seconds
to import, so ``install()`` defers each registration to the user's own
first import of the module it concerns.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any


def tpu_backend(gm, example_inputs, **kwargs) -> Any:
    """The "tpu" Dynamo backend (see torch_tpu._compile.backend)."""
    from torch_tpu._compile.backend import tpu_backend as backend

    return backend(gm, example_inputs, **kwargs)


def _register_backend(module: ModuleType) -> None:
    # Dynamo loading the entry point (torch_tpu not imported before)
    # registers it itself.
    if "tpu" not in module._COMPILER_FNS and module._BACKENDS.get("tpu") is None:
        module.register_backend(tpu_backend, name="tpu")


def _register_dynamo_skips(module: ModuleType) -> None:
    from torch_tpu._compile import dynamo_skips

    dynamo_skips.register()


def _register_device_interface(module: ModuleType) -> None:
    from torch_tpu._compile import device_interface

    device_interface.register()


def _register_inductor_refusal(module: ModuleType) -> None:
    from torch_tpu._compile import inductor

    inductor.register()


def _register_fake_rules(module: ModuleType) -> None:
    from torch_tpu._compile import fake_rules

    fake_rules.register(module)


def _register_decomposition_fixes(module: ModuleType) -> None:
    from torch_tpu._compile import decomposition_fixes

    decomposition_fixes.register(module)


def install() -> None:
    from torch_tpu._after_import import when_imported

    when_imported("torch._dynamo.backends.registry", _register_backend)
    when_imported("torch._dynamo", _register_dynamo_skips)
    when_imported("torch._dynamo.device_interface", _register_device_interface)
    when_imported("torch._inductor.codegen.common", _register_inductor_refusal)
    when_imported("torch._subclasses.fake_impls", _register_fake_rules)
    when_imported("torch._decomp.decompositions", _register_decomposition_fixes)
