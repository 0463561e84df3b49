"""Shape rules for fake tensors where PyTorch's are CUDA's.

Graph capture (Dynamo, AOTAutograd, torch.export) runs every op on fake
tensors through PyTorch's meta functions, some of which carry a CUDA
kernel's restrictions. Where the tpu kernel accepts more, a fake rule for tpu
tensors says so; other devices keep PyTorch's rule.

- ``aten._grouped_mm``: the meta function accepts bfloat16 only (cuBLAS's
  grouped GEMM); on tpu every floating dtype runs (PyTorch's composite over
  mm), so float32 mixture-of-experts layers compile as they run in eager.
- ``aten._sample_dirichlet`` and ``aten.binomial``: PyTorch has no meta
  function for them, and its fallback runs the real op on real tensors,
  which would draw from the device generator while tracing and shift every
  later random number (compiled Beta / Dirichlet / Binomial sampling would
  then differ from eager for the same seed).
"""

from __future__ import annotations

from types import ModuleType

import torch


def _grouped_mm(fake_mode, func, mat_a, mat_b, offs=None, bias=None, out_dtype=None):
    both_bf16 = mat_a.dtype == torch.bfloat16 and mat_b.dtype == torch.bfloat16
    if mat_a.fake_device.type != "tpu" or both_bf16:
        return NotImplemented  # PyTorch's meta function decides
    torch._check(mat_a.dtype.is_floating_point and mat_a.dtype == mat_b.dtype,
                 lambda: f"grouped_mm: expected mat_a and mat_b of one floating dtype, got {mat_a.dtype} and "
                         f"{mat_b.dtype}")
    torch._check(mat_a.dim() in (2, 3) and mat_b.dim() in (2, 3),
                 lambda: f"grouped_mm: multiplicands must be 2-D or 3-D, got {mat_a.dim()}-D and {mat_b.dim()}-D")
    torch._check(mat_a.size(-1) == mat_b.size(-2) or (mat_a.dim() == 2 and mat_b.dim() == 2),
                 lambda: "grouped_mm: contraction dimension of mat_a and mat_b must match")
    torch._check((offs is not None) == (mat_a.dim() == 2 or mat_b.dim() == 2),
                 lambda: "grouped_mm: offsets are needed exactly when a multiplicand is 2-D")
    torch._check(bias is None, lambda: "grouped_mm: bias is not supported")
    from torch._meta_registrations import _create_grouped_mm_output_tensor

    with fake_mode:
        return _create_grouped_mm_output_tensor(mat_a, mat_b, offs, out_dtype)


def _sample_dirichlet(fake_mode, func, alpha, generator=None):
    if alpha.fake_device.type != "tpu":
        return NotImplemented
    with fake_mode:
        return torch.empty_like(alpha, memory_format=torch.contiguous_format)


def _binomial(fake_mode, func, count, prob, generator=None):
    if count.fake_device.type != "tpu":
        return NotImplemented
    torch._check_value(count.dtype.is_floating_point,
                       lambda: f"binomial only supports floating-point dtypes for count, got: {count.dtype}")
    torch._check_value(prob.dtype.is_floating_point,
                       lambda: f"binomial only supports floating-point dtypes for prob, got: {prob.dtype}")
    with fake_mode:
        return torch.empty(torch.broadcast_shapes(count.shape, prob.shape), dtype=count.dtype, device=count.device)


def register(fake_impls: ModuleType) -> None:
    fake_impls.register_op_impl(torch.ops.aten._grouped_mm.default)(_grouped_mm)
    fake_impls.register_op_impl(torch.ops.aten._sample_dirichlet.default)(_sample_dirichlet)
    fake_impls.register_op_impl(torch.ops.aten.binomial.default)(_binomial)
