// Sparse layouts on tpu: COO tensors work; the compressed layouts (CSR,
// CSC, BSR, BSC) are refused by name.
//
// A sparse COO tpu tensor is PyTorch's SparseTensorImpl over dense tpu
// indices and values, dispatched on SparsePrivateUse1, for which PyTorch
// registers no kernels. Most of its COO kernels are one device-generic
// function registered for both SparseCPU and SparseCUDA, built of ATen ops
// on the indices and values (which then run on tpu): those are run here by
// handing the call to the SparseCPU kernel. The kernels PyTorch writes per
// device (coalescing, sums and products of sparse operands, matrix
// products, softmax, index_select, the gradient of a sum) are tpu's own, in
// sparse_coo_*.cc. Every other sparse op is refused naming it.
//
// Compressed tensors are refused when made: their constructors are
// composite, so without the refusal one was made and then failed at every
// use with messages such as "values expected sparse tensor layout but got
// SparseCsr".
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <initializer_list>
#include <optional>

#include "aten/fallback.h"
#include "aten/sparse_coo_ops.h"

namespace torch_tpu::aten {
namespace {

// PyTorch 2.13's native_functions.yaml entries whose SparseCPU and
// SparseCUDA kernels are one function, less the conversions to compressed
// layouts and sparse_mask / _sparse_mask_projection (whose kernels go
// through a per-device stub when both operands are sparse).
const std::initializer_list<const char*> kDeviceGenericCooKernels = {
    "abs", "abs_", "abs.out", "view_as_real", "view_as_complex", "sgn", "sgn_", "sgn.out", "conj_physical.out",
    "add.Tensor", "add_.Tensor", "asinh", "asinh_", "asinh.out", "atanh", "atanh_", "atanh.out", "asin", "asin_",
    "asin.out", "atan", "atan_", "atan.out", "_sparse_broadcast_to", "cat", "ceil", "ceil_", "ceil.out", "copy_",
    "div.Tensor", "div_.Tensor", "div.out", "div.Tensor_mode", "div_.Tensor_mode", "div.out_mode",
    "empty.memory_format", "empty_like", "erf", "erf_", "erf.out", "expm1", "expm1_", "expm1.out", "floor",
    "floor_", "floor.out", "floor_divide", "floor_divide_.Tensor", "floor_divide.out", "frac", "frac_", "frac.out",
    "isnan", "nan_to_num", "nan_to_num_", "nan_to_num.out", "log1p", "log1p_", "log1p.out", "mm", "mm.out",
    "mul.Tensor", "mul_.Tensor", "mv", "narrow_copy", "permute", "rad2deg", "rad2deg_", "rad2deg.out", "deg2rad",
    "deg2rad_", "deg2rad.out", "neg", "neg_", "neg.out", "round", "round_", "round.out", "relu", "relu_", "sin",
    "sin_", "sin.out", "sinh", "sinh_", "sinh.out", "sum", "sum.dim_IntList", "sqrt", "sqrt_", "sqrt.out", "tan",
    "tan_", "tan.out", "tanh", "tanh_", "tanh.out", "threshold_backward.grad_input", "threshold_backward", "trunc",
    "trunc_", "trunc.out", "unsqueeze", "zeros.out", "native_norm", "native_norm.ScalarOpt_dim_dtype",
    "norm.ScalarOpt_dim_dtype", "norm.ScalarOpt_dim", "clone", "resize_as_sparse_", "zero_", "sub.out",
    "sub.Tensor", "sub_.Tensor", "_sparse_coo_tensor_with_dims", "_sparse_coo_tensor_with_dims_and_tensors",
    "sparse_resize_", "sparse_resize_and_clear_", "_to_dense",
    "sparse_dim", "_dimI", "dense_dim", "_dimV", "_nnz", "is_coalesced", "_indices", "_values", "_coalesced_",
    "indices", "values", "copy_sparse_to_sparse_", "_to_sparse.sparse_dim", "_to_sparse", "erfinv", "erfinv_",
    "erfinv.out", "sign", "sign_", "sign.out", "signbit", "signbit.out", "any", "pow.Tensor_Scalar_out",
    "pow.Tensor_Scalar", "isinf", "isposinf", "isposinf.out", "isneginf", "isneginf.out"};

// The tpu device an op works on: its first tpu tensor argument's, else its
// device argument's (a factory's), as PyTorch's generated CUDA kernels
// choose the device they guard. A CPU kernel sets no guard, and sparse
// tensors are made on the current device.
std::optional<c10::Device> device_of_arguments(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const size_t count = op.schema().arguments().size();
  std::optional<c10::Device> device_argument;
  for (size_t i = stack.size() - count; i < stack.size(); ++i) {
    const c10::IValue& value = stack[i];
    if (value.isTensor()) {
      const at::Tensor& t = value.toTensor();
      if (t.defined() && t.device().is_privateuseone()) return t.device();
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorList().vec()) {
        if (t.defined() && t.device().is_privateuseone()) return t.device();
      }
    } else if (value.isDevice() && value.toDevice().is_privateuseone() && !device_argument) {
      device_argument = value.toDevice();
    }
  }
  return device_argument;
}

void redispatch_on_device(const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::DispatchKey key) {
  const c10::OptionalDeviceGuard guard(device_of_arguments(op, *stack));
  op.redispatchBoxed(c10::DispatchKeySet(key), stack);
}

void run_device_generic_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  redispatch_on_device(op, stack, c10::DispatchKey::SparseCPU);
}

