"""Corrections of PyTorch decompositions that graph capture applies to tpu
tensors whatever torch_tpu's own decomposition table says.

A few of PyTorch's decompositions are registered at the op's Autograd key
(``py_impl(DispatchKey.Autograd)``), so AOTAutograd traces through them
even for ops that have a tpu kernel. Where such a decomposition computes a
wrong value, tpu tensors get a correct one here; other devices keep
PyTorch's.

- ``aten.multilabel_margin_loss_forward`` (torch 2.13): the decomposition
  never masks the target slots after the first -1, so each of them adds the
  hinge terms of class 0: compiled losses and gradients differed from eager
  whenever a target was terminated by -1, its normal use (PyTorch issue
  141017, fixed after 2.13).
"""

from __future__ import annotations

from types import ModuleType

import torch
from torch._C import DispatchKey

_MEAN, _SUM = 1, 2  # torch.nn._reduction's enum values


def multilabel_margin_loss_forward(input, target, reduction):
    """Sum over each sample's target labels j (those before the first -1)
    and its non-target classes i of max(0, 1 - x[j] + x[i]) / C."""
    torch._check(input.dim() <= 2 and (input.dim() == 0 or input.shape[-1] != 0),
                 lambda: "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                         f"{input.shape}")
    torch._check(target.shape == input.shape,
                 lambda: f"inconsistent target size: {target.shape} for input of size: {input.shape}")
    x = torch.atleast_2d(input)
    t = torch.atleast_2d(target)
    classes = x.shape[1]
    idx = torch.arange(classes, device=t.device)
    end = torch.where(t == -1, idx, classes).amin(dim=-1, keepdim=True)
    is_label = idx < end  # [N, slots]: slot j holds a target label
    u = torch.gather(x, -1, torch.where(is_label, t, 0))
    is_target = (idx == torch.where(is_label, t, -1).unsqueeze(-1)).any(dim=1)  # [N, classes]
    hinge = (1.0 - u.unsqueeze(-1) + x.unsqueeze(1)).clamp_min(0) / classes  # [N, slots, classes]
    hinge = torch.where(is_label.unsqueeze(-1) & ~is_target.unsqueeze(1), hinge, 0)
    per_sample = hinge.sum(dim=(1, 2))
    if reduction == _MEAN:
        loss = per_sample.mean()
    elif reduction == _SUM:
        loss = per_sample.sum()
    else:
        loss = per_sample if input.dim() == 2 else per_sample.reshape(())
    return loss, is_target.to(input.dtype).reshape(target.shape)


def _on_tpu_else(fixed, original):
    def dispatch(input, *args, **kwargs):
        if input.device.type == "tpu":
            return fixed(input, *args, **kwargs)
        return original(input, *args, **kwargs)

    return dispatch


def register(module: ModuleType) -> None:
    """Called once torch._decomp.decompositions is imported (it registers
    the decompositions these replace for tpu)."""
    op = torch.ops.aten.multilabel_margin_loss_forward.default
    original = op.py_kernels.get(DispatchKey.Autograd)
    if original is None or getattr(original, "_torch_tpu", False):
        return
    dispatch = _on_tpu_else(multilabel_margin_loss_forward, original)
    dispatch._torch_tpu = True
    op.py_kernels[DispatchKey.Autograd] = dispatch
    op._dispatch_cache.clear()
