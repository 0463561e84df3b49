// What the ATen glue of the matrix factorizations shares
// (register_linalg_solvers.cc, register_linalg_decompositions.cc): running a
// lowering over tensors only, the input checks CPU makes, and writing
// results into out= tensors.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <c10/core/ScalarType.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "aten/dtypes.h"
#include "aten/out_args.h"
#include "aten/op_runner.h"

namespace torch_tpu::aten::linalg {

using Tensor = at::Tensor;
using Values = std::vector<hlo::Value>;

// The lowering gets the operands' values; scalars are never needed here.
template <class F>
inline std::vector<Tensor> run_linalg(const char* op, std::string key, std::vector<Tensor> tensors, F f) {
  return run_op(OpCall{op, std::move(key), {tensors.begin(), tensors.end()}, {}},
                [f](hlo::Builder& b, const Values& t, const Values&) { return f(b, t); });
}

inline std::string flags(std::initializer_list<bool> bits) {
  std::string s;
  for (bool bit : bits) s.push_back(bit ? '1' : '0');
  return s;
}

inline void check_dtype(const Tensor& a, const char* api) {
  const c10::ScalarType t = a.scalar_type();
  TORCH_CHECK(c10::isFloatingType(t) || c10::isComplexType(t), api,
              ": Expected a floating point or complex tensor as input. Got ", t);
  TORCH_CHECK(t != at::kHalf && t != at::kBFloat16, api, ": Low precision dtypes not supported. Got ", t);
  to_element_type(t, api);
}

inline void check_matrix(const Tensor& a, const char* api, const char* name, bool square) {
  TORCH_CHECK(a.dim() >= 2, api, ": The input tensor ", name, " must have at least 2 dimensions.");
  if (square) {
    TORCH_CHECK(a.size(-1) == a.size(-2), api, ": ", name, " must be batches of square matrices, but they are ",
                a.size(-2), " by ", a.size(-1), " matrices");
  }
  check_dtype(a, api);
}

inline void check_same_dtype(const Tensor& a, const Tensor& other, const char* api) {
  TORCH_CHECK(a.scalar_type() == other.scalar_type(), api,
              ": Expected A and B to have the same dtype, but found A of type ",
              a.scalar_type(), " and B of type ", other.scalar_type(), " instead");
}

// The linalg out= ops are structured kernels in ATen: out must have the
// result's dtype exactly (CPU refuses a float64 out for float32 input).
inline void write(Tensor& out, const Tensor& value) {
  TORCH_CHECK(value.scalar_type() == out.scalar_type(), "Expected out tensor to have dtype ",
              value.dtype(), ", but got ", out.dtype(), " instead");
  resize_out_like(out, value);
  out.copy_(value);
}

// The few that are not structured (cholesky, cholesky_inverse, lstsq,
// householder_product) copy into out: any dtype the result casts to.
inline void write_castable(Tensor& out, const Tensor& value) {
  TORCH_CHECK(c10::canCast(value.scalar_type(), out.scalar_type()), "Expected out tensor to have dtype ",
              value.dtype(), ", but got ", out.dtype(), " instead");
  at::native::resize_output(out, value.sizes());  // row-major, as their CPU kernels copy
  out.copy_(value);
}

}  // namespace torch_tpu::aten::linalg