// dense -> COO: CPU's kernel finds the nonzeros with ATen ops.
void run_dense_to_sparse_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  redispatch_on_device(op, stack, c10::DispatchKey::CPU);
}

void refuse_sparse(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack*) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, op_name(op), " is not supported on tpu for sparse COO tensors; "
                              "make the tensor dense (.to_dense()) first, or run the op on the CPU");
}

void refuse_compressed(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack*) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, op_name(op),
                              ": the compressed sparse layouts (CSR, CSC, BSR, BSC) are not supported on tpu; "
                              "use the COO layout (.to_sparse()), or make the tensor dense (.to_dense())");
}

}  // namespace

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_sparse>());
}

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  for (const char* op : kDeviceGenericCooKernels) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&run_device_generic_kernel>());
  }
  m.impl("_coalesce", sparse::coalesce);
  m.impl("add.out", sparse::add_out);
  m.impl("mul.out", sparse::mul_out);
  m.impl("addmm", sparse::addmm);
  m.impl("addmm.out", sparse::addmm_out);
  m.impl("addmm_", sparse::addmm_);
  m.impl("index_select", sparse::index_select);
  m.impl("sparse_mask", sparse::sparse_mask);
  m.impl("_sparse_mask_projection", sparse::mask_projection);
  m.impl("_sparse_sum_backward", sparse::sum_backward);
  m.impl("bmm", sparse::bmm);
  m.impl("bmm.out", sparse::bmm_out);
  m.impl("_sparse_sparse_matmul", sparse::sparse_sparse_matmul);
  m.impl("_sparse_softmax", sparse::softmax);
  m.impl("_sparse_log_softmax", sparse::log_softmax);
  m.impl("_sparse_softmax_backward_data", sparse::softmax_backward);
  m.impl("_sparse_log_softmax_backward_data", sparse::log_softmax_backward);
  for (const char* op : {"_to_sparse_csr", "_to_sparse_csc", "_to_sparse_bsr", "_to_sparse_bsc"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&refuse_compressed>());
  }
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_compressed>());
}

// A constructor's layout and device options select this key (BackendSelect).
TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  for (const char* op : {"_sparse_compressed_tensor_unsafe", "_sparse_compressed_tensor_with_dims",
                         "_sparse_csr_tensor_unsafe", "_sparse_csc_tensor_unsafe", "_sparse_bsr_tensor_unsafe",
                         "_sparse_bsc_tensor_unsafe", "sparse_compressed_tensor.comp_plain_value",
                         "sparse_compressed_tensor.comp_plain_value_size", "sparse_csr_tensor.crow_col_value",
                         "sparse_csr_tensor.crow_col_value_size", "sparse_csc_tensor.ccol_row_value",
                         "sparse_csc_tensor.ccol_row_value_size", "sparse_bsr_tensor.crow_col_value",
                         "sparse_bsr_tensor.crow_col_value_size", "sparse_bsc_tensor.ccol_row_value",
                         "sparse_bsc_tensor.ccol_row_value_size"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&refuse_compressed>());
  }
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_to_sparse", torch::CppFunction::makeFromBoxedFunction<&run_dense_to_sparse_kernel>());
  m.impl("_to_sparse.sparse_dim", torch::CppFunction::makeFromBoxedFunction<&run_dense_to_sparse_kernel>());
  for (const char* op : {"_to_sparse_csr", "_to_sparse_csc", "_to_sparse_bsr", "_to_sparse_bsc"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&refuse_compressed>());
  }
}

}  // namespace torch_tpu::aten
