"""Device memory statistics, shaped like torch.cuda.memory.

"Allocated" bytes are the bytes of live device buffers (the logical size of
each buffer, counted by the runtime: csrc/runtime/device_buffer.h). There is
no caching allocator in torch_tpu: a buffer is returned to the plugin when
its last user drops it. "Reserved" bytes are what the plugin reports in use
when it reports memory statistics (its own pools included), else the
allocated bytes.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "empty_cache",
    "max_memory_allocated",
    "max_memory_cached",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_cached",
    "memory_reserved",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
]


def _index(device: Any) -> int:
    import torch_tpu.tpu as tpu

    tpu._lazy_init()
    index = tpu._device_index(device)
    tpu._device_c.check_device(index)  # "invalid device ordinal", as the device queries raise it
    return index


def _plugin_stats(index: int) -> dict | None:
    from torch_tpu import runtime

    try:
        return runtime.client().memory_stats(index)
    except RuntimeError:
        return None


def _total_memory(index: int) -> int:
    """Device memory size in bytes: the plugin's limit, else (CPU platform)
    the host's physical memory, else 0 when unknown."""
    return mem_get_info(index)[1]


def memory_stats(device: Any = None) -> dict[str, int]:
    """Memory statistics of a tpu device, with every key of
    torch.cuda.memory_stats() (the per-pool and split counts, which a
    caching allocator has and torch_tpu has not, are 0). The same figures
    as torch.accelerator.memory_stats(), except "reserved" bytes, which are
    the plugin's own count where it reports one (module docstring)."""
    import torch

    index = _index(device)
    stats = dict(torch.accelerator.memory_stats(torch.device("tpu", index)))
    plugin = _plugin_stats(index) or {}
    if "bytes_in_use" in plugin:
        reserved = int(plugin["bytes_in_use"])
        stats["reserved_bytes.all.current"] = reserved
        stats["reserved_bytes.all.peak"] = int(
            plugin.get("peak_bytes_in_use", max(stats["reserved_bytes.all.peak"], reserved)))
    return dict(sorted(stats.items()))


def memory_stats_as_nested_dict(device: Any = None) -> dict[str, Any]:
    """memory_stats() as torch.cuda gives it nested: "allocated_bytes.all.peak"
    is ``["allocated_bytes"]["all"]["peak"]``."""
    nested: dict[str, Any] = {}
    for key, value in memory_stats(device).items():
        *path, last = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return nested


def memory_allocated(device: Any = None) -> int:
    """Bytes of live device buffers on a tpu device."""
    from torch_tpu import _C

    return _C.device.memory_stats(_index(device))["allocated"]


def max_memory_allocated(device: Any = None) -> int:
    """Peak of memory_allocated() since start or reset_peak_memory_stats()."""
    from torch_tpu import _C

    return _C.device.memory_stats(_index(device))["peak"]


def memory_reserved(device: Any = None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: Any = None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def memory_cached(device: Any = None) -> int:
    """torch.cuda's older name for memory_reserved()."""
    return memory_reserved(device)


def max_memory_cached(device: Any = None) -> int:
    """torch.cuda's older name for max_memory_reserved()."""
    return max_memory_reserved(device)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restarts the peak of memory_allocated() at its current value."""
    from torch_tpu import _C

    _C.device.reset_peak_memory_stats(_index(device))


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of a tpu device (torch.accelerator.get_memory_info
    gives the same): the plugin's limit and use when it reports them; on the
    CPU platform the host's physical memory; total 0 when the platform says
    nothing."""
    import torch

    return torch.accelerator.get_memory_info(torch.device("tpu", _index(device)))


def reset_max_memory_allocated(device: Any = None) -> None:
    """Restarts the peak of memory_allocated() (torch.cuda's older name for
    reset_peak_memory_stats)."""
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Restarts the counts of allocated and freed bytes and buffers."""
    import torch

    torch.accelerator.reset_accumulated_memory_stats(torch.device("tpu", _index(device)))


def _format_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """memory_stats() as a table to print, as torch.cuda.memory_summary()
    gives one (``abbreviated`` is accepted; the table is short already)."""
    index = _index(device)
    s = memory_stats(index)
    total = _total_memory(index)
    rows = [
        ("Allocated memory", _format_bytes(s["allocated_bytes.all.current"]),
         _format_bytes(s["allocated_bytes.all.peak"])),
        ("Reserved memory", _format_bytes(s["reserved_bytes.all.current"]),
         _format_bytes(s["reserved_bytes.all.peak"])),
        ("Live buffers", str(s["allocation.all.current"]), ""),
        ("Buffers allocated / freed", f'{s["allocation.all.allocated"]} / {s["allocation.all.freed"]}', ""),
        ("Out-of-memory errors", str(s["num_ooms"]), ""),
        ("Device memory", _format_bytes(total) if total else "not reported by the platform", ""),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [f"tpu:{index} memory summary", f"{'':<{width}}  {'current':>14}  {'peak':>12}"]
    lines += [f"{name:<{width}}  {cur:>14}  {peak:>12}".rstrip() for name, cur, peak in rows]
    return "\n".join(lines)


def empty_cache() -> None:
    """Does nothing: torch_tpu keeps no cache of free device buffers (a
    buffer is freed when its last tensor dies), so there is nothing to
    release. Present for code written for torch.cuda."""
