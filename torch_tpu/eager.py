"""The eager execution modes (docs/eager_modes.md).

All three run the same op lowerings through the same compile cache:

- ``strict``: each op is one program, compiled once and launched
  asynchronously; the host waits only at sync points.
- ``fused``: ops are recorded into one deferred graph per device (and thread) and run as
  one program at a sync point (a copy to the host, ``item()``, ``print``,
  ``torch.tpu.synchronize()``, a mode switch, ``materialize()``, or the
  graph reaching ``TORCH_TPU_FUSED_MAX_OPS`` ops).
- ``debug``: like strict, but the host waits for every op, so an error is
  raised by the op that caused it; optionally checks every op's outputs for
  NaN/Inf and against the same op on the CPU, naming the op and the Python
  line that called it.

``TORCH_TPU_EAGER_MODE`` sets the mode at start-up.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Iterator

from torch_tpu import _C
from torch_tpu import _debug_checks

MODES = ("strict", "fused", "debug")

_checks: _debug_checks.DebugChecks | None = None


def get_eager_mode() -> str:
    """The current eager mode: 'strict', 'fused' or 'debug'."""
    return _C.aten.eager_mode()


def set_eager_mode(
    mode: str,
    *,
    check_finite: bool = False,
    compare_cpu: bool = False,
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """Switches the eager mode for the whole process.

    Leaving fused mode runs the pending graphs first. In ``debug`` mode,
    ``check_finite`` raises when an op produces NaN or Inf and
    ``compare_cpu`` reruns every op on the CPU and raises when the results
    differ beyond ``rtol`` / ``atol`` (defaults per dtype); both name the
    op and its Python call site.
    """
    global _checks
    if mode not in MODES:
        raise ValueError(f"unknown tpu eager mode {mode!r}: expected one of {', '.join(MODES)}")
    if mode != "debug" and (check_finite or compare_cpu):
        raise ValueError("check_finite and compare_cpu are checks of the 'debug' eager mode")
    if _checks is not None:
        _checks.uninstall()
        _checks = None
    _debug_checks.DebugChecks.prune()
    _C.aten.set_eager_mode(mode)
    if check_finite or compare_cpu:
        _checks = _debug_checks.DebugChecks.enable(check_finite, compare_cpu, rtol, atol)


@contextlib.contextmanager
def eager_mode(mode: str, **checks) -> Iterator[None]:
    """Runs the block in `mode` (see set_eager_mode), then restores the
    previous mode and checks."""
    known = [name for name in inspect.signature(set_eager_mode).parameters if name != "mode"]
    unknown = sorted(set(checks) - set(known))
    if unknown:
        raise TypeError(f"eager_mode() got unknown arguments {unknown}: the debug mode's are {', '.join(known)}")
    previous_mode = get_eager_mode()
    previous_checks = _checks.settings() if _checks is not None else {}
    set_eager_mode(mode, **checks)
    try:
        yield
    finally:
        set_eager_mode(previous_mode, **previous_checks)


def materialize() -> None:
    """Runs the calling thread's pending fused graphs now, without waiting
    for them to finish (``torch.tpu.synchronize()`` runs every thread's
    and waits)."""
    _C.aten.materialize()


def fused_stats() -> dict:
    """Fused-mode counters: ops recorded, ops lowered (once per distinct op
    and operand types: later recordings of the same op reuse its lowering),
    graphs run, and materializations by reason (read, synchronize,
    size_limit, mode_switch, explicit, start_of_backward, end_of_backward,
    thread_end, shape_churn); chain_barriers counts values computed once to cut a long
    run of cheap elementwise ops and kernel_cuts values a graph returned
    only to keep one XLA kernel from growing too large to compile quickly
    (docs/eager_modes.md); shape_churn_ops counts ops run as programs of
    their own because their shapes changed at every step while the rest of
    their graph's did not (docs/eager_modes.md, "Shape churn");
    graphs_replayed
    counts launches of captured programs without recording: torch.compile
    graph calls and device graph replays (docs/graphs.md)."""
    return _C.aten.fused_stats()


def reset_fused_stats() -> None:
    _C.aten.reset_fused_stats()
