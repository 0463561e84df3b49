"""Run a function on a module right after it is first imported.

torch_tpu loads while ``import torch`` runs (PyTorch's device-backend
autoload), usually before the libraries whose Python paths it adjusts
(safetensors, accelerate). ``when_imported(name, fn)`` calls ``fn(module)``
at once if the module is loaded, and otherwise right after the module's own
code has run, before whoever imported it continues: names other modules
copy from it (``from accelerate.utils import get_max_memory``) are the
adjusted ones.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
from typing import Callable

_lock = threading.Lock()
_waiting: dict[str, list[Callable]] = {}


def when_imported(name: str, fn: Callable) -> None:
    module = sys.modules.get(name)
    if module is not None:
        fn(module)
        return
    with _lock:
        if not _waiting:
            sys.meta_path.insert(0, _finder)
        _waiting.setdefault(name, []).append(fn)


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


def _take(name: str) -> list[Callable]:
    with _lock:
        fns = _waiting.pop(name, [])
        if not _waiting:
            try:
                sys.meta_path.remove(_finder)
            except ValueError:
                pass
        return fns


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds a waited-for module as the other finders would and wraps its
    loader. sys.meta_path is left as it is while the others are asked
    (another thread may be importing)."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _waiting:
            return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _ThenRun(spec.loader)
                return spec
        return None


class _ThenRun:
    """The original loader; once the module's code has run, its waiting
    functions are called on it."""

    def __init__(self, loader):
        self._loader = loader

    def exec_module(self, module):
        self._loader.exec_module(module)
        for fn in _take(module.__name__):
            fn(module)

    def __getattr__(self, name):  # create_module, get_resource_reader, is_package, ...
        return getattr(self._loader, name)


_finder = _AfterImport()
