"""The process-wide runtime: plugin, client and compile cache.

``initialize()`` runs once, on first use of the device; everything else in
torch_tpu reaches the runtime through it.
"""

from __future__ import annotations

import threading
import warnings

from torch_tpu import _C
from torch_tpu._plugin import PluginChoice, choose_plugin, client_defaults, preload_cuda_libraries

_lock = threading.Lock()
_choice: PluginChoice | None = None


def _route_warnings(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=2)


def initialize() -> PluginChoice:
    """Loads the discovered PJRT plugin and creates the client (idempotent)."""
    global _choice
    with _lock:
        if _choice is None:
            choice = choose_plugin()
            _C.runtime.set_warning_handler(_route_warnings)
            if choice.platform == "cuda":
                preload_cuda_libraries()
            _C.runtime.initialize(choice.path, client_defaults(choice.platform))
            _choice = choice
        return _choice


def is_initialized() -> bool:
    return _choice is not None


def client():
    """The PJRT client (torch_tpu._C.pjrt.Client) the device runs on."""
    initialize()
    return _C.runtime.client()


def platform() -> str:
    """'tpu', 'cuda' or 'cpu': the platform under the device."""
    initialize()
    name = _C.runtime.client().platform_name.lower()
    if name in ("tpu", "cuda", "cpu"):
        return name
    if name in ("gpu", "rocm"):
        return "cuda"
    return name


def compile(program: str, key: str | None = None):
    """Compiles StableHLO text through the shared compile cache.

    ``key`` identifies the program for the memory tier (the text itself when
    omitted); the disk tier is keyed by the program's fingerprint.
    """
    initialize()
    return _C.runtime.compile(program, key)


def cache_stats() -> dict:
    """Compile cache statistics: requests, hits, compiles, compile seconds."""
    initialize()
    return _C.runtime.cache_stats()


def reset_cache_stats() -> None:
    initialize()
    _C.runtime.reset_cache_stats()


def info() -> dict:
    """Everything `python -m torch_tpu.info` prints, as a dict."""
    choice = initialize()
    c = _C.runtime.client()
    plugin = _C.runtime.plugin()
    attrs = plugin.attributes()
    return {
        "platform": platform(),
        "plugin_path": choice.path,
        "plugin_reason": choice.reason,
        "pjrt_api_version": "%d.%d" % plugin.api_version,
        "platform_version": c.platform_version,
        "xla_version": attrs.get("xla_version", "unknown"),
        "stablehlo_version": attrs.get("stablehlo_current_version", "unknown"),
        "stablehlo_minimum_version": attrs.get("stablehlo_minimum_version", "unknown"),
        "device_count": len(c.devices()),
        "device_kind": c.devices()[0].kind if c.devices() else "none",
        "cache_dir": _C.runtime.cache_dir() or "(disk cache disabled)",
    }
