"""torch.tpu.amp: the per-device AMP names older CUDA code imports from
torch.cuda.amp (autocast, GradScaler, custom_fwd, custom_bwd), for the tpu
device. As torch.cuda.amp's, they are deprecated: each warns once and
points to torch.amp, which they call with device "tpu"."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import torch

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler"]


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"`torch.tpu.amp.{old}` is deprecated. Please use `{new}` instead.", FutureWarning, stacklevel=3)


class autocast(torch.amp.autocast):
    """``torch.amp.autocast("tpu", ...)``; ``dtype=None`` takes the tpu
    autocast dtype (``torch.get_autocast_dtype("tpu")``)."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype | None = None, cache_enabled: bool = True):
        _deprecated("autocast(args...)", "torch.amp.autocast('tpu', args...)")
        super().__init__("tpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """``torch.amp.GradScaler("tpu", ...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        _deprecated("GradScaler(args...)", "torch.amp.GradScaler('tpu', args...)")
        super().__init__("tpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd: Callable | None = None, *, cast_inputs: torch.dtype | None = None) -> Any:
    """``torch.amp.custom_fwd(..., device_type="tpu")``."""
    _deprecated("custom_fwd(args...)", "torch.amp.custom_fwd(args..., device_type='tpu')")
    return torch.amp.custom_fwd(fwd, device_type="tpu", cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable) -> Callable:
    """``torch.amp.custom_bwd(..., device_type="tpu")``."""
    _deprecated("custom_bwd(args...)", "torch.amp.custom_bwd(args..., device_type='tpu')")
    return torch.amp.custom_bwd(bwd, device_type="tpu")
