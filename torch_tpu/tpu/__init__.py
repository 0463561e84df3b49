"""``torch.tpu``: the tpu device module, shaped like ``torch.cuda``.

The runtime (PJRT plugin and client) is created lazily, by ``_lazy_init()``:
PyTorch calls it before the first tensor is made on the device, and every
function here that needs devices calls it. Seeding before that is queued and
applied at initialization, as in ``torch.cuda``.
"""

from __future__ import annotations

import os
import threading
import traceback
from typing import Any, Callable

import torch

from torch_tpu import _C, runtime
from torch_tpu._plugin import PluginNotFoundError, choose_plugin

_device_c = _C.device

_initialized = False
_init_lock = threading.RLock()
_tls = threading.local()
_queued_calls: list[tuple[Callable[[], None], list[str]]] = []
_lazy_seed_tracker = torch._utils._LazySeedTracker()

# Filled by _lazy_init: one torch.Generator per device.
default_generators: tuple[torch.Generator, ...] = ()


def _is_in_bad_fork() -> bool:
    """True in a child forked after this process initialized the device."""
    return _device_c.is_in_bad_fork()


def is_initialized() -> bool:
    """Whether the tpu runtime of this process is initialized and usable."""
    return _initialized and not _is_in_bad_fork()


def is_available() -> bool:
    """Whether the tpu device can be used: a PJRT plugin is installed for
    this machine (libtpu, a CUDA plugin or the XLA CPU plugin).

    Does not load the plugin. After initialization: at least one device.
    """
    if runtime.is_initialized():
        return _device_c.device_count() > 0
    try:
        choice = choose_plugin()
    except (PluginNotFoundError, ValueError):
        return False
    return os.path.isfile(choice.path)


def _lazy_call(callable: Callable[[], None], **kwargs: Any) -> None:
    with _init_lock:
        if is_initialized():
            callable()
        elif kwargs.get("seed_all", False):
            _lazy_seed_tracker.queue_seed_all(callable, traceback.format_stack())
        elif kwargs.get("seed", False):
            _lazy_seed_tracker.queue_seed(callable, traceback.format_stack())
        else:
            _queued_calls.append((callable, traceback.format_stack()))


def init() -> None:
    """Initializes the tpu runtime now (it otherwise happens on first use)."""
    _lazy_init()


def _refuse_in_data_loader_worker() -> None:
    # A worker's batch reaches the main process through a multiprocessing
    # queue, and a tpu tensor cannot be pickled for another process
    # (torch_tpu/_multiprocessing.py). The pickling fails in the queue's
    # feeder thread, out of the worker's reach, so the main process would
    # wait forever for the batch. Raised here, inside the worker's fetch,
    # the DataLoader re-raises it in the main process instead. (On a TPU a
    # second process could not open the chips the main one holds anyway.)
    from torch.utils.data import get_worker_info

    info = get_worker_info()
    if info is not None:
        raise RuntimeError(
            f"tpu cannot be used in DataLoader worker process {info.id}: its "
            "tensors cannot be sent back to the main process. Return CPU "
            "tensors from the dataset and move each batch to the device in the "
            "main process (batch.to('tpu', non_blocking=True)); "
            "pin_memory=True speeds up that copy."
        )


def _lazy_init() -> None:
    global _initialized, default_generators
    if is_initialized() or getattr(_tls, "is_initializing", False):
        return
    with _init_lock:
        if is_initialized():
            return
        if _is_in_bad_fork():
            raise RuntimeError(
                "Cannot re-initialize the tpu device in a forked subprocess. To use "
                "tpu with multiprocessing, use the 'spawn' start method"
            )
        _refuse_in_data_loader_worker()
        runtime.initialize()
        default_generators = tuple(
            _device_c.default_generator(i) for i in range(_device_c.device_count())
        )
        _tls.is_initializing = True
        try:
            calls = [c for c in _lazy_seed_tracker.get_calls() if c] + _queued_calls
            for queued_call, origin in calls:
                try:
                    queued_call()
                except Exception as e:
                    raise RuntimeError(
                        "a call queued until tpu initialization failed: "
                        f"{e}\nqueued from:\n{''.join(origin)}"
                    ) from e
            _queued_calls.clear()
        finally:
            _tls.is_initializing = False
        _initialized = True


