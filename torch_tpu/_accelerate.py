"""Accelerate finds the tpu as it finds a CUDA GPU.

Accelerate 1.15 asks only the device kinds it names (CUDA, XPU, NPU, ...),
in three places torch_tpu wraps; each changes only what would have been
the answer for a machine without an accelerator, when the current
accelerator is tpu.

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
- Several processes (``accelerate launch``, torchrun): accelerate chooses
  a distributed type and a c10d backend from the device kinds it names,
  found none, and ran each process as a job of its own on ``tpu:0`` (its
  process group made, gradients never averaged, every rank loading the
  whole dataset). Such a run is now accelerate's generic torch.distributed
  type, ``MULTI_GPU`` (DDP, sharded data loaders, gathers and reductions
  through ``torch.distributed``), on the ``tpu`` backend, each process on
  ``tpu:<local rank>``; the type's one CUDA-specific step, choosing the
  process's device, is the one wrapped.
"""

from __future__ import annotations

import logging
import os
import re

import torch

from torch_tpu import _after_import

_log = logging.getLogger(__name__)


def tpu_is_the_accelerator() -> bool:
    accelerator = torch.accelerator.current_accelerator()
    return accelerator is not None and accelerator.type == "tpu"


def _tpu_free_memory() -> dict[int, int]:
    if not tpu_is_the_accelerator():
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
        return not (tpu_is_the_accelerator() and int(match.group(1)) < torch.tpu.device_count())


def _get_max_memory(original, max_memory=None):
    found = original(max_memory)
    if max_memory is not None or any(isinstance(key, int) for key in found):
        return found
    # Device indices first: accelerate fills devices in the dict's order.
    return {**_tpu_free_memory(), **found}


def _patch_modeling(modeling) -> None:
    logging.getLogger(modeling.__name__).addFilter(_TpuIndicesAvailable())
    # accelerate.utils, transformers and diffusers copy it.
    _after_import.wrap(modeling, "get_max_memory", _get_max_memory, copies=True)


def _patch_state(state) -> None:
    default_device = state.PartialState.default_device
    if getattr(default_device.fget, "_torch_tpu", False):
        return

    def default_device_(self) -> torch.device:
        device = default_device.fget(self)
        if device.type == "cpu" and tpu_is_the_accelerator():
            return torch.device("tpu")
        return device

    default_device_._torch_tpu = True
    default_device_.__doc__ = default_device.__doc__
    state.PartialState.default_device = property(default_device_)


def _patch_distributed(state) -> None:
    DistributedType = state.DistributedType

    def prepare_backend(original, self, cpu=False, sagemaker_dp=False, backend=None):
        chosen, kind = original(self, cpu, sagemaker_dp, backend)
        launched = int(os.environ.get("LOCAL_RANK", -1)) != -1
        if kind == DistributedType.NO and launched and not cpu and not sagemaker_dp and tpu_is_the_accelerator():
            return backend or "tpu", DistributedType.MULTI_GPU
        return chosen, kind

    def set_device(original, self):
        on_tpu = self.device is None and self.distributed_type == DistributedType.MULTI_GPU and \
            not torch.cuda.is_available() and tpu_is_the_accelerator()
        if not on_tpu:
            return original(self)
        self.device = torch.device("tpu", self.local_process_index % torch.tpu.device_count())
        torch.tpu.set_device(self.device)

    _after_import.wrap(state.PartialState, "_prepare_backend", prepare_backend)
    _after_import.wrap(state.PartialState, "set_device", set_device)


def install() -> None:
    _after_import.when_imported("accelerate.utils.modeling", _patch_modeling)
    _after_import.when_imported("accelerate.state", _patch_state)
    _after_import.when_imported("accelerate.state", _patch_distributed)
