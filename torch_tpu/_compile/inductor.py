"""Inductor on tpu tensors: a clear refusal instead of a failure deep in
code generation.

Inductor's own "tpu" entry generates Pallas kernels through JAX, for a
different package's tpu device; on this one it fails with an unrelated
import error, late. The tpu device runs compiled graphs through
``backend="tpu"``, so Inductor's code generators for "tpu" are replaced
by ones that raise, naming it. Registering before Inductor's first
``init_backend_registration()`` keeps the Pallas entry out.
"""

from __future__ import annotations

from torch._inductor.codegen import common as _codegen

MESSAGE = (
    "torch.compile's default backend (inductor) cannot generate code for the "
    "tpu device. Use torch.compile(model, backend=\"tpu\"), which runs the "
    "captured graphs through torch_tpu's XLA lowerings. (Library calls that "
    "compile with inductor themselves have no tpu form: AOTInductor "
    "packages (aoti_compile_and_package) cannot target tpu; an "
    "ExportedProgram's module() runs on tpu as it is.)"
)


class InductorOnTpuError(RuntimeError):
    pass


class _RefusingScheduling:
    """Inductor builds a scheduling for a device before it lowers or
    generates code for it (to query the backend's features)."""

    def __init__(self, *args, **kwargs):
        raise InductorOnTpuError(MESSAGE)


class _Refusing(type):
    @property
    def supports_caching(cls) -> bool:
        raise InductorOnTpuError(MESSAGE)


class _RefusingWrapper(metaclass=_Refusing):
    """Inductor asks the wrapper of every device in a graph whether its
    output may be cached before it lowers anything (and creates one to
    generate code)."""

    @staticmethod
    def create(*args, **kwargs):
        raise InductorOnTpuError(MESSAGE)


def register() -> None:
    # The C++ and FX wrappers too: AOTInductor (aoti_compile_and_package of
    # an ExportedProgram on tpu) asks for the C++ one.
    _codegen.register_backend_for_device("tpu", _RefusingScheduling, _RefusingWrapper,
                                         _RefusingWrapper, _RefusingWrapper)
