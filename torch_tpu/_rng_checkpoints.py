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


def _patch_trainer(module) -> None:
    Trainer = module.Trainer
    save, load = Trainer._save_rng_state, Trainer._load_rng_state
    if getattr(save, "_torch_tpu", False):
        return

    def save_rng_state(self, output_dir):
        save(self, output_dir)
        _save_tpu_states(_trainer_file(self, output_dir))

    def load_rng_state(self, checkpoint):
        load(self, checkpoint)
        if checkpoint is not None:
            _load_tpu_states(_trainer_file(self, checkpoint))

    for wrapper, original in ((save_rng_state, save), (load_rng_state, load)):
        wrapper._torch_tpu = True
        wrapper.__doc__ = original.__doc__
    Trainer._save_rng_state = save_rng_state
    Trainer._load_rng_state = load_rng_state


def _accelerate_file(directory, process_index: int) -> str:
    return os.path.join(directory, f"random_states_tpu_{process_index}.pkl")


def _patch_accelerate(checkpointing) -> None:
    save, load = checkpointing.save_accelerator_state, checkpointing.load_accelerator_state
    if getattr(save, "_torch_tpu", False):
        return
    save_signature, load_signature = inspect.signature(save), inspect.signature(load)

    def save_accelerator_state(*args, **kwargs):
        output_dir = save(*args, **kwargs)
        process_index = save_signature.bind(*args, **kwargs).arguments["process_index"]
        _save_tpu_states(_accelerate_file(output_dir, process_index))
        return output_dir

    def load_accelerator_state(*args, **kwargs):
        result = load(*args, **kwargs)
        arguments = load_signature.bind(*args, **kwargs).arguments
        _load_tpu_states(_accelerate_file(arguments["input_dir"], arguments["process_index"]))
        return result

    for wrapper, original in ((save_accelerator_state, save), (load_accelerator_state, load)):
        wrapper._torch_tpu = True
        wrapper.__doc__ = original.__doc__
        wrapper.__signature__ = inspect.signature(original)
    # accelerate.accelerator copies both at its import, right after this runs.
    checkpointing.save_accelerator_state = save_accelerator_state
    checkpointing.load_accelerator_state = load_accelerator_state
    _after_import.rebind(save, save_accelerator_state)
    _after_import.rebind(load, load_accelerator_state)


def install() -> None:
    _after_import.when_imported("transformers.trainer", _patch_trainer)
    _after_import.when_imported("accelerate.checkpointing", _patch_accelerate)
