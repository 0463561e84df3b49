"""Helpers for the StableHLO builder tests (tests/test_hlo_*.py): build a
program from a Python function, run it through the `run` fixture, and move
bf16 values in and out as uint16 bit patterns."""

from __future__ import annotations

import numpy as np
import torch

from torch_tpu._C import hlo

# NumPy dtype -> the builder's short element type name.
DEVICE_DTYPE = {
    np.dtype(np.bool_): "pred",
    np.dtype(np.int8): "s8", np.dtype(np.int16): "s16",
    np.dtype(np.int32): "s32", np.dtype(np.int64): "s64",
    np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "c64", np.dtype(np.complex128): "c128",
}


def build(fn, *specs, name="test", num_replicas=None):
    """Module text of @main(*specs) -> fn(builder, *params).

    specs are (dtype, shape) pairs; fn returns one Value or a sequence."""
    b = hlo.Builder(name)
    if num_replicas is not None:
        b.set_num_replicas(num_replicas)
    params = [b.parameter(dtype, list(shape)) for dtype, shape in specs]
    out = fn(b, *params)
    if isinstance(out, hlo.Value):
        out = [out]
    return b.build(list(out))


def call(run, fn, *arrays, dtypes=None):
    """Builds @main over the arrays' types, runs it, returns numpy outputs.

    dtypes overrides an array's device type (None keeps the NumPy one);
    "bf16" takes uint16 bit patterns."""
    arrays = [np.asarray(a) for a in arrays]
    dtypes = list(dtypes) if dtypes is not None else [None] * len(arrays)
    specs = [(d or DEVICE_DTYPE[a.dtype], a.shape) for a, d in zip(arrays, dtypes)]
    return run(build(fn, *specs), *arrays, dtypes=dtypes)


def bf16_bits(values) -> np.ndarray:
    """float values -> bfloat16 (round to nearest even, by torch) as uint16 bits."""
    t = torch.as_tensor(np.asarray(values, dtype=np.float32)).to(torch.bfloat16)
    return t.view(torch.int16).numpy().view(np.uint16)


def from_bf16_bits(bits) -> np.ndarray:
    """uint16 bit patterns -> float32 values."""
    bits = np.ascontiguousarray(bits, dtype=np.uint16)
    return torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16).float().numpy()
