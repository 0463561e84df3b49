"""Trainer and accelerate checkpoints keep the tpu generators' states.

Hugging Face's ``Trainer`` (``_save_rng_state`` / ``_load_rng_state``) and
accelerate's ``save_state`` / ``load_state`` save the random states of the
device kinds they name (CUDA, XPU, NPU, ...): a run resumed from a
checkpoint on tpu drew other dropout masks than the uninterrupted run. Each
now also saves every tpu device's generator state
(``torch.tpu.get_rng_state_all()``) in a file of its own beside theirs,
``rng_state_tpu[_<process>].pth`` / ``random_states_tpu_<process>.pkl``, and
restores it on resume. A file of its own (a list of byte tensors) loads with
``weights_only=True`` and leaves the libraries' files as they write them; a
checkpoint without it (saved elsewhere) resumes as before.
"""

from __future__ import annotations

import inspect
import os

import torch

from torch_tpu import _after_import
from torch_tpu._accelerate import tpu_is_the_accelerator


def _save_tpu_states(path: str) -> None:
    if tpu_is_the_accelerator():
        torch.save(torch.tpu.get_rng_state_all(), path)


def _load_tpu_states(path: str) -> None:
    if tpu_is_the_accelerator() and os.path.isfile(path):
        states = torch.load(path, weights_only=True)
        # A checkpoint of a run on more devices restores the ones there are.
        for index, state in enumerate(states[: torch.tpu.device_count()]):
            torch.tpu.set_rng_state(state, index)


def _trainer_file(trainer, directory: str) -> str:
    # Named as the Trainer names its own RNG file, per process when distributed.
    name = "rng_state_tpu.pth" if trainer.args.world_size <= 1 else \
        f"rng_state_tpu_{trainer.args.process_index}.pth"
    return os.path.join(directory, name)


def _save_trainer_rng_state(original, self, output_dir):
    original(self, output_dir)
    _save_tpu_states(_trainer_file(self, output_dir))


def _load_trainer_rng_state(original, self, checkpoint):
    original(self, checkpoint)
    if checkpoint is not None:
        _load_tpu_states(_trainer_file(self, checkpoint))


def _patch_trainer(module) -> None:
    _after_import.wrap(module.Trainer, "_save_rng_state", _save_trainer_rng_state)
    _after_import.wrap(module.Trainer, "_load_rng_state", _load_trainer_rng_state)


def _accelerate_file(directory, process_index: int) -> str:
    return os.path.join(directory, f"random_states_tpu_{process_index}.pkl")


def _save_accelerator_state(original, *args, **kwargs):
    output_dir = original(*args, **kwargs)
    process_index = inspect.signature(original).bind(*args, **kwargs).arguments["process_index"]
    _save_tpu_states(_accelerate_file(output_dir, process_index))
    return output_dir


def _load_accelerator_state(original, *args, **kwargs):
    result = original(*args, **kwargs)
    arguments = inspect.signature(original).bind(*args, **kwargs).arguments
    _load_tpu_states(_accelerate_file(arguments["input_dir"], arguments["process_index"]))
    return result


def _patch_accelerate(checkpointing) -> None:
    # accelerate.accelerator copies both at its import, right after this runs.
    for name, tpu_version in (("save_accelerator_state", _save_accelerator_state),
                              ("load_accelerator_state", _load_accelerator_state)):
        _after_import.wrap(checkpointing, name, tpu_version, copies=True)


def install() -> None:
    _after_import.when_imported("transformers.trainer", _patch_trainer)
    _after_import.when_imported("accelerate.checkpointing", _patch_accelerate)
