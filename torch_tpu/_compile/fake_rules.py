"""Shape rules for fake tensors where PyTorch's are CUDA's.

Graph capture (Dynamo, AOTAutograd, torch.export) runs every op on fake
tensors through PyTorch's meta functions, some of which carry a CUDA
kernel's restrictions. Where the tpu kernel accepts more, a fake rule for tpu
tensors says so; other devices keep PyTorch's rule.

- ``aten._grouped_mm``: the meta function accepts bfloat16 only (cuBLAS's
  grouped GEMM); on tpu every floating dtype runs (PyTorch's composite over
  mm), so float32 mixture-of-experts layers compile as they run in eager.
- convolutions (forward and backward): PyTorch predicts a row-major result
  for a device whose convolution backend it does not know; the tpu kernels
  keep the channels_last format of the input (or, for a row-major input, of
  the weight), as CPU and CUDA do, and the prediction says the same, so a
  graph's ``view`` of a result traced as row-major cannot meet a
  channels_last one.
- ``aten._sample_dirichlet`` and ``aten.binomial``: PyTorch has no meta
  function for them, and its fallback runs the real op on real tensors,
  which would draw from the device generator while tracing and shift every
  later random number (compiled Beta / Dirichlet / Binomial sampling would
  then differ from eager for the same seed).
"""

from __future__ import annotations

from types import ModuleType

import torch
from torch.fx.operator_schemas import _normalize_function_or_error


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


_CONVOLUTIONS = (
    torch.ops.aten.convolution.default,
    torch.ops.aten._convolution.default,
    torch.ops.aten._convolution.deprecated,
    torch.ops.aten.convolution_backward.default,
)


def _in_conv_layout(fake_mode, result, input_, weight):
    """Each result in the memory format the tpu kernels give it (csrc/aten/
    register_conv.cc, in_conv_layout)."""
    from torch._prims_common import suggest_memory_format

    fmt = suggest_memory_format(input_)
    if fmt == torch.contiguous_format:
        fmt = suggest_memory_format(weight)

    def relayout(t):
        if t is None or t.dim() != weight.dim():
            return t
        with fake_mode:
            return t.contiguous(memory_format=fmt)

    return tuple(relayout(t) for t in result) if isinstance(result, tuple) else relayout(result)


def _tpu_convolution(pytorch_rule):
    def rule(fake_mode, func, *args, **kwargs):
        result = pytorch_rule(fake_mode, func, *args, **kwargs)
        _, named = _normalize_function_or_error(func, args=args, kwargs=kwargs, normalize_to_only_use_kwargs=True)
        input_, weight = named["input"], named["weight"]
        if input_.fake_device.type != "tpu" or any(isinstance(s, torch.SymInt) for s in input_.shape):
            return result
        return _in_conv_layout(fake_mode, result, input_, weight)

    return rule


def register(fake_impls: ModuleType) -> None:
    for op in _CONVOLUTIONS:
        # PyTorch 2.11 has a rule of its own for fewer of them.
        if op in fake_impls.op_implementations_dict:
            fake_impls.op_implementations_dict[op] = _tpu_convolution(fake_impls.op_implementations_dict[op])
    fake_impls.register_op_impl(torch.ops.aten._grouped_mm.default)(_grouped_mm)
    fake_impls.register_op_impl(torch.ops.aten._sample_dirichlet.default)(_sample_dirichlet)
    fake_impls.register_op_impl(torch.ops.aten.binomial.default)(_binomial)
