"""Run a callback right after a module is imported, without importing it.

torch_tpu must register itself with Dynamo and Inductor, but importing
either costs seconds, and ``import torch`` imports torch_tpu (autoload). So
the registrations wait for the user's own first import of those modules: a
finder on ``sys.meta_path`` notices the import, lets the normal loader run
the module, then calls the callback. A module already imported gets its
callback at once.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
import warnings
from types import ModuleType
from typing import Callable

Callback = Callable[[ModuleType], None]

_lock = threading.Lock()
_pending: dict[str, list[Callback]] = {}


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: it wraps the real loader of a watched module."""

    def __init__(self) -> None:
        self._searching: set[str] = set()

    def find_spec(self, fullname, path, target=None):
        if fullname not in _pending or fullname in self._searching:
            return None
        self._searching.add(fullname)
        try:  # the spec the rest of sys.meta_path would give
            spec = importlib.util.find_spec(fullname)
        finally:
            self._searching.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            try:
                original(module)
            finally:
                del loader.exec_module  # back to the class's method
            _run(fullname, module)

        loader.exec_module = exec_module
        return spec


_finder = _Finder()


def _run(name: str, module: ModuleType) -> None:
    with _lock:
        callbacks = _pending.pop(name, [])
        if not _pending and _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
    for callback in callbacks:
        _call(callback, module)


def _call(callback: Callback, module: ModuleType) -> None:
    # A failing registration must not break the user's import of Dynamo.
    try:
        callback(module)
    except Exception as e:  # noqa: BLE001
        warnings.warn(f"torch_tpu could not register with {module.__name__}: {e!r}", RuntimeWarning, stacklevel=2)


def when_imported(name: str, callback: Callback) -> None:
    """Calls ``callback(module)`` once module ``name`` is imported."""
    with _lock:
        module = sys.modules.get(name)
        if module is None:
            _pending.setdefault(name, []).append(callback)
            if _finder not in sys.meta_path:
                sys.meta_path.insert(0, _finder)
            return
    _call(callback, module)
