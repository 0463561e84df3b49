"""torch.nn.DataParallel over tpu devices.

DataParallel, its autograd functions and parallel_apply reach the device
through ``torch.accelerator`` and work on any accelerator, except four
functions of ``torch.nn.parallel.comm`` that call CUDA's own bindings
(``torch._C._broadcast``, ``_broadcast_coalesced``, ``_scatter``,
``_gather``): a CPU build of PyTorch has none of them ("module 'torch._C'
has no attribute '_scatter'") and a CUDA build's would make CUDA tensors.
``install`` wraps those four: where the tensors are tpu tensors, or CPU
tensors bound for the devices DataParallel picks when the tpu is the
accelerator, they are copied with ``Tensor.to``; anything else goes to
PyTorch's functions unchanged. ``reduce_add`` (the gradients' way back,
through ``reduce_add_coalesced``) is device-generic in PyTorch but asks
NCCL first, which warns on a CPU build; it is wrapped the same way. And
``parallel_apply`` runs each replica under the caller's tpu autocast state
(PyTorch's carries over CUDA's only).

What the wrappers return matches CUDA's bindings: the copy for the source
device is the source tensor itself, a scattered chunk already on its device
is a view, and broadcasts coalesce small tensors of a dtype into one buffer
per device (one copy instead of one per parameter).
"""

from __future__ import annotations

import importlib

import torch
from torch._utils import (
    _flatten_dense_tensors,
    _get_available_device_type,
    _get_device_index,
    _take_tensors,
    _unflatten_dense_tensors,
)

from torch_tpu._after_import import wrap

_TPU = "tpu"


def _bound_for_tpu(tensors) -> bool:
    """Whether these tensors travel between tpu devices: the first one not
    on the CPU decides, and all-CPU inputs (a batch DataParallel scatters)
    go where DataParallel itself puts modules."""
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.device.type != "cpu":
            return t.device.type == _TPU
    return _get_available_device_type() == _TPU


def _device(index) -> torch.device:
    return torch.device(_TPU, _get_device_index(index))


