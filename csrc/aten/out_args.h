// Writing a computed result into a caller's out= tensor as ATen's out
// variants do: the result type must cast to out's dtype, and out is resized
// (with ATen's warning when a non-empty out changes shape).
#pragma once

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <c10/core/ScalarType.h>

namespace torch_tpu::aten {

// For out= variants whose out must have the result's dtype exactly
// (reductions' values, linalg results, aminmax): no cast. The message of
// ATen's structured kernels, which name dtypes as "float" and "double".
inline void check_out_dtype(const at::Tensor& out, c10::ScalarType expected) {
  TORCH_CHECK(out.scalar_type() == expected, "Expected out tensor to have dtype ",
              c10::scalarTypeToTypeMeta(expected), ", but got ", out.dtype(), " instead");
}

// out= must be on the device that computed the result (CUDA's message).
inline void check_out_device(const at::Tensor& out, const at::Tensor& value) {
  TORCH_CHECK(out.device() == value.device(), "Expected out tensor to have device ", value.device(), ", but got ",
              out.device(), " instead");
}

// ATen's checks of an out= tensor against the op's inputs, made before out
// is resized (a resize would hide an overlap): out may not write one
// element twice, nor share memory with an input (CPU's "unsupported
// operation: ... refer to a single memory location").
inline void check_out_overlaps(const at::Tensor& out, std::initializer_list<const at::Tensor*> inputs) {
  at::assert_no_internal_overlap(out);
  for (const at::Tensor* input : inputs) at::assert_no_overlap(out, *input);
}

// Resizes out to value's shape; a resized out takes the value's layout, as
// TensorIterator, the shape functions and the structured linalg kernels
// (column-major results) give a resized out the functional result's strides.
inline void resize_out_like(at::Tensor& out, const at::Tensor& value) {
  if (at::native::resize_output(out, value.sizes()) && !value.is_contiguous() &&
      value.is_non_overlapping_and_dense()) {
    out.as_strided_(value.sizes(), value.strides());
  }
}

inline at::Tensor& write_out(at::Tensor& out, const at::Tensor& value) {
  check_out_device(out, value);
  TORCH_CHECK(c10::canCast(value.scalar_type(), out.scalar_type()), "result type ", value.scalar_type(),
              " can't be cast to the desired output type ", out.scalar_type());
  resize_out_like(out, value);
  out.copy_(value);
  return out;
}

}  // namespace torch_tpu::aten
