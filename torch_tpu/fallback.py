"""The opt-in CPU fallback for ops that have no tpu lowering yet.

Off by default: such an op raises NotImplementedError naming it. When on
(``TORCH_TPU_CPU_FALLBACK=1`` or ``set_cpu_fallback(True)``), the op runs on
the CPU with its inputs and outputs copied, warns once per op, and is counted
so tests can assert that a model never fell back.
"""

from __future__ import annotations

import contextlib

from torch_tpu._C import aten as _aten


def set_cpu_fallback(enabled: bool) -> None:
    _aten.set_cpu_fallback(bool(enabled))


def cpu_fallback_enabled() -> bool:
    return _aten.cpu_fallback_enabled()


def cpu_fallback_counts() -> dict[str, int]:
    """Uses of the CPU fallback so far, per op (``"aten::op.overload"``)."""
    return dict(_aten.cpu_fallback_counts())


def reset_cpu_fallback_counts() -> None:
    _aten.reset_cpu_fallback_counts()


@contextlib.contextmanager
def cpu_fallback(enabled: bool = True):
    """Turns the CPU fallback on (or off) inside a ``with`` block."""
    previous = cpu_fallback_enabled()
    set_cpu_fallback(enabled)
    try:
        yield
    finally:
        set_cpu_fallback(previous)
