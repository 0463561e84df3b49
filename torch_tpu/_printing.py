"""Printing tpu tensors.

PyTorch formats a tensor's values with a dozen tensor ops (abs, masked_select,
max, ...). On a compiling backend each would be a program of its own, so, as
PyTorch already does for XLA and lazy tensors, the values are formatted from a
CPU copy; the device, dtype and autograd suffixes still come from the tpu
tensor itself.
"""

from __future__ import annotations

import torch
import torch._tensor_str as _tensor_str

_format_values = _tensor_str._tensor_str


def _format_values_on_cpu(self, indent):
    if self.device.type == "tpu":
        self = self.detach().to("cpu")
    return _format_values(self, indent)


def install() -> None:
    if _tensor_str._tensor_str is not _format_values_on_cpu:
        _tensor_str._tensor_str = _format_values_on_cpu
