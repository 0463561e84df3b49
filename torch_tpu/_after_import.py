"""Run a callback right after a module is imported, without importing it.

torch_tpu loads while ``import torch`` runs (PyTorch's device-backend
autoload), before the modules it registers with or adjusts: Dynamo and
Inductor (importing them costs seconds), safetensors, accelerate,
transformers. So each registration waits for the user's own first import
of its module: a finder on ``sys.meta_path`` notices the import, lets the
normal loader run the module, then calls the callback, before whoever
imported the module continues (names other modules copy from it, ``from
accelerate.utils import get_max_memory``, are the adjusted ones). A module
already imported gets its callback at once; ``rebind`` reaches the copies
taken before.
"""

from __future__ import annotations

import functools
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
    # A failing registration must not break the user's import.
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


def rebind(original, replacement) -> None:
    """Points every loaded module's name for `original` at `replacement`:
    the copies other modules took (``from x import f``) before torch_tpu
    loaded, when it is imported after them."""
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", None)
        if not isinstance(names, dict):
            continue
        for name, value in list(names.items()):
            if value is original:
                setattr(module, name, replacement)


def wrap(owner, name: str, tpu_version: Callable, copies: bool = False) -> Callable | None:
    """Replaces ``owner.name`` (a module's function or a class's method) by
    one that calls ``tpu_version(original, *args, **kwargs)``, keeping the
    original's name, docstring and signature. With ``copies``, other
    modules' names for the original are rebound too (rebind()). Wrapping
    twice is a no-op. Returns the original, or None when it was wrapped
    already."""
    original = getattr(owner, name)
    if getattr(original, "_torch_tpu", False):
        return None

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        return tpu_version(original, *args, **kwargs)

    wrapper._torch_tpu = True
    setattr(owner, name, wrapper)
    if copies:
        rebind(original, wrapper)
    return original
