"""Seeds and RNG state of the tpu devices, shaped like torch.cuda.random.

Each device has a default generator (csrc/aten/generator.h): a 64-bit seed
and a 64-bit offset of a counter-based generator. Its state is a 16-byte
uint8 CPU tensor: the seed then the offset. Seeding before the runtime
exists is queued and applied when it is initialized.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch

__all__ = [
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "set_rng_state",
    "set_rng_state_all",
]


def _tpu():
    import torch_tpu.tpu as tpu

    return tpu


def _generator(index: int) -> torch.Generator:
    tpu = _tpu()
    tpu._device_c.check_device(index)  # "invalid device ordinal" for a bad index
    return tpu.default_generators[index]


def get_rng_state(device: Any = "tpu") -> torch.Tensor:
    """The RNG state of a tpu device (uint8 CPU tensor of 16 bytes)."""
    tpu = _tpu()
    tpu._lazy_init()
    return _generator(tpu._device_index(device)).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    """The RNG states of all tpu devices."""
    tpu = _tpu()
    return [get_rng_state(i) for i in range(tpu.device_count())]


def set_rng_state(new_state: torch.Tensor, device: Any = "tpu") -> None:
    """Sets the RNG state of a tpu device (the current one by default)."""
    tpu = _tpu()
    if not isinstance(new_state, torch.Tensor):
        raise TypeError(f"expected a torch.ByteTensor, got {type(new_state).__name__}")
    with torch._C._DisableFuncTorch():
        state = new_state.clone(memory_format=torch.contiguous_format)

    def cb():
        _generator(tpu._device_index(device)).set_state(state)

    tpu._lazy_call(cb)


def _get_rng_state_offset(device: Any = "tpu") -> int:
    """The offset of a tpu device's generator (torch.cuda's private helper
    of the same name, which checkpointing code calls)."""
    tpu = _tpu()
    tpu._lazy_init()
    return _generator(tpu._device_index(device)).get_offset()


def _set_rng_state_offset(offset: int, device: Any = "tpu") -> None:
    """Sets the offset of a tpu device's generator."""
    tpu = _tpu()
    offset = int(offset)

    def cb():
        _generator(tpu._device_index(device)).set_offset(offset)

    tpu._lazy_call(cb)


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed: int) -> None:
    """Seeds the current tpu device (queued until initialization)."""
    tpu = _tpu()
    seed = int(seed)

    def cb():
        _generator(tpu.current_device()).manual_seed(seed)

    tpu._lazy_call(cb, seed=True)


def manual_seed_all(seed: int) -> None:
    """Seeds every tpu device (queued until initialization)."""
    tpu = _tpu()
    seed = int(seed)

    def cb():
        for gen in tpu.default_generators:
            gen.manual_seed(seed)

    tpu._lazy_call(cb, seed_all=True)


def seed() -> None:
    """Seeds the current tpu device with a nondeterministic number."""
    tpu = _tpu()

    def cb():
        _generator(tpu.current_device()).seed()

    tpu._lazy_call(cb)


def seed_all() -> None:
    """Seeds every tpu device with one nondeterministic number."""
    tpu = _tpu()

    def cb():
        gens = tpu.default_generators
        if gens:
            gens[0].seed()
            for gen in gens[1:]:
                gen.manual_seed(gens[0].initial_seed())

    tpu._lazy_call(cb)


def initial_seed() -> int:
    """The seed of the current tpu device's default generator."""
    tpu = _tpu()
    tpu._lazy_init()
    return _generator(tpu.current_device()).initial_seed()