def _device_index(device: Any = None, optional: bool = True) -> int:
    """The tpu index `device` names (int, "tpu", "tpu:1", torch.device); the
    current device for None or a device without index."""
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "tpu":
            raise ValueError(f"expected a tpu device, got {device}")
        device = device.index
    if device is None:
        if not optional:
            raise ValueError("expected a tpu device index, got None")
        return current_device()
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"expected a tpu device, an index or None, got {device!r}")
    return device


def device_count() -> int:
    """Number of tpu devices; 0 when no plugin is available. Initializes the
    runtime (a found plugin that fails to load raises)."""
    if not is_available():
        return 0
    _lazy_init()
    return _device_c.device_count()


def current_device() -> int:
    """Index of the current tpu device of this thread."""
    _lazy_init()
    return _device_c.current_device()


def set_device(device: Any) -> None:
    """Sets the current tpu device. A negative index is a no-op; an index
    with no device raises torch.AcceleratorError ("invalid device ordinal")."""
    index = _device_index(device, optional=False)
    if index >= 0:
        _lazy_init()
        _device_c.set_device(index)


def _exchange_device(index: int) -> int:
    if index < 0:
        return -1
    _lazy_init()
    return _device_c.exchange_device(index)


class device:
    """Context manager that makes a tpu device current, like torch.cuda.device.

    ``device`` is a torch.device, a string, an index, or None / a negative
    index (no change).
    """

    def __init__(self, device: Any):
        self.idx = -1 if device is None else _device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _exchange_device(self.idx)
        return self

    def __exit__(self, *exc_info: object) -> bool:
        self.idx = _exchange_device(self.prev_idx)
        return False


class device_of(device):
    """Makes the device of a tensor current (no change for a non-tpu tensor)."""

    def __init__(self, obj: torch.Tensor):
        super().__init__(obj.get_device() if obj.device.type == "tpu" else -1)


def synchronize(device: Any = None) -> None:
    """Waits for all work launched on a tpu device (the current one by
    default) to finish; raises the first error that work produced."""
    _lazy_init()
    _device_c.synchronize(_device_index(device))


def platform() -> str:
    """'tpu', 'cuda' or 'cpu': the platform under the tpu device."""
    return runtime.platform()