def _to(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    # A tensor already there is returned as it is, as CUDA's bindings do.
    return t.to(device, non_blocking=True)


def _broadcast(original, tensor, devices=None, *, out=None):
    if not _bound_for_tpu([tensor, *(out or [])]):
        return original(tensor, devices, out=out)
    if not ((devices is None) ^ (out is None)):
        raise RuntimeError(
            f"Exactly one of 'devices' and 'out' must be specified, but got devices={devices} and out={out}")
    if devices is not None:
        return tuple(_to(tensor, _device(d)) for d in devices)
    for o in out:
        if o.shape != tensor.shape:
            raise RuntimeError(f"Expected all output tensors to have the same shape as the source {tuple(tensor.shape)}, "
                               f"but got {tuple(o.shape)}")
        o.copy_(tensor)
    return tuple(out)


def _broadcast_coalesced(original, tensors, devices, buffer_size=10485760):
    tensors = list(tensors)
    if not _bound_for_tpu(tensors):
        return original(tensors, devices, buffer_size)
    devices = [_device(d) for d in devices]
    if not devices:
        return ()
    for t in tensors:
        if t.device != devices[0]:
            raise RuntimeError(f"all tensors must be on devices[0]: {devices[0]}, but got one on {t.device}")
    outputs = [list(tensors)] + [[None] * len(tensors) for _ in devices[1:]]
    # Small tensors of one dtype travel as one flat buffer per device (their
    # copies are views of it, as CUDA's coalesced broadcast gives them);
    # tensors larger than the buffer go alone.
    position = {id(t): i for i, t in enumerate(tensors)}
    for chunk in _take_tensors(tensors, buffer_size):
        flat = _flatten_dense_tensors(chunk) if len(chunk) > 1 else None
        for d, device in enumerate(devices[1:], start=1):
            if flat is None:
                copies = [chunk[0].to(device)]
            else:
                copies = _unflatten_dense_tensors(flat.to(device), chunk)
            for t, copy in zip(chunk, copies):
                outputs[d][position[id(t)]] = copy
    return tuple(tuple(o) for o in outputs)


def _scatter(original, tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
    if not _bound_for_tpu([tensor, *(out or [])]):
        return original(tensor, devices, chunk_sizes, dim, streams, out=out)
    if devices is not None:
        if out is not None:
            raise RuntimeError(f"'devices' must not be specified when 'out' is specified, but got devices={devices}")
        devices = [_device(d) for d in devices]
        if chunk_sizes is not None:
            chunk_sizes = list(chunk_sizes)
            if len(chunk_sizes) != len(devices):
                raise RuntimeError(f"Expected devices and chunk_sizes to be of same length, but got len(devices) = "
                                   f"{len(devices)} and len(chunk_sizes) = {len(chunk_sizes)}")
            if sum(chunk_sizes) != tensor.size(dim):
                raise RuntimeError(f"Expected chunk sizes to sum to {tensor.size(dim)}, but got {sum(chunk_sizes)}")
            chunks = tensor.split(chunk_sizes, dim)
        else:
            chunks = tensor.chunk(len(devices), dim)
        return tuple(_to(c, devices[i]) for i, c in enumerate(chunks))
    if out is None:
        raise RuntimeError("Exactly one of 'devices' and 'out' must be specified")
    if chunk_sizes is not None:
        raise RuntimeError(f"'chunk_sizes' must not be specified when 'out' is specified, but got "
                           f"chunk_sizes={chunk_sizes}")
    chunks = tensor.split([o.size(dim) for o in out], dim)
    for o, c in zip(out, chunks):
        o.copy_(c)
    return tuple(out)


def _gather(original, tensors, dim=0, destination=None, *, out=None):
    tensors = list(tensors)
    if not _bound_for_tpu(tensors + ([out] if out is not None else [])):
        return original(tensors, dim, destination, out=out)
    if not tensors:
        raise RuntimeError("Expected at least one tensor to gather from")
    if out is not None:
        if destination is not None:
            raise RuntimeError(f"'destination' must not be specified when 'out' is specified, but got "
                               f"destination={destination}")
        torch.cat([t.to(out.device) for t in tensors], dim, out=out)
        return out
    # -1: the CPU; None: the current tpu device.
    index = _get_device_index(destination, allow_cpu=True, optional=True)
    target = torch.device("cpu") if index == -1 else torch.device(_TPU, index)
    return torch.cat([t.to(target) for t in tensors], dim)


def _reduce_add(original, inputs, destination=None):
    # PyTorch's own is device-generic but first asks NCCL, which warns
    # "PyTorch is not compiled with NCCL support" on a CPU build.
    inputs = list(inputs)
    if not _bound_for_tpu(inputs):
        return original(inputs, destination)
    index = _get_device_index(destination, optional=True)
    root = None
    for i, t in enumerate(inputs):
        if t.device.type == "cpu":
            raise AssertionError(f"reduce_add expects all inputs to be on GPUs, but input {i} is on CPU")
        if t.get_device() == index:
            root = i
        if t.size() != inputs[0].size():
            got, expected = ("x".join(str(n) for n in s) for s in (t.size(), inputs[0].size()))
            raise ValueError(f"input {i} has invalid size: got {got}, but expected {expected}")
    if root is None:
        raise RuntimeError("reduce_add expects destination to be on the same GPU with one of the tensors")
    if len(inputs) == 1:
        return inputs[0]
    result = inputs[root].clone()
    for i, t in enumerate(inputs):
        if i != root:
            result.add_(t.to(result.device, non_blocking=True))
    return result


class _UnderAutocast:
    """A replica that runs under the caller's tpu autocast state in
    parallel_apply's worker thread. Autocast is per thread, and PyTorch's
    parallel_apply carries over only CUDA's (``torch.is_autocast_enabled()``
    without a device), so replicas ran in float32 under
    ``torch.autocast("tpu")``."""

    def __init__(self, module, dtype: torch.dtype, cache_enabled: bool):
        self.module, self.dtype, self.cache_enabled = module, dtype, cache_enabled

    def __call__(self, *args, **kwargs):
        with torch.autocast(_TPU, dtype=self.dtype, cache_enabled=self.cache_enabled):
            return self.module(*args, **kwargs)


def _parallel_apply(original, modules, inputs, kwargs_tup=None, devices=None):
    if _get_available_device_type() == _TPU and torch.is_autocast_enabled(_TPU):
        dtype, cache = torch.get_autocast_dtype(_TPU), torch.is_autocast_cache_enabled()
        modules = [_UnderAutocast(m, dtype, cache) for m in modules]
    return original(modules, inputs, kwargs_tup, devices)


def install() -> None:
    from torch.nn.parallel import comm

    for name, tpu_version in (("broadcast", _broadcast), ("broadcast_coalesced", _broadcast_coalesced),
                              ("scatter", _scatter), ("gather", _gather), ("reduce_add", _reduce_add)):
        wrap(comm, name, tpu_version)
    import torch.nn.parallel

    # DataParallel calls the name its module imported (the package's
    # `data_parallel` attribute is the function of that name, not the
    # module); the package's is the one users import.
    wrap(importlib.import_module("torch.nn.parallel.data_parallel"), "parallel_apply", _parallel_apply)
    wrap(torch.nn.parallel, "parallel_apply", _parallel_apply)
