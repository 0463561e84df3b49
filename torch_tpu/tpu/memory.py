"""Device memory statistics, shaped like torch.cuda.memory.

"Allocated" bytes are the bytes of live device buffers (the logical size of
each buffer, counted by the runtime: csrc/runtime/device_buffer.h). There is
no caching allocator in torch_tpu: a buffer is returned to the plugin when
its last user drops it. "Reserved" bytes are what the plugin reports in use
when it reports memory statistics (its own pools included), else the
allocated bytes.
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

__all__ = [
    "empty_cache",
    "get_per_process_memory_fraction",
    "max_memory_allocated",
    "max_memory_cached",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_cached",
    "memory_reserved",
    "memory_stats",
    "memory_snapshot",
    "memory_stats_as_nested_dict",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "reset_peak_memory_stats",
    "set_per_process_memory_fraction",
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


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Caps this process's memory on a tpu device at ``fraction`` of its
    total (mem_get_info()[1]), as torch.cuda's caps its caching allocator:
    a program whose results, or a copy to the device, would take the live
    buffers (memory_allocated()) past the cap raises torch.OutOfMemoryError
    before it runs, and a fused graph refused so stays pending. Arguments
    reused by in-place updates (donated buffers) count once; XLA's scratch
    buffers while a program runs are the plugin's and not counted, as
    memory_allocated() does not count them."""
    from torch_tpu import _C

    index = _index(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    _C.device.set_memory_fraction(fraction, index)  # its range is checked there (ValueError)


def get_per_process_memory_fraction(device: Any = None) -> float:
    """The fraction set_per_process_memory_fraction() set; 1.0 until then."""
    from torch_tpu import _C

    return _C.device.memory_fraction(_index(device))


def reset_max_memory_allocated(device: Any = None) -> None:
    """Restarts the peak of memory_allocated() (torch.cuda's older name for
    reset_peak_memory_stats)."""
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device: Any = None) -> None:
    """torch.cuda's older name for reset_peak_memory_stats()."""
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
    """Hands the device buffers of dead tensors back to the plugin now.

    torch_tpu keeps no cache of free buffers for reuse; a dropped buffer
    is destroyed by a background thread (some plugins make the destroy wait
    for programs still using it), at the next synchronize at the latest.
    This destroys those still waiting, on the calling thread, waiting for
    the programs that use them. The memory statistics counted them out
    when they were dropped."""
    import torch_tpu.tpu as tpu
    from torch_tpu import _C

    if tpu.is_initialized():
        _C.device.empty_cache()


def _record_memory_history(
    enabled: str | bool | None = "all",
    context: str | None = "all",
    stacks: str = "all",
    max_entries: int = sys.maxsize,
    device: Any = None,
    clear_history: bool = False,
    compile_context: bool = False,
    global_record_annotations: bool = False,
    skip_actions: list[str] | None = None,
) -> None:
    """Starts (or, with ``enabled=None``, stops) recording where device
    memory is allocated, as torch.cuda.memory._record_memory_history does:

    - ``enabled``: ``"state"`` keeps the stack of each live buffer;
      ``"all"`` also keeps a history of at most ``max_entries`` allocations,
      frees and out-of-memory errors (the oldest dropped first); ``None``
      stops and drops the history. ``True`` / ``False`` mean "all" / None.
    - ``context``: which get stacks: ``"state"`` live buffers, ``"alloc"``
      also allocations in the history, ``"all"`` also frees; None: none.
    - ``stacks``: ``"python"`` Python frames, ``"all"`` C++ frames too.

    Every tpu device is recorded (``device`` is accepted for torch.cuda's
    signature). Buffers made by fused eager get the stack of the sync point
    that ran their graph, and those made on autograd's device threads C++
    frames only. ``_snapshot()`` returns what was recorded.
    """
    from torch_tpu import _C

    if compile_context or global_record_annotations:
        raise NotImplementedError(
            "torch.tpu.memory._record_memory_history: compile_context and global_record_annotations "
            "are not recorded on tpu")
    if isinstance(enabled, bool):
        enabled = "all" if enabled else None
    if enabled not in (None, "state", "all"):
        raise ValueError(f"_record_memory_history: enabled must be None, 'state' or 'all', got {enabled!r}")
    if context not in (None, "state", "alloc", "all"):
        raise ValueError(f"_record_memory_history: context must be None, 'state', 'alloc' or 'all', got {context!r}")
    if stacks not in ("python", "all"):
        raise ValueError(f"_record_memory_history: stacks must be 'python' or 'all', got {stacks!r}")
    if not isinstance(max_entries, int) or max_entries < 0:
        raise ValueError(f"_record_memory_history: max_entries must be a non-negative int, got {max_entries!r}")
    if device is not None:
        _index(device)
    _C.memory_history.configure(
        trace=enabled == "all",
        context=context if enabled is not None else None,
        cpp_frames=stacks == "all",
        max_entries=min(max_entries, sys.maxsize),
        skip_actions=list(skip_actions or ()),
        clear_trace=clear_history,
    )


def _snapshot(device: Any = None, augment_with_fx_traces: bool = False) -> dict[str, Any]:
    """Device memory as torch.cuda.memory._snapshot() describes it:
    ``segments`` (every live buffer of every tpu device, one segment
    holding one block each: there is no caching allocator, and an
    "address" identifies a buffer, not a place in device memory) and
    ``device_traces`` (per device, the history _record_memory_history
    keeps). torch.cuda._memory_viz and pytorch.org/memory_viz read it."""
    import torch
    from torch_tpu import _C

    if device is not None:
        _index(device)
    snapshot = _C.memory_history.snapshot(torch.tpu.device_count())
    if augment_with_fx_traces:
        from torch._utils import _augment_memory_snapshot_stack_traces

        snapshot = _augment_memory_snapshot_stack_traces(snapshot)
    return snapshot


def _dump_snapshot(filename: str = "dump_snapshot.pickle", augment_with_fx_traces: bool = False) -> None:
    """Pickles _snapshot() into ``filename``, the file that
    pytorch.org/memory_viz opens."""
    snapshot = _snapshot(augment_with_fx_traces=augment_with_fx_traces)
    with open(filename, "wb") as f:
        pickle.dump(snapshot, f)


def memory_snapshot(mempool_id: Any = None, include_traces: bool = True) -> list[dict[str, Any]]:
    """The segments of _snapshot(): every live device buffer, with the
    stack that made it when _record_memory_history is on
    (``include_traces`` is accepted for torch.cuda's signature)."""
    if mempool_id is not None:
        raise NotImplementedError("torch.tpu.memory_snapshot: tpu has no memory pools (mempool_id must be None)")
    return _snapshot()["segments"]