def get_amp_supported_dtype() -> list[torch.dtype]:
    """Dtypes torch.autocast(device_type="tpu") may cast to."""
    return [torch.bfloat16, torch.float16, torch.float32]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 is native on TPUs and supported by XLA on GPU and CPU."""
    return is_available()


class _DeviceProperties:
    """What torch.tpu.get_device_properties() returns (cf. torch.cuda's)."""

    def __init__(self, index: int, info: Any, plat: str, total_memory: int):
        self.index = index
        self.name = info.kind
        self.kind = info.kind
        self.platform = plat
        self.id = info.id
        self.description = info.description
        self.total_memory = total_memory

    def __repr__(self) -> str:
        return (
            f"_TpuDeviceProperties(name='{self.name}', platform='{self.platform}', "
            f"index={self.index}, total_memory={self.total_memory // (1 << 20)}MB)"
        )


def _device_info(device: Any) -> tuple[int, Any]:
    _lazy_init()
    index = _device_index(device)
    devices = runtime.client().devices()
    _device_c.check_device(index)
    return index, devices[index]


def get_device_name(device: Any = None) -> str:
    """The PJRT device kind ("TPU v5 lite", "NVIDIA H100 80GB HBM3", "cpu")."""
    return _device_info(device)[1].kind


def get_device_properties(device: Any = None) -> _DeviceProperties:
    from torch_tpu.tpu.memory import _total_memory

    index, info = _device_info(device)
    return _DeviceProperties(index, info, platform(), _total_memory(index))


# Streams and events. Each tpu device is one in-order queue; its streams
# (the default one and each new one) are names for that queue, so work on
# them runs in launch order. torch.Stream / torch.Event on "tpu" work through
# the device guard (see csrc/aten/device_guard.cc for the exact semantics).


class Stream(torch.Stream):
    """A new tpu stream on a device (the current device by default). All
    streams of a device run on its one in-order queue, so they never run
    concurrently. ``priority`` is accepted and has no effect.

    ``Stream(stream_id=..., device_index=..., device_type=...)`` wraps an
    existing stream, as current_stream() and default_stream() return them."""

    def __new__(cls, device: Any = None, priority: int = 0, **existing: Any):
        _lazy_init()
        if existing:
            return super().__new__(cls, **existing)
        index = _device_index(device)
        return super().__new__(cls, device=torch.device("tpu", index), priority=priority)

    def __init__(self, device: Any = None, priority: int = 0, **existing: Any):
        pass

    @property
    def priority(self) -> int:
        """Always 0: a tpu device has one queue, so priorities mean nothing."""
        return 0

    @staticmethod
    def priority_range() -> tuple[int, int]:
        """(lowest, highest) stream priority: (0, 0) on tpu."""
        return (0, 0)


def _as_tpu_stream(stream: torch.Stream) -> Stream:
    return Stream(stream_id=stream.stream_id, device_index=stream.device_index, device_type=stream.device_type)


class Event(torch.Event):
    """A torch.Event on the tpu device. Waiting on it waits for everything
    launched on its device so far; a timing event synchronizes its device
    when recorded, so elapsed_time() measures host time between drained
    points."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False,
                interprocess: bool = False):
        _lazy_init()
        return super().__new__(
            cls, device="tpu", enable_timing=enable_timing, blocking=blocking,
            interprocess=interprocess,
        )

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        pass

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Milliseconds from this event to ``end_event`` (a torch.tpu.Event
        or torch.Event, both recorded with enable_timing=True)."""
        # torch.Event's own method takes exactly torch.Event, not a subclass.
        return _device_c.event_elapsed_time(self, end_event)


def current_stream(device: Any = None) -> Stream:
    """The calling thread's current stream of a tpu device."""
    _lazy_init()
    return _as_tpu_stream(torch.accelerator.current_stream(torch.device("tpu", _device_index(device))))


def default_stream(device: Any = None) -> Stream:
    """The default stream of a tpu device (stream id 0)."""
    _lazy_init()
    return Stream(stream_id=0, device_index=_device_index(device),
                  device_type=int(torch._C._autograd.DeviceType.PrivateUse1))


def set_stream(stream: torch.Stream) -> None:
    """Makes `stream` current on its device, and that device current."""
    torch.accelerator.set_stream(stream)


class StreamContext:
    """Context manager making `stream` (and so its device) current, and
    restoring on exit the previous current device's stream and, when
    `stream` is on another device, that device's previous stream (as
    torch.cuda.StreamContext does); None: no change."""

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream
        self._previous: torch.Stream | None = None
        self._previous_on_destination: torch.Stream | None = None

    def __enter__(self) -> torch.Stream | None:
        if self.stream is not None:
            self._previous = torch.accelerator.current_stream()
            if self._previous.device != self.stream.device:
                self._previous_on_destination = torch.accelerator.current_stream(self.stream.device)
            torch.accelerator.set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self._previous_on_destination is not None:
            torch.accelerator.set_stream(self._previous_on_destination)
        if self._previous is not None:
            torch.accelerator.set_stream(self._previous)


def stream(stream: torch.Stream | None) -> StreamContext:
    """Context manager making `stream` current, as torch.cuda.stream does."""
    return StreamContext(stream)


OutOfMemoryError = torch.OutOfMemoryError


def _set_runtime_callbacks() -> None:
    _device_c.set_runtime_callbacks(_lazy_init, is_available)


from torch_tpu.tpu.memory import *  # noqa: E402,F401,F403
from torch_tpu.tpu.random import *  # noqa: E402,F401,F403
from torch_tpu.tpu import amp  # noqa: E402,F401  (torch.tpu.amp, as torch.cuda.amp)
from torch_tpu.tpu.graphs import (  # noqa: E402,F401
    TPUGraph, graph, graph_pool_handle, is_current_stream_capturing, make_graphed_callables)
from torch_tpu.tpu.random import _get_rng_state_offset, _set_rng_state_offset  # noqa: E402,F401

__all__ = [
    "Event",
    "OutOfMemoryError",
    "Stream",
    "TPUGraph",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_generators",
    "default_stream",
    "device",
    "device_count",
    "device_of",
    "empty_cache",
    "get_amp_supported_dtype",
    "get_device_name",
    "get_device_properties",
    "get_per_process_memory_fraction",
    "get_rng_state",
    "get_rng_state_all",
    "graph",
    "graph_pool_handle",
    "init",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "is_current_stream_capturing",
    "is_initialized",
    "make_graphed_callables",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_summary",
    "memory_stats",
    "platform",
    "set_stream",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_per_process_memory_fraction",
    "set_rng_state_all",
    "stream",
    "synchronize",
]
