"""safetensors reads straight to a tpu device.

safetensors checks device names against the ones it knows (cpu, cuda, mps,
xpu, ...): ``load_file(path, device="tpu")`` raised "device tpu is
invalid", and so did Accelerate's checkpoint loading and disk offload
(``load_checkpoint_and_dispatch``, ``device_map`` with "disk"), which pass
the target device through to ``safe_open``. For a tpu device the file is
opened on the CPU, memory-mapped as safetensors does, and each tensor is
moved to the device as it is read (so the host holds one at a time). Every other device goes to safetensors
unchanged.

safetensors may be imported before or after torch_tpu: ``install`` wraps it
if it is loaded, and otherwise once it is imported.
"""

from __future__ import annotations

import sys

import torch

from torch_tpu import _after_import


def _tpu_device(device) -> torch.device | None:
    if isinstance(device, (str, torch.device)):
        try:
            device = torch.device(device)
        except RuntimeError:
            return None
        return device if device.type == "tpu" else None
    return None


class _OnDevice:
    """A CPU ``safe_open`` handle whose tensors land on a tpu device."""

    def __init__(self, handle, device: torch.device):
        self._handle = handle
        self._device = device

    def __enter__(self):
        self._handle.__enter__()
        return self

    def __exit__(self, *exc):
        return self._handle.__exit__(*exc)

    def get_tensor(self, name):
        return self._handle.get_tensor(name).to(self._device)

    def get_tensors(self):  # one at a time: one tensor's worth of host memory
        return {name: self._handle.get_tensor(name).to(self._device) for name in self._handle.offset_keys()}

    def get_slice(self, name):
        return _SliceOnDevice(self._handle.get_slice(name), self._device)

    def __getattr__(self, name):  # keys(), metadata(), offset_keys()
        return getattr(self._handle, name)


class _SliceOnDevice:
    def __init__(self, piece, device: torch.device):
        self._slice = piece
        self._device = device

    def __getitem__(self, index):
        return self._slice[index].to(self._device)

    def __getattr__(self, name):  # get_shape(), get_dtype()
        return getattr(self._slice, name)


def _safe_open(original, filename, framework, device="cpu", *args, **kwargs):
    target = _tpu_device(device) if framework in ("pt", "torch", "pytorch") else None
    if target is None:
        return original(filename, framework, device, *args, **kwargs)
    return _OnDevice(original(filename, framework, "cpu", *args, **kwargs), target)


def _patch_loaded() -> None:
    # Modules holding their own reference to safe_open from an earlier import.
    for name in ("safetensors", "safetensors.torch", "accelerate.utils.modeling", "accelerate.utils.offload"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "safe_open"):
            _after_import.wrap(module, "safe_open", _safe_open)


def install() -> None:
    _after_import.when_imported("safetensors", lambda _module: _patch_loaded())
