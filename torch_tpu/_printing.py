"""Printing tpu tensors.

PyTorch formats a tensor's values with a dozen tensor ops (abs, masked_select,
max, ...). On a compiling backend each would be a program of its own, so, as
PyTorch already does for XLA and lazy tensors, the values are formatted from a
CPU copy; the device, dtype and autograd suffixes still come from the tpu
tensor itself.

A tensor over the print threshold, which PyTorch shows summarized, is not
copied whole: only the elements printed travel (a 2^36-element expanded view
printed at once on CPU and ran the host out of memory here).
"""

from __future__ import annotations

import torch
import torch._tensor_str as _tensor_str

_format_values = _tensor_str._tensor_str


def _printed_part(t: torch.Tensor, edgeitems: int) -> torch.Tensor:
    """`t` with every dimension longer than 2 * edgeitems cut to its first
    and last `edgeitems` elements around one more, which stands for the
    elided middle (the summarized printout shows "..." there, never it)."""
    for d in range(t.dim()):
        n = t.size(d)
        if n > 2 * edgeitems + 1:
            t = torch.cat([t.narrow(d, 0, edgeitems + 1), t.narrow(d, n - edgeitems, edgeitems)], d)
    return t


def _format_values_on_cpu(self, indent):
    if self.device.type != "tpu":
        return _format_values(self, indent)
    opts = _tensor_str.PRINT_OPTS
    if self.numel() <= opts.threshold:
        return _format_values(self.detach().to("cpu"), indent)
    part = _printed_part(self.detach(), opts.edgeitems).to("cpu")
    return _format_summarized(part, indent)


_FLOAT8 = (torch.float8_e5m2, torch.float8_e5m2fnuz, torch.float8_e4m3fn, torch.float8_e4m3fnuz)


def _format_summarized(t: torch.Tensor, indent: int) -> str:
    """PyTorch's formatting of `t` as summarized, whatever its size: the part
    cut from a large tensor may be under the print threshold. The steps of
    `_tensor_str` with its summarize decision taken here, so that the global
    print options are never changed (another thread may be printing)."""
    if t.is_neg():
        t = t.resolve_neg()
    if t.dtype in _FLOAT8:
        t = t.half()
    formatter, summarized = _tensor_str._Formatter, _tensor_str.get_summarized_data
    if t.dtype.is_complex:
        t = t.resolve_conj()
        return _tensor_str._tensor_str_with_formatter(
            t, indent, True, formatter(summarized(t.real)), formatter(summarized(t.imag))
        )
    return _tensor_str._tensor_str_with_formatter(t, indent, True, formatter(summarized(t)))


def install() -> None:
    if _tensor_str._tensor_str is not _format_values_on_cpu:
        _tensor_str._tensor_str = _format_values_on_cpu
