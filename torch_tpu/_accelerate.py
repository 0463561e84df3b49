"""Accelerate finds the tpu as it finds a CUDA GPU.

Accelerate 1.15 asks only the device kinds it names (CUDA, XPU, NPU, ...),
in two places torch_tpu wraps; both change only what would have been the
CPU-only answer, when the current accelerator is tpu.

- Its default device (``PartialState.default_device``), which Trainer, an
  ``Accelerator`` and ``cpu_offload``'s hooks use, was the CPU: Trainer
  then moved the model to the CPU while transformers (which knows the
  current accelerator) sent batches to the tpu. It is now the tpu;
  ``Accelerator(cpu=True)`` and ``ACCELERATE_TORCH_DEVICE`` still choose.
- Its memory query (``get_max_memory``) found nothing but the CPU, so
  ``from_pretrained(..., device_map="auto")`` ("balanced", "sequential",
  ``infer_auto_device_map``) put every layer on the CPU. With no budget
  given, each tpu device's free memory is added under its index, which is
  what an integer key of a device map means (``torch.device(0)`` is the
  current accelerator's device 0). transformers and diffusers copy the
  function at their import (``from accelerate.utils import
  get_max_memory``), and accelerate.utils from accelerate.utils.modeling,
  so it is wrapped there as soon as that module's code has run.
  Accelerate checks integer keys against CUDA's device count and warned
  "Device 0 is not available" for every tpu device; that warning is
  dropped for indices the tpu has.

Several processes (``accelerate launch``, torchrun) are not covered:
accelerate picks its process group and per-process device from its own
list of distributed types, which has no slot for another accelerator.
"""

from __future__ import annotations

import logging
import re
import sys

import torch

from torch_tpu import _after_import

_log = logging.getLogger(__name__)


def _tpu_is_the_accelerator() -> bool:
    accelerator = torch.accelerator.current_accelerator()
    return accelerator is not None and accelerator.type == "tpu"


def _tpu_free_memory() -> dict[int, int]:
    if not _tpu_is_the_accelerator():
        return {}
    free = {}
    for index in range(torch.tpu.device_count()):
        try:
            free[index] = torch.tpu.mem_get_info(index)[0]
        except RuntimeError as error:  # as accelerate does for a device it cannot query
            _log.info("tpu:%d reports no free memory (%s); leaving it out of device_map='auto'", index, error)
    return free


class _TpuIndicesAvailable(logging.Filter):
    _NOT_AVAILABLE = re.compile(r"Device (\d+) is not available, available devices are \[\]")

    def filter(self, record):
        match = self._NOT_AVAILABLE.fullmatch(record.getMessage())
        if match is None:
            return True
        return not (_tpu_is_the_accelerator() and int(match.group(1)) < torch.tpu.device_count())


def _wrap_max_memory(get_max_memory):
    if getattr(get_max_memory, "_torch_tpu", False):
        return get_max_memory

    def get_max_memory_(max_memory=None):
        found = get_max_memory(max_memory)
        if max_memory is not None or any(isinstance(key, int) for key in found):
            return found
        # Device indices first: accelerate fills devices in the dict's order.
        return {**_tpu_free_memory(), **found}

    get_max_memory_._torch_tpu = True
    get_max_memory_.__doc__ = get_max_memory.__doc__
    get_max_memory_.__wrapped__ = get_max_memory
    return get_max_memory_


def _patch_modeling(modeling) -> None:
    logging.getLogger(modeling.__name__).addFilter(_TpuIndicesAvailable())
    original = modeling.get_max_memory
    wrapped = _wrap_max_memory(original)
    modeling.get_max_memory = wrapped
    # Copies taken before torch_tpu loaded, if it was imported after them
    # (accelerate.utils, transformers, diffusers).
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", {})
        for name, value in list(names.items()):
            if value is original:
                setattr(module, name, wrapped)


def _patch_state(state) -> None:
    default_device = state.PartialState.default_device
    if getattr(default_device.fget, "_torch_tpu", False):
        return

    def default_device_(self) -> torch.device:
        device = default_device.fget(self)
        if device.type == "cpu" and _tpu_is_the_accelerator():
            return torch.device("tpu")
        return device

    default_device_._torch_tpu = True
    default_device_.__doc__ = default_device.__doc__
    state.PartialState.default_device = property(default_device_)


def install() -> None:
    _after_import.when_imported("accelerate.utils.modeling", _patch_modeling)
    _after_import.when_imported("accelerate.state", _patch_state)
