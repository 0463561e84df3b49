"""The tpu device as Dynamo and Inductor see it: a DeviceInterface backed
by torch.tpu.

PyTorch ships a "tpu" interface of its own, written for a different
out-of-tree package (Pallas kernels through JAX); it reports one device and
no streams. Dynamo fills its table lazily (``init_device_reg``), which would
put that one back, so ``register()`` fills the table first and then
replaces the entry.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._dynamo import device_interface as _di

import torch_tpu.tpu as tpu


def _index(device: Any) -> int:
    return tpu._device_index(device)


class TpuInterface(_di.DeviceInterface):
    device = tpu.device  # type: ignore[assignment]
    Event = tpu.Event  # type: ignore[assignment]
    Stream = tpu.Stream  # type: ignore[assignment]

    class Worker:
        """Properties recorded in the main process, for compile workers
        that must not start the runtime themselves."""

        @staticmethod
        def set_device(device: int) -> None:
            _di.caching_worker_current_devices["tpu"] = device

        @staticmethod
        def current_device() -> int:
            if "tpu" in _di.caching_worker_current_devices:
                return _di.caching_worker_current_devices["tpu"]
            return tpu.current_device()

        @staticmethod
        def get_device_properties(device: Any = None) -> Any:
            cached = _di.caching_worker_device_properties.get("tpu")
            if cached is None:
                cached = [tpu.get_device_properties(i) for i in range(tpu.device_count())]
                _di.caching_worker_device_properties["tpu"] = cached
            index = TpuInterface.Worker.current_device() if device is None else _index(device)
            return cached[index]

    current_device = staticmethod(tpu.current_device)
    set_device = staticmethod(tpu.set_device)
    device_count = staticmethod(tpu.device_count)
    is_available = staticmethod(tpu.is_available)
    synchronize = staticmethod(tpu.synchronize)
    stream = staticmethod(tpu.stream)  # type: ignore[assignment]
    current_stream = staticmethod(tpu.current_stream)
    get_device_properties = staticmethod(tpu.get_device_properties)  # type: ignore[assignment]
    memory_allocated = staticmethod(tpu.memory_allocated)
    exchange_device = staticmethod(tpu._exchange_device)

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        return tpu._exchange_device(device)

    @staticmethod
    def set_stream(stream: torch.Stream) -> None:
        tpu.set_stream(stream)

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        tpu.set_stream(torch.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type))

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return 0  # every stream of a device is its one in-order queue

    @staticmethod
    def get_compute_capability(device: Any = None) -> str:
        return tpu.get_device_name(device)

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return tpu.is_bf16_supported(including_emulation)


def register() -> None:
    """Makes Dynamo use TpuInterface for "tpu" (idempotent)."""
    _di.get_registered_device_interfaces()  # runs Dynamo's own registration first
    _di.register_interface_for_device("tpu", TpuInterface)
